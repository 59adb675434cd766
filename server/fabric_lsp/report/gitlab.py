"""`--output-format gitlab`: GitLab Code Quality (a JSON array, Code Climate's issue subset that
GitLab reads), one object per finding:

    {"description": "FAB001: `TinyLM.generate()` runs ...", "check_name": "FAB001",
     "fingerprint": "<64 hex>", "severity": "major",
     "location": {"path": "src/train.py", "lines": {"begin": 14, "end": 14}}}

- `severity`: error -> `major`, warning -> `minor`, information and hint -> `info`.
- `location.path` is relative to the repository root (the nearest folder above the current one
  holding `.git`, else the current folder): right when CI runs `check` in a subdirectory.
- `fingerprint` identifies the finding across runs without its line number: SHA-256 of the path,
  the code, the message (the places it names without their numbers), the stripped text of the
  flagged line and its occurrence among identical ones in the file. Lines added above it keep it.
- In a notebook the path is the `.ipynb`, `lines` those of its JSON text that hold the flagged
  characters (what a merge request's diff shows), and the description ends with `(cell 3, line 4)`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Sequence

from fabric_lsp.findings import Finding, Severity
from fabric_lsp.report.common import ReportContext, fingerprint, occurrences, stable_message

_SEVERITY = {
    Severity.ERROR: "major",
    Severity.WARNING: "minor",
    Severity.INFORMATION: "info",
    Severity.HINT: "info",
}


def _issue(finding: Finding, path: str, line_text: str, occurrence: int, context: ReportContext) -> dict[str, Any]:
    begin = context.file_position(finding.span.path, finding.span.start).line + 1
    end = max(context.file_position(finding.span.path, finding.span.end).line + 1, begin)
    description = f"{finding.code}: {finding.full_message}"
    cell, inside = context.cell(finding.span.path, finding.span.start)
    if cell is not None:
        description += f" (cell {cell}, line {inside.line + 1})"
    return {
        "description": description,
        "check_name": finding.code,
        "fingerprint": fingerprint(path, finding.code, stable_message(finding.full_message), line_text, occurrence),
        "severity": _SEVERITY[finding.severity],
        "location": {"path": path, "lines": {"begin": begin, "end": end}},
    }


def render_gitlab(findings: Sequence[Finding], context: ReportContext) -> str:
    issues = []
    for finding, (path, line_text, occurrence) in zip(findings, occurrences(findings, context)):
        if context.relative_to_root(finding.span.path) is None:
            path = Path(os.path.abspath(finding.span.path)).as_posix()
        issues.append(_issue(finding, path, line_text, occurrence, context))
    return json.dumps(issues, indent=2) + "\n"
