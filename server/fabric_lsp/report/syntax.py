"""`invalid-syntax`: a checked file that does not parse is reported like a finding, as ruff does.

The entry has code `invalid-syntax`, severity error, the parser's message and the place of the error
(line and column from the parser; in a notebook the cell's, through the joined text). It takes no
part in `select`/`ignore` and `# noqa` cannot suppress it (neither can ruff's). A Python file is
compiled as the interpreter would before running it (`compile(..., "exec")`: the parser's errors and
those of the compiler's checks, such as `return` outside a function). Syntax is judged for the file's
target (analysis/compat.py: its project's `requires-python`, else the analysis interpreter's version)
and every newer Python fabric-lsp knows: syntax of a newer Python than the one running fabric-lsp
(PEP 701 f-strings, type parameters, ...) is blanked in place and the file compiled again, so only an
error of the file's own is reported, at its place; what no Python from the target on accepts is
reported, what only an older target rejects is not. A file whose target is newer than any syntax
fabric-lsp knows and that does not parse here is not reported: a notice says so. The fast path is
one `compile`; the rest runs only for a file that does not compile. A notebook's code cells are
parsed one by one (the kernel compiles each cell alone): only the cells left out of the analysis
because they do not parse are reported, not one that parses once dedented (IPython dedents a cell
indented as a whole); the entry's `context["cell"]` names its cell.
"""

from __future__ import annotations

import ast
import os
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


def syntax_findings(path: str, text: str, notebook=None, library_path=None) -> tuple[Finding, ...]:
    """The `invalid-syntax` entries of a file read as `text` (a notebook: its joined code cells, with
    `notebook` its fabric_lsp.sources.notebook.NotebookFile). `library_path`: the analysis interpreter's
    sys.path (or a function giving it), for the file's target when its project states none."""
    return syntax_report(path, text, notebook, library_path)[0]


def syntax_report(path: str, text: str, notebook=None,
                  library_path=None) -> tuple[tuple[Finding, ...], tuple[str, ...]]:
    """The `invalid-syntax` entries of a file, and the notices ("<path>: <reason>") of what does not
    parse here but cannot be judged (a target newer than any syntax fabric-lsp knows)."""
    from fabric_lsp.analysis.compat import own_syntax_error

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarnings about the user's code are not ours to print
        if notebook is not None:
            return _notebook_findings(path, text, notebook, library_path)
        error = own_syntax_error(text, lambda source: compile(source, path, "exec", dont_inherit=True))
        if error is not None:
            target = _target(path, library_path)
            if not target.judged:  # the analysis says the same (analysis/program.py): said once
                return (), (f"{path}: not analysed: {target.unknown_syntax()}",)
    return ((), ()) if error is None else ((_finding(path, error, _LINE_BREAK.split(text), 0),), ())


def _target(path: str, library_path):
    from fabric_lsp.analysis.compat import target_version

    return target_version(path, library_path)


def _notebook_findings(path: str, text: str, notebook, library_path) -> tuple[tuple[Finding, ...], tuple[str, ...]]:
    from fabric_lsp.analysis.compat import own_syntax_error
    from fabric_lsp.sources.notebook import layout_of, neutralise

    joined = layout_of(text) or notebook.joined()
    failed = {left.number for left in joined.left_out if not left.dedented_parses}  # IPython runs the others dedented
    found = []
    for cell in joined.cells:
        if cell.number not in failed:
            continue
        body = neutralise(cell.text)
        error = own_syntax_error(body, ast.parse)  # parsed again for the error's place (a rare cell)
        if error is not None:
            entry = _finding(path, error, _LINE_BREAK.split(body)[: cell.line_count], cell.first_line)
            found.append(replace(entry, context={"cell": str(cell.number)}))
    if found:
        target = _target(path, library_path)
        if not target.judged:
            cells = ", ".join(f"cell {entry.context['cell']}" for entry in found)
            return (), (f"{path}: not analysed: {target.unknown_syntax(cells)}",)
    return tuple(found), ()


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


NAMED_FILES = 2  # files a summary notice names; `--verbose` says each one


def said_analysis_notices(notes: Iterable[str], cwd: str | None = None, verbose: bool = False,
                          listed_by: str = "--verbose") -> list[str]:
    """The analysis notices ("<path>: <reason>", sorted) as the command says them, each path as shown
    from `cwd` (None: as given). The files analysed with newer syntax left out (a project written for
    Python 3.12 checked on 3.11: every file) are one line at the first one's place, naming how many, the
    first NAMED_FILES and all that was left out, as ruff says a repeated warning once; `verbose` says
    each file (`listed_by` says how to ask for that, when files go unnamed)."""
    from fabric_lsp.analysis.source import NEWER_SYNTAX
    from fabric_lsp.sources.walk import display_path

    said: list[str] = []
    newer: list[tuple[int, str]] = []  # (place in `said`, path as shown) of each file with newer syntax
    running, left_out = "", {}
    for note in notes:
        path, _, reason = note.partition(": ")
        shown = display_path(path, cwd) if cwd is not None and os.path.isabs(path) else path
        match = None if verbose else NEWER_SYNTAX.fullmatch(reason)
        if match is not None:
            newer.append((len(said), shown))
            running = match["running"]
            left_out.update(dict.fromkeys(match["blanked"].split(" and ")))
        said.append(f"{shown}: {reason}")
    if len(newer) < 2:
        return said
    more = len(newer) - NAMED_FILES
    named = ", ".join(shown for _, shown in newer[:NAMED_FILES]) + (f" and {more} more" if more > 0 else "")
    said[newer[0][0]] = (f"{len(newer)} files ({named}) use syntax newer than Python {running}, which runs "
                         f"fabric-lsp: analysed with the {' and '.join(left_out)} left out"
                         + (f"; {listed_by} lists them" if more > 0 and listed_by else ""))
    dropped = {place for place, _ in newer[1:]}
    return [line for place, line in enumerate(said) if place not in dropped]
