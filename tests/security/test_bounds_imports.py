"""The text-level import scan (analysis.project.scan_imports, run on every project file and, in the
server, on every edit) is linear in the text: 40,000 lines `from a import (` inside a string (the
file parses) took 19 s of CPU per check and per keystroke, as the scan's regex looked for the `)`
to the end of the file from each of them; a line of dots after `from` backtracked quadratically.
A setup.cfg of blank lines made the package-folder scan quadratic too.

Work is counted, not timed (issue 36): the characters the module's regular expressions read, and the
lines of fabric_lsp executed (tests/support/work.py). The CLI and server tests keep their timeouts
as hang guards only; the counted tests here are the proof of linearity."""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import shutil
import sys
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


class _Reads:
    """Characters read by regular expressions, added up over their calls."""

    def __init__(self) -> None:
        self.characters = 0
        self.calls = 0

    def add(self, start: int, stop: int) -> None:
        self.calls += 1
        self.characters += max(1, stop - start)  # a call costs at least one step


class _CountedPattern:
    """A compiled pattern that counts what each call reads: from where it starts to the end of the
    match, or to the end of its range when nothing matches. (Backtracking inside one attempt is not
    seen: the scan's patterns have no two adjacent runs and no run across a line; the dots test
    below counts the Python loops that replaced the runs that backtracked.)"""

    def __init__(self, pattern: re.Pattern, reads: _Reads) -> None:
        self._pattern, self._reads = pattern, reads

    def _read(self, string, pos: int, endpos: int, found) -> None:
        self._reads.add(pos, found.end() if found is not None else min(endpos, len(string)))

    def search(self, string, pos: int = 0, endpos: int = sys.maxsize):
        found = self._pattern.search(string, pos, endpos)
        self._read(string, pos, endpos, found)
        return found

    def match(self, string, pos: int = 0, endpos: int = sys.maxsize):
        found = self._pattern.match(string, pos, endpos)
        self._read(string, pos, endpos, found)
        return found

    def finditer(self, string, pos: int = 0, endpos: int = sys.maxsize):
        last = pos
        for found in self._pattern.finditer(string, pos, endpos):
            self._reads.add(last, found.end())
            last = found.end()
            yield found
        self._reads.add(last, min(endpos, len(string)))

    def sub(self, repl, string, count: int = 0):
        self._reads.add(0, len(string))
        return self._pattern.sub(repl, string, count)

    def __getattr__(self, name: str):
        return getattr(self._pattern, name)


class _CountedRe:
    """analysis.project's `re`: the module-level calls (re.finditer(pattern, ...)) counted too."""

    def __init__(self, reads: _Reads) -> None:
        self._reads = reads

    def compile(self, pattern, flags=0):
        return _CountedPattern(re.compile(pattern, flags), self._reads)

    def search(self, pattern, string, flags=0):
        return self.compile(pattern, flags).search(string)

    def match(self, pattern, string, flags=0):
        return self.compile(pattern, flags).match(string)

    def finditer(self, pattern, string, flags=0):
        return self.compile(pattern, flags).finditer(string)

    def sub(self, pattern, repl, string, count=0, flags=0):
        return self.compile(pattern, flags).sub(repl, string, count)

    def __getattr__(self, name: str):
        return getattr(re, name)


def counted_reads(monkeypatch) -> _Reads:
    """Every compiled pattern of analysis.project (_IMPORT_START, _DOTTED, _PARENTHESIS, _COMMENT,
    _NAMES_END, ..., and any added later) and its `re` replaced by counting ones."""
    from fabric_lsp.analysis import project

    reads = _Reads()
    for name, value in list(vars(project).items()):
        if isinstance(value, re.Pattern):
            monkeypatch.setattr(project, name, _CountedPattern(value, reads))
    monkeypatch.setattr(project, "re", _CountedRe(reads))
    return reads


