"""A notebook's code cells count against `max-file-size` before anything is done with them: they
are summed while the JSON is read and refused above the limit, before they are joined (joining
neutralises and parses each cell: an 8 MB cell took 1.6 GB and 7 s of CPU in `check`, and blocked
the server's event loop for as long). The server joins a notebook in its analysis thread, never on the event
loop, so other documents are answered while a notebook is read."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import time
from pathlib import Path

from tests.security.measure import REPO_ROOT as REPO
from tests.security.measure import run_cli as measured_cli

sys.path.insert(0, str(REPO / "tests" / "lsp"))  # lspkit

from lspkit import TIMEOUT, capabilities, diagnostics, open_doc, session, wait_until  # noqa: E402
from lsprotocol import types  # noqa: E402


def run_cli(*argv: str, cwd: Path, stdin: bytes | None = None):
    """The CLI measured (tests/security/measure.py), with the test environment less VIRTUAL_ENV."""
    env = {key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"}
    return measured_cli(cwd, env, *argv, stdin=stdin)

CASE = REPO / "fixtures" / "cases" / "fab001_call_before_mark.py"
LINE = "value = fabric.setup(model)\n"
HUGE_CELL = LINE * (8 * 1024 * 1024 // len(LINE))  # 8 MiB of Python: four times the default limit
SMALL_CELL = LINE * (8 * 1024 // len(LINE))  # 8 kiB


def notebook_json(cells: list[str]) -> str:
    return json.dumps({
        "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                   "source": cell.splitlines(keepends=True)} for cell in cells],
        "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5,
    }, indent=1)


def assert_refused_cheaply(tmp_path: Path, cells: list[str]) -> None:
    (tmp_path / "nb.ipynb").write_text(notebook_json(cells))
    shutil.copy(CASE, tmp_path / "main.py")
    result = run_cli("check", "--no-cache", "--format", "json", ".", cwd=tmp_path)
    assert "Traceback" not in result.stderr
    # Refusing costs what reading the 10 MB of JSON does: the run took 0.4 s of CPU and 90 MB (main.py
    # alone: 0.3 s, 34 MB); joining the cells first took 7.1 s and 1.6 GB for the huge cell, and 3.9 s
    # for the many cells.
    # Counted in memory, not timed: joining the cells is what took the 1.6 GB.
    assert result.peak_mb < 400, f"peak {result.peak_mb:.0f} MB"
    assert result.returncode == 1, result.stderr  # main.py's finding: the run went on
    assert [Path(f["filename"]).name for f in json.loads(result.stdout)] == ["main.py"]
    size = sum(len(cell.encode()) for cell in cells)
    assert (f"fabric-lsp: notice: nb.ipynb: the notebook's code cells are larger than max-file-size "
            f"({size} > {2 * 1024 * 1024} bytes)") in result.stderr.splitlines(), result.stderr


def test_one_huge_code_cell_is_refused_before_it_is_parsed(tmp_path):
    assert_refused_cheaply(tmp_path, [HUGE_CELL])


def test_many_code_cells_summing_over_the_limit_are_refused_before_they_are_parsed(tmp_path):
    # 1,024 cells of 8 kiB: each alone is small, together they are 8 MiB.
    assert_refused_cheaply(tmp_path, [SMALL_CELL] * 1024)


def test_a_notebook_on_standard_input_is_refused_too(tmp_path):
    result = run_cli("check", "--stdin-filename", "nb.ipynb", cwd=tmp_path,
                     stdin=notebook_json([HUGE_CELL]).encode())
    assert result.peak_mb < 400, result.peak_mb  # was 1.6 GB (joined before it was refused)
    assert result.returncode == 0 and "Traceback" not in result.stderr
    assert "the notebook's code cells are larger than max-file-size" in result.stderr, result.stderr


def notebook_capabilities() -> types.ClientCapabilities:
    def change(caps: types.ClientCapabilities) -> None:
        caps.notebook_document = types.NotebookDocumentClientCapabilities(
            synchronization=types.NotebookDocumentSyncClientCapabilities(dynamic_registration=True)
        )

    return capabilities("visual-studio-code", change)


def open_notebook(client, path: Path, cells: list[str]) -> list[str]:
    """notebookDocument/didOpen as VS Code sends it; the cells' URIs."""
    uris = [f"vscode-notebook-cell:{path.as_posix()}#W{index}sZmlsZQ%3D%3D" for index in range(len(cells))]
    client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(
            uri=path.as_uri(), notebook_type="jupyter-notebook", version=1,
            cells=[types.NotebookCell(kind=types.NotebookCellKind.Code, document=uri) for uri in uris]),
        cell_text_documents=[types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
                             for uri, text in zip(uris, cells)],
    ))
    return uris


async def test_server_answers_while_an_over_limit_notebook_is_opened_and_refuses_it(tmp_path):
    small = tmp_path / "small.py"
    shutil.copy(CASE, small)
    async with session(notebook_capabilities(), [tmp_path]) as (client, _):
        small_uri = open_doc(client, small)
        [finding] = await diagnostics(client, small_uri, version=1)
        for name, cells in (("huge.ipynb", [HUGE_CELL]), ("many.ipynb", [SMALL_CELL] * 1024)):
            cell_uris = open_notebook(client, tmp_path / name, cells)
            await asyncio.sleep(0.3)  # the server has the notebook: joining it on the event loop blocked it here
            started = time.monotonic()
            hover = await asyncio.wait_for(client.text_document_hover_async(types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=small_uri), position=finding.range.start)), TIMEOUT)
            waited = time.monotonic() - started
            assert hover is not None and "mark_forward_method" in str(hover.contents)
            assert waited < 2, f"{name}: hover answered after {waited:.1f} s"
            # The notebook is not analysed: its cells get no diagnostics, and the user is told why once.
            await wait_until(lambda: {p.uri for p in client.published} >= set(cell_uris), message=f"{name}'s cells")
            assert all(not client.diagnostics[uri] for uri in cell_uris)
            await wait_until(lambda: any(name in m.message for m in client.messages), message=f"{name}'s notice")
            [notice] = [m.message for m in client.messages if name in m.message]
            assert "is not analysed: its code cells are larger than max-file-size" in notice, notice
        # And the server still analyses: an edit of the small file is answered.
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=small_uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=small.read_text() + "\n")]))
        assert [d.code for d in await diagnostics(client, small_uri, version=2)] == ["FAB001"]
