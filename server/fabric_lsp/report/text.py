"""Human output, like ruff's concise format:

    train.py:14:13: FAB001 [*] error: `TinyLM.generate()` runs the model's layers ...
      note: train.py:9:9: the model is set up here
      help: Mark `generate` as a forward method after `fabric.setup()`

In a notebook the place is given by cell, as ruff does: `nb.ipynb:cell 3:4:16: FAB001 ...`.

`[*]` marks a finding `--fix` would fix (safe fixes; unsafe ones too with `--unsafe-fixes`).
"""

from __future__ import annotations

from typing import Sequence

from fabric_lsp.findings import Finding, Severity
from fabric_lsp.report.common import ReportContext, fixable, hidden_unsafe
from fabric_lsp.report.escape import escape_controls as _safe


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def format_finding(finding: Finding, context: ReportContext) -> str:
    mark = " [*]" if fixable(finding, context.unsafe_fixes) else ""
    lines = [
        f"{_safe(context.where(finding.span.path, finding.span.start))}: {finding.code}{mark} "
        f"{finding.severity.value}: {_safe(finding.message)}"
    ]
    for related in finding.related:
        lines.append(f"  note: {_safe(context.where(related.span.path, related.span.start))}: {_safe(related.message)}")
    if finding.fix is not None:
        lines.append(f"  help: {_safe(finding.fix.title)}")
    return "\n".join(lines)


def summary_line(findings: Sequence[Finding], context: ReportContext) -> str:
    """`All checks passed!`, `Found N errors (M fixable).` or, after --fix, `Found N errors (F fixed,
    R remaining).` Every finding shown counts, whatever its severity, as in ruff."""
    if context.fix_mode and context.fixed:
        total = context.fixed + len(findings)
        return f"Found {_plural(total, 'error')} ({context.fixed} fixed, {len(findings)} remaining)."
    if not findings:
        return "All checks passed!"
    count = sum(1 for f in findings if fixable(f, context.unsafe_fixes))
    line = f"Found {_plural(len(findings), 'error')}" + (f" ({count} fixable)." if count else ".")
    by_severity = [
        _plural(n, severity.value)
        for severity in Severity
        if (n := sum(1 for f in findings if f.severity == severity)) and severity != Severity.ERROR
    ]
    if by_severity:  # ruff calls every finding an error; say which ones are only warnings or hints
        line = line[:-1] + f"; of these {', '.join(by_severity)}."
    hidden = hidden_unsafe(findings, context.unsafe_fixes)
    if hidden:
        fixes = "1 hidden fix" if hidden == 1 else f"{hidden} hidden fixes"
        line += f"\n{fixes} can be enabled with the `--unsafe-fixes` option."
    return line


def render_text(findings: Sequence[Finding], context: ReportContext) -> str:
    blocks = [format_finding(f, context) for f in findings]
    out = "\n".join(blocks)
    if blocks:
        out += "\n\n"
    return out + summary_line(findings, context) + "\n"
