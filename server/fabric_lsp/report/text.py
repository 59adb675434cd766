"""Human output, like ruff's concise format:

    train.py:14:13: FAB001 [*] error: `TinyLM.generate()` runs the model's layers ...
      note: train.py:9:9: the model is set up here
      help: Mark `generate` as a forward method after `fabric.setup()`

    Found 3 findings: 1 error, 2 warnings (2 fixable).

In a notebook the place is given by cell, as ruff does: `nb.ipynb:cell 3:4:16: FAB001 ...`.

`[*]` marks a finding `--fix` would fix (safe fixes; unsafe ones too with `--unsafe-fixes`). After
`--fix`, the summary says how many were fixed (`Found 3 findings (2 fixed, 1 remaining).`) and, with
`--show-fixes`, which ones, per file. `--quiet` leaves the summary out. With colour (a terminal,
report/terminal.py), the path is bold and each code red (error), yellow (warning) or cyan (below).
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Sequence

from fabric_lsp.findings import Finding, Severity
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


def format_finding(finding: Finding, context: ReportContext) -> str:
    color = context.color
    mark = f" {paint('[*]', CYAN, on=color)}" if fixable(finding, context.unsafe_fixes) else ""
    tint = severity_color(finding.severity)
    lines = [
        f"{_where(finding.span.path, finding.span.start, context)}: {paint(finding.code, tint, BOLD, on=color)}{mark} "
        f"{paint(finding.severity.value, tint, on=color)}: {_safe(finding.message)}"
    ]
    for related in finding.related:
        lines.append(f"  note: {_where(related.span.path, related.span.start, context)}: {_safe(related.message)}")
    if finding.fix is not None:
        lines.append(f"  help: {_safe(finding.fix.title)}")
    return "\n".join(lines)


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
    blocks = [format_finding(f, context) for f in findings]
    out = "\n".join(blocks)
    if context.quiet:
        return out + "\n" if blocks else ""
    if blocks:
        out += "\n\n"
    if context.show_fixes and context.fix_mode and context.fixed_findings:
        out += fixes_summary(context.fixed_findings, context) + "\n\n"
    return out + summary_line(findings, context) + "\n"
