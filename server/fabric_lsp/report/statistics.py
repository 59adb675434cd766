"""`--statistics`: how many findings of each code, instead of the findings (as ruff's).

Text, one row per code, most frequent first (then by code):

    2	FAB001	[*] unmarked-forward-method
    1	FAB002	[ ] missing-reset-parameters

count, code, `[*]` when `--fix` would fix some of them (the column is left out when none would),
the rule's name. Nothing at all when there is no finding. With `--output-format json`, one array
of `{"code", "name", "count", "fixable"}` objects in the same order.
"""

from __future__ import annotations

import json
from typing import Sequence

from fabric_lsp.findings import Finding
from fabric_lsp.report.common import ReportContext, fixable
from fabric_lsp.report.terminal import BOLD, CYAN, paint, severity_color


def statistics(findings: Sequence[Finding], context: ReportContext) -> list[dict]:
    from fabric_lsp.records import rule_by_code

    rows: dict[str, dict] = {}
    for finding in findings:
        row = rows.get(finding.code)
        if row is None:
            rule = rule_by_code(finding.code)
            row = rows[finding.code] = {"code": finding.code, "name": rule.name if rule else finding.code,
                                        "count": 0, "fixable": False, "severity": finding.severity}
        row["count"] += 1
        row["fixable"] = row["fixable"] or fixable(finding, context.unsafe_fixes)
        if finding.severity.rank > row["severity"].rank:
            row["severity"] = finding.severity
    return sorted(rows.values(), key=lambda row: (-row["count"], row["code"]))


def render_statistics(format: str, findings: Sequence[Finding], context: ReportContext) -> str:
    rows = statistics(findings, context)
    if format == "json":
        return json.dumps([{k: row[k] for k in ("code", "name", "count", "fixable")} for row in rows], indent=2) + "\n"
    if not rows:
        return ""
    count_width = max(len(str(row["count"])) for row in rows)
    code_width = max(len(row["code"]) for row in rows)
    any_fixable = any(row["fixable"] for row in rows)
    color = context.color
    lines = []
    for row in rows:
        mark = ""
        if any_fixable:
            mark = f"[{paint('*', CYAN, on=color)}] " if row["fixable"] else "[ ] "
        count = paint(f"{row['count']:>{count_width}}", BOLD, on=color)
        code = paint(f"{row['code']:<{code_width}}", severity_color(row["severity"]), BOLD, on=color)
        name = "" if row["name"] == row["code"] else row["name"]
        lines.append(f"{count}\t{code}\t{mark}{name}".rstrip())
    return "\n".join(lines) + "\n"
