"""text -> analysis -> rules -> findings, with configuration and `# noqa` applied.

The CLI and the language server both call `check_source`; neither filters findings again. A file is
analysed as part of its project's program (analysis.program): the findings of every file of that
program are computed once per state of the program's files and handed out per file, so checking
ten files of one project solves it once, and an editor's open documents share the work.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from dataclasses import dataclass, field, replace

from fabric_lsp import timing
from fabric_lsp.fixes import noqa
from fabric_lsp.analysis import analyze
from fabric_lsp.analysis.incremental import analysing
from fabric_lsp.analysis.program import Plan, Program, plan_project, program_of, solve
from fabric_lsp.analysis.source import SourceFile
from fabric_lsp.analysis.workspace import Workspace, interpreter_sys_path
from fabric_lsp.settings.config import Config
from fabric_lsp.sources.files import unchanged_on_disk
from fabric_lsp.findings import Finding, Severity
from fabric_lsp.rules.first_error import apply as first_errors
from fabric_lsp.report.syntax import said_analysis_notices
from fabric_lsp.rules import ALL_RULES
from fabric_lsp.sources.project_root import forget_project_roots, project_root_for  # noqa: F401 (engine's names too)

log = logging.getLogger("fabric_lsp.engine")

_workspaces: dict[tuple[str | None, str | None], Workspace] = {}
_workspaces_lock = threading.Lock()


def workspace_for(config: Config, path: str | None = None) -> Workspace:
    """One workspace (root, analysis interpreter, unsaved buffers) per (root, interpreter)."""
    root = project_root_for(path, config.root, config.fallback_root) if path else config.root
    key = (root, config.python, config.trusted)
    with _workspaces_lock:
        workspace = _workspaces.get(key)
        if workspace is None:
            workspace = _workspaces[key] = Workspace(root, config.python, config.trusted)
        return workspace


@dataclass
class ProgramResult:
    key: tuple
    program: Program
    findings: dict[str, list[Finding]]  # by file, before configuration
    notices: list[str]
    entries: tuple = ()  # the files' FileEntry objects it was built from (analysis.program.file_entry)
    reads: dict = field(default_factory=dict)  # what it read outside the project (Program.outside_reads)


@dataclass
class ProjectResult:
    findings: dict[str, list[Finding]]  # by file, before configuration
    notices: list[str]
    walked: tuple[str, ...]  # the project files the answer depends on
    sources: dict[str, SourceFile]  # the parsed files of the programs
    reads: dict = field(default_factory=dict)  # and what it read outside the project: path -> disk identity


# Whether a program's next solve may replay this one's runs (the server); `check` solves each
# program once and turns it off (remember_runs(False)).
_remember_runs = True


def remember_runs(enabled: bool) -> None:
    global _remember_runs
    _remember_runs = enabled


_programs: dict[tuple, ProgramResult] = {}
_programs_lock = threading.Lock()
_MAX_PROGRAMS = 32  # an editor's open documents span this many programs before one is solved again


def project_files(root: str, config: Config, extra: list[str] = ()) -> list[str]:
    """The Python files of the project at `root` that an analysis reads (as build_programs walks them)."""
    from fabric_lsp.analysis.program import project_paths

    return project_paths(os.path.abspath(root), config.exclude, [os.path.abspath(p) for p in extra])


def plan_for(paths: list[str], config: Config, workspace: Workspace, overlays: dict[str, str] | None = None) -> Plan:
    """The programs of the project holding `paths` (analysis.program.plan_project)."""
    root = workspace.root or project_root_for(paths[0], config.root, config.fallback_root)

    def library_path() -> tuple[str, ...]:
        return workspace.interpreter.sys_path() or interpreter_sys_path(sys.executable) or ()

    texts = dict(workspace.overlays)
    if overlays:
        texts.update(overlays)
    with timing.phase("read"):  # the project's files read and scanned for their imports
        return plan_project(root, paths, texts, library_path, config.exclude, config.max_file_size)


def project_result(paths: list[str], config: Config, workspace: Workspace, overlays: dict[str, str] | None = None,
                   plan: Plan | None = None, numbers: list[int] | None = None) -> ProjectResult:
    """The findings of every file of the programs `paths` take part in (or of the programs
    `numbers` of a plan made earlier); each program is solved once per state of its files."""
    plan = plan or plan_for(paths, config, workspace, overlays)
    findings: dict[str, list[Finding]] = {}
    notices: list[str] = []
    sources: dict[str, SourceFile] = {}
    reads: dict = {}
    for number in plan.groups_of(paths) if numbers is None else numbers:
        result = _unchanged(plan, number, workspace)
        if result is None:
            started = time.perf_counter() if timing.enabled() else 0.0
            with timing.phase("parse"):
                program = program_of(plan, number, paths, workspace)
            result = _solved(program, workspace, plan, number)
            if started:
                timing.program_done(time.perf_counter() - started, _program_name(plan, number), len(plan.groups[number]))
        program = result.program
        for path, found in result.findings.items():
            findings.setdefault(path, []).extend(found)
        notices.extend(result.notices)
        sources.update(program.sources)
        reads.update(result.reads)
    return ProjectResult(findings, notices, plan.walked, sources, reads)


def _program_name(plan: Plan, number: int) -> str:
    """The file a user knows a program by (for `check -v`): its training script, the one that names
    Fabric's setup most (ties: the first), read from the text."""
    def score(path: str) -> int:
        text = plan.entries[path].text
        return sum(text.count(word) for word in ("Fabric(", ".launch(", ".setup(", ".setup_module("))

    group = plan.groups[number]
    return min(group, key=lambda path: (-score(path), path))


