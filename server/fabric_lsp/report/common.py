"""What every output format shares: positions, paths, fixability, the rule's documentation link."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Sequence

from fabric_lsp.findings import Applicability, Finding, Position
from fabric_lsp.walk import display_path


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

    def record_set(self):
        if self.records is None:
            from fabric_lsp.records import default_records

            self.records = default_records()
        return self.records

    def url(self, finding: Finding) -> str | None:
        """The rule's documentation link: its knowledge-base record's githubUrl."""
        records = self.record_set()
        record = records.by_id(finding.record_id) if finding.record_id else None
        record = record or records.by_code(finding.code)
        return record.github_url if record is not None else None

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
    """NotebookLocators of the notebooks among `paths` (read again from disk)."""
    from fabric_lsp.notebook import NotebookError, NotebookLocator, is_notebook_path, read_notebook

    found = {}
    for path in sorted({os.path.abspath(p) for p in paths if is_notebook_path(p)}):
        try:
            with open(path, "rb") as handle:
                found[path] = NotebookLocator(read_notebook(path, handle.read()))
        except (OSError, NotebookError):
            continue
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
