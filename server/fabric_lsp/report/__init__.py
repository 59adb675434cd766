"""Output formats of `fabric-lsp check`: text (ruff-like), json (ruff's keys), sarif (2.1.0, for
GitHub code scanning), github (workflow commands), gitlab (Code Quality), junit (JUnit XML),
json-lines (json's objects one per line) and rdjson (reviewdog's format). Each
takes the findings in their final order and returns the whole output. `--statistics` replaces the
findings by counts per code (report/statistics.py)."""

from __future__ import annotations

# "text" is ruff's `full` (headline, code frame, notes); "concise" one line per finding.
FORMATS = ("text", "concise", "json", "json-lines", "sarif", "github", "gitlab", "junit", "rdjson")
# Accepted for --output-format as another name of a format (ruff's name of its default text).
FORMAT_ALIASES = {"full": "text"}
TEXT_FORMATS = ("text", "concise")

# Each format's module loads when it is used (PEP 562 below): the language server imports
# report.escape at start and must not pay for the formats (issue 29).
_WHERE = {
    "ReportContext": "common",
    "STATISTICS_FORMATS": "common",
    "fixable": "common",
    "sort_key": "common",
    "render_github": "github",
    "render_gitlab": "gitlab",
    "finding_to_json": "jsonfmt",
    "render_json": "jsonfmt",
    "render_json_lines": "jsonfmt",
    "render_rdjson": "rdjson",
    "render_junit": "junit",
    "render_sarif": "sarif",
    "render_statistics": "statistics",
    "render_text": "text",
    "render_concise": "text",
    "summary_line": "text",
}

_RENDERERS = {
    "text": "render_text",
    "concise": "render_concise",
    "json": "render_json",
    "json-lines": "render_json_lines",
    "rdjson": "render_rdjson",
    "sarif": "render_sarif",
    "github": "render_github",
    "gitlab": "render_gitlab",
    "junit": "render_junit",
}

TYPE_CHECKING = False
if TYPE_CHECKING:
    from fabric_lsp.report.common import STATISTICS_FORMATS, ReportContext, fixable, sort_key
    from fabric_lsp.report.github import render_github
    from fabric_lsp.report.gitlab import render_gitlab
    from fabric_lsp.report.jsonfmt import finding_to_json, render_json, render_json_lines
    from fabric_lsp.report.junit import render_junit
    from fabric_lsp.report.rdjson import render_rdjson
    from fabric_lsp.report.sarif import render_sarif
    from fabric_lsp.report.statistics import render_statistics
    from fabric_lsp.report.text import render_concise, render_text, summary_line


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'fabric_lsp.report' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"fabric_lsp.report.{module}"), name)
    globals()[name] = value
    return value


def render(format: str, findings, context: "ReportContext") -> str:
    return __getattr__(_RENDERERS[FORMAT_ALIASES.get(format, format)])(findings, context)


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
    "render_json_lines",
    "render_junit",
    "render_rdjson",
    "render_sarif",
    "render_statistics",
    "render_concise",
    "render_text",
    "sort_key",
    "summary_line",
]
