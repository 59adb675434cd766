"""Jupyter notebooks as one Python text, the way the kernel runs them.

The code cells are joined in order into one analysis unit (a cell defines what a later cell uses,
as in the kernel). IPython syntax that is not Python (line magics `%x`, shell escapes `!x`, help
`x?`, cell magics `%%x`) is neutralised without moving anything: every character keeps its line and
column, so a finding in the joined text maps straight back to its cell. Cells are separated by one
empty line, which belongs to no cell: an edit inserted there ("after the last line of cell 2") goes to
the end of the cell before it, an edit at the first line of a cell to that cell.

`read_notebook` reads an `.ipynb` file (nbformat 4); `join_cells` is shared with the language server,
which receives the cells' texts from the client. `NotebookFile.updated` writes changed cells back
into the original JSON text, leaving every other byte as it was (indentation, key order, escapes,
trailing newline, outputs and metadata).
"""

from __future__ import annotations

import ast
import bisect
import json
import re
import textwrap
import threading
from dataclasses import dataclass, field
from typing import Callable

from fabric_lsp.findings import Position

NOTEBOOK_SUFFIXES = (".ipynb",)

# Cell magics whose body is Python that the kernel runs (the body is analysed; the magic line is not).
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
PYTHON_LANGUAGES = frozenset({"python", "python3", "ipython", "ipython3"})

_ASSIGNED_MAGIC = re.compile(r"^(\s*[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*)([!%])")
_HELP = re.compile(r"^\s*(\?{1,2}[\w.*]+|[\w.*]+\?{1,2})\s*$")


def is_notebook_path(path: str) -> bool:
    return path.endswith(NOTEBOOK_SUFFIXES)


def utf8_size(text: str) -> int:
    """`text`'s size in UTF-8 bytes; encodes only when it is not ASCII."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


# ---------------------------------------------------------------------------------------------
# Neutralising IPython syntax


def neutralise(text: str) -> str:
    """`text` (one cell) with IPython-only syntax turned into Python of the same shape: a magic or
    shell line becomes `0#...` (an expression and a comment, so a block holding only it still
    parses), a line continuing it a comment, a non-Python cell magic's whole cell comments."""
    lines = text.split("\n")
    first = lines[0].lstrip() if lines else ""
    if first.startswith("%%"):
        name = first[2:].split(None, 1)[0] if first[2:].strip() else ""
        if name in PYTHON_CELL_MAGICS:
            lines[0] = _commented(lines[0])
            return _neutralise_lines(lines, 1)
        return "\n".join(_commented(line) for line in lines)
    return _neutralise_lines(lines, 0)


def _commented(line: str) -> str:
    stripped = len(line) - len(line.lstrip())
    return line if stripped == len(line) else line[:stripped] + "#" + line[stripped + 1:]


def _as_expression(line: str, at: int) -> str:
    """The magic starting at column `at` replaced by `0#` and the rest of its characters."""
    rest = line[at:]
    return line[:at] + ("0#" + rest[2:] if len(rest) >= 2 else "0")


def _neutralise_lines(lines: list[str], start: int) -> str:
    """IPython rewrites escapes only where a logical line starts (never inside brackets, a string or
    after a backslash): `print("%d"\n      % x)` is Python. The lines are scanned for that state."""
    scanner = _LogicalLines()
    continued = False  # the previous line was a magic ending with a backslash
    for number in range(start, len(lines)):
        line = lines[number]
        if continued:
            lines[number] = _commented(line) if line.strip() else line
            continued = line.endswith("\\")
            continue
        if scanner.at_start:
            replaced = _escape_replaced(line)
            if replaced is not None:
                lines[number] = replaced
                continued = line.endswith("\\")
                continue
        scanner.feed(line)
    return "\n".join(lines)


# Line magics whose argument is a statement the kernel runs (`%time x = model.generate(...)`).
_STATEMENT_MAGICS = re.compile(r"^%(?:time|timeit)(?:\s+-[a-z]+(?:\s*\d+)?)*\s+(?=\S)")
# Automagic: IPython runs `pip install x`, `cd dir` as magics when the line is not Python.
_AUTOMAGICS = frozenset({
    "pip", "conda", "mamba", "cd", "ls", "cat", "mkdir", "rmdir", "rm", "cp", "mv", "env", "set_env", "load_ext",
    "reload_ext", "matplotlib", "autoreload", "run", "who", "whos", "reset", "history", "less", "more", "man",
    "clear", "alias", "config", "pushd", "popd", "bookmark", "store", "writefile", "pwd", "dhist",
})


