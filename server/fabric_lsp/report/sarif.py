"""`--format sarif`: SARIF 2.1.0 (one run; the tool's rules; results with locations, related
locations and fixes). Columns are Unicode code points (`columnKind: unicodeCodePoints`), matching
our positions. Files below the current directory are given relative to `%SRCROOT%` (what GitHub
code scanning expects), others as absolute file URIs.

A finding in a notebook is placed where GitHub and other SARIF viewers can show it: at the line and
column of the .ipynb file's JSON text that hold that character of the cell's source; its cell and
the position inside the cell are in the result's `properties` (`cell`, `cellLine`, `cellColumn`) and
at the end of its message ("(cell 3, line 4)").
"""

from __future__ import annotations

import json
import os
import urllib.parse
from pathlib import Path
from typing import Any, Sequence

import fabric_lsp
from fabric_lsp.findings import Finding, Position, Severity
from fabric_lsp.report.common import ReportContext

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SRCROOT = "%SRCROOT%"

_LEVEL = {
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFORMATION: "note",
    Severity.HINT: "note",
}


def _artifact(path: str, context: ReportContext) -> dict[str, Any]:
    absolute = os.path.abspath(path)
    cwd = os.path.abspath(context.cwd)
    if os.path.commonpath([cwd, absolute]) == cwd and absolute != cwd:
        relative = Path(os.path.relpath(absolute, cwd)).as_posix()
        return {"uri": urllib.parse.quote(relative), "uriBaseId": SRCROOT}
    return {"uri": Path(absolute).as_uri()}


def _region(start: Position, end: Position) -> dict[str, int]:
    if end < start:
        end = start
    return {
        "startLine": start.line + 1,
        "startColumn": start.character + 1,
        "endLine": end.line + 1,
        "endColumn": end.character + 1,
    }


def _physical(path: str, start: Position, end: Position, context: ReportContext) -> dict[str, Any]:
    region = _region(context.file_position(path, start), context.file_position(path, end))
    return {"artifactLocation": _artifact(path, context), "region": region}


def _rules(context: ReportContext) -> list[dict[str, Any]]:
    from fabric_lsp.records import RULES

    records = context.record_set()
    rules = []
    for rule in RULES:
        entry: dict[str, Any] = {
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.summary},
            "properties": {"recordId": rule.record_id},
        }
        record = records.by_id(rule.record_id)
        if record is not None:
            entry["helpUri"] = record.github_url
            entry["fullDescription"] = {"text": record["documentation"]}
        rules.append(entry)
    return rules


def _result(finding: Finding, rule_index: dict[str, int], context: ReportContext) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "level": _LEVEL[finding.severity],
        "message": {"text": finding.message},
        "locations": [{"physicalLocation": _physical(finding.span.path, finding.span.start, finding.span.end, context)}],
        "properties": {"severity": finding.severity.value},
    }
    cell, inside = context.cell(finding.span.path, finding.span.start)
    if cell is not None:
        result["message"]["text"] += f" (cell {cell}, line {inside.line + 1})"
        result["properties"].update(cell=cell, cellLine=inside.line + 1, cellColumn=inside.character + 1)
    if finding.code in rule_index:
        result["ruleIndex"] = rule_index[finding.code]
    if finding.related:
        result["relatedLocations"] = [
            {
                "id": number,
                "physicalLocation": _physical(related.span.path, related.span.start, related.span.end, context),
                "message": {"text": related.message},
            }
            for number, related in enumerate(finding.related)
        ]
    if finding.fix is not None:
        changes: dict[str, list[dict[str, Any]]] = {}
        if any(os.path.abspath(edit.path) in context.notebooks for edit in finding.fix.edits):
            return result  # a cell edit is no replacement of the .ipynb's bytes: `check --fix` applies it
        for edit in finding.fix.edits:
            changes.setdefault(edit.path, []).append(
                {"deletedRegion": _region(edit.start, edit.end), "insertedContent": {"text": edit.new_text}}
            )
        result["fixes"] = [
            {
                "description": {"text": finding.fix.title},
                "artifactChanges": [
                    {"artifactLocation": _artifact(path, context), "replacements": replacements}
                    for path, replacements in changes.items()
                ],
                "properties": {"applicability": finding.fix.applicability.value},
            }
        ]
    return result


def sarif_document(findings: Sequence[Finding], context: ReportContext) -> dict[str, Any]:
    rules = _rules(context)
    rule_index = {rule["id"]: index for index, rule in enumerate(rules)}
    cwd_uri = Path(os.path.abspath(context.cwd)).as_uri().rstrip("/") + "/"
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "fabric-lsp", "version": fabric_lsp.__version__, "rules": rules}},
                "originalUriBaseIds": {SRCROOT: {"uri": cwd_uri}},
                "columnKind": "unicodeCodePoints",
                "results": [_result(f, rule_index, context) for f in findings],
            }
        ],
    }


def render_sarif(findings: Sequence[Finding], context: ReportContext) -> str:
    return json.dumps(sarif_document(findings, context), indent=2) + "\n"
