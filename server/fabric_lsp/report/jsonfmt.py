"""`--format json`: one JSON array, ruff's keys (DESIGN.md "Command line").

    {"code", "message", "severity", "filename" (absolute), "location", "end_location"
     ({"row", "column"}, 1-based, columns in characters), "url", "noqa_row",
     "fix": null | {"applicability", "message", "edits": [{"content", "location", "end_location"}]},
     "related": [{"filename", "location", "end_location", "message"}]}

Ruff's edits carry no file name (its fixes never leave the file). Ours may: an edit in another file
than the finding's gets an extra "filename" key (absolute); edits in the finding's own file do not.
"""

from __future__ import annotations

import json
import os
from typing import Any, Sequence

from fabric_lsp.findings import Finding, Position
from fabric_lsp.report.common import ReportContext


def _location(position: Position) -> dict[str, int]:
    return {"row": position.line + 1, "column": position.character + 1}


def finding_to_json(finding: Finding, context: ReportContext) -> dict[str, Any]:
    filename = os.path.abspath(finding.span.path)
    fix = None
    if finding.fix is not None:
        edits = []
        for edit in finding.fix.edits:
            item: dict[str, Any] = {
                "content": edit.new_text,
                "location": _location(edit.start),
                "end_location": _location(edit.end),
            }
            if os.path.abspath(edit.path) != filename:
                item["filename"] = os.path.abspath(edit.path)
            edits.append(item)
        fix = {"applicability": finding.fix.applicability.value, "message": finding.fix.title, "edits": edits}
    return {
        "code": finding.code,
        "message": finding.message,
        "severity": finding.severity.value,
        "filename": filename,
        "location": _location(finding.span.start),
        "end_location": _location(finding.span.end),
        "url": context.url(finding),
        "noqa_row": finding.noqa_line + 1,
        "fix": fix,
        "related": [
            {
                "filename": os.path.abspath(related.span.path),
                "location": _location(related.span.start),
                "end_location": _location(related.span.end),
                "message": related.message,
            }
            for related in finding.related
        ],
    }


def render_json(findings: Sequence[Finding], context: ReportContext) -> str:
    return json.dumps([finding_to_json(f, context) for f in findings], indent=2) + "\n"
