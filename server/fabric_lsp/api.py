"""The public Python API: `check_paths` and `check_source`, findings as plain data; and under them the
typed surface the command line is built on (`CheckOptions`, `settings`, `check_files`).

    >>> import fabric_lsp
    >>> findings = fabric_lsp.check_paths(["train.py"])
    >>> [(f["code"], f["location"]["row"]) for f in findings]
    [('FAB001', 41)]

Each finding is a dict in the shape of `fabric-lsp check --output-format json` (DESIGN.md "Command
line": ruff's keys, `Finding` below): the command line renders the same findings, from the same calls
(`fabric-lsp check` parses its arguments into a CheckOptions, asks `settings` for each file's
configuration and `check_files` for the findings, then renders them: cli/check.py). So the findings,
their order, configuration (each file's closest `[tool.fabric-lsp]`, the user config), `# noqa`,
invalid-syntax entries and notebooks are exactly the command's. What the command would print on stderr
(notices about files it could not read, malformed `# noqa`, bad settings) is logged on the
`fabric_lsp.api` logger at WARNING level, in the command's words.

What the API does not do: it writes no cache and nothing else, starts no worker process, runs nothing
from the checked workspace (the repository's `[tool.fabric-lsp] python` and its `.venv` are read as
files, never run: docs/security.md, "Trust model"), and never touches the process's streams
(`sys.stdin/stdout/stderr`) or the garbage collector's settings; an interpreter passed as `python=` is
run once, isolated (`python -I -S`), to read its `sys.path`. Calls are serialised by a lock: the
engine's memory of solved programs is the process's.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Literal, Optional, Sequence, TypedDict, Union

from fabric_lsp import findings as _findings
from fabric_lsp import timing
from fabric_lsp.checking import (CacheSet, check_files_cached, docs_url, library_paths, log_notice, noqa_warnings,
                                 notebooks_of, source_findings, source_noqa_warnings, source_notebooks,
                                 syntax_broken)
from fabric_lsp.fixes.confinement import FixBounds, confine
from fabric_lsp.report.syntax import said_analysis_notices, without_syntax_notices
from fabric_lsp.settings.config import ConfigResolver, expand_codes, is_config_error, resolve_interpreter
from fabric_lsp.sources.walk import Notice, discover, display_path

__all__ = [
    "CheckError",
    "CheckOptions",
    "CheckResult",
    "Edit",
    "Finding",
    "Fix",
    "Location",
    "OptionError",
    "Related",
    "check_files",
    "check_paths",
    "check_source",
    "settings",
]

log = logging.getLogger("fabric_lsp.api")
_LOCK = threading.Lock()
PROG = "fabric-lsp"

PathLike = Union[str, "os.PathLike[str]"]
Codes = Union[str, Iterable[str], None]


class Location(TypedDict):
    row: int  # 1-based (in a notebook: in the cell)
    column: int  # 1-based, in characters


class _EditRequired(TypedDict):
    content: str
    location: Location
    end_location: Location


class Edit(_EditRequired, total=False):
    filename: str  # only when the edit is in another file than the finding's (absolute)
    cell: int  # only in a notebook


class Fix(TypedDict):
    applicability: Literal["safe", "unsafe"]
    message: str  # the fix's title
    edits: list[Edit]


class _RelatedRequired(TypedDict):
    filename: str
    location: Location
    end_location: Location
    message: str


class Related(_RelatedRequired, total=False):
    cell: int  # only in a notebook


class Finding(TypedDict):
    code: str  # "FAB001" (or "invalid-syntax" for a file that does not parse)
    message: str
    severity: Literal["error", "warning", "information", "hint"]
    filename: str  # absolute
    cell: Optional[int]  # the notebook cell (1-based, every kind of cell counted); None in a .py file
    location: Location
    end_location: Location
    url: Optional[str]  # the knowledge-base record's source link
    noqa_row: int
    fix: Optional[Fix]
    related: list[Related]


class CheckError(RuntimeError):
    """`check` could not do its work (the command's exit status 2): an internal error, or settings it
    refused. `findings` holds what it reported for the other files; `stderr` what the command would
    have said on stderr about it."""

    def __init__(self, message: str, stderr: str, findings: list[Finding]) -> None:
        super().__init__(message)
        self.stderr = stderr
        self.findings = findings


class OptionError(ValueError):
    """An option the check cannot take (an unknown rule code, an interpreter or settings file that
    does not exist): the command line's usage error, in its words (`--select: unknown rule code ...`)."""


@dataclass(frozen=True)
class CheckOptions:
    """What the caller sets on top of each file's settings (the command line's options of the same
    names). Codes are rule codes or prefixes (`ALL` too), already split (no commas)."""

    select: Optional[tuple[str, ...]] = None  # replaces the configured selection
    extend_select: Optional[tuple[str, ...]] = None  # added to the configured selection
    ignore: Optional[tuple[str, ...]] = None  # added to the configured ignore list
    python: Optional[str] = None  # the interpreter whose packages the analysis reads (a path, a venv, a name on PATH)
    hints: bool = False  # also hint-level findings
    config: Optional[str] = None  # one settings file for every file instead of each file's closest
    isolated: bool = False  # no settings file and no user config
    trust_workspace: bool = False  # let the repository choose programs to run (its pyproject python, its .venv)


@dataclass
class CheckResult:
    """What `check_files` found, as data: the caller decides what to say and how to render it."""

    findings: list[_findings.Finding] = field(default_factory=list)  # in the files' order (report.sort_key sorts them)
    notices: list[Notice] = field(default_factory=list)  # files read with a remark or not checked
    analysis_notices: list[str] = field(default_factory=list)  # `<path>: <reason>`: what the analysis left out, sorted
    errors: list[tuple[str, str]] = field(default_factory=list)  # (path, internal error): files not checked
    # With check_files(measure=True): seconds per phase (summed over the worker processes) in
    # fabric_lsp.timing.PHASES order, and the slowest programs as (seconds, a file of it, its file count).
    phases: list[tuple[str, float]] = field(default_factory=list)
    slowest_programs: list[tuple[float, str, int]] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.errors)


