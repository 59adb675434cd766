"""Positions between the findings' convention (0-based line, column in code points) and LSP's
(column in the negotiated encoding's code units: utf-8 bytes, utf-16 units or utf-32 code points).

Lines end at "\\n", "\\r\\n" or "\\r" only, as in LSP and in Python's tokenizer (not at form feeds,
U+2028... which `str.splitlines()` would also break at).
"""

from __future__ import annotations

from lsprotocol import types

from fabric_lsp.fixes.edits import line_starts, offset_of
from fabric_lsp.findings import Position

UTF8 = "utf-8"
UTF16 = "utf-16"
UTF32 = "utf-32"
ENCODINGS = (UTF8, UTF16, UTF32)


def encoding_name(kind: object) -> str:
    """The negotiated encoding as one of ENCODINGS (pygls may hand over the enum or its value)."""
    value = getattr(kind, "value", kind)
    return value if value in ENCODINGS else UTF16


def units(text: str, encoding: str) -> int:
    """Length of `text` in the encoding's code units."""
    if encoding == UTF32 or text.isascii():
        return len(text)
    if encoding == UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _char_units(char: str, encoding: str) -> int:
    code = ord(char)
    if encoding == UTF8:
        return 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4
    if encoding == UTF16:
        return 2 if code > 0xFFFF else 1
    return 1


class LineIndex:
    """Line starts of one text, for converting positions both ways."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = line_starts(text)

    @property
    def line_count(self) -> int:
        return len(self.starts)

    def line(self, number: int) -> str:
        """Text of 0-based line `number` without its line break ('' past the end)."""
        if number < 0 or number >= len(self.starts):
            return ""
        start = self.starts[number]
        if number + 1 < len(self.starts):
            end = self.starts[number + 1]
            end -= 2 if self.text[end - 2 : end] == "\r\n" else 1
        else:
            end = len(self.text)
        return self.text[start:end]

    def end_position(self) -> Position:
        last = len(self.starts) - 1
        return Position(last, len(self.line(last)))

    # -- findings -> LSP ------------------------------------------------------------------------
    def to_lsp(self, position: Position, encoding: str) -> types.Position:
        if position.line >= len(self.starts):
            position = self.end_position()
        line = self.line(position.line)
        character = min(max(position.character, 0), len(line))
        return types.Position(line=position.line, character=units(line[:character], encoding))

    def range_to_lsp(self, start: Position, end: Position, encoding: str) -> types.Range:
        return types.Range(start=self.to_lsp(start, encoding), end=self.to_lsp(end, encoding))

    # -- LSP -> findings ------------------------------------------------------------------------
    def from_lsp(self, position: types.Position, encoding: str) -> Position:
        """Code-point position; past the end of a line is its end, past the last line the text's end.
        A column inside a multi-unit character (which clients should not send) means its start."""
        if position.line >= len(self.starts):
            return self.end_position()
        line = self.line(position.line)
        target = max(position.character, 0)
        if encoding == UTF32 or line.isascii():
            return Position(position.line, min(target, len(line)))
        count = 0
        for index, char in enumerate(line):
            step = _char_units(char, encoding)
            if count + step > target:
                return Position(position.line, index)
            count += step
        return Position(position.line, len(line))

    def offset(self, position: Position) -> int:
        return offset_of(self.text, position, self.starts)

    def offset_from_lsp(self, position: types.Position, encoding: str) -> int:
        return self.offset(self.from_lsp(position, encoding))