def _escape_replaced(line: str) -> str | None:
    """The line with its IPython escape neutralised, or None when it is Python."""
    stripped = line.lstrip()
    at = len(line) - len(stripped)
    if stripped[:1] == "%":
        statement = _STATEMENT_MAGICS.match(stripped)
        if statement is not None:  # `%time x = f()` -> `0;    x = f()`: the statement is analysed
            width = statement.end()
            rewritten = line[:at] + "0;" + " " * (width - 2) + stripped[width:]
            if _parses(rewritten.strip()):
                return rewritten
        return _as_expression(line, at)
    if stripped[:1] == "!":
        return _as_expression(line, at)
    match = _ASSIGNED_MAGIC.match(line)
    if match is not None:
        return _as_expression(line, match.end(1))
    if _HELP.match(line):
        return _as_expression(line, at)
    # Automagic: a magic's name, then its arguments, on a line that is whole (no bracket left open:
    # `run = neptune.init_run(` starts a call) and is not Python.
    word = stripped.split(None, 1)[0] if stripped else ""
    rest = stripped[len(word):].lstrip()
    if word in _AUTOMAGICS and rest and not rest.startswith("=") and stripped[len(word)].isspace():
        whole = _LogicalLines()
        whole.feed(line)
        if whole.at_start and not _parses(stripped):
            return _as_expression(line, at)
    return None


def _syntax_problem(text: str) -> str | None:
    """Why a cell does not parse, None when it does. A cell in the syntax of a newer Python than this
    one parses (it is analysed with that syntax blanked, as a file is: analysis/compat.py)."""
    from fabric_lsp.analysis.compat import own_syntax_error

    try:
        ast.parse(text)
    except SyntaxError:
        error = own_syntax_error(text, ast.parse)
        if error is None:
            return None
        return f"{error.msg} (line {error.lineno})" if error.lineno else str(error.msg)
    except (ValueError, MemoryError, RecursionError) as error:
        return type(error).__name__
    return None


def _parses(text: str) -> bool:
    return _syntax_problem(text) is None


class _LogicalLines:
    """Feeds physical lines; `at_start` tells whether the next one starts a logical line (not
    inside brackets, a string, or after a backslash)."""

    def __init__(self) -> None:
        self.depth = 0
        self.quote: str | None = None  # the open string's delimiter (' " \'\'\' or \"\"\")
        self.backslash = False

    @property
    def at_start(self) -> bool:
        return self.depth == 0 and self.quote is None and not self.backslash

    def feed(self, line: str) -> None:
        self.backslash = False
        index, size = 0, len(line)
        while index < size:
            char = line[index]
            if self.quote is not None:
                if char == "\\":
                    index += 2
                    continue
                if line.startswith(self.quote, index):
                    index += len(self.quote)
                    self.quote = None
                    continue
                index += 1
                continue
            if char == "#":
                return
            if char in "'\"":
                triple = char * 3
                self.quote = triple if line.startswith(triple, index) else char
                index += len(self.quote)
                continue
            if char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(0, self.depth - 1)
            elif char == "\\" and index == size - 1:
                self.backslash = True
            index += 1
        if self.quote is not None and len(self.quote) == 1 and not line.endswith("\\"):
            self.quote = None  # an unterminated one-line string ends with its line (a syntax error)


# ---------------------------------------------------------------------------------------------
# Joining cells


@dataclass(frozen=True)
class CellSpan:
    number: int  # 1-based position of the cell in the notebook, every kind of cell counted (ruff's)
    first_line: int  # 0-based line of the joined text where the cell starts
    line_count: int  # lines of the cell (a last line without newline counts)
    text: str  # the cell's text as given (magics and all)


@dataclass(frozen=True)
class LeftOutCell:
    number: int
    problem: str  # "invalid syntax (line 2)"
    dedented_parses: bool  # indented as a whole: IPython dedents it and runs it (no syntax error)

    def __str__(self) -> str:
        return f"cell {self.number}: {self.problem}"