def settings(options: CheckOptions, cwd: Optional[str] = None) -> ConfigResolver:
    """The configuration of each checked file: its closest settings file (or `options.config` for all)
    with the options on top (`select` replaces the selection, `extend_select` adds to it, `ignore` adds
    to the ignored codes, as in ruff). Problems in settings files are collected by the resolver as the
    files are read (ConfigResolver.take_problems). Raises OptionError for an option it cannot take."""
    cwd = cwd if cwd is not None else os.getcwd()
    overrides: dict[str, object] = {}
    for option in ("select", "extend_select", "ignore"):
        codes = getattr(options, option)
        if codes is not None:
            try:
                expand_codes(list(codes))
            except ValueError as bad:
                raise OptionError(f"--{option.replace('_', '-')}: {bad}") from None
            overrides[option] = list(codes)
    if options.python is not None:
        # A path, a virtual environment's folder or a name on PATH (as uv's --python); one that
        # cannot tell its sys.path is an error, not a run against the wrong packages.
        from fabric_lsp.analysis.workspace import interpreter_problem

        try:
            python = resolve_interpreter(options.python, cwd)
        except ValueError as missing:
            raise OptionError(f"--python: {missing}") from None
        problem = interpreter_problem(python)
        if problem is not None:
            raise OptionError(f"--python: {python}: {problem}")
        overrides["python"] = python
    if options.hints:
        overrides["hints"] = True
    config_file = None
    if options.isolated and options.config is not None:
        raise OptionError("--config cannot be used with --isolated (which reads no settings file)")
    if options.config is not None:
        config_file = Path(options.config)
        if not config_file.is_file():
            raise OptionError(f"--config: {options.config}: "
                              + ("not a regular file" if config_file.exists() else "no such file"))
    return ConfigResolver(overrides, config_file=config_file, overrides_source="command line",
                          trust_workspace=options.trust_workspace, fallback_root=cwd, isolated=options.isolated)


