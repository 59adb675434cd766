"""Output formats of `fabric-lsp check`: text (ruff-like), json (ruff's keys), sarif (2.1.0, for
GitHub code scanning), github (workflow commands), gitlab (Code Quality), junit (JUnit XML). Each
takes the findings in their final order and returns the whole output. `--statistics` replaces the
findings by counts per code (report/statistics.py)."""

from __future__ import annotations

from fabric_lsp.report.common import ReportContext, fixable, sort_key
from fabric_lsp.report.github import render_github
from fabric_lsp.report.gitlab import render_gitlab
from fabric_lsp.report.jsonfmt import finding_to_json, render_json
from fabric_lsp.report.junit import render_junit
from fabric_lsp.report.sarif import render_sarif
from fabric_lsp.report.statistics import STATISTICS_FORMATS, render_statistics
from fabric_lsp.report.text import render_concise, render_text, summary_line

# "text" is ruff's `full` (headline, code frame, notes); "concise" one line per finding.
FORMATS = ("text", "concise", "json", "sarif", "github", "gitlab", "junit")
# Accepted for --output-format as another name of a format (ruff's name of its default text).
FORMAT_ALIASES = {"full": "text"}
TEXT_FORMATS = ("text", "concise")

_RENDERERS = {
    "text": render_text,
    "concise": render_concise,
    "json": render_json,
    "sarif": render_sarif,
    "github": render_github,
    "gitlab": render_gitlab,
    "junit": render_junit,
}


def render(format: str, findings, context: ReportContext) -> str:
    return _RENDERERS[FORMAT_ALIASES.get(format, format)](findings, context)


__all__ = [
    "FORMATS",
    "FORMAT_ALIASES",
    "TEXT_FORMATS",
    "ReportContext",
    "STATISTICS_FORMATS",
    "finding_to_json",
    "fixable",
    "render",
    "render_github",
    "render_gitlab",
    "render_json",
    "render_junit",
    "render_sarif",
    "render_statistics",
    "render_concise",
    "render_text",
    "sort_key",
    "summary_line",
]
