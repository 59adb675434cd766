"""`--format github`: GitHub Actions workflow commands, one line per finding, e.g.

    ::error file=train.py,line=14,col=13,endLine=14,endColumn=21,title=FAB001::message

error -> `::error`, warning -> `::warning`, information and hint -> `::notice`.

In a notebook, `line`/`col` are those of the .ipynb file's JSON text holding the finding's character
(what a pull request's diff of the file shows), and the message starts with `cell 3:4:16:`.
"""

from __future__ import annotations

from typing import Sequence

from fabric_lsp.findings import Finding, Severity
from fabric_lsp.report.common import ReportContext, row_col
from fabric_lsp.report.escape import escape_controls

_COMMAND = {
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFORMATION: "notice",
    Severity.HINT: "notice",
}


def _escape_data(text: str) -> str:
    # CR/LF are the workflow command's own escapes; every other control is shown, not sent raw.
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return escape_controls(text)


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def format_finding(finding: Finding, context: ReportContext) -> str:
    row, col = row_col(context.file_position(finding.span.path, finding.span.start))
    end_row, end_col = row_col(context.file_position(finding.span.path, finding.span.end))
    if (end_row, end_col) < (row, col):
        end_row, end_col = row, col
    cell, inside = context.cell(finding.span.path, finding.span.start)
    prefix = f"cell {cell}:{inside.line + 1}:{inside.character + 1}: " if cell is not None else ""
    properties = ",".join(
        f"{key}={_escape_property(str(value))}"
        for key, value in (
            # GitHub places annotations by the path from the repository root (CI may run in a subfolder).
            ("file", context.relative_to_root(finding.span.path) or context.display(finding.span.path)),
            ("line", row),
            ("col", col),
            ("endLine", end_row),
            ("endColumn", end_col),
            ("title", finding.code),
        )
    )
    return f"::{_COMMAND[finding.severity]} {properties}::{_escape_data(prefix + finding.full_message)}"


def render_github(findings: Sequence[Finding], context: ReportContext) -> str:
    return "".join(format_finding(f, context) + "\n" for f in findings)
