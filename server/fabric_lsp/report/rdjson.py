"""`--output-format rdjson`: reviewdog's Diagnostic Format (rdjson), as ruff writes it:

    {"source": {"name": "fabric-lsp", "url": ...},
     "diagnostics": [{"message", "code": {"value": "FAB001", "url"}, "severity": "ERROR",
                      "location": {"path": "src/train.py",
                                   "range": {"start": {"line", "column"}, "end": {...}}},
                      "suggestions": [{"range", "text"}], "related_locations": [{"message", "location"}]}]}

Lines are 1-based, columns 1-based in UTF-8 bytes (reviewdog's Position). Paths are relative to the
current folder when below it (reviewdog matches them against the diff from there). A notebook's
positions are those of its `.ipynb` text, columns in characters. `suggestions` are the fix's edits
when they all stay in the finding's file (reviewdog suggests changes to that file only); severity:
error -> ERROR, warning -> WARNING, information and hint -> INFO.
"""

from __future__ import annotations

import json
import os
from typing import Any, Sequence

from fabric_lsp.findings import Finding, Position, Severity
from fabric_lsp.report.common import ReportContext

_SEVERITY = {Severity.ERROR: "ERROR", Severity.WARNING: "WARNING", Severity.INFORMATION: "INFO",
             Severity.HINT: "INFO"}


def _position(path: str, position: Position, context: ReportContext) -> dict[str, int]:
    if os.path.abspath(path) in context.notebooks:
        stored = context.file_position(path, position)
        return {"line": stored.line + 1, "column": stored.character + 1}
    line = context.source_line(path, position.line)
    column = len(line[: position.character].encode("utf-8", "surrogatepass")) + 1
    return {"line": position.line + 1, "column": column}


def _location(path: str, start: Position, end: Position, context: ReportContext) -> dict[str, Any]:
    return {"path": context.display(path),
            "range": {"start": _position(path, start, context), "end": _position(path, end, context)}}


def _diagnostic(finding: Finding, context: ReportContext) -> dict[str, Any]:
    path = finding.span.path
    diagnostic: dict[str, Any] = {
        "message": finding.full_message,
        "code": {"value": finding.code},
        "severity": _SEVERITY[finding.severity],
        "location": _location(path, finding.span.start, finding.span.end, context),
    }
    url = context.url(finding)
    if url:  # none for io-error and invalid-syntax entries
        diagnostic["code"]["url"] = url
    fix = finding.fix
    same_file = os.path.abspath(path)
    if fix is not None and same_file not in context.notebooks and all(
        os.path.abspath(edit.path) == same_file for edit in fix.edits
    ):
        diagnostic["suggestions"] = [
            {"range": _location(path, edit.start, edit.end, context)["range"], "text": edit.new_text}
            for edit in fix.edits
        ]
    if finding.related:
        diagnostic["related_locations"] = [
            {"message": related.message,
             "location": _location(related.span.path, related.span.start, related.span.end, context)}
            for related in finding.related
        ]
    return diagnostic


def render_rdjson(findings: Sequence[Finding], context: ReportContext) -> str:
    from fabric_lsp.report.sarif import information_uri

    document = {
        "source": {"name": "fabric-lsp", "url": information_uri(context)},
        "diagnostics": [_diagnostic(finding, context) for finding in findings],
    }
    return json.dumps(document, indent=2) + "\n"
