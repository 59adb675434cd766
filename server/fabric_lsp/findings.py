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
    # What is wrong, short (the headline of the text output, <= ~100 characters); the reasons go in
    # `notes`. A rule that gives no notes may put everything in `message`: `headline_and_notes` splits it.
    message: str
    record_id: str
    related: tuple[Related, ...] = ()
    fix: Fix | None = None
    # Fixes confined to the finding's own file, offered instead of `fix` when `fix` edits a file
    # a fix may not touch (fabric_lsp.fixes.confinement); unsafe: they change what the code does.
    alternatives: tuple[Fix, ...] = field(default=(), compare=False, hash=False)
    # Names that fill the record's runtime error message for this occurrence,
    # e.g. {"class": "TinyLM", "method": "generate"}.
    context: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    # Why it is wrong, one reason each (the runtime error, when it happens, what is missing): the
    # `note:` lines of the text output, the lines after the headline in an editor.
    notes: tuple[str, ...] = field(default=(), compare=False, hash=False)

    @property
    def full_message(self) -> str:
        """The headline on the first line, each reason on a line below it: the message of the JSON and
        SARIF outputs, CI annotations and the editor's diagnostic (one text everywhere, the headline first
        for whatever shows one line)."""
        headline, notes = headline_and_notes(self)
        return "\n".join((headline, *notes))

    @property
    def one_line_message(self) -> str:
        """The headline and its reasons on one line (outputs whose message cannot hold a line break)."""
        headline, notes = headline_and_notes(self)
        return headline + (": " + "; ".join(notes) if notes else "")

    @property
    def noqa_line(self) -> int:
        """0-based line on which a `# noqa` comment suppresses this finding."""
        return self.span.start.line


HEADLINE_WIDTH = 100  # a headline longer than this is split at its first clause boundary


def headline_and_notes(finding: Finding) -> tuple[str, tuple[str, ...]]:
    """The finding's headline and reasons. A rule that sets `notes` decides; otherwise a long message
    is split at its top-level `; ` and `: ` boundaries (outside backticks, quotes and brackets), so that
    every rule, also one written without notes, gets a short headline and each note is a whole reason."""
    if finding.notes or len(finding.message) <= HEADLINE_WIDTH:
        return finding.message, finding.notes
    parts = _clauses(finding.message, "; ")
    headline, notes = parts[0], parts[1:]
    if len(headline) > HEADLINE_WIDTH:
        split = _clauses(headline, ": ")
        if len(split) > 1 and len(split[0]) >= 10:
            headline, notes = split[0], [": ".join(split[1:])] + notes
    return headline, tuple(n for n in notes if n)


_OPENING, _CLOSING = "([{", ")]}"


def _clauses(text: str, separator: str) -> list[str]:
    """`text` split at `separator` where it is not inside backticks, double quotes or brackets: a
    parenthesis holds one reason (`(the project starts ... `fabric run`; started so, ... )`). A text
    whose brackets do not pair up (a stray `)` of prose) is split as if it had none."""
    parts = _split_outside(text, separator, brackets=True)
    return parts if parts is not None else _split_outside(text, separator, brackets=False)


def _split_outside(text: str, separator: str, brackets: bool) -> list[str] | None:
    """None when `brackets` and the text's brackets (outside code and quotes) are unbalanced."""
    parts, start, quote, depth, i = [], 0, None, 0, 0
    while i < len(text):
        char = text[i]
        if quote is not None:
            if char == quote:
                quote = None
        elif char in "`\"":
            quote = char
        elif brackets and char in _OPENING:
            depth += 1
        elif brackets and char in _CLOSING:
            depth -= 1
            if depth < 0:
                return None
        elif depth == 0 and text.startswith(separator, i):
            parts.append(text[start:i])
            start = i + len(separator)
            i = start
            continue
        i += 1
    if depth:
        return None
    parts.append(text[start:])
    return parts
