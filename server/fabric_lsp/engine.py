"""text -> analysis -> rules -> findings, with configuration and `# noqa` applied.

The CLI and the language server both call `check_source`; neither filters findings again.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from dataclasses import replace

from fabric_lsp.analysis import analyze, may_have_findings
from fabric_lsp.analysis.incremental import analysing, parse_text
from fabric_lsp.analysis.source import SourceFile
from fabric_lsp.analysis.workspace import Workspace, jedi_budget
from fabric_lsp.cache import attach_answer_store, save_answers
from fabric_lsp.config import Config
from fabric_lsp.findings import Finding, Severity
from fabric_lsp.rules import ALL_RULES

log = logging.getLogger("fabric_lsp.engine")

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*))?", re.IGNORECASE)

JEDI_SECONDS_PER_FILE = 10.0

_workspaces: dict[tuple[str | None, str | None], Workspace] = {}
_workspaces_lock = threading.Lock()


_ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


def project_root_for(path: str, configured: str | None) -> str:
    """The folder imports are resolved from: the configured root when it holds the file, else the
    nearest folder with a project marker, else the file's own folder (what `python file.py` uses)."""
    folder = os.path.dirname(os.path.abspath(path))
    if configured and (folder + os.sep).startswith(os.path.abspath(configured) + os.sep):
        return os.path.abspath(configured)
    candidate = folder
    while True:
        if any(os.path.exists(os.path.join(candidate, marker)) for marker in _ROOT_MARKERS):
            return candidate
        parent = os.path.dirname(candidate)
        if parent == candidate:
            return folder
        candidate = parent


def workspace_for(config: Config, path: str | None = None) -> Workspace:
    """One workspace (jedi project) per (root, interpreter), reused across checks."""
    root = project_root_for(path, config.root) if path else config.root
    key = (root, config.python)
    with _workspaces_lock:
        workspace = _workspaces.get(key)
        if workspace is None:
            workspace = _workspaces[key] = Workspace(root, config.python)
            attach_answer_store(workspace, config, root)  # jedi's answers kept across runs
        return workspace


def check_source(path: str, text: str, config: Config, workspace: Workspace | None = None) -> list[Finding]:
    with analysing():  # see analysis.incremental: trees shared between edits, the checked source
        return _check_source(path, text, config, workspace)


def _check_source(path: str, text: str, config: Config, workspace: Workspace | None) -> list[Finding]:
    path = os.path.abspath(path)
    if not may_have_findings(text):
        return []
    source = parse_text(path, text, checked=True)  # re-parses only what an edit touched
    if source.tree is None:
        log.info("%s: not analysed: %s", path, source.syntax_error)
        return []
    workspace = workspace or workspace_for(config, path)
    try:
        with jedi_budget(JEDI_SECONDS_PER_FILE):
            facts = analyze(source, workspace)
    except RecursionError:
        log.warning("%s: not analysed: nesting too deep", path)
        return []
    save_answers(workspace)  # now and then, in the analysing thread
    findings: list[Finding] = []
    for rule in ALL_RULES:
        if not config.enabled(rule.code):
            continue
        try:
            findings.extend(rule.check(facts))
        except Exception:  # one rule's bug must not hide the others' findings
            log.exception("%s: rule %s failed", path, rule.code)
    return sorted(_configured(findings, source, config), key=lambda f: (f.span.start, f.code))


def _configured(findings: list[Finding], source: SourceFile, config: Config) -> list[Finding]:
    kept = []
    for finding in findings:
        override = config.severity.get(finding.code)
        if override is not None:
            finding = replace(finding, severity=Severity(override))
        if finding.severity == Severity.HINT and not config.hints:
            continue
        if finding.span.path == source.path and is_suppressed(source.line(finding.noqa_line + 1), finding.code):
            continue
        kept.append(finding)
    return kept


def is_suppressed(line: str, code: str) -> bool:
    """`# noqa` suppresses everything on the line; `# noqa: FAB001, E501` only the codes named."""
    for match in _NOQA.finditer(line):
        codes = match.group("codes")
        if codes is None:
            return True
        if code.upper() in {c.strip().upper() for c in codes.split(",")}:
            return True
    return False
