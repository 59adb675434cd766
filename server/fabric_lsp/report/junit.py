"""`--output-format junit`: JUnit XML as ruff writes it, for CI test-report viewers: one
`<testsuite>` per file with findings (named by its path), one `<testcase>` per finding with a
`<failure>` (message attribute: the finding's message; text: `line 14, col 13, <message>`). A run
without findings is one passing test case, `No findings`. Paths are shown as in the text format.

In a notebook the `line`/`column` attributes are those of the `.ipynb` file's JSON text that holds
the flagged character, and the failure's text names the cell: `cell 3, line 4, col 16, <message>`.
Control characters of names and messages, and the other characters XML 1.0 cannot hold (U+FFFE,
U+FFFF, the lone surrogates of a name that is not UTF-8), are written as escapes (`\\ufffe`).
"""

from __future__ import annotations

import os
from typing import Sequence
from xml.sax.saxutils import escape, quoteattr

from fabric_lsp.findings import Finding
from fabric_lsp.report.common import ReportContext, row_col
from fabric_lsp.report.escape import escape_xml

PACKAGE = "org.fabric-lsp"


def _text(value: str) -> str:
    return escape(escape_xml(value))


def _attr(value: object) -> str:
    return quoteattr(escape_xml(str(value)))


def _testcase(finding: Finding, context: ReportContext) -> list[str]:
    path = context.display(finding.span.path)
    row, col = row_col(context.file_position(finding.span.path, finding.span.start))
    cell, inside = context.cell(finding.span.path, finding.span.start)
    where = f"line {row}, col {col}"
    if cell is not None:
        where = f"cell {cell}, line {inside.line + 1}, col {inside.character + 1}"
    classname = os.path.splitext(path)[0]
    return [
        f"    <testcase name={_attr(f'{PACKAGE}.{finding.code}')} classname={_attr(classname)} "
        f"line={_attr(row)} column={_attr(col)}>",
        f"      <failure message={_attr(finding.one_line_message)}>{_text(f'{where}, {finding.one_line_message}')}</failure>",
        "    </testcase>",
    ]


def render_junit(findings: Sequence[Finding], context: ReportContext) -> str:
    lines = ['<?xml version="1.0" encoding="UTF-8"?>']
    if not findings:
        lines += [
            '<testsuites name="fabric-lsp" tests="1" failures="0" errors="0">',
            f'  <testsuite name="fabric-lsp" tests="1" disabled="0" errors="0" failures="0" package="{PACKAGE}">',
            '    <testcase name="No findings" classname="fabric-lsp"/>',
            "  </testsuite>",
            "</testsuites>",
        ]
        return "\n".join(lines) + "\n"
    by_file: dict[str, list[Finding]] = {}
    for finding in findings:
        by_file.setdefault(finding.span.path, []).append(finding)
    total = len(findings)
    lines.append(f'<testsuites name="fabric-lsp" tests="{total}" failures="{total}" errors="0">')
    for path, found in by_file.items():
        lines.append(f"  <testsuite name={_attr(context.display(path))} tests=\"{len(found)}\" disabled=\"0\" "
                     f"errors=\"0\" failures=\"{len(found)}\" package=\"{PACKAGE}\">")
        for finding in found:
            lines += _testcase(finding, context)
        lines.append("  </testsuite>")
    lines.append("</testsuites>")
    return "\n".join(lines) + "\n"