# The runs of the last solve of each program (by its files), replayed by the next solve where they
# still hold (flow.Solver._replay): an edit re-interprets what it touched and what that changes.
_last_runs: dict[tuple, dict] = {}


def _group_key(root: str, workspace: Workspace, files) -> tuple:
    return (root, workspace.python, tuple(sorted(files)))


def _unchanged(plan: Plan, number: int, workspace: Workspace) -> ProgramResult | None:
    """The kept result of a program whose files are the very same entries (same texts, read once:
    analysis.program.file_entry): reused without parsing or translating anything. Opening one more
    file of a 60-file program in the editor rebuilt and solved it again (1.5 s) each time."""
    files = plan.groups[number]
    entries = tuple(plan.entries[path] for path in files)
    with _programs_lock:
        known = _programs.get(_group_key(plan.root, workspace, files))
    if known is not None and len(known.entries) == len(entries) and all(
            a is b for a, b in zip(known.entries, entries)) and unchanged_on_disk(known.reads.items()):
        return known
    return None


def _solved(program: Program, workspace: Workspace, plan: Plan | None = None, number: int | None = None) -> ProgramResult:
    """The findings of a program, solved once per state of its files: checking its files one by
    one (the CLI, an editor's open documents) solves it once; only the latest state of each
    program is kept, with the runs the next solve can replay."""
    # The plan's group, not the parsed sources: programs none of whose files parse all had the key
    # () and shared the first one's result (only the first syntax error of a run was reported).
    files = plan.groups[number] if plan is not None else sorted(program.sources)
    group = _group_key(program.root, workspace, files)
    key = tuple(id(source) for _, source in sorted(program.sources.items()))
    if plan is not None:  # a file that did not parse has no source: its entry (its text) tells states apart
        key += tuple(id(plan.entries[path]) for path in files if path not in program.sources)
    with _programs_lock:
        known = _programs.get(group)
        if known is not None and known.key == key and unchanged_on_disk(known.reads.items()):
            return known
        previous = _last_runs.pop(group, None)
    with timing.phase("solve"):
        solver = solve(program, previous, record=_remember_runs)
    with timing.phase("facts"):
        facts = analyze(program)
    with timing.phase("rules"):
        by_file = _rule_findings(program, facts)
    # Every keystroke in an editor analyses the program again: its files of newer syntax are one line.
    for notice in said_analysis_notices(facts.notices, listed_by=""):
        log.info("%s", notice)
    # Keyed by the sources' identities: the kept result holds its sources, so no id is reused.
    entries = tuple(plan.entries[path] for path in plan.groups[number]) if plan is not None else ()
    if plan is not None and sorted(program.sources) != plan.groups[number]:
        entries = ()  # a file of the group did not parse or was left out: rebuilt each time
    result = ProgramResult(key, program, by_file, list(facts.notices), entries, program.outside_reads())
    logs = solver.logs
    # What the result keeps: the program's files (their identities are the key), not the tables.
    program.solver = None
    solver.program = None
    with _programs_lock:
        _programs[group] = result
        if _remember_runs:
            _last_runs[group] = logs
        for cache in (_programs, _last_runs):
            while len(cache) > _MAX_PROGRAMS:
                cache.pop(next(iter(cache)))
    return result