def check_files(files: Sequence[str], configs: ConfigResolver, *, jobs: int = 1, cache: Optional[CacheSet] = None,
                need_edits: bool = True, notify: Optional[Callable[[str], None]] = None,
                measure: bool = False) -> CheckResult:
    """The findings of `files` (found by sources.walk.discover, each with its configuration from
    `configs`), their projects analysed as whole programs. `jobs`: worker processes (0: automatic, 1:
    this process only); `cache`: the findings caches to read and write (None: none); `need_edits`:
    findings with their fixes (a cache answer holds none). `notify` receives what the run has to say
    as it happens (the cache or the worker processes unavailable); by default it is logged.
    `measure`: also say where the time went (`phases`, `slowest_programs`; `check -v`)."""
    if measure:
        timing.take()
        timing.enable()
    try:
        results = check_files_cached(files, configs, jobs, cache, need_edits, notify or log_notice)
    finally:
        if measure:
            timing.enable(False)
    found = CheckResult()
    if measure:
        found.phases, found.slowest_programs = timing.report()
        timing.take()
    analysis_notices: set[str] = set()
    broken = syntax_broken(results)
    for result in results:
        analysis_notices.update(without_syntax_notices(result.analysis_notices, broken))
        if result.notice is not None:
            found.notices.append(result.notice)
        if result.error is not None:
            found.errors.append((result.path, result.error))
        found.findings.extend(result.findings)
    found.analysis_notices = sorted(analysis_notices)
    return found


# ---------------------------------------------------------------------------------------------
# check_paths / check_source: the findings as the JSON output's dicts


def _codes(option: str, codes: Codes) -> Optional[tuple[str, ...]]:
    if codes is None:
        return None
    items = [codes] if isinstance(codes, str) else list(codes)
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"{option}: expected rule codes as strings, got {item!r}")
    split = tuple(part.strip() for item in items for part in item.split(",") if part.strip())
    return split or None


def _options(select: Codes, ignore: Codes, python: Optional[PathLike], hints: bool,
             config: Optional[PathLike]) -> CheckOptions:
    return CheckOptions(select=_codes("select", select), ignore=_codes("ignore", ignore),
                        python=os.fspath(python) if python is not None else None, hints=hints,
                        config=os.fspath(config) if config is not None else None)


