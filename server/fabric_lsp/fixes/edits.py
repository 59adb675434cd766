"""Applying fixes (TextEdits, possibly in several files) to text, without conflicts.

Positions are those of `fabric_lsp.findings`: 0-based line, 0-based column in code points. Lines
end at "\\n", "\\r\\n" or "\\r" only -- the line breaks of Python's tokenizer and `ast`, not the
wider set of `str.splitlines()` (form feed, U+2028, ... are ordinary characters inside a line).
As in LSP, a column past the end of its line means the end of the line, and a line past the end
of the text means the end of the text.

A fix is all-or-nothing: it is applied only when none of its edits overlaps an edit of a fix
already taken, so a half-applied fix never breaks the code. Identical edits (the same insertion
proposed by two findings) are applied once and count for both fixes. Insertions at the same point
are all applied, in the order their fixes were given.
"""

from __future__ import annotations

import bisect
import difflib
import re
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from fabric_lsp.findings import Fix, Position, TextEdit

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def line_starts(text: str) -> list[int]:
    """Offset of the first character of each line."""
    return [0] + [match.end() for match in _LINE_BREAK.finditer(text)]


def _line_end(text: str, starts: list[int], line: int) -> int:
    """Offset just before the line break of `line` (or the end of the text)."""
    if line + 1 < len(starts):
        end = starts[line + 1]
        return end - 2 if text[end - 2 : end] == "\r\n" else end - 1
    return len(text)


def offset_of(text: str, position: Position, starts: list[int] | None = None) -> int:
    starts = line_starts(text) if starts is None else starts
    if position.line < 0 or position.character < 0:
        raise ValueError(f"negative position {position}")
    if position.line >= len(starts):
        return len(text)
    return min(starts[position.line] + position.character, _line_end(text, starts, position.line))


def position_of(text: str, offset: int, starts: list[int] | None = None) -> Position:
    starts = line_starts(text) if starts is None else starts
    offset = max(0, min(offset, len(text)))
    line = bisect.bisect_right(starts, offset) - 1
    return Position(line, offset - starts[line])


def detect_newline(text: str) -> str:
    """The file's line ending (its first line break), "\\n" when it has none."""
    match = _LINE_BREAK.search(text)
    return match.group(0) if match else "\n"


@dataclass(frozen=True)
class _Placed:
    path: str
    start: int
    end: int
    new_text: str
    seq: int  # order of acceptance: breaks ties between insertions at one point

    @property
    def key(self) -> tuple[str, int, int, str]:
        return (self.path, self.start, self.end, self.new_text)

    def conflicts(self, other: _Placed) -> bool:
        if self.path != other.path or self.key == other.key:
            return False
        a, b = self, other
        if a.start == a.end and b.start == b.end:
            return False  # two insertions at one point (or apart): both apply
        if a.start == a.end:
            return b.start < a.start < b.end
        if b.start == b.end:
            return a.start < b.start < a.end
        return a.start < b.end and b.start < a.end


class OverlappingEdits(ValueError):
    pass


def apply_text_edits(text: str, edits: Sequence[TextEdit], newline: str | None = None) -> str:
    """Apply edits of one file, all against the original `text`. Overlapping edits raise
    OverlappingEdits; identical edits apply once. With `newline`, every "\\n" of the inserted text
    becomes that line ending (use `detect_newline(text)` to match the file)."""
    starts = line_starts(text)
    placed: list[_Placed] = []
    for seq, edit in enumerate(edits):
        start, end = offset_of(text, edit.start, starts), offset_of(text, edit.end, starts)
        if end < start:
            raise OverlappingEdits(f"edit ends before it starts: {edit}")
        item = _Placed("", start, end, edit.new_text, seq)  # one file: the paths do not matter
        if any(item.conflicts(other) for other in placed):
            raise OverlappingEdits(f"overlapping edit: {edit}")
        if all(item.key != other.key for other in placed):
            placed.append(item)
    return _splice(text, placed, newline)


def _splice(text: str, placed: list[_Placed], newline: str | None) -> str:
    pieces = []
    cursor = 0
    for item in sorted(placed, key=lambda p: (p.start, p.end, p.seq)):
        pieces.append(text[cursor : item.start])
        inserted = item.new_text
        if newline and newline != "\n":
            inserted = inserted.replace("\r\n", "\n").replace("\n", newline)
        pieces.append(inserted)
        cursor = item.end
    pieces.append(text[cursor:])
    return "".join(pieces)


@dataclass
class FixResult:
    texts: dict[str, str] = field(default_factory=dict)  # new text of each file that changed
    applied: list[int] = field(default_factory=list)  # indices of the fixes taken
    skipped: list[int] = field(default_factory=list)  # overlapping an earlier fix
    unavailable: dict[int, str] = field(default_factory=dict)  # index -> why it cannot apply


def apply_fixes(fixes: Sequence[Fix], texts: Mapping[str, str | None], match_newlines: bool = True) -> FixResult:
    """Apply as many of `fixes` as possible, in the given order, to `texts` (path -> current text;
    every path any edit names must be present, None for a file that cannot be read).

    A fix whose edits overlap an earlier fix's edits is skipped; one naming a missing file, or
    with edits overlapping each other, is unavailable. Inserted line breaks follow each file's
    own line ending when `match_newlines`.
    """
    result = FixResult()
    starts = {path: line_starts(text) for path, text in texts.items() if text is not None}
    accepted: list[_Placed] = []
    seq = 0
    for index, fix in enumerate(fixes):
        candidate: list[_Placed] = []
        reason = None
        for edit in fix.edits:
            text = texts.get(edit.path)
            if text is None:
                reason = f"cannot read {edit.path}" if edit.path in texts else f"{edit.path} not loaded"
                break
            start = offset_of(text, edit.start, starts[edit.path])
            end = offset_of(text, edit.end, starts[edit.path])
            if end < start:
                reason = "an edit ends before it starts"
                break
            item = _Placed(edit.path, start, end, edit.new_text, seq)
            seq += 1
            if any(item.conflicts(other) for other in candidate):
                reason = "its edits overlap each other"
                break
            candidate.append(item)
        if reason is not None:
            result.unavailable[index] = reason
            continue
        if any(item.conflicts(other) for item in candidate for other in accepted):
            result.skipped.append(index)
            continue
        keys = {other.key for other in accepted}
        accepted.extend(item for item in candidate if item.key not in keys)
        result.applied.append(index)
    by_path: dict[str, list[_Placed]] = {}
    for item in accepted:
        by_path.setdefault(item.path, []).append(item)
    for path, placed in by_path.items():
        text = texts[path]
        assert text is not None
        new_text = _splice(text, placed, detect_newline(text) if match_newlines else None)
        if new_text != text:
            result.texts[path] = new_text
    return result


def unified_diff(old: str, new: str, label: str) -> str:
    """A unified diff of one file (`--- a/label` / `+++ b/label`), with git's marker for a last
    line without a line break."""
    out = []
    for line in difflib.unified_diff(_keepends(old), _keepends(new), f"a/{label}", f"b/{label}"):
        if line.endswith(("\n", "\r")):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _keepends(text: str) -> list[str]:
    starts = line_starts(text)
    lines = [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]
    return [line for line in lines if line]