@dataclass(frozen=True)
class JoinedCells:
    """The analysis unit of a notebook: the neutralised code cells joined, and where each cell is."""

    text: str
    cells: tuple[CellSpan, ...]
    _starts: tuple[int, ...] = field(default=(), compare=False, repr=False)
    # Cells left out because they do not parse on their own (the kernel compiles each cell alone and
    # fails only that one).
    left_out: tuple[LeftOutCell, ...] = ()

    def cell_at(self, line: int) -> tuple[CellSpan, bool] | None:
        """The cell holding joined `line` (0-based), and whether the line is the separator after it."""
        index = bisect.bisect_right(self._starts, line) - 1
        if index < 0:
            return None
        cell = self.cells[index]
        if line < cell.first_line + cell.line_count:
            return cell, False
        if line == cell.first_line + cell.line_count:
            return cell, True
        return None

    def to_cell(self, position: Position) -> tuple[CellSpan, Position] | None:
        """Joined position -> (cell, position in the cell). The separator line after a cell maps to
        the end of that cell."""
        found = self.cell_at(position.line)
        if found is None:
            return None
        cell, separator = found
        if separator:
            lines = cell.text.split("\n")
            return cell, Position(len(lines) - 1, len(lines[-1]))
        return cell, Position(position.line - cell.first_line, position.character)

    def to_joined(self, number: int, position: Position) -> Position | None:
        for cell in self.cells:
            if cell.number == number:
                return Position(cell.first_line + position.line, position.character)
        return None

    def cell(self, number: int) -> CellSpan | None:
        return next((cell for cell in self.cells if cell.number == number), None)


def join_cells(cells: list[tuple[int, str]]) -> JoinedCells:
    """(cell number, cell text) of the code cells, in order -> the joined, neutralised text."""
    parts: list[str] = []
    spans: list[CellSpan] = []
    left_out: list[LeftOutCell] = []
    line = 0
    for number, text in cells:
        body = neutralise(text)
        problem = _syntax_problem(body)
        if problem is not None:
            left_out.append(LeftOutCell(number, problem, _parses(textwrap.dedent(body))))
            body = "\n".join(_commented(row) for row in body.split("\n"))
        if body.endswith("\n"):
            body = body[:-1]
        count = body.count("\n") + 1
        spans.append(CellSpan(number, line, count, text))
        parts.append(body + "\n\n")  # the cell's last line ends; then the separator line
        line += count + 1
    joined = JoinedCells("".join(parts), tuple(spans), tuple(span.first_line for span in spans), tuple(left_out))
    with _layouts_lock:
        _layouts[joined.text] = joined
        while len(_layouts) > _MAX_LAYOUTS:
            _layouts.pop(next(iter(_layouts)))
    return joined


# The cells of the joined texts made lately, by text: a rule's message that names a place in a
# notebook ("wrapped at nb.ipynb:cell 2:4") finds the cells of the text it analysed.
_layouts: dict[str, JoinedCells] = {}
_layouts_lock = threading.Lock()
_MAX_LAYOUTS = 64


def layout_of(text: str) -> JoinedCells | None:
    with _layouts_lock:
        return _layouts.get(text)


# ---------------------------------------------------------------------------------------------
# Edits


@dataclass(frozen=True)
class CellEdit:
    number: int
    start: Position  # in the cell
    end: Position
    new_text: str


class SpansCells(ValueError):
    """An edit that starts in one cell and ends in another: not applied."""


def cell_edit(joined: JoinedCells, start: Position, end: Position, new_text: str) -> CellEdit:
    """A joined-text edit as an edit of one cell. An insertion on the separator line after a cell is
    appended to that cell (on a new line when the cell's text does not end with one)."""
    begin = joined.to_cell(start)
    finish = joined.to_cell(end)
    if begin is None or finish is None or begin[0].number != finish[0].number:
        raise SpansCells(f"the edit spans cells ({start.line + 1} -> {end.line + 1} of the joined text)")
    cell, cell_start = begin
    separator = joined.cell_at(start.line)[1]
    if separator and start == end and new_text:
        ends_with_newline = cell.text.endswith("\n")
        if not ends_with_newline:
            new_text = "\n" + (new_text[:-1] if new_text.endswith("\n") else new_text)
    return CellEdit(cell.number, cell_start, finish[1], new_text)


def apply_cell_edits(text: str, edits: list[CellEdit]) -> str:
    """Apply non-overlapping edits of one cell (positions in characters)."""
    lines = text.split("\n")
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)

    def offset(position: Position) -> int:
        if position.line >= len(lines):
            return len(text)
        return starts[position.line] + min(position.character, len(lines[position.line]))

    for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        text = text[: offset(edit.start)] + edit.new_text + text[offset(edit.end):]
    return text


# ---------------------------------------------------------------------------------------------
# .ipynb files


class NotebookError(ValueError):
    """Why a file is not a notebook this tool can read (one line, for a notice)."""


