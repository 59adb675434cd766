"""Output formats of `fabric-lsp check`: text (ruff-like), json (ruff's keys), sarif (2.1.0), github
(workflow commands). Each takes the findings in their final order and returns the whole output."""

from __future__ import annotations

from fabric_lsp.report.common import ReportContext, fixable, sort_key
from fabric_lsp.report.github import render_github
from fabric_lsp.report.jsonfmt import finding_to_json, render_json
from fabric_lsp.report.sarif import render_sarif
from fabric_lsp.report.text import render_text, summary_line

FORMATS = ("text", "json", "sarif", "github")

_RENDERERS = {
    "text": render_text,
    "json": render_json,
    "sarif": render_sarif,
    "github": render_github,
}


def render(format: str, findings, context: ReportContext) -> str:
    return _RENDERERS[format](findings, context)


__all__ = [
    "FORMATS",
    "ReportContext",
    "finding_to_json",
    "fixable",
    "render",
    "render_github",
    "render_json",
    "render_sarif",
    "render_text",
    "sort_key",
    "summary_line",
]
