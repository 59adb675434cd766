"""What every output format shares: positions, paths, fixability, the rule's documentation link,
the repository root (for reports read by CI services), the flagged source lines (for fingerprints)."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from fabric_lsp.findings import Applicability, Finding, Position
from fabric_lsp.sources.walk import display_path

# The formats `--statistics` can be written in (report/statistics.py).
STATISTICS_FORMATS = ("text", "concise", "json")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# Places named inside a message ("wrapped at train.py:34", "cell 2:4", "line 12"): left out of a
# fingerprint, which must not change when lines move.
_PLACE_NUMBERS = re.compile(r"(?<=:)\d+|(?<=\bline )\d+|(?<=\bcell )\d+")
MAX_SOURCE_BYTES = 64 * 1024 * 1024


@dataclass
class ReportContext:
    cwd: str = field(default_factory=os.getcwd)  # paths below it are shown relative to it
    unsafe_fixes: bool = False  # unsafe fixes count as fixable (--unsafe-fixes)
    fix_mode: bool = False  # --fix ran: `fixed` findings were fixed, the rest remain
    fixed: int = 0
    records: object | None = None  # a fabric_lsp.records.RecordSet; loaded on first use
    # Notebooks among the reported files (absolute path -> notebook.NotebookLocator): their findings'
    # positions are in the joined code cells and are shown by cell.
    notebooks: dict[str, object] = field(default_factory=dict)
    color: bool = False  # text output: ANSI colours (report/terminal.py decides)
    quiet: bool = False  # text output: the findings only, no summary (--quiet)
    show_fixes: bool = False  # text output after --fix: what was fixed, per file (--show-fixes)
    fixed_findings: Sequence[Finding] = ()  # the findings --fix fixed
    # The repository root: SARIF and GitLab paths are relative to it (None: the nearest folder
    # above `cwd` holding `.git`, else `cwd`).
    root: str | None = None
    docs_url: str | None = None  # the team's rule pages (`docs-url`): links point there (records/pages.py)
    _lines: dict[str, list[str] | None] = field(default_factory=dict, repr=False)  # None: unreadable

    def repository_root(self) -> str:
        if self.root is None:
            self.root = repository_root(self.cwd)
        return self.root

    def relative_to_root(self, path: str) -> str | None:
        """`path` relative to the repository root, with `/` separators; None when outside it."""
        root, absolute = os.path.abspath(self.repository_root()), os.path.abspath(path)
        try:
            if os.path.commonpath([root, absolute]) != root or absolute == root:
                return None
        except ValueError:  # another drive
            return None
        return Path(os.path.relpath(absolute, root)).as_posix()

    def source_line(self, path: str, line: int) -> str:
        """The text of 0-based `line` of the file as analysed (a notebook: its joined code cells);
        '' when the file cannot be read any more."""
        lines = self._source_lines(path)
        return lines[line] if lines is not None and 0 <= line < len(lines) else ""

    def readable(self, path: str) -> bool:
        """Whether the file's text is known (read, or given by `remember_text`): a code frame needs it."""
        return self._source_lines(path) is not None

    def remember_text(self, path: str, text: str) -> None:
        """The text checked for `path` when it is not the file on disk (standard input)."""
        self._lines[os.path.abspath(path)] = _LINE_BREAK.split(text)

    def _source_lines(self, path: str) -> list[str] | None:
        absolute = os.path.abspath(path)
        if absolute not in self._lines:
            locator = self.notebooks.get(absolute)
            if locator is not None:
                text = locator.joined.text
            else:
                from fabric_lsp.sources.walk import read_source

                source, _ = read_source(absolute, MAX_SOURCE_BYTES)
                text = source.text if source is not None else None
            self._lines[absolute] = _LINE_BREAK.split(text) if text is not None else None
        return self._lines[absolute]

    def record_set(self):
        if self.records is None:
            from fabric_lsp.records import default_records

            self.records = default_records()
        return self.records

    def url(self, finding: Finding) -> str | None:
        """The rule's documentation page: the team's (`docs-url`) or the installed copy (file://). The
        record's Lightning source stays its evidence (SARIF rule properties, `explain`)."""
        from fabric_lsp.records.pages import page_url

        return page_url(finding.code, self.docs_url)

    def display(self, path: str) -> str:
        return display_path(path, self.cwd)

    def cell(self, path: str, position: Position) -> tuple[int | None, Position]:
        """(cell number, position in the cell) in a notebook; (None, position) in a Python file."""
        locator = self.notebooks.get(os.path.abspath(path))
        return locator.cell_position(position) if locator is not None else (None, position)

    def file_position(self, path: str, position: Position) -> Position:
        """Where the position is in the file as stored (a notebook's JSON text)."""
        locator = self.notebooks.get(os.path.abspath(path))
        return locator.file_position(position) if locator is not None else position

    def where(self, path: str, position: Position) -> str:
        """`train.py:14:13`, or `nb.ipynb:cell 3:4:16` (ruff's form) in a notebook."""
        number, inside = self.cell(path, position)
        row, col = row_col(inside)
        cell = f"cell {number}:" if number is not None else ""
        return f"{self.display(path)}:{cell}{row}:{col}"


