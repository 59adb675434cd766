"""The text-level import scan (analysis.project.scan_imports, run on every project file and, in the
server, on every edit) is linear in the text: 40,000 lines `from a import (` inside a string (the
file parses) took 19 s of CPU per check and per keystroke, as the scan's regex looked for the `)`
to the end of the file from each of them; a line of dots after `from` backtracked quadratically.
A setup.cfg of blank lines made the package-folder scan quadratic too."""

from __future__ import annotations

import asyncio
import gc
import itertools
import os
import shutil
import sys
import time
from pathlib import Path

from fabric_lsp.analysis.project import declared_package_roots, scan_imports
from fabric_lsp.settings.config import Config
from fabric_lsp.engine import check_source

from tests.security.measure import REPO_ROOT as REPO
from tests.security.measure import run_cli as measured_cli

sys.path.insert(0, str(REPO / "tests" / "lsp"))  # lspkit

from lspkit import capabilities, diagnostics, open_doc, session  # noqa: E402
from lsprotocol import types  # noqa: E402


def run_cli(*argv: str, cwd: Path, stdin: bytes | None = None):
    """The CLI measured (tests/security/measure.py), with the test environment less VIRTUAL_ENV."""
    env = {key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"}
    return measured_cli(cwd, env, *argv, stdin=stdin)

CASE = REPO / "fixtures" / "cases" / "fab001_call_before_mark.py"
RUN = itertools.count()


def open_parentheses(count: int) -> str:
    """A program (one FAB001) ending with a string that holds `count` lines `from a import (` (16
    bytes each) and no `)` after them."""
    # The run number makes every text new, so no memo of an earlier analysis answers instead.
    return f"# run {next(RUN)}\n" + CASE.read_text() + 'DOC = """\n' + "from a import (\n" * count + '"""\n'


def analysis_seconds(tmp_path: Path, count: int) -> float:
    text = open_parentheses(count)
    gc.collect()
    gc.disable()
    try:
        started = time.process_time()
        findings = check_source(str(tmp_path / f"imports_{count}.py"), text, Config())
        elapsed = time.process_time() - started
    finally:
        gc.enable()
    assert [f.code for f in findings] == ["FAB001"]
    return elapsed


def test_analysis_is_linear_in_open_import_parentheses(tmp_path):
    analysis_seconds(tmp_path, 100)  # warm up
    small = min(analysis_seconds(tmp_path, 10_000) for _ in range(3))
    large = min(analysis_seconds(tmp_path, 80_000) for _ in range(2))
    # 8x the lines: ~4x now (fixed costs); the regex's search to the end of the file was ~64x.
    assert large / small < 13, f"10k lines {small:.2f}s, 80k lines {large:.2f}s CPU: ratio {large / small:.1f}"


def test_the_scan_reads_each_line_once():
    started = time.process_time()
    scanned = scan_imports("from a import (\n" * 40_000)
    assert len(scanned) == 40_000 and scanned[0].module == "a"
    scanned = scan_imports("import os\nfrom " + "." * 200_000 + " x\nfrom .b import (c,  # c\n  d as e)\n")
    assert [(s.module, s.level, s.names) for s in scanned] == [("os", 0, ()), ("b", 1, ("c", "d"))]
    # 0.2 s together (the dots alone took 0.8 s for 8,000 of them, growing with the square).
    assert time.process_time() - started < 2


def test_check_of_a_640_kb_file_of_open_parentheses_is_bounded(tmp_path):
    (tmp_path / "train.py").write_text(open_parentheses(40_000))
    result = run_cli("check", "--no-cache", "train.py", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert "FAB001" in result.stdout
    assert result.cpu_seconds < 5, f"{result.cpu_seconds:.1f} s of CPU"  # 0.5 s; it was 19 s


def test_a_setup_cfg_of_blank_lines_is_read_in_linear_time(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "setup.cfg").write_text("\n" * 150_000 + "[options]\npackage_dir =\n    = src\n")
    started = time.process_time()
    assert declared_package_roots(str(tmp_path)) == [str(tmp_path / "src")]
    assert time.process_time() - started < 2  # 0.01 s; `^\s*` over blank lines took 1.7 s for 20,000


async def test_server_answers_an_edit_of_such_a_file_within_a_bound(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(open_parentheses(40_000))
    small = tmp_path / "small.py"
    shutil.copy(CASE, small)
    async with session(capabilities("neovim"), [tmp_path]) as (client, _):
        uri = open_doc(client, path)
        assert [d.code for d in await diagnostics(client, uri, version=1)] == ["FAB001"]
        started = time.monotonic()
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
                text="# edited\n")]))
        assert [d.code for d in await diagnostics(client, uri, version=2)] == ["FAB001"]
        waited = time.monotonic() - started
        assert waited < 5, f"the edit was analysed after {waited:.1f} s"  # ~0.3 s; it was ~19 s per keystroke
        # and the server answers for other files meanwhile
        small_uri = open_doc(client, small)
        assert [d.code for d in await asyncio.wait_for(diagnostics(client, small_uri, version=1), 10)] == ["FAB001"]
