"""A parsed Python file with position conversion (ast gives UTF-8 byte columns; we speak characters)."""

from __future__ import annotations

import ast
import os
import re
import sys
import threading
import warnings
from dataclasses import dataclass, field
from functools import cached_property

from fabric_lsp.findings import Position, Span
from fabric_lsp.sources.walk import read_source


_LINE_BREAK = re.compile(r"\r\n|\r|\n")

# Parsing the user's files makes CPython warn about their code (`"\k"`, `x is 1`) on stderr: the CLI's
# output and the editor's server log. What the code says is not this tool's business.
warnings.filterwarnings("ignore", category=SyntaxWarning)
warnings.filterwarnings("ignore", message=r"invalid (escape sequence|octal escape sequence)", category=DeprecationWarning)


def newer_syntax_reason(running: str, blanked: list[str]) -> str:
    """The notice of a file parsed with the syntax of a newer Python blanked (NEWER_SYNTAX reads it back)."""
    return f"uses syntax newer than Python {running}, which runs fabric-lsp: analysed with the {' and '.join(blanked)} left out"


# The notice of newer_syntax_reason: the running Python, and what was left out (joined by " and ").
NEWER_SYNTAX = re.compile(r"uses syntax newer than Python (?P<running>\d+\.\d+), which runs fabric-lsp: "
                          r"analysed with the (?P<blanked>.+) left out")


@dataclass(eq=False)
class SourceFile:
    path: str
    text: str = field(repr=False)
    tree: ast.Module | None = field(default=None, repr=False)
    syntax_error: str | None = None
    newer_syntax: str | None = None  # what was left out to parse syntax of a newer Python
    _line_cache: dict[int, str] = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, path: str, text: str) -> "SourceFile":
        source = cls(path=os.path.abspath(path), text=text)
        try:
            source.tree = ast.parse(text, filename=path)
        except SyntaxError as exc:
            source.syntax_error = f"{type(exc).__name__}: {exc}"
            source._parse_newer_syntax()
        except (ValueError, RecursionError, MemoryError) as exc:
            # ValueError: NUL bytes; RecursionError: absurdly deep nesting.
            source.syntax_error = f"{type(exc).__name__}: {exc}"
        return source

    def _parse_newer_syntax(self) -> None:
        """Syntax of a newer Python than this one: parsed with it blanked (analysis/compat.py)."""
        from fabric_lsp.analysis.compat import neutralize

        found = neutralize(self.text)
        if found is None:
            return
        text, blanked = found
        try:
            self.tree = ast.parse(text, filename=self.path)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return
        self.syntax_error = None
        self.newer_syntax = newer_syntax_reason(f"{sys.version_info.major}.{sys.version_info.minor}", blanked)

    @cached_property
    def lines(self) -> list[str]:
        # Only the line breaks the tokenizer knows: str.splitlines() also breaks at \f, \x1c, U+2028...
        return _LINE_BREAK.split(self.text) if self.text else [""]

    def line(self, lineno: int) -> str:
        """1-based line text without its line break ('' past the end)."""
        if 1 <= lineno <= len(self.lines):
            return self.lines[lineno - 1]
        return ""

    def char_col(self, lineno: int, byte_col: int) -> int:
        line = self.line(lineno)
        if line.isascii():
            return byte_col
        return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))

    def start(self, node: ast.AST) -> Position:
        return Position(node.lineno - 1, self.char_col(node.lineno, node.col_offset))

    def end(self, node: ast.AST) -> Position:
        end_line = node.end_lineno or node.lineno
        end_col = node.end_col_offset if node.end_col_offset is not None else node.col_offset
        return Position(end_line - 1, self.char_col(end_line, end_col))

    def span(self, node: ast.AST) -> Span:
        return Span(self.path, self.start(node), self.end(node))

    def span_of_name_in(self, node: ast.AST, name: str) -> Span:
        """Span of the identifier `name` inside node's first line (e.g. a class name, an attribute)."""
        if isinstance(node, ast.Attribute):
            end = self.end(node)
            return Span(self.path, Position(end.line, end.character - len(name)), end)
        line_text = self.line(node.lineno)
        start_char = self.char_col(node.lineno, node.col_offset)
        keyword = {ast.ClassDef: "class", ast.FunctionDef: "def", ast.AsyncFunctionDef: "def"}.get(type(node))
        search_from = start_char
        if keyword:
            search_from = line_text.find(keyword, start_char) + len(keyword)
        index = line_text.find(name, max(search_from, 0))
        if index < 0:
            return self.span(node)
        return Span(self.path, Position(node.lineno - 1, index), Position(node.lineno - 1, index + len(name)))

    @cached_property
    def _line_offsets(self) -> list[int]:
        """Offset of each line's first character in `text` (same line breaks as `lines`)."""
        offsets = [0]
        offsets.extend(match.end() for match in _LINE_BREAK.finditer(self.text))
        return offsets

    def segment(self, node: ast.AST) -> str:
        # Same text as ast.get_source_segment, without splitting the whole file on every call.
        end_lineno, end_col = getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None)
        if end_lineno is None or end_col is None or getattr(node, "lineno", None) is None:
            return ""
        offsets = self._line_offsets
        if not (1 <= node.lineno <= end_lineno <= len(offsets)):
            return ""
        start = offsets[node.lineno - 1] + self.char_col(node.lineno, node.col_offset)
        end = offsets[end_lineno - 1] + self.char_col(end_lineno, end_col)
        return self.text[start:end]

    def indentation(self, lineno: int) -> str:
        line = self.line(lineno)
        return line[: len(line) - len(line.lstrip(" \t"))]


MAX_IMPORTED_FILE_SIZE = 4 * 1024 * 1024
_parse_lock = threading.Lock()
_parsed_files: dict[str, tuple[tuple[int, int, int, int], SourceFile]] = {}


def parse_file(path: str) -> SourceFile | None:
    """Parse a file from disk, cached by file identity. Used for modules other than the one checked."""
    path = os.path.abspath(path)
    try:
        stat = os.stat(path)
    except OSError:
        return None
    # ctime and inode too: `cp -p`, `rsync -t`, `touch -r` set an old mtime back on new content.
    identity = (stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size, stat.st_ino)
    with _parse_lock:
        cached = _parsed_files.get(path)
        if cached and cached[0] == identity:
            return cached[1]
    decoded, _ = read_source(path, MAX_IMPORTED_FILE_SIZE)
    if decoded is None:
        return None  # unreadable, binary, undecodable or huge: such a module tells us nothing
    source = SourceFile.parse(path, decoded.text)
    with _parse_lock:
        _parsed_files[path] = (identity, source)
    return source