@dataclass(frozen=True)
class RawCell:
    index: int  # 0-based among all cells
    kind: str  # "code", "markdown", "raw"
    source: str  # joined
    source_span: tuple[int, int]  # offsets of the `source` value in the JSON text
    source_is_list: bool
    python: bool  # analysed (a code cell of a Python notebook, not tagged with another language)


@dataclass(frozen=True)
class NotebookFile:
    path: str
    json_text: str
    cells: tuple[RawCell, ...]
    python: bool  # the notebook's language is Python (or not stated)
    writable: bool  # every code cell's source is a list of lines, as Jupyter writes it
    warning: str | None = None  # read, but said once (e.g. a string source: checked, not fixed)

    @property
    def code_size(self) -> int:
        """The analysed code cells' size in bytes (UTF-8): what `max-file-size` limits, checked
        before they are joined (joining neutralises and parses every cell)."""
        return sum(utf8_size(cell.source) for cell in self.cells if cell.python)

    def joined(self) -> JoinedCells:
        """The code cells joined (join_cells: each cell parsed alone), made once per notebook."""
        joined = self.__dict__.get("_joined")
        if joined is None:
            joined = join_cells([(cell.index + 1, cell.source) for cell in self.cells if cell.python])
            object.__setattr__(self, "_joined", joined)  # a frozen dataclass: a cache, not state
        return joined

    @property
    def ascii_only(self) -> bool:
        """Whether the file escapes non-ASCII characters (json.dumps(ensure_ascii=True)'s style)."""
        return self.json_text.isascii() and "\\u" in self.json_text

    def updated(self, sources: dict[int, str]) -> str:
        """The JSON text with the cells `sources` (cell number -> new text) replaced and nothing
        else changed."""
        text = self.json_text
        style = _list_style(self)
        for cell in sorted(self.cells, key=lambda c: c.source_span, reverse=True):
            number = cell.index + 1
            if number not in sources or sources[number] == cell.source:
                continue
            start, end = cell.source_span
            text = text[:start] + _source_json(sources[number], text[start:end], style) + text[end:]
        return text


def read_notebook(path: str, data: bytes) -> NotebookFile:
    """Parse an .ipynb file; NotebookError (one line) when it is not a notebook we can read. The
    JSON is decoded once, by the scanner that also finds where each cell's `source` is; the cells
    are not joined here (NotebookFile.joined), so a caller can refuse them by `code_size` first."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise NotebookError(f"not a notebook: not UTF-8 (invalid byte at offset {error.start})") from None
    try:
        document, spans = _scan_notebook(text)
    except RecursionError:
        raise NotebookError("not a notebook: JSON nested too deeply") from None
    except (ValueError, IndexError):  # not a JSON object as the scanner reads it: json says why
        document, spans = _decode_for_error(text), None
    if not isinstance(document, dict) or "cells" not in document:
        if isinstance(document, dict) and "worksheets" in document:
            raise NotebookError(f"nbformat {document.get('nbformat', 3)} notebook (only nbformat 4 is read; "
                                "convert it with `jupyter nbconvert --to notebook`)")
        raise NotebookError("not a notebook: no `cells` list")
    nbformat = document.get("nbformat")
    if nbformat != 4:
        raise NotebookError(f"nbformat {nbformat!r} notebook (only nbformat 4 is read)")
    cells = document["cells"]
    if not isinstance(cells, list):
        raise NotebookError("not a notebook: `cells` is not a list")
    if spans is None or len(spans) != len(cells):  # pragma: no cover - the scanner and json disagree
        raise NotebookError("not a notebook: cells could not be located")
    metadata = document.get("metadata") if isinstance(document.get("metadata"), dict) else {}
    language = _notebook_language(metadata)
    python = language is None or language in PYTHON_LANGUAGES
    raw_cells = []
    writable = True
    warning = None
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict) or not isinstance(cell.get("cell_type"), str):
            raise NotebookError(f"cell {index + 1} is not a cell (no `cell_type`)")
        if "source" not in cell or spans[index] is None:
            raise NotebookError(f"cell {index + 1} has no `source`")
        source = cell["source"]
        if isinstance(source, str):
            is_list = False
            joined = source
        elif isinstance(source, list) and all(isinstance(line, str) for line in source):
            is_list = True
            joined = "".join(source)
        else:
            raise NotebookError(f"cell {index + 1}: `source` is neither a list of lines nor a string")
        kind = cell["cell_type"]
        cell_language = _cell_language(cell)
        analysed = kind == "code" and python and (cell_language is None or cell_language in PYTHON_LANGUAGES)
        if analysed and not is_list:
            writable = False
            warning = warning or (f"cell {index + 1}: `source` is a string, not a list of lines (Jupyter writes "
                                  "lists): checked, but no fix is written to this notebook")
        raw_cells.append(RawCell(index, kind, joined, spans[index], is_list, analysed))
    return NotebookFile(path, text, tuple(raw_cells), python, writable, warning)


def _decode_for_error(text: str) -> object:
    """What json makes of a text the scanner could not read: its error as a NotebookError (or the
    value, when it is valid JSON but not an object)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise NotebookError(f"not a notebook: invalid JSON ({error.msg} at line {error.lineno} column {error.colno})") from None
    except RecursionError:
        raise NotebookError("not a notebook: JSON nested too deeply") from None


