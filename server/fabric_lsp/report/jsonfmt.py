"""`--format json`: one JSON array, ruff's keys (DESIGN.md "Command line").

    {"code", "message", "severity", "filename" (absolute), "location", "end_location"
     ({"row", "column"}, 1-based, columns in characters), "url", "noqa_row",
     "fix": null | {"applicability", "message", "edits": [{"content", "location", "end_location"}]},
     "related": [{"filename", "location", "end_location", "message"}]}

Ruff's edits carry no file name (its fixes never leave the file). Ours may: an edit in another file
than the finding's gets an extra "filename" key (absolute); edits in the finding's own file do not.

Notebooks, as ruff: "cell" is the 1-based number of the cell (every kind of cell counted) and the
locations and "noqa_row" are relative to that cell; "cell" is null in a Python file. Edits and
related locations in a notebook carry their own "cell" (a fix may edit another cell).
"""

from __future__ import annotations

import json
import os
from typing import Any, Sequence

from fabric_lsp.findings import Finding, Position
from fabric_lsp.report.common import ReportContext


def _location(position: Position) -> dict[str, int]:
    return {"row": position.line + 1, "column": position.character + 1}


def _span(path: str, start: Position, end: Position, context: ReportContext) -> dict[str, Any]:
    """location/end_location (and "cell" in a notebook), relative to the cell."""
    number, start_in_cell = context.cell(path, start)
    end_number, end_in_cell = context.cell(path, end)
    if number is None:
        return {"location": _location(start), "end_location": _location(end)}
    if end_number != number:  # ends on the line that follows the cell: its end
        end_in_cell = start_in_cell
    return {"cell": number, "location": _location(start_in_cell), "end_location": _location(end_in_cell)}


def finding_to_json(finding: Finding, context: ReportContext) -> dict[str, Any]:
    filename = os.path.abspath(finding.span.path)
    fix = None
    if finding.fix is not None:
        edits = []
        for edit in finding.fix.edits:
            item: dict[str, Any] = {"content": edit.new_text, **_span(edit.path, edit.start, edit.end, context)}
            if os.path.abspath(edit.path) != filename:
                item["filename"] = os.path.abspath(edit.path)
            edits.append(item)
        fix = {"applicability": finding.fix.applicability.value, "message": finding.fix.title, "edits": edits}
    where = _span(finding.span.path, finding.span.start, finding.span.end, context)
    _, noqa = context.cell(finding.span.path, Position(finding.noqa_line, 0))
    return {
        "code": finding.code,
        "message": finding.full_message,
        "severity": finding.severity.value,
        "filename": filename,
        "cell": where.get("cell"),
        "location": where["location"],
        "end_location": where["end_location"],
        "url": context.url(finding),
        "noqa_row": noqa.line + 1,
        "fix": fix,
        "related": [
            {
                "filename": os.path.abspath(related.span.path),
                **_span(related.span.path, related.span.start, related.span.end, context),
                "message": related.message,
            }
            for related in finding.related
        ],
    }


def render_json(findings: Sequence[Finding], context: ReportContext) -> str:
    return json.dumps([finding_to_json(f, context) for f in findings], indent=2) + "\n"


def render_json_lines(findings: Sequence[Finding], context: ReportContext) -> str:
    """`--output-format json-lines`: the objects of `json`, one per line (ruff's json-lines)."""
    return "".join(json.dumps(finding_to_json(f, context)) + "\n" for f in findings)