def _rule_findings(program: Program, facts) -> dict[str, list[Finding]]:
    """Every rule's findings on the program's facts, by file."""
    by_file: dict[str, list[Finding]] = {}
    for rule in ALL_RULES:
        try:
            found = rule.check(facts)
        except Exception:  # one rule's bug must not hide the others' findings
            log.exception("%s: rule %s failed", program.root, rule.code)
            # Said with the result, so a cached run says it too instead of "All checks passed!".
            facts.notices.append(f"{program.root}: internal error: rule {rule.code} failed on this program, "
                                 f"its findings are missing (please report it; FABRIC_LSP_DEBUG=1 shows why)")
            continue
        for finding in found:
            by_file.setdefault(finding.span.path, []).append(finding)
    return first_errors(by_file)  # what a certain earlier error stops is not reported


def check_source(path: str, text: str, config: Config, workspace: Workspace | None = None) -> list[Finding]:
    with analysing():  # see analysis.incremental: trees shared between edits, the checked source
        return _check_source(path, text, config, workspace)


def _check_source(path: str, text: str, config: Config, workspace: Workspace | None) -> list[Finding]:
    found = _check_texts({os.path.abspath(path): text}, config, workspace)[0]
    return found[os.path.abspath(path)]


def check_document(path: str, text: str, config: Config, workspace: Workspace | None = None
                   ) -> tuple[list[Finding], frozenset[str]]:
    """check_source, and the files of the programs the document took part in: an edit of one of
    them can change its findings (the server re-analyses only those dependents)."""
    with analysing():
        found, _, _, files, _ = _check_texts({os.path.abspath(path): text}, config, workspace)
        return found[os.path.abspath(path)], files



def check_paths(texts: dict[str, str], config: Config, plan: Plan | None = None, numbers: list[int] | None = None
                ) -> tuple[dict[str, list[Finding]], list[str], list[str], dict]:
    """Findings of several files of one project (one program build and solve for all of them), the
    project files whose state the answer depends on, the analysis's notices, and what it read
    outside the project (path -> disk identity, Program.outside_reads). With a plan made earlier
    (plan_for), only its programs `numbers` are solved (the CLI spreads them over workers)."""
    with analysing():
        found, walked, notices, _, reads = _check_texts({os.path.abspath(p): t for p, t in texts.items()}, config,
                                                        None, plan, numbers)
        return found, walked, notices, reads


def _check_texts(texts: dict[str, str], config: Config, workspace: Workspace | None,
                 plan: Plan | None = None, numbers: list[int] | None = None):
    paths = sorted(texts)
    found: dict[str, list[Finding]] = {path: [] for path in paths}
    if not paths:
        return found, [], [], frozenset(), {}
    workspace = workspace or workspace_for(config, paths[0])
    try:
        # A file that takes part in no program (nothing in it or importing it names Fabric) is not
        # even parsed: the programs are found from the files' text (analysis.program).
        result = project_result(paths, config, workspace, texts, plan, numbers)
    except RecursionError:
        log.warning("%s: not analysed: nesting too deep", paths[0])
        return found, [], [], frozenset(), {}
    for path in paths:
        source = result.sources.get(path)
        if source is not None:
            found[path] = _configured(result.findings.get(path, []), source, config)
    return found, list(result.walked), list(result.notices), frozenset(result.sources), result.reads


def _configured(findings: list[Finding], source: SourceFile, config: Config) -> list[Finding]:
    """Selection, per-file ignores, severity overrides, hints and `# noqa` of the configuration,
    in a stable order."""
    kept = []
    ignored_here = config.per_file_ignored(source.path)
    suppressions = None  # read from the source's tokens when a finding needs them (fabric_lsp.fixes.noqa)
    for finding in findings:
        if not config.enabled(finding.code) or finding.code in ignored_here:
            continue
        override = config.severity.get(finding.code)
        if override is not None:
            finding = replace(finding, severity=Severity(override))
        if finding.severity == Severity.HINT and not config.hints:
            continue
        if finding.span.path == source.path:
            if suppressions is None:
                suppressions = noqa.directives(source.text)
            if suppressions.suppresses(finding.noqa_line, finding.code):
                continue
        kept.append(finding)
    return sorted(kept, key=lambda f: (f.span.start, f.code, f.message))


def is_suppressed(line: str, code: str) -> bool:
    """Whether a `# noqa` comment on this one line (read as a source of its own) suppresses `code`."""
    return noqa.directives(line if line.endswith("\n") else line + "\n").suppresses(0, code)