def analysis_reads(tmp_path: Path, monkeypatch, count: int) -> tuple[int, int]:
    """(characters the import scan's patterns read while the file is analysed, the file's length)."""
    text = open_parentheses(count)
    with monkeypatch.context() as patch:
        reads = counted_reads(patch)
        findings = check_source(str(tmp_path / f"imports_{count}.py"), text, Config())
    assert [f.code for f in findings] == ["FAB001"]
    assert reads.characters >= len(text), "the scan no longer goes through the counted patterns"
    return reads.characters, len(text)


def test_analysis_is_linear_in_open_import_parentheses(tmp_path, monkeypatch):
    # Counted, not timed: what the patterns read is a few times the text at 10k and 80k lines (measured
    # 2.1x). The old search for `)` to the end of the file from every `from a import (` read
    # ~count/2 times the text: 5,000x at 10k lines.
    for count in (10_000, 80_000):
        read, length = analysis_reads(tmp_path, monkeypatch, count)
        assert read <= 4 * length, f"{count} lines: {read:,} characters read for a text of {length:,}"


def test_the_scan_reads_each_line_once(monkeypatch):
    from tests.support.work import counted

    text = "from a import (\n" * 40_000
    with monkeypatch.context() as patch:
        reads = counted_reads(patch)
        with counted() as work:
            scanned = scan_imports(text)
    assert len(scanned) == 40_000 and scanned[0].module == "a"
    assert len(text) <= reads.characters <= 4 * len(text), (reads.characters, len(text))
    assert work.lines <= 100 * 40_000, work.lines  # Python lines per import line: a constant (measured 56)
    # One long line: the dots are read once (the regex's adjacent optional runs backtracked over
    # them, 0.8 s for 8,000 dots, growing with the square).
    text = "import os\nfrom " + "." * 200_000 + " x\nfrom .b import (c,  # c\n  d as e)\n"
    with monkeypatch.context() as patch:
        reads = counted_reads(patch)
        with counted() as work:
            scanned = scan_imports(text)
    assert [(s.module, s.level, s.names) for s in scanned] == [("os", 0, ()), ("b", 1, ("c", "d"))]
    assert len(text) <= reads.characters <= 4 * len(text), (reads.characters, len(text))
    assert work.lines <= 3 * len(text), work.lines  # two per dot (one loop's test and step)


def test_check_of_a_640_kb_file_of_open_parentheses_is_bounded(tmp_path):
    # The CLI end to end; the work is counted in-process above, and run_cli's timeout is only a hang
    # guard (the old scan: 19 s of CPU here).
    (tmp_path / "train.py").write_text(open_parentheses(40_000))
    result = run_cli("check", "--no-cache", "train.py", cwd=tmp_path)
    assert not result.timed_out
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert "FAB001" in result.stdout


def test_a_setup_cfg_of_blank_lines_is_read_in_linear_time(tmp_path, monkeypatch):
    (tmp_path / "src").mkdir()
    text = "\n" * 150_000 + "[options]\npackage_dir =\n    = src\n"
    (tmp_path / "setup.cfg").write_text(text)
    reads = counted_reads(monkeypatch)
    assert declared_package_roots(str(tmp_path)) == [str(tmp_path / "src")]
    # Counted: the calls read the file once (measured 1.0x). The old `^\s*` spanned the blank lines
    # from every line start (20,000 of them: 1.7 s, growing with the square); now `^[ \t]*`.
    assert len(text) <= reads.characters <= 4 * len(text), (reads.characters, len(text))


async def test_server_answers_an_edit_of_such_a_file(tmp_path):
    # The edit's analysis is counted in-process above; diagnostics()'s timeout is only a hang guard.
    path = tmp_path / "train.py"
    path.write_text(open_parentheses(40_000))
    small = tmp_path / "small.py"
    shutil.copy(CASE, small)
    async with session(capabilities("neovim"), [tmp_path]) as (client, _):
        uri = open_doc(client, path)
        assert [d.code for d in await diagnostics(client, uri, version=1)] == ["FAB001"]
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
                text="# edited\n")]))
        assert [d.code for d in await diagnostics(client, uri, version=2)] == ["FAB001"]
        # and the server answers for other files meanwhile
        small_uri = open_doc(client, small)
        assert [d.code for d in await asyncio.wait_for(diagnostics(client, small_uri, version=1), 10)] == ["FAB001"]
