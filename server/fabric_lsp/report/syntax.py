"""`invalid-syntax`: a checked file that does not parse is reported like a finding, as ruff does.

The entry has code `invalid-syntax`, severity error, the parser's message and the place of the error
(line and column from the parser; in a notebook the cell's, through the joined text). It takes no
part in `select`/`ignore` and `# noqa` cannot suppress it (neither can ruff's). A Python file is
compiled as the interpreter would before running it (`compile(..., "exec")`: the parser's errors and
those of the compiler's checks, such as `return` outside a function); syntax of a newer Python than
the one running fabric-lsp, which the analysis reads with that syntax blanked (analysis/compat.py),
is not an error. A notebook's code cells are parsed one by one (the kernel compiles each cell alone):
only the cells left out of the analysis because they do not parse are reported, not one that parses
once dedented (IPython dedents a cell indented as a whole); the entry's `context["cell"]` names its cell.
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import replace
from typing import Iterable

from fabric_lsp.findings import Finding, Position, Severity, Span

CODE = "invalid-syntax"
NAME = "invalid-syntax"
SUMMARY = "The file does not parse: Python refuses to run it."

_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # the tokenizer's line ends (the parser's line numbers count them)


def is_syntax_finding(finding: Finding) -> bool:
    return finding.code == CODE


def syntax_findings(path: str, text: str, notebook=None) -> tuple[Finding, ...]:
    """The `invalid-syntax` entries of a file read as `text` (a notebook: its joined code cells, with
    `notebook` its fabric_lsp.notebook.NotebookFile)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarnings about the user's code are not ours to print
        if notebook is not None:
            return _notebook_findings(path, text, notebook)
        error = _python_error(path, text)
    return () if error is None else (_finding(path, error, _LINE_BREAK.split(text), 0),)


def _python_error(path: str, text: str) -> SyntaxError | None:
    try:
        compile(text, path, "exec", dont_inherit=True)
    except SyntaxError as error:
        if _newer_syntax(text, error.lineno):
            return None
        return error
    except (ValueError, MemoryError, RecursionError, OverflowError):
        return None  # NUL bytes (never read as a file), or too deep for this interpreter: not a syntax error
    return None


def _newer_syntax(text: str, line: int | None) -> bool:
    """Syntax of a newer Python than this one, which the analysis reads with it blanked."""
    from fabric_lsp.analysis.compat import neutralize

    found = neutralize(text, line)
    if found is None:
        return False
    try:
        ast.parse(found[0])
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return True


def _notebook_findings(path: str, text: str, notebook) -> tuple[Finding, ...]:
    from fabric_lsp.notebook import layout_of, neutralise

    joined = layout_of(text) or notebook.joined()
    failed = {left.number for left in joined.left_out if not left.dedented_parses}  # IPython runs the others dedented
    found = []
    for cell in joined.cells:
        if cell.number not in failed:
            continue
        body = neutralise(cell.text)
        try:
            ast.parse(body)
        except SyntaxError as error:  # parsed again for the error's place (a rare cell)
            entry = _finding(path, error, _LINE_BREAK.split(body)[: cell.line_count], cell.first_line)
            found.append(replace(entry, context={"cell": str(cell.number)}))
        except (ValueError, MemoryError, RecursionError):
            continue
    return tuple(found)


def _finding(path: str, error: SyntaxError, lines: list[str], first_line: int) -> Finding:
    """The entry at the parser's place, kept inside the text (`lines`, starting at joined line
    `first_line`): an error "at the end of the file" is put at the end of its last line."""
    row = min(max((error.lineno or 1) - 1, 0), max(len(lines) - 1, 0))
    line = lines[row] if lines else ""
    column = min(max((error.offset or 1) - 1, 0), len(line))
    start = Position(first_line + row, column)
    end = start
    if error.end_lineno is not None and error.end_offset is not None and error.end_offset > 0:
        end_row = min(max(error.end_lineno - 1, 0), max(len(lines) - 1, 0))
        end_line = lines[end_row] if lines else ""
        candidate = Position(first_line + end_row, min(error.end_offset - 1, len(end_line)))
        if candidate > start:
            end = candidate
    message = str(error.msg or "invalid syntax")
    return Finding(code=CODE, severity=Severity.ERROR, span=Span(path, start, end), message=message, record_id="")


def without_syntax_notices(notes: Iterable[str], broken: set[str]) -> list[str]:
    """The analysis notices less "<path>: not analysed: ..." of the files reported as invalid-syntax."""
    prefixes = tuple(f"{path}: not analysed: " for path in broken)
    return [note for note in notes if not (prefixes and note.startswith(prefixes))]
