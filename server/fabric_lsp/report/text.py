"""Human output, as ruff's two text formats.

`full` (the default; `--output-format text` is the same): a short headline saying what is wrong, a
code frame with the span marked, then the reasons and the related places on `note:` lines and the
fix on a `help:` line:

    train.py:14:13: FAB001 [*] error: `TinyLM.generate()` runs the model's submodules but is called on the Fabric-wrapped `model`
       |
    13 |     model = fabric.setup(model)
    14 |     out = model.generate(x)
       |                 ^^^^^^^^ FAB001
    15 |     print(out)
       |
       = note: `generate` calls `self.head(...)`, a child module
       = note: RuntimeError under strategy="ddp"
       = note: train.py:9:9: `model` is wrapped by Fabric here
       = help: Mark `generate` as a forward method after `fabric.setup()`

    Found 3 findings: 1 error, 2 warnings (2 fixable).

`concise`: one line per finding, the headline only (`train.py:14:13: FAB001 [*] error: ...`).

The first line of a finding is the same in both (`path:row:col: CODE`), so problem matchers that read
it (editors' errorformat, CI log parsers) read either. In a notebook the place is given by cell, as
ruff does: `nb.ipynb:cell 3:4:16: FAB001 ...`, and the frame's rows are the cell's.

`[*]` marks a finding `--fix` would fix (safe fixes; unsafe ones too with `--unsafe-fixes`). After
`--fix`, the summary says how many were fixed (`Found 3 findings (2 fixed, 1 remaining).`) and, with
`--show-fixes`, which ones, per file. `--quiet` leaves the summary out. With colour (a terminal,
report/terminal.py), the path is bold and each code red (error), yellow (warning) or cyan (below).
"""

from __future__ import annotations

import os
import unicodedata
from collections import Counter
from typing import Sequence

from fabric_lsp.findings import Finding, Position, Severity, headline_and_notes
from fabric_lsp.report.common import ReportContext, fixable, hidden_unsafe, row_col
from fabric_lsp.report.escape import escape_controls as _safe
from fabric_lsp.report.terminal import BOLD, CYAN, GREEN, paint, severity_color


def _plural(count: int, word: str) -> str:
    if word == "information":  # uncountable
        return f"{count} {word}"
    return f"{count} {word}{'' if count == 1 else 's'}"


def _where(path: str, position, context: ReportContext) -> str:
    """`train.py:14:13` (the path bold with colour), `nb.ipynb:cell 3:4:16` in a notebook."""
    number, inside = context.cell(path, position)
    row, col = row_col(inside)
    cell = f"cell {number}:" if number is not None else ""
    return f"{paint(_safe(context.display(path)), BOLD, on=context.color)}:{cell}{row}:{col}"


def _first_line(finding: Finding, headline: str, context: ReportContext) -> str:
    color = context.color
    mark = f" {paint('[*]', CYAN, on=color)}" if fixable(finding, context.unsafe_fixes) else ""
    tint = severity_color(finding.severity)
    return (f"{_where(finding.span.path, finding.span.start, context)}: {paint(finding.code, tint, BOLD, on=color)}{mark} "
            f"{paint(finding.severity.value, tint, on=color)}: {_safe(headline)}")


def format_concise(finding: Finding, context: ReportContext) -> str:
    """One line: the place, the code and the headline."""
    return _first_line(finding, headline_and_notes(finding)[0], context)


def format_finding(finding: Finding, context: ReportContext) -> str:
    """The `full` format: headline, code frame, notes, help."""
    headline, notes = headline_and_notes(finding)
    lines = [_first_line(finding, headline, context)]
    lines.extend(_frame(finding, context))
    gutter = " " * _gutter_width(finding, context)
    for note in notes:
        lines.append(f"{gutter} = note: {_safe(note)}")
    for related in finding.related:
        lines.append(f"{gutter} = note: {_where(related.span.path, related.span.start, context)}: {_safe(related.message)}")
    if finding.fix is not None:
        lines.append(f"{gutter} = help: {_safe(finding.fix.title)}")
    return "\n".join(lines)


FRAME_CONTEXT = 1  # lines shown above and below the marked one
FRAME_WIDTH = 120  # a longer source line is shown around the span, cut with `…`


def _frame_rows(finding: Finding, context: ReportContext) -> tuple[int, int, int]:
    """(first, last) 0-based lines of the frame in the file as analysed, and the row number shown for
    the marked line (a notebook's: the cell's)."""
    start = finding.span.start
    _, inside = context.cell(finding.span.path, start)
    first = max(0, start.line - min(FRAME_CONTEXT, inside.line))  # never above the cell's first line
    return first, start.line + FRAME_CONTEXT, inside.line + 1


def _gutter_width(finding: Finding, context: ReportContext) -> int:
    first, last, row = _frame_rows(finding, context)
    return len(str(row + (last - finding.span.start.line)))


def _cell_row(context: ReportContext, path: str, line: int) -> tuple[int | None, int]:
    number, inside = context.cell(path, Position(line, 0))
    return number, inside.line