def _notebook_language(metadata: dict) -> str | None:
    for key, field_name in (("language_info", "name"), ("kernelspec", "language")):
        value = metadata.get(key)
        if isinstance(value, dict) and isinstance(value.get(field_name), str):
            return value[field_name].lower()
    return None


def _cell_language(cell: dict) -> str | None:
    metadata = cell.get("metadata")
    if isinstance(metadata, dict):
        vscode = metadata.get("vscode")
        if isinstance(vscode, dict) and isinstance(vscode.get("languageId"), str):
            return vscode["languageId"].lower()
    return None


# The JSON scanner: where each cell's `source` value is in the text (json gives values, not places).

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_SPACES = " \t\n\r"
_decoder = json.JSONDecoder()


_scanstring = json.decoder.scanstring


def _skip(text: str, at: int) -> int:
    """The first position from `at` that is not JSON whitespace (most often `at` itself)."""
    if at < len(text) and text[at] not in _SPACES:
        return at
    return _WHITESPACE.match(text, at).end()


def _scan_notebook(text: str) -> tuple[dict, list[tuple[int, int] | None]]:
    """The top-level JSON object with each value decoded once, and where each cell's `source` value
    is in the text (json gives values, not places). ValueError (json's JSONDecodeError included) or
    IndexError when the text is not one JSON object."""
    document: dict = {}
    spans: list[tuple[int, int] | None] = []

    def top(key: str, start: int) -> int:
        nonlocal spans
        if key != "cells" or text[start] != "[":
            document[key], end = _decoder.raw_decode(text, start)
            return end
        cells: list = []
        spans = []
        document[key] = cells
        return _array(text, start, lambda at: _cell(text, at, cells, spans))

    end = _object(text, _skip(text, 0), top)
    if _skip(text, end) != len(text):
        raise ValueError("extra data after the object")
    return document, spans


def _cell(text: str, start: int, cells: list, spans: list) -> int:
    """Decode the cell at `start` into `cells`, and where its `source` value is into `spans`."""
    if text[start] != "{":
        value, end = _decoder.raw_decode(text, start)
        cells.append(value)
        spans.append(None)
        return end
    cell: dict = {}
    span = None

    def member(key: str, value_start: int) -> int:
        nonlocal span
        cell[key], end = _decoder.raw_decode(text, value_start)
        if key == "source":
            span = (value_start, end)
        return end

    end = _object(text, start, member)
    cells.append(cell)
    spans.append(span)
    return end


def _object(text: str, at: int, member: Callable[[str, int], int]) -> int:
    """Walk the JSON object at `at`: `member(key, value start)` decodes a value and returns where
    it ends. Returns where the object ends."""
    if text[at] != "{":
        raise ValueError("expected an object")
    at = _skip(text, at + 1)
    if text[at] == "}":
        return at + 1
    while True:
        if text[at] != '"':
            raise ValueError("expected a key")
        key, at = _scanstring(text, at + 1)
        if text[at] != ":":
            at = _skip(text, at)
            if text[at] != ":":
                raise ValueError("expected a colon")
        at = member(key, _skip(text, at + 1))
        if text[at] not in "},":
            at = _skip(text, at)
        if text[at] == "}":
            return at + 1
        if text[at] != ",":
            raise ValueError("expected a comma")
        at = _skip(text, at + 1)


def _array(text: str, at: int, element: Callable[[int], int]) -> int:
    """Walk the JSON array at `at`: `element(start)` decodes an element and returns where it ends."""
    at = _skip(text, at + 1)
    if text[at] == "]":
        return at + 1
    while True:
        at = element(at)
        if text[at] not in "],":
            at = _skip(text, at)
        if text[at] == "]":
            return at + 1
        if text[at] != ",":
            raise ValueError("expected a comma")
        at = _skip(text, at + 1)