def notebook_locators(paths) -> dict[str, object]:
    """NotebookLocators of the notebooks among `paths` (read again from disk, as any checked file is
    read: a notebook decoded earlier in the run is not decoded again)."""
    from fabric_lsp.settings.config import MAX_FILE_SIZE_CEILING
    from fabric_lsp.sources.notebook import NotebookLocator, is_notebook_path
    from fabric_lsp.sources.walk import read_source

    found = {}
    for path in sorted({os.path.abspath(p) for p in paths if is_notebook_path(p)}):
        # A notebook with findings was accepted by its max-file-size, which is at most the ceiling.
        source, _ = read_source(path, MAX_FILE_SIZE_CEILING)
        if source is not None and source.notebook is not None:
            found[path] = NotebookLocator(source.notebook)
    return found


def row_col(position: Position) -> tuple[int, int]:
    """1-based row and column (columns in characters)."""
    return position.line + 1, position.character + 1


def fixable(finding: Finding, unsafe_fixes: bool) -> bool:
    if finding.fix is None:
        return False
    return unsafe_fixes or finding.fix.applicability == Applicability.SAFE


def hidden_unsafe(findings: Sequence[Finding], unsafe_fixes: bool) -> int:
    """Findings whose only fix is unsafe and not enabled."""
    if unsafe_fixes:
        return 0
    return sum(1 for f in findings if f.fix is not None and f.fix.applicability == Applicability.UNSAFE)


def sort_key(finding: Finding) -> tuple:
    """Stable report order: path, row, column, code (then the rest, for ties)."""
    start, end = finding.span.start, finding.span.end
    return (finding.span.path, start.line, start.character, finding.code, end.line, end.character, finding.message)


def repository_root(cwd: str) -> str:
    """The nearest folder at or above `cwd` holding `.git` (a folder, or a file in a worktree or a
    submodule); `cwd` when there is none."""
    start = os.path.abspath(cwd)
    folder = start
    while True:
        if os.path.exists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return start
        folder = parent


def stable_message(message: str) -> str:
    """The message with the numbers of the places it names left out (they move with the code)."""
    return _PLACE_NUMBERS.sub("#", message)


def occurrences(findings: Sequence[Finding], context: ReportContext) -> list[tuple[str, str, int]]:
    """For each finding: (its path relative to the repository root or absolute, the stripped text
    of its first line, its 1-based occurrence among the findings of the same file, code and line
    text). With the code these identify a finding without its line number: it keeps its
    fingerprint when lines are added or removed above it."""
    seen: dict[tuple[str, str, str], int] = {}
    found = []
    for finding in findings:
        path = context.relative_to_root(finding.span.path) or Path(os.path.abspath(finding.span.path)).as_posix()
        text = context.source_line(finding.span.path, finding.span.start.line).strip()
        key = (path, finding.code, text)
        seen[key] = seen.get(key, 0) + 1
        found.append((path, text, seen[key]))
    return found


def fingerprint(*parts: object) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(str(part).encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()