def _width(text: str) -> int:
    """Columns the text takes on a terminal (East Asian wide characters take two)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _shown_line(context: ReportContext, path: str, line: int) -> str:
    """Source line `line` as the user wrote it: in a notebook the cell's own text (the analysed text
    comments out what does not parse)."""
    locator = context.notebooks.get(os.path.abspath(path))
    if locator is not None:
        number, inside = context.cell(path, Position(line, 0))
        if number is not None:
            lines = locator.notebook.cells[number - 1].source.split("\n")
            return lines[inside.line].rstrip("\r") if inside.line < len(lines) else ""
    return context.source_line(path, line)


def _frame(finding: Finding, context: ReportContext) -> list[str]:
    """The source lines around the finding, the span marked with `^` under its first line. Empty when
    the file cannot be read any more."""
    path, start, end = finding.span.path, finding.span.start, finding.span.end
    if not context.readable(path):  # a path that does not exist (io-error), a file gone since
        return []
    first, last, row = _frame_rows(finding, context)
    width = _gutter_width(finding, context)
    gutter = " " * width
    number, _ = context.cell(path, start)
    lines = [f"{gutter} |"]
    for line in range(first, last + 1):
        text = _shown_line(context, path, line)
        if line > start.line and (not text.strip() and line == last):
            break
        if line != start.line and _cell_row(context, path, line) != (number, row - 1 + line - start.line):
            continue  # another cell, or the line that separates cells in the analysed text
        stop = end.character if end.line == start.line else len(text)
        shown, begin, finish = _cut(text, start.character if line == start.line else 0,
                                    max(stop, start.character + 1) if line == start.line else 0)
        lines.append(f"{row + line - start.line:>{width}} | {shown}".rstrip())
        if line == start.line:
            marks = paint("^" * max(1, finish - begin), severity_color(finding.severity), BOLD, on=context.color)
            lines.append(f"{gutter} | {' ' * begin}{marks} {paint(finding.code, severity_color(finding.severity), on=context.color)}")
    lines.append(f"{gutter} |")
    return lines


def _cut(text: str, start: int, stop: int) -> tuple[str, int, int]:
    """The line as shown (tabs expanded, controls escaped, cut around the span when long) and the
    columns on screen where the span starts and ends."""
    def shown(part: str) -> str:
        return _safe(part.expandtabs(4))

    prefix, span, rest = text[:start], text[start:stop], text[stop:]
    if _width(shown(text)) > FRAME_WIDTH:
        if _width(shown(prefix)) > FRAME_WIDTH // 3:
            prefix = "…" + prefix[-(FRAME_WIDTH // 3):]
        if _width(shown(span)) > FRAME_WIDTH // 2:
            span = span[: FRAME_WIDTH // 2] + "…"
            rest = ""
        elif _width(shown(prefix + span + rest)) > FRAME_WIDTH:
            rest = rest[: max(0, FRAME_WIDTH - _width(shown(prefix + span)))] + "…"
    begin = _width(shown(prefix))
    return shown(prefix) + shown(span) + shown(rest), begin, begin + _width(shown(span))


def summary_line(findings: Sequence[Finding], context: ReportContext) -> str:
    """`All checks passed!`, `Found 3 findings: 1 error, 2 warnings (2 fixable).` or, after --fix,
    `Found 3 findings (2 fixed, 1 remaining).` Every finding shown counts, whatever its severity, as
    in ruff; the severities say which ones are errors."""
    if context.fix_mode and context.fixed:
        total = context.fixed + len(findings)
        line = f"Found {_plural(total, 'finding')} ({context.fixed} fixed, {len(findings)} remaining)."
    elif not findings:
        return paint("All checks passed!", GREEN, BOLD, on=context.color)
    else:
        count = sum(1 for f in findings if fixable(f, context.unsafe_fixes))
        kinds = ", ".join(
            _plural(n, severity.value) for severity in Severity if (n := sum(1 for f in findings if f.severity == severity))
        )
        line = f"Found {_plural(len(findings), 'finding')}: {kinds}" + (f" ({count} fixable)." if count else ".")
    hidden = hidden_unsafe(findings, context.unsafe_fixes)
    if hidden:
        fixes = "1 hidden fix" if hidden == 1 else f"{hidden} hidden fixes"
        line += f"\n{fixes} can be enabled with the `--unsafe-fixes` option."
    return line


def fixes_summary(fixed: Sequence[Finding], context: ReportContext) -> str:
    """ruff's `--show-fixes` list: what `--fix` fixed, per file (the finding's file), e.g.

        Fixed 2 findings:
        - train.py:
            1 × FAB001 (unmarked-forward-method)
    """
    from fabric_lsp.records import rule_by_code

    by_file: dict[str, Counter] = {}
    for finding in fixed:
        by_file.setdefault(os.path.abspath(finding.span.path), Counter())[finding.code] += 1
    width = max((len(str(n)) for counts in by_file.values() for n in counts.values()), default=1)
    lines = [paint(f"Fixed {_plural(len(fixed), 'finding')}:", GREEN, BOLD, on=context.color)]
    for path in sorted(by_file, key=context.display):
        lines.append(f"{paint('-', CYAN, on=context.color)} {paint(_safe(context.display(path)), BOLD, on=context.color)}:")
        for code, count in sorted(by_file[path].items()):
            rule = rule_by_code(code)
            name = f" ({rule.name})" if rule is not None else ""
            lines.append(f"    {count:>{width}} × {paint(code, severity_color(Severity.ERROR), BOLD, on=context.color)}{name}")
    return "\n".join(lines)


def render_text(findings: Sequence[Finding], context: ReportContext) -> str:
    """The `full` format (the default)."""
    return _render(findings, context, format_finding, "\n\n")


def render_concise(findings: Sequence[Finding], context: ReportContext) -> str:
    return _render(findings, context, format_concise, "\n")


def _render(findings: Sequence[Finding], context: ReportContext, one, between: str) -> str:
    blocks = [one(f, context) for f in findings]
    out = between.join(blocks)
    if context.quiet:
        return out + "\n" if blocks else ""
    if blocks:
        out += "\n\n"
    if context.show_fixes and context.fix_mode and context.fixed_findings:
        out += fixes_summary(context.fixed_findings, context) + "\n\n"
    return out + summary_line(findings, context) + "\n"
