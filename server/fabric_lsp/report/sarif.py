"""`--format sarif`: SARIF 2.1.0 (one run; the tool's rules; results with locations, related
locations and fixes), shaped for GitHub code scanning. Columns are Unicode code points
(`columnKind: unicodeCodePoints`), matching our positions.

- Files inside the repository root (the nearest folder above the current one holding `.git`, else
  the current folder) are given relative to it, with `uriBaseId: %SRCROOT%` and the root's file
  URI in `originalUriBaseIds`: the report is right when CI runs `check` in a subdirectory. Files
  outside it are absolute file URIs.
- Each rule has `help` (`text` and `markdown`: its knowledge-base record, as `explain` shows it) and
  `helpUri` (the rule page: the team's `docs-url`, else the installed copy; records/pages.py; Lightning's source
  line, the record's evidence, is the rule's `properties.source`). The driver's `informationUri` is the project URL of the
  installed package's metadata (`[project.urls]`), else the repository the records come from.
- Each result has `partialFingerprints.primaryLocationLineHash`: `<hash>:<n>`, the hash of the
  file's path from the root, the code and the stripped text of the flagged line, `n` its occurrence
  among identical ones in the file; no line number, so lines added above it keep it.
- A file that does not parse is a result of the rule `invalid-syntax` (added to the rules then); a
  path that cannot be read, of the rule `io-error`.

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

from fabric_lsp.version import __version__
from fabric_lsp.findings import Finding, Position, Severity
from fabric_lsp.report.common import ReportContext, fingerprint, occurrences

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SRCROOT = "%SRCROOT%"

_LEVEL = {
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFORMATION: "note",
    Severity.HINT: "note",
}


def _artifact(path: str, context: ReportContext) -> dict[str, Any]:
    relative = context.relative_to_root(path)
    if relative is not None:
        # The name's bytes (a name that is not UTF-8 holds surrogates, which UTF-8 cannot encode).
        return {"uri": urllib.parse.quote(os.fsencode(relative)), "uriBaseId": SRCROOT}
    return {"uri": Path(os.path.abspath(path)).as_uri()}


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


def _rules(context: ReportContext, syntax: bool, unread: bool = False) -> list[dict[str, Any]]:
    from fabric_lsp.records import RULES, render_markdown, render_text
    from fabric_lsp.records.pages import page_url
    from fabric_lsp.report import io_error
    from fabric_lsp.report import syntax as invalid

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
        url = page_url(rule.code, context.docs_url)
        if url is not None:
            entry["helpUri"] = url  # the rule page (records/pages.py)
        if record is not None:
            entry["properties"]["source"] = record.github_url  # Lightning's source: the record's evidence
            entry["fullDescription"] = {"text": record["documentation"]}
            entry["help"] = {"text": render_text(record, code=rule.code, docs_url=context.docs_url),
                             "markdown": render_markdown(record, code=rule.code, docs_url=context.docs_url)}
        rules.append(entry)
    for entry, present in ((invalid, syntax), (io_error, unread)):
        if present:
            rules.append({
                "id": entry.CODE,
                "name": entry.NAME,
                "shortDescription": {"text": entry.SUMMARY},
                "help": {"text": entry.SUMMARY, "markdown": entry.SUMMARY},
                "defaultConfiguration": {"level": "error"},
            })
    return rules


def information_uri(context: ReportContext) -> str | None:
    """The project's URL from the installed package's metadata ([project.urls]), else the
    repository of the knowledge-base records (https://github.com/<repo>)."""
    import importlib.metadata

    try:
        urls = importlib.metadata.metadata("fabric-lsp").get_all("Project-URL") or []
    except importlib.metadata.PackageNotFoundError:
        urls = []
    by_label = {}
    for entry in urls:
        label, _, url = entry.partition(",")
        by_label[label.strip().lower()] = url.strip()
    for label in ("homepage", "repository", "source", "source code", "documentation"):
        if by_label.get(label, "").startswith("https://"):
            return by_label[label]
    from fabric_lsp.records import RULES

    record = context.record_set().by_id(RULES[0].record_id)
    repo = record["repo"] if record is not None else ""
    return f"https://github.com/{repo}" if repo else None


def _result(finding: Finding, rule_index: dict[str, int], context: ReportContext,
            occurrence: tuple[str, str, int]) -> dict[str, Any]:
    path, line_text, count = occurrence
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "level": _LEVEL[finding.severity],
        "message": {"text": finding.full_message},
        "locations": [{"physicalLocation": _physical(finding.span.path, finding.span.start, finding.span.end, context)}],
        "partialFingerprints": {"primaryLocationLineHash": f"{fingerprint(path, finding.code, line_text)[:16]}:{count}"},
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
    from fabric_lsp.report import io_error
    from fabric_lsp.report.syntax import CODE

    rules = _rules(context, syntax=any(f.code == CODE for f in findings),
                   unread=any(f.code == io_error.CODE for f in findings))
    rule_index = {rule["id"]: index for index, rule in enumerate(rules)}
    root_uri = Path(os.path.abspath(context.repository_root())).as_uri().rstrip("/") + "/"
    driver: dict[str, Any] = {"name": "fabric-lsp", "version": __version__}
    uri = information_uri(context)
    if uri:
        driver["informationUri"] = uri
    driver["rules"] = rules
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": driver},
                "originalUriBaseIds": {SRCROOT: {"uri": root_uri}},
                "columnKind": "unicodeCodePoints",
                "results": [_result(f, rule_index, context, where)
                            for f, where in zip(findings, occurrences(findings, context))],
            }
        ],
    }


def render_sarif(findings: Sequence[Finding], context: ReportContext) -> str:
    return json.dumps(sarif_document(findings, context), indent=2) + "\n"
