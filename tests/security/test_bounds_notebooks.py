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
from pathlib import Path

from tests.security.measure import REPO_ROOT as REPO
from tests.security.measure import run_cli as measured_cli

sys.path.insert(0, str(REPO / "tests" / "lsp"))  # lspkit

import lspkit  # noqa: E402
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


# The server with every join of a notebook's cells logged as it happens (the server ends with
# os._exit): the thread it ran on and the characters joined. Joining is the costly step (an 8 MiB
# cell blocked the event loop ~18 s when the event loop did it).
JOINS_LOGGED_SERVER = (
    "import json, runpy, sys, threading\n"
    "log = sys.argv.pop(1)\n"
    "from fabric_lsp.sources import notebook\n"
    "from fabric_lsp.lsp import documents\n"
    "join_cells = notebook.join_cells\n"
    "def logged(cells):\n"
    "    with open(log, 'a') as out:\n"
    "        out.write(json.dumps([threading.current_thread() is threading.main_thread(),\n"
    "                              sum(len(text) for _, text in cells)]) + '\\n')\n"
    "    return join_cells(cells)\n"
    "notebook.join_cells = documents.join_cells = logged\n"
    "runpy.run_module('fabric_lsp', run_name='__main__', alter_sys=True)\n"
)


def joins(log: Path) -> list[tuple[bool, int]]:
    """(on the main thread, the event loop's; characters joined) of each join so far."""
    return [tuple(json.loads(line)) for line in log.read_text().splitlines()] if log.exists() else []


async def test_server_answers_while_an_over_limit_notebook_is_opened_and_refuses_it(tmp_path, monkeypatch):
    small = tmp_path / "small.py"
    shutil.copy(CASE, small)
    log = tmp_path / "joins.jsonl"
    monkeypatch.setattr(lspkit, "SERVER_COMMAND", [sys.executable, "-c", JOINS_LOGGED_SERVER, str(log), "serve"])
    async with session(notebook_capabilities(), [tmp_path]) as (client, _):
        small_uri = open_doc(client, small)
        [finding] = await diagnostics(client, small_uri, version=1)
        # A notebook under the limit is joined, in the analysis thread: the log sees joins.
        fine = (False, len("x = 1\n"))
        cell_uris = open_notebook(client, tmp_path / "fine.ipynb", ["x = 1\n"])
        await wait_until(lambda: {p.uri for p in client.published} >= set(cell_uris), message="fine.ipynb's cells")
        assert joins(log) and set(joins(log)) == {fine}, joins(log)
        for name, cells in (("huge.ipynb", [HUGE_CELL]), ("many.ipynb", [SMALL_CELL] * 1024)):
            cell_uris = open_notebook(client, tmp_path / name, cells)
            await asyncio.sleep(0.3)  # the server has the notebook: joining it on the event loop blocked it here
            # TIMEOUT is only a hang guard: the proof that nothing blocks the hover is the log below
            # (the notebook is never joined, on the event loop or elsewhere).
            hover = await asyncio.wait_for(client.text_document_hover_async(types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=small_uri), position=finding.range.start)), TIMEOUT)
            assert hover is not None and "mark_forward_method" in str(hover.contents)
            # The notebook is not analysed: its cells get no diagnostics, and the user is told why once.
            await wait_until(lambda: {p.uri for p in client.published} >= set(cell_uris), message=f"{name}'s cells")
            assert all(not client.diagnostics[uri] for uri in cell_uris)
            await wait_until(lambda: any(name in m.message for m in client.messages), message=f"{name}'s notice")
            [notice] = [m.message for m in client.messages if name in m.message]
            assert "is not analysed: its code cells are larger than max-file-size" in notice, notice
            assert set(joins(log)) == {fine}, f"{name}: {joins(log)}"  # refused before it was joined
        # And the server still analyses: an edit of the small file is answered.
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=small_uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=small.read_text() + "\n")]))
        assert [d.code for d in await diagnostics(client, small_uri, version=2)] == ["FAB001"]