def _elements(text: str, at: int):
    """(start, end) of each element of the JSON array at `at`."""
    at = _skip(text, at + 1)
    if text[at] == "]":
        return
    while True:
        _, end = _decoder.raw_decode(text, at)
        yield at, end
        at = _skip(text, end)
        if text[at] == "]":
            return
        at = _skip(text, at + 1)


def _lines(source: str) -> list[str]:
    """Jupyter's lines: split after each "\n" only (not at "\r" or form feeds)."""
    parts = source.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


@dataclass(frozen=True)
class _ListStyle:
    opening: str  # between "[" and the first line, e.g. "\n    "
    closing: str  # between the last line and "]", e.g. "\n   "
    ascii_only: bool


def _list_style(notebook: NotebookFile) -> _ListStyle:
    opening, closing = "\n    ", "\n   "  # Jupyter's (indent=1), for a notebook without any non-empty list
    for cell in notebook.cells:
        start, end = cell.source_span
        value = notebook.json_text[start:end]
        if cell.source_is_list and value != "[]":
            opening, closing = _delimiters(value)
            break
    return _ListStyle(opening, closing, notebook.ascii_only)


def _delimiters(value: str) -> tuple[str, str]:
    """The whitespace after `[` and before `]` of a non-empty JSON list."""
    first = _skip(value, 1)
    last = len(value.rstrip("]").rstrip(" \t\n\r"))
    return value[1:first], value[last:-1]


def _source_json(source: str, original: str, style: _ListStyle) -> str:
    if not original.startswith("["):
        return json.dumps(source, ensure_ascii=style.ascii_only)
    lines = _lines(source)
    if not lines:
        return "[]"
    opening, closing = _delimiters(original) if original != "[]" else (style.opening, style.closing)
    separator = "," + opening
    return "[" + opening + separator.join(json.dumps(line, ensure_ascii=style.ascii_only) for line in lines) + closing + "]"


# ---------------------------------------------------------------------------------------------
# Where a finding is, for reports


class NotebookLocator:
    """Positions of a notebook's joined text as (cell number, position in the cell), and as a place
    in the .ipynb file itself (for consumers that show the raw file: SARIF, GitHub annotations)."""

    def __init__(self, notebook: NotebookFile) -> None:
        self.notebook = notebook
        self.joined = notebook.joined()
        self._line_starts: list[int] | None = None
        self._elements: dict[int, list[int]] = {}

    def cell_position(self, position: Position) -> tuple[int | None, Position]:
        found = self.joined.to_cell(position)
        if found is None:
            return None, position
        return found[0].number, found[1]

    def file_position(self, position: Position) -> Position:
        """The place in the JSON text of the character at joined `position`: the line holding that
        source line's string, the column of the character inside it (escapes counted)."""
        number, inside = self.cell_position(position)
        if number is None:
            return Position(0, 0)
        cell = self.notebook.cells[number - 1]
        start, _ = cell.source_span
        lines = _lines(cell.source)
        ascii_only = self.notebook.ascii_only
        if cell.source_is_list:
            offsets = self._element_offsets(number - 1, start)
            if not offsets:
                return self._position_of(start)
            index = min(inside.line, len(offsets) - 1)
            line_text = lines[index] if index < len(lines) else ""
            prefix = line_text[: inside.character]
            return self._position_of(offsets[index] + 1 + len(json.dumps(prefix, ensure_ascii=ascii_only)) - 2)
        before = "".join(lines[: inside.line]) + (lines[inside.line][: inside.character] if inside.line < len(lines) else "")
        return self._position_of(start + 1 + len(json.dumps(before, ensure_ascii=ascii_only)) - 2)

    def _element_offsets(self, index: int, start: int) -> list[int]:
        if index not in self._elements:
            self._elements[index] = [at for at, _ in _elements(self.notebook.json_text, start)]
        return self._elements[index]

    def _position_of(self, offset: int) -> Position:
        if self._line_starts is None:
            text, starts = self.notebook.json_text, [0]
            at = text.find("\n")
            while at != -1:
                starts.append(at + 1)
                at = text.find("\n", at + 1)
            self._line_starts = starts
        line = bisect.bisect_right(self._line_starts, offset) - 1
        return Position(line, offset - self._line_starts[line])
