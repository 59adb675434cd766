"""Plain data passed from rules to the presentations (CLI, LSP). No LSP types here.

Positions are 0-based lines and 0-based columns counted in Unicode code points
(characters of a Python `str`); each presentation converts to its own convention.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFORMATION = "information"
    HINT = "hint"

    @property
    def rank(self) -> int:
        """Higher is more severe."""
        return {"hint": 0, "information": 1, "warning": 2, "error": 3}[self.value]


class Applicability(str, enum.Enum):
    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True, order=True)
class Position:
    line: int
    character: int


@dataclass(frozen=True)
class Span:
    path: str  # absolute file path
    start: Position
    end: Position


@dataclass(frozen=True)
class TextEdit:
    path: str  # absolute file path; may differ from the finding's file
    start: Position
    end: Position
    new_text: str


@dataclass(frozen=True)
class Fix:
    title: str
    applicability: Applicability
    edits: tuple[TextEdit, ...]


@dataclass(frozen=True)
class Related:
    span: Span
    message: str


@dataclass(frozen=True)
class Finding:
    code: str  # "FAB001"
    severity: Severity
    span: Span
    message: str
    record_id: str
    related: tuple[Related, ...] = ()
    fix: Fix | None = None
    # Fixes confined to the finding's own file, offered instead of `fix` when `fix` edits a file
    # a fix may not touch (fabric_lsp.confinement); unsafe: they change what the code does.
    alternatives: tuple[Fix, ...] = field(default=(), compare=False, hash=False)
    # Names that fill the record's runtime error message for this occurrence,
    # e.g. {"class": "TinyLM", "method": "generate"}.
    context: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    @property
    def noqa_line(self) -> int:
        """0-based line on which a `# noqa` comment suppresses this finding."""
        return self.span.start.line