class _Said:
    """What the command would have said on stderr: logged, and kept for a CheckError."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str) -> None:
        self.lines.append(line)
        log.warning("%s", line)

    def notice(self, message: str) -> None:
        self(f"{PROG}: notice: {message}")

    def settings_problems(self, configs: ConfigResolver) -> None:
        """Said; a mistake in a settings file stops the check (as the command, which exits 2)."""
        failed = None
        for problem in configs.take_problems():
            self(problem)
            failed = failed or (problem if is_config_error(problem) else None)
        if failed is not None:
            raise CheckError(failed, "\n".join(self.lines), [])


def _as_json(found: list[_findings.Finding], context) -> list[Finding]:
    from fabric_lsp.report.jsonfmt import finding_to_json

    # Through JSON text, so that the values are exactly what the json output holds (lists, not tuples).
    return json.loads(json.dumps([finding_to_json(finding, context) for finding in found]))


def _analysis_notes(said: _Said, notes: Iterable[str], cwd: str) -> None:
    for line in said_analysis_notices(notes, cwd):
        said.notice(line)


def check_paths(
    paths: Iterable[PathLike],
    *,
    select: Codes = None,
    ignore: Codes = None,
    python: Optional[PathLike] = None,
    hints: bool = False,
    config: Optional[PathLike] = None,
) -> list[Finding]:
    """The findings of `fabric-lsp check PATHS...` (files and directories, relative to the current
    directory), in its order.

    `select`/`ignore`: rule codes (a list, or a comma-separated string) as `--select`/`--ignore`
    (`select` replaces the configured selection, `ignore` adds to the configured ignore list).
    `python`: the interpreter whose packages the analysis reads (`--python`). `hints`: also
    hint-level findings. `config`: a settings file for every checked file instead of each file's
    closest `pyproject.toml`. Raises FileNotFoundError for a path that does not exist, TypeError
    for codes that are not strings, ValueError (OptionError) for an unknown code, an interpreter or
    settings file that does not exist, CheckError when the check fails otherwise."""
    if isinstance(paths, (str, bytes)) or hasattr(paths, "__fspath__"):
        raise TypeError("paths: expected a list of paths, not one path")
    names = [os.fspath(path) for path in paths]
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"paths: expected str paths, got {name!r}")
        if not os.path.lexists(name):
            raise FileNotFoundError(2, "No such file or directory", name)
    if not names:
        return []
    options = _options(select, ignore, python, hints, config)
    from fabric_lsp import engine
    from fabric_lsp.report import ReportContext, sort_key

    cwd = os.getcwd()
    said = _Said()
    with _LOCK:
        engine.remember_runs(False)  # each program is solved once here: nothing to replay later
        try:
            configs = settings(options, cwd)
            files, notices = discover(names, selection_for=configs.selection_for)
            for path in files:  # every settings file of the run read now: a mistake in one stops the run
                configs.for_path(path)
            said.settings_problems(configs)
            if not files and not notices:
                said(f"{PROG}: warning: No Python files found under the given path(s)")
            for line in noqa_warnings(files, configs, cwd):
                said(f"{PROG}: warning: {line}")
            result = check_files(files, configs, jobs=1, cache=None, need_edits=True, notify=said.notice)
        finally:
            engine.remember_runs(True)
    for path, error in result.errors:
        first, *rest = error.rstrip().split("\n")
        said(f"{PROG}: error: {display_path(path, cwd)}: {first}")
        for line in rest:
            said(line)
    for notice in sorted(notices + result.notices, key=lambda n: n.path):
        said(notice.format(cwd))
    _analysis_notes(said, result.analysis_notices, cwd)
    found = sorted(result.findings, key=sort_key)
    found, _ = confine(found, FixBounds(names, lambda: library_paths(configs, files)))
    findings = _as_json(found, ReportContext(cwd=cwd, notebooks=notebooks_of(found), docs_url=docs_url(configs)))
    if result.failed:
        problem = next(line for line in said.lines if "error" in line)
        raise CheckError(problem, "\n".join(said.lines), findings)
    return findings


def check_source(
    source: Union[str, bytes],
    path: PathLike = "untitled.py",
    *,
    select: Codes = None,
    ignore: Codes = None,
    python: Optional[PathLike] = None,
    hints: bool = False,
    config: Optional[PathLike] = None,
) -> list[Finding]:
    """The findings of `source` checked as the file `path` would be (relative to the current
    directory; it need not exist, and if it does its content on disk is not read): its settings,
    and the other files of its project for imports, as `fabric-lsp check --stdin-filename PATH`.
    A path ending in `.ipynb` takes the notebook's JSON. Same options and errors as check_paths."""
    if isinstance(source, str):
        data = source.encode("utf-8", "surrogatepass")
    elif isinstance(source, (bytes, bytearray)):
        data = bytes(source)
    else:
        raise TypeError(f"source: expected str or bytes, got {type(source).__name__}")
    name = os.fspath(path)
    if not isinstance(name, str) or not name:
        raise TypeError("path: expected a file name")
    options = _options(select, ignore, python, hints, config)
    from fabric_lsp import engine
    from fabric_lsp.report import ReportContext, sort_key
    from fabric_lsp.sources.walk import NOTEBOOK_SUFFIXES, byte_limit, decode_notebook, decode_source

    cwd = os.getcwd()
    absolute = os.path.abspath(name)
    said = _Said()
    with _LOCK:
        engine.remember_runs(False)
        try:
            configs = settings(options, cwd)
            file_config = configs.for_path(absolute)
            said.settings_problems(configs)
            limit = byte_limit(absolute, file_config.max_file_size)
            notebook = name.endswith(NOTEBOOK_SUFFIXES)
            reason = None
            if len(data) > limit:
                reason = f"file is larger than max-file-size (> {limit} bytes)"
            elif notebook and not file_config.notebooks:
                reason = "a notebook, and notebooks are off (notebooks = false); skipped"
            decoded = None
            if reason is None:
                decoded, notice = (decode_notebook(absolute, data, file_config.max_file_size) if notebook
                                   else decode_source(absolute, data))
                if decoded is None:
                    reason = notice.reason
                elif notice is not None:
                    said(notice.format(cwd))
            if decoded is None:
                if reason:
                    said.notice(f"{display_path(absolute, cwd)}: {reason}")
                return []
            for line in source_noqa_warnings(decoded, cwd):
                said(f"{PROG}: warning: {line}")
            try:
                found, notes = source_findings(decoded, file_config)
            except Exception as error:
                from fabric_lsp.checking import internal_error

                said(f"{PROG}: error: {display_path(absolute, cwd)}: {internal_error(error).splitlines()[0]}")
                raise CheckError(said.lines[-1], "\n".join(said.lines), []) from None
        finally:
            engine.remember_runs(True)
    _analysis_notes(said, notes, cwd)
    found, _ = confine(sorted(found, key=sort_key), FixBounds([absolute]))
    context = ReportContext(cwd=cwd, docs_url=file_config.docs_url, notebooks=source_notebooks(decoded))
    if decoded.notebook is None:  # the frame shows the text checked, not the file on disk
        context.remember_text(absolute, decoded.text)
    return _as_json(found, context)
