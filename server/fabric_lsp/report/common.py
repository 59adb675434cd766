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
