"""The `fabric-lsp` command: check / explain / rules / serve (DESIGN.md "Command line").

`check` gives each file its Config (defaults <- its closest settings file <- command line:
config.ConfigResolver, ruff's hierarchy) and passes it to the engine, which applies
select/ignore/per-file-ignores/severity/hints/noqa itself; this module only finds and reads files
(or standard input), runs the engine (in parallel processes for many files; one group per project
and configuration), applies fixes and prints a report.

Exit status of `check`: 0 nothing at Warning or above, 1 findings (a missing path: an `io-error` entry), 2 usage,
configuration (config.is_config_error) or internal error
(`--exit-zero` turns 1 into 0). Notices about files that cannot be checked go to stderr as
`fabric-lsp: notice: <path>: <reason>` and do not change the status.

Additions to the stable contract: `--hints` (hint-level findings are off in the CLI by default),
`--unsafe-fixes`, `--config PATH`, `--jobs N`, `--no-cache` (see cache.py), `explain --format text|markdown`, `explain -`
(message from stdin), `rules [CODE ...] --format text|json|markdown` (markdown: the pages of docs/rules/),
`serve --stdio` (the default transport, named), and `--pipe`/`--socket`/`--node-ipc` refused in one line.
From ruff (issue 29): `--add-noqa`, `--exit-non-zero-on-fix`, `--isolated`, `--cache-dir`
(FABRIC_LSP_CACHE_DIR), `--watch`, `--output-format json-lines|rdjson`, `explain CODE CODE ...`.
`explain` exits 1 when the message matches no record (2 for a code-shaped query that names no rule).
"""

from __future__ import annotations

import argparse
import ast
import gc
import hashlib
import ipaddress
import logging
import multiprocessing
import os
import re
import secrets
import stat
import sys
import threading
import traceback
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping, NoReturn, Sequence

try:
    import fcntl
except ImportError:  # Windows: no advisory lock; the digest check still applies
    fcntl = None  # type: ignore[assignment]

from fabric_lsp.version import __version__
from fabric_lsp.cache import CACHE_DIR_ENV, CACHE_DIR_NAME, CacheUnavailable, FindingsCache, interpreter_fingerprint
from fabric_lsp.settings.config import (Config, ConfigResolver, expand_codes, is_config_error, load_config,
                               resolve_interpreter)
from fabric_lsp.fixes.confinement import FixBounds, confine
from fabric_lsp.fixes.edits import apply_fixes, unified_diff
from fabric_lsp.sources.files import read_bytes
from fabric_lsp.findings import Finding, Position, Severity, TextEdit
from fabric_lsp.report import (FORMAT_ALIASES, FORMATS, STATISTICS_FORMATS, TEXT_FORMATS, ReportContext, fixable, render,
                               render_statistics, sort_key)
from fabric_lsp.report.io_error import missing_path_finding
from fabric_lsp.report.syntax import is_syntax_finding, without_syntax_notices
from fabric_lsp.report.terminal import Progress, use_color
from fabric_lsp.report.escape import escape_line, escape_lines
from fabric_lsp.sources.walk import DecodedFile, Notice, byte_limit, discover, display_path, read_source

PROG = "fabric-lsp"
# Below this many files, starting worker processes (each importing jedi) costs more than it saves.
PARALLEL_MIN_FILES = 16
MAX_WORKERS = 8


class UsageError(Exception):
    pass


def _say(message: str) -> None:
    """One line on stderr. Notices carry file names and source text: no raw control character
    reaches the terminal, and no line break from a name starts a line of its own (report/escape.py)."""
    print(escape_line(message), file=sys.stderr, flush=True)


def _say_error(where: str, error: str) -> None:
    """`fabric-lsp: error: <where>: <error>`; the lines after the first of an internal error (its
    traceback with FABRIC_LSP_DEBUG, made by _traceback_lines) one notice line each."""
    first, *rest = error.rstrip().split("\n")
    _say(f"{PROG}: error: {where}: {first}")
    for line in rest:
        _say(line)


def _traceback_lines(error: BaseException) -> list[str]:
    """The traceback of `error`, one string per line (frames of fabric-lsp's and its libraries'
    code); the exception's own text, which may hold a file name, is one escaped line."""
    found = traceback.TracebackException.from_exception(error)
    lines = ["Traceback (most recent call last):"]
    for frame in found.stack.format():
        lines.extend(frame.rstrip("\n").split("\n"))
    lines.append(escape_line("".join(found.format_exception_only()).rstrip("\n")))
    return lines


class _NoticeHandler(logging.Handler):
    """The library's log warnings (`cannot read sys.path of ...`) as `fabric-lsp: notice:` lines."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            _say(f"{PROG}: notice: {record.getMessage()}")
        except Exception:  # a log line must never end the run
            self.handleError(record)


# ---------------------------------------------------------------------------------------------
# Checking files (runs in worker processes too: module-level functions and picklable data only)


@dataclass(frozen=True)
class FileResult:
    path: str
    findings: tuple[Finding, ...] = ()
    notice: Notice | None = None
    error: str | None = None  # internal error while analysing this file
    # What the analysis of the file's program says it left out ("<path>: <reason>"), shown once each.
    analysis_notices: tuple[str, ...] = ()
    # What the analysis of its program read outside the project: (path, disk identity) pairs, which
    # the findings cache checks on lookup (cache.py).
    reads: tuple[tuple[str, tuple | None], ...] = ()


def _internal_error(error: BaseException) -> str:
    """One line for the user; the traceback only when FABRIC_LSP_DEBUG is set (it is a bug report)."""
    detail = escape_line("".join(traceback.format_exception_only(type(error), error)).strip())
    message = f"internal error while checking: {detail}"
    if os.environ.get("FABRIC_LSP_DEBUG"):
        message += "\n" + "\n".join(_traceback_lines(error))
    else:
        message += " (set FABRIC_LSP_DEBUG=1 to see where)"
    return message


def _read_all(paths: list[str], config: Config) -> tuple[dict[str, str], dict[str, FileResult]]:
    """The texts of the readable files (a notebook's: its code cells joined), and a result for each
    file that cannot be read."""
    texts, results, _ = _read_with_notices(paths, config)
    return texts, results


def _read_with_notices(paths: list[str], config: Config, sources: dict[str, DecodedFile] | None = None):
    texts: dict[str, str] = {}
    results: dict[str, FileResult] = {}
    warned: dict[str, Notice] = {}  # read and checked, with something to say (a notebook not fixable)
    for path in paths:
        source, notice = read_source(path, config.max_file_size)
        if source is None:
            results[path] = FileResult(path, notice=notice)
        else:
            texts[path] = source.text
            if sources is not None:
                sources[path] = source
            if notice is not None:
                warned[path] = notice
    return texts, results, warned


def check_project(paths: list[str], config: Config, plan=None, numbers=None) -> list[FileResult]:
    """Files of one project, analysed together as one program per group of connected files
    (analysis.program); with a plan made earlier, only its groups `numbers`."""
    texts, results, warned = _read_with_notices(paths, config)
    if texts:
        try:
            from fabric_lsp.analysis import incremental
            from fabric_lsp.engine import check_paths

            found, _, notes, reads = check_paths(texts, config, plan, numbers)
            notes = tuple(dict.fromkeys(notes))
            reads = tuple(sorted(reads.items()))
            for path in texts:
                results[path] = FileResult(path, findings=tuple(found.get(os.path.abspath(path), ())),
                                           notice=warned.get(path), analysis_notices=notes, reads=reads)
            for path in texts:
                incremental.forget(os.path.abspath(path))  # checked once: its tree need not stay in memory
        except Exception as error:  # one project's crash must not lose the others' results
            message = _internal_error(error)
            for path in texts:
                results[path] = FileResult(path, error=message)
    return [results[path] for path in paths]


def check_file(path: str, config: Config) -> FileResult:
    return check_project([path], config)[0]


def _by_project(paths: Sequence[str], config: Config | ConfigResolver) -> list[list[str]]:
    return [group for _, group in _config_groups(paths, config)]


def _resolver(config: Config | ConfigResolver) -> ConfigResolver:
    return config if isinstance(config, ConfigResolver) else ConfigResolver.fixed(config)


def _config_groups(paths: Sequence[str], config: Config | ConfigResolver) -> list[tuple[Config, list[str]]]:
    """The files grouped by (project root, configuration), each with its Config: as ruff, each file
    is checked with the settings of its closest settings file (config.ConfigResolver), whatever
    else is checked in the same run. Sorted by root."""
    from fabric_lsp.engine import project_root_for

    configs = _resolver(config)
    groups: dict[tuple[str, int], tuple[Config, list[str]]] = {}
    for path in paths:
        file_config = configs.for_path(path)
        root = project_root_for(path, file_config.root, file_config.fallback_root)
        groups.setdefault((root, id(file_config)), (file_config, []))[1].append(path)
    return [groups[key] for key in sorted(groups, key=lambda key: key[0])]


def _project_root(config: Config | ConfigResolver, path: str) -> str:
    return _resolver(config).project_root(path)


# Plans made by the parent process, read by forked workers (they inherit the parent's memory).
_PLANS: dict[int, tuple] = {}
# Files whose syntax is still to be checked: (path, text, notebook, the resolver of its plan: the analysis
# interpreter's sys.path, asked only for a file that does not parse), read by forked workers too. A task
# with the token SYNTAX_TASK checks the files [start, end) of this list (report/syntax.py).
_SYNTAX: list[tuple[str, str, object, object]] = []
SYNTAX_TASK = -1
SYNTAX_TASK_CHARS = 1 << 20  # about 0.1 s of parsing per task


def _run_tasks(tasks: list[tuple[int, list[int]]], config: Config | None = None) -> list[tuple[int, int, list[FileResult]]]:
    """(plan token, program number, the results of the program's checked files) for each task; for
    a syntax task (SYNTAX_TASK, start, a result with the invalid-syntax entries of each file that has some)."""
    done = []
    for token, numbers in tasks:
        if token == SYNTAX_TASK:
            done.append((token, numbers[0], _check_syntax(*numbers)))
            continue
        paths, plan, plan_config = _PLANS[token]  # each plan is checked with its files' configuration
        members = {path for number in numbers for path in plan.groups[number]}
        mine = [path for path in paths if os.path.abspath(path) in members]  # the task's own files only
        if mine:
            done.append((token, numbers[0], check_project(mine, plan_config, plan, numbers)))
    return done


class ProgramResults:
    """Results of programs kept from an earlier run (cache.FindingsCache), by program key: a program
    whose files are all unchanged is not solved again when another part of its project changed."""

    def __init__(self, cache: FindingsCache | None, need_edits: bool, interpreters: dict[str, str],
                 caches: dict[str, FindingsCache] | None = None) -> None:
        self.cache = cache
        self.caches = caches or {}  # project root -> the cache of its configuration (else `cache`)
        self.need_edits = need_edits
        self.interpreters = interpreters  # project root -> fingerprint of its analysis interpreter
        self.fresh: dict[str, dict] = {}  # root -> key -> stored form (this run's programs)

    def cache_for(self, root: str) -> FindingsCache | None:
        return self.caches.get(root, self.cache)

    def lookup(self, root: str, key: str) -> tuple[dict[str, tuple[Finding, ...]], tuple[str, ...]] | None:
        interpreter = self.interpreters.get(root)
        cache = self.cache_for(root)
        found = cache.lookup_program(root, interpreter, key, self.need_edits) if interpreter and cache else None
        if found is not None:
            self.fresh.setdefault(root, {})[key] = cache.stored_program(root, key, interpreter)
        return found

    def store(self, root: str, key: str, results: list[FileResult]) -> None:
        if all(r.error is None and r.notice is None for r in results):
            self.fresh.setdefault(root, {})[key] = FindingsCache.program_entry(
                {os.path.abspath(r.path): r.findings for r in results},
                sorted({note for r in results for note in r.analysis_notices}),
                {path: identity for r in results for path, identity in r.reads},
            )

    def syntax(self, root: str, path: str) -> tuple[Finding, ...] | None:
        """The `invalid-syntax` entries stored for `path` by the project's last run, if the file is
        unchanged since (its stamp: size, mtime, SHA-256): an unchanged file is not parsed again."""
        from fabric_lsp.cache import finding_from_json, unchanged
        from fabric_lsp.report.syntax import CODE

        cache = self.cache_for(root)
        entry = cache.projects.get(root) if cache is not None else None
        if not isinstance(entry, dict) or entry.get("interpreter") != self.interpreters.get(root):
            return None
        try:
            state, stored = entry["files"].get(path), entry["findings"].get(path)
            if not isinstance(state, list) or not isinstance(stored, list) or not unchanged([path, *state]):
                return None
            if any(isinstance(note, str) and note.startswith(f"{path}: not analysed: ") for note in entry["notices"]):
                return None  # its verdict may be a notice (report/syntax.py: syntax not judged here): asked again
            return tuple(finding_from_json(item) for item in stored if item.get("code") == CODE)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError):
            return None


def check_files(paths: Sequence[str], config: Config | ConfigResolver, jobs: int = 0,
                programs: ProgramResults | None = None) -> list[FileResult]:
    """Results for `paths`, in the same order. `jobs`: 0 = automatic, 1 = serial. The files of one
    project and one configuration (`config`: one Config for all, or a ConfigResolver giving each
    file its own) are planned together (which files form which programs); the programs are spread
    over the worker processes. With `programs`, a program kept from an earlier run is not solved again."""
    groups = _config_groups(paths, config)
    workers = jobs if jobs > 0 else min(os.cpu_count() or 1, MAX_WORKERS)
    forkable = "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1
    from fabric_lsp.engine import plan_for, workspace_for

    found: dict[str, FileResult] = {}
    tasks: list[tuple[int, list[int], int]] = []  # (plan token, program numbers, size)
    keys: dict[tuple[int, int], tuple[str, str]] = {}  # (token, number) -> (root, program key)
    broken: dict[str, tuple[Finding, ...]] = {}  # path -> its invalid-syntax entries (report/syntax.py)
    unjudged: dict[str, tuple[str, ...]] = {}  # path -> notices of syntax that cannot be judged here
    try:
        for group_config, group in groups:
            sources: dict[str, DecodedFile] = {}
            texts, unread, warned = _read_with_notices(group, group_config, sources)
            found.update(unread)
            for path in texts:
                found[path] = FileResult(path, notice=warned.get(path))  # no finding unless a program says otherwise
            if not texts:
                continue
            absolute = {os.path.abspath(p): t for p, t in texts.items()}
            plan = plan_for(sorted(absolute), group_config, workspace_for(group_config, next(iter(absolute))), absolute)
            for path, source in sources.items():  # ruff reports every file that does not parse
                kept = programs.syntax(plan.root, os.path.abspath(path)) if programs is not None else None
                if kept is None:
                    _SYNTAX.append((path, source.text, source.notebook, plan.resolver))
                elif kept:
                    broken[path] = kept
            token = len(_PLANS)
            _PLANS[token] = (list(texts), plan, group_config)
            by_absolute = {os.path.abspath(p): p for p in texts}
            for number in plan.groups_of(absolute):
                if programs is not None:
                    checked = sorted(p for p in plan.groups[number] if p in by_absolute)
                    key = program_key(plan, number, checked)
                    kept = programs.lookup(plan.root, key)
                    if kept is not None:
                        findings, notes = kept
                        for path in checked:
                            found[by_absolute[path]] = FileResult(by_absolute[path], findings=findings.get(path, ()),
                                                                  analysis_notices=tuple(notes))
                        continue
                    keys[(token, number)] = (plan.root, key)
                tasks.append((token, [number], len(plan.groups[number])))
        tasks.extend(_syntax_tasks())
    except Exception as error:
        _PLANS.clear()
        _SYNTAX.clear()
        message = _internal_error(error)
        return [FileResult(path, error=message) for path in paths]
    try:
        for token, number, results in _solve_tasks(tasks, None, workers, jobs, len(paths), forkable):
            if token == SYNTAX_TASK:
                _syntax_results(results, broken, unjudged)
                continue
            for result in results:
                found[result.path] = result
            if (token, number) in keys and programs is not None:
                programs.store(*keys[(token, number)], results)
    except (OSError, RuntimeError) as error:  # cannot start processes (sandbox, limits): go serial
        _say(f"{PROG}: notice: parallel checking unavailable ({error}); checking serially")
        for token, number, results in _run_tasks([(token, numbers) for token, numbers, _ in tasks]):
            if token == SYNTAX_TASK:
                _syntax_results(results, broken, unjudged)
            else:
                found.update((result.path, result) for result in results)
    finally:
        _PLANS.clear()
        _SYNTAX.clear()
    for path, entries in broken.items():
        found[path] = replace(found[path], findings=tuple(sorted(found[path].findings + entries, key=sort_key)))
    for path, notes in unjudged.items():
        found[path] = replace(found[path], analysis_notices=tuple(dict.fromkeys(found[path].analysis_notices + notes)))
    return [found[path] for path in paths]


def _syntax_results(results: list[FileResult], broken: dict, unjudged: dict) -> None:
    for result in results:
        if result.findings:
            broken[result.path] = result.findings
        if result.analysis_notices:
            unjudged[result.path] = result.analysis_notices


def _syntax_tasks() -> list[tuple[int, list[int], int]]:
    """The files of _SYNTAX in tasks of about SYNTAX_TASK_CHARS characters each (parsing costs by
    the character), spread over the workers with the programs."""
    tasks = []
    start, size = 0, 0
    for index, (_, text, _, _) in enumerate(_SYNTAX):
        size += len(text)
        if size >= SYNTAX_TASK_CHARS or index == len(_SYNTAX) - 1:
            tasks.append((SYNTAX_TASK, [start, index + 1], 1))
            start, size = index + 1, 0
    return tasks


def _check_syntax(start: int, end: int) -> list[FileResult]:
    from fabric_lsp.report.syntax import syntax_report

    found = []
    for path, text, notebook, resolver in _SYNTAX[start:end]:
        try:
            entries, notes = syntax_report(os.path.abspath(path), text, notebook, lambda: resolver.library_path)
        except Exception:  # a parser bug must not lose the run: the analysis says what it could not read
            entries, notes = (), ()
        if entries or notes:
            found.append(FileResult(path, findings=entries, analysis_notices=notes))
    return found


def _solve_tasks(tasks, config: Config | None, workers: int, jobs: int, count: int, forkable: bool):
    """The tasks' results, in this process or spread over forked workers."""
    if workers <= 1 or count < (PARALLEL_MIN_FILES if jobs == 0 else 2) or not forkable or len(tasks) < 2:
        return _run_tasks([(token, numbers) for token, numbers, _ in tasks], config)
    # Largest programs first, dealt round-robin, so that the workers finish together.
    tasks = sorted(tasks, key=lambda task: (-task[2], task[0], task[1]))
    chunks: list[list[tuple[int, list[int]]]] = [[] for _ in range(min(workers * 2, len(tasks)))]
    for index, (token, numbers, _) in enumerate(tasks):
        chunks[index % len(chunks)].append((token, numbers))
    context = multiprocessing.get_context("fork")  # the workers read the plans from memory
    done = []
    with ProcessPoolExecutor(max_workers=min(workers, len(chunks)), mp_context=context) as pool:
        for chunk_results in pool.map(_run_tasks, chunks, [config] * len(chunks)):
            done.extend(chunk_results)
    return done


def program_key(plan, number: int, checked: list[str]) -> str:
    """What a program's findings depend on: its files and their texts, which files the project has
    (imports resolve among them), and which of its files were asked about."""
    digest = hashlib.sha256()
    digest.update("\0".join(plan.walked).encode("utf-8", "surrogatepass"))
    for path in plan.groups[number]:
        digest.update(b"\1" + path.encode("utf-8", "surrogatepass") + b"\0")
        digest.update(hashlib.sha256(plan.entries[path].text.encode("utf-8", "surrogatepass")).digest())
    digest.update(b"\2" + "\0".join(checked).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:40]


def _cache_interpreter(config: Config, cwd: str):
    from fabric_lsp.analysis.workspace import choose_interpreter

    return choose_interpreter(config.root or cwd, config.python, config.trusted)


class CacheSet:
    """The findings caches of one run: one per configuration (cache.FindingsCache: the file lives in
    the configuration's root and is keyed by its analysis interpreter and its settings)."""

    def __init__(self, cwd: str, cache_dir: str | None = None) -> None:
        self.cwd = cwd
        self.cache_dir = cache_dir  # --cache-dir / FABRIC_LSP_CACHE_DIR; None: each project's own folder
        self.off = False
        self._caches: dict[int, tuple[Config, FindingsCache | None]] = {}

    def for_config(self, config: Config) -> FindingsCache | None:
        if self.off:
            return None
        known = self._caches.get(id(config))
        if known is None:
            chosen = _cache_interpreter(config, self.cwd)
            try:
                cache = FindingsCache.open(config, chosen.python, self.cwd, chosen.runnable, self.cache_dir)
            except CacheUnavailable as error:
                _say(f"{PROG}: notice: {error}")
                self.off = True
                return None
            known = self._caches[id(config)] = (config, cache)  # the Config is kept: its id stays its own
        return known[1]

    def save(self) -> None:
        for _, cache in self._caches.values():
            if cache is not None:
                cache.save()


class _OneCache(CacheSet):
    """One FindingsCache for every configuration (a caller that opened it itself)."""

    def __init__(self, cache: FindingsCache) -> None:
        super().__init__(os.getcwd())
        self.cache = cache

    def for_config(self, config: Config) -> FindingsCache | None:
        return self.cache

    def save(self) -> None:
        self.cache.save()


def check_files_cached(paths: Sequence[str], config: Config | ConfigResolver, jobs: int,
                       cache: CacheSet | FindingsCache | None, need_edits: bool = False) -> list[FileResult]:
    """check_files, answering from the persistent cache (see cache.py) the projects whose files
    have not changed (with `need_edits`, not those with fixable findings: no edit is cached). Each
    (project, configuration) group is looked up in the cache of its configuration."""
    if cache is None:
        return check_files(paths, config, jobs)
    caches = cache if isinstance(cache, CacheSet) else _OneCache(cache)
    from fabric_lsp.analysis.compat import requires_python
    from fabric_lsp.analysis.workspace import choose_interpreter
    from fabric_lsp.engine import project_files, project_root_for

    results: dict[str, FileResult] = {}
    misses: list[str] = []
    pending: list[tuple[str, str, dict | None, list[str], FindingsCache]] = []
    for group_config, group in _config_groups(paths, config):
        group_cache = caches.for_config(group_config)
        if group_cache is None:
            misses.extend(group)
            continue
        root = project_root_for(group[0], group_config.root, group_config.fallback_root)
        chosen = choose_interpreter(root, group_config.python, group_config.trusted)
        # The project's requires-python too: it decides which syntax is judged (analysis/compat.py).
        interpreter = f"{interpreter_fingerprint(chosen.python, chosen.runnable)}:{requires_python(root)}"
        files = project_files(root, group_config, group)
        found = group_cache.lookup(root, interpreter, [os.path.abspath(p) for p in group], files, need_edits)
        if found is not None:
            notes = group_cache.notices(root)
            for path in group:
                results[path] = FileResult(path, findings=found[os.path.abspath(path)], analysis_notices=notes)
            continue
        pending.append((root, interpreter, group_cache.file_states(files), group, group_cache))  # states before the check
        misses.extend(group)
    programs = ProgramResults(None, need_edits, {os.path.abspath(root): interpreter for root, interpreter, *_ in pending},
                              {os.path.abspath(root): group_cache for root, _, _, _, group_cache in pending})
    fresh = {r.path: r for r in check_files(misses, config, jobs, programs)}
    for root, interpreter, states, group, group_cache in pending:
        group_results = [fresh[path] for path in group]
        results.update((r.path, r) for r in group_results)
        if all(r.error is None and r.notice is None for r in group_results):
            kept = programs.fresh.get(os.path.abspath(root), {})
            group_cache.store(root, interpreter, states, {os.path.abspath(r.path): r.findings for r in group_results},
                              sorted({note for r in group_results for note in r.analysis_notices}), kept)
    results.update((path, fresh[path]) for path in misses if path not in results)
    caches.save()
    return [results[path] for path in paths]


# ---------------------------------------------------------------------------------------------
# Argument parsing


def _codes(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Finds Lightning Fabric runtime errors before they happen."
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = commands.add_parser("check", help="check Python files and directories")
    check.add_argument("paths", nargs="*", metavar="PATH",
                       help="files or directories (default: .), or - to read the source from stdin")
    # Output (report/): --output-format as ruff, --format kept (the stable contract's name).
    check.add_argument("--output-format", "--format", dest="format", choices=FORMATS + tuple(FORMAT_ALIASES),
                       default="text", metavar="FORMAT",
                       help=f"output format: {', '.join(FORMATS)}, full (default: text, which is ruff's full: headline, "
                            "code frame, notes; concise: one line per finding; --format is the same option)")
    check.add_argument("--output-file", metavar="PATH", help="write the report to PATH instead of stdout")
    check.add_argument("--statistics", action="store_true",
                       help="show how many findings of each code instead of the findings (text or json)")
    check.add_argument("-q", "--quiet", action="store_true", help="show the findings only: no summary")
    check.add_argument("--show-fixes", action="store_true", help="with --fix, list what was fixed in each file")
    check.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                       help="colour the text output (default: auto, on a terminal; NO_COLOR and FORCE_COLOR apply)")
    check.add_argument("--fix", action="store_true", help="apply safe fixes and report what remains")
    check.add_argument(
        "--unsafe-fixes",
        action="store_true",
        help="with --fix also apply unsafe fixes; without it, show them as fixable",
    )
    check.add_argument(
        "--diff", action="store_true", help="print the fixes as unified diffs instead of writing them"
    )
    # As ruff: comma-separated codes or prefixes (ALL too), the option may be repeated.
    check.add_argument("--select", metavar="CODES", action="append",
                       help="rule codes to report, comma-separated (replaces the configured selection)")
    check.add_argument("--extend-select", metavar="CODES", action="append",
                       help="rule codes to report besides the configured selection")
    check.add_argument("--ignore", metavar="CODES", action="append",
                       help="rule codes not to report (added to the configured ignore list)")
    check.add_argument("--force-exclude", action="store_true",
                       help="apply exclude, extend-exclude and .gitignore to paths named on the command line too")
    check.add_argument("--stdin-filename", metavar="PATH",
                       help="read the source from stdin and check it as the file PATH (its settings, its project)")
    check.add_argument("--python", metavar="INTERPRETER", help="interpreter whose packages the analysis resolves")
    check.add_argument("--trust-workspace", action="store_true",
                       help="let the repository choose programs to run (its pyproject python, its .venv)")
    check.add_argument("--add-noqa", action="store_true",
                       help="add `# noqa: CODE` to the line of each finding (and report nothing else)")
    check.add_argument("--watch", action="store_true",
                       help="check again whenever a checked file or a settings file changes (until Ctrl-C)")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings are reported")
    check.add_argument("--exit-non-zero-on-fix", action="store_true",
                       help="with --fix, exit 1 when files were changed, even if no finding remains")
    check.add_argument(
        "--hints", action="store_true", help="also report hint-level findings (off by default in the CLI)"
    )
    check.add_argument("--isolated", action="store_true",
                       help="read no settings file and no user config: the defaults and the command line only")
    check.add_argument("--config", metavar="PATH",
                       help="settings file for every checked file, instead of each file's closest one")
    check.add_argument("--jobs", type=int, default=0, metavar="N", help="worker processes (default: automatic)")
    check.add_argument("--no-cache", action="store_true", help=f"do not read or write {CACHE_DIR_NAME}/")
    # What applies (as ruff): the settings of a file, the files a run checks, what a run does.
    check.add_argument("--show-settings", action="store_true",
                       help="print the settings that apply to the first PATH (its settings file, every key, the "
                            "project root and the analysis interpreter) and exit")
    check.add_argument("--show-files", action="store_true",
                       help="print the files that would be checked, one per line, and exit")
    check.add_argument("-v", "--verbose", action="store_true",
                       help="say on stderr which settings, project roots and interpreters the run uses, what "
                            "the cache answered and how long it took")
    check.add_argument("--cache-dir", metavar="PATH",
                       help=f"keep the cache in PATH instead of each project's {CACHE_DIR_NAME}/ "
                            f"(default: ${CACHE_DIR_ENV})")

    explain = commands.add_parser("explain", help="show the documentation of a rule or a runtime error")
    explain.add_argument(
        "query", nargs="+", metavar="CODE|MESSAGE",
        help="a rule code or name, a record id, a runtime error message or at least 3 words of it, or - for stdin"
    )
    explain.add_argument("--format", choices=("text", "markdown"), default="text")

    rules = commands.add_parser("rules", help="list the rules, their codes and records")
    rules.add_argument("codes", nargs="*", metavar="CODE", help="only these rules (codes or names)")
    rules.add_argument("--format", choices=("text", "json", "markdown"), default="text",
                       help="markdown: each rule's documentation page, as in docs/rules/")

    serve = commands.add_parser("serve", help="run the language server over stdio")
    serve.add_argument("--stdio", action="store_true",
                       help="LSP over stdin/stdout (the default; accepted because language clients append it)")
    serve.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP (loopback only) instead of stdio")
    serve.add_argument(
        "--token", metavar="T", help="with --tcp: the secret the client passes as initializationOptions.token, "
        "at least 128 bits (default: $FABRIC_LSP_TOKEN, else a random one printed on stderr)"
    )
    # What vscode-languageclient (and clients modelled on it) may append for its other transports:
    # recognised so that the answer is one clear line instead of "unrecognized arguments".
    serve.add_argument("--pipe", metavar="NAME", help=argparse.SUPPRESS)
    serve.add_argument("--socket", metavar="PORT", help=argparse.SUPPRESS)
    serve.add_argument("--node-ipc", action="store_true", help=argparse.SUPPRESS)
    serve.add_argument("--clientProcessId", metavar="PID", help=argparse.SUPPRESS)
    return parser


# ---------------------------------------------------------------------------------------------
# check


def _build_config(args: argparse.Namespace) -> ConfigResolver:
    """The configuration of each checked file: its closest settings file (or `--config` for all)
    with the command line on top (`--select` replaces the selection, `--extend-select` adds to it,
    `--ignore` adds to the ignored codes, as in ruff). Problems in settings files are collected by
    the resolver as the files are read (ConfigResolver.take_problems)."""
    overrides: dict[str, object] = {}
    for option in ("select", "extend_select", "ignore"):
        value = getattr(args, option)
        if value is not None:
            codes = [code for item in value for code in _codes(item)]
            name = "--" + option.replace("_", "-")
            try:
                expand_codes(codes)
            except ValueError as bad:
                raise UsageError(f"{name}: {bad}") from None
            overrides[option] = codes
    if args.python is not None:
        # A path, a virtual environment's folder or a name on PATH (as uv's --python); one that
        # cannot tell its sys.path is a one-line usage error, not a run against the wrong packages.
        from fabric_lsp.analysis.workspace import interpreter_problem

        try:
            python = resolve_interpreter(args.python, os.getcwd())
        except ValueError as missing:
            raise UsageError(f"--python: {missing}") from None
        problem = interpreter_problem(python)
        if problem is not None:
            raise UsageError(f"--python: {python}: {problem}")
        overrides["python"] = python
    if args.hints:
        overrides["hints"] = True
    config_file = None
    if args.isolated and args.config is not None:
        raise UsageError("--config cannot be used with --isolated (which reads no settings file)")
    if args.config is not None:
        config_file = Path(args.config)
        if not config_file.is_file():
            raise UsageError(f"--config: {args.config}: " + ("not a regular file" if config_file.exists() else "no such file"))
    return ConfigResolver(overrides, config_file=config_file, overrides_source="command line",
                          trust_workspace=args.trust_workspace, fallback_root=os.getcwd(), isolated=args.isolated)


class ChangedSinceChecked(Exception):
    """The file's bytes are no longer those the fix was computed from."""


def file_digest(path: str, max_size: int) -> str | None:
    """SHA-256 of a regular file's bytes (None: unreadable, special or over `max_size`)."""
    try:
        return hashlib.sha256(read_bytes(path, byte_limit(path, max_size))).hexdigest()
    except OSError:
        return None


def _write(path: str, text: str, encoding: str, expected_digest: str) -> None:
    """Rewrite the file in place (same inode: owner, mode and hard links kept; through a link, its
    target), under an exclusive lock, only if its bytes still hash to `expected_digest`."""
    data = text.encode(encoding)
    target = os.path.realpath(path)
    # O_NOFOLLOW: the target must not have become a link since it was resolved (and confined).
    fd = os.open(target, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "r+b") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{target} is not a regular file")
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)  # against a writer that locks too; released on close
        if hashlib.sha256(handle.read()).hexdigest() != expected_digest:
            raise ChangedSinceChecked(path)
        handle.seek(0)
        handle.write(data)
        handle.truncate()
        handle.flush()
        os.fsync(fd)


def _parses(text: str, path: str) -> bool:
    try:
        compile(text, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


@dataclass
class FixOutcome:
    originals: dict[str, DecodedFile] = field(default_factory=dict)  # files the fixes touch, as read
    texts: dict[str, str] = field(default_factory=dict)  # new text of each file that changes
    written: list[str] = field(default_factory=list)  # files actually written
    fixed: int = 0  # findings whose fix was applied
    fixed_findings: list[Finding] = field(default_factory=list)
    skipped: int = 0  # fixes left out because they overlap an earlier one
    messages: list[str] = field(default_factory=list)  # notices and errors for stderr
    failed: bool = False  # a file could not be written
    stale: list[str] = field(default_factory=list)  # files changed since they were checked: not fixed
    # Notebooks: the JSON text to write, and each changed cell's text before and after (for --diff).
    notebook_json: dict[str, str] = field(default_factory=dict)
    cell_changes: dict[str, dict[int, tuple[str, str]]] = field(default_factory=dict)


def fix_findings(
    findings: Sequence[Finding], *, unsafe_fixes: bool, write: bool, max_file_size: int, cwd: str,
    checked_digests: Mapping[str, str] | None = None, sources: Mapping[str, DecodedFile] | None = None,
) -> FixOutcome:
    """Apply the fixes of `findings` that are fixable (safe ones; unsafe ones too with
    `unsafe_fixes`), in the findings' order, skipping fixes that overlap an earlier one. With
    `write`, the changed files are written (keeping their encoding, BOM and line endings).

    `checked_digests` (absolute path -> SHA-256 of the bytes read before the analysis): a file whose
    bytes differ now is not fixed ("changed since it was checked"), nor is one missing from it;
    None trusts the current bytes (callers that analysed them just now). A result that does not
    parse is never written. `sources`: files given as read (standard input), not read from disk."""
    outcome = FixOutcome()
    selected = [f for f in findings if fixable(f, unsafe_fixes)]
    unwritable: set[str] = set()  # notebooks read but not written (said once each)
    for path in sorted({edit.path for f in selected for edit in f.fix.edits}):
        given = sources.get(path) if sources is not None else None
        source, notice = (given, None) if given is not None else read_source(path, max_file_size)
        if source is None:
            outcome.messages.append(notice.format(cwd))
        elif checked_digests is not None and checked_digests.get(os.path.abspath(path)) != source.digest:
            outcome.stale.append(path)
            outcome.messages.append(f"{display_path(path, cwd)}: changed since it was checked; not fixed")
        elif source.notebook is not None and not source.notebook.writable:
            unwritable.add(path)
            outcome.messages.append(f"{PROG}: notice: {display_path(path, cwd)}: not fixed: {source.notebook.warning}")
        else:
            outcome.originals[path] = source
    selected = _without_cell_spanning(selected, outcome, cwd)
    texts = {edit.path: None for f in selected for edit in f.fix.edits}
    texts.update({path: source.text for path, source in outcome.originals.items()})
    result = apply_fixes([f.fix for f in selected], texts)
    for index, reason in sorted(result.unavailable.items()):
        finding = selected[index]
        if any(edit.path in outcome.stale or edit.path in unwritable for edit in finding.fix.edits):
            continue  # said once per file above
        outcome.messages.append(
            f"{PROG}: notice: {_where(finding, cwd)}: "
            f"{finding.code} fix not applied: {reason}"
        )
    outcome.skipped = len(result.skipped)
    if outcome.skipped:
        count = outcome.skipped
        outcome.messages.append(
            f"{PROG}: notice: {count} fix{'es' if count != 1 else ''} skipped because "
            f"{'they overlap' if count != 1 else 'it overlaps'} another fix; run again to apply"
        )
    outcome.texts = {}
    for path, text in result.texts.items():
        if _parses(text, path):
            outcome.texts[path] = text
        else:
            outcome.failed = True
            outcome.messages.append(f"{PROG}: error: {display_path(path, cwd)}: the fixed text would not parse; not fixed")
    for path in outcome.texts:
        if outcome.originals[path].notebook is not None:
            _notebook_result(path, [selected[i] for i in result.applied], outcome)
    applied = [selected[i] for i in result.applied
               if all(e.path in outcome.texts or e.path not in result.texts for e in selected[i].fix.edits)]
    if not write:
        outcome.fixed_findings = applied
        outcome.fixed = len(applied)
        return outcome
    for path in sorted(outcome.texts):
        original = outcome.originals[path]
        try:
            _write(path, outcome.notebook_json.get(path, outcome.texts[path]), original.encoding, original.digest)
            outcome.written.append(path)
        except ChangedSinceChecked:
            outcome.stale.append(path)
            outcome.messages.append(f"{display_path(path, cwd)}: changed since it was checked; not fixed")
        except (OSError, UnicodeError) as error:
            outcome.messages.append(f"{PROG}: error: {display_path(path, cwd)}: cannot write the fix: {error}")
            outcome.failed = True
    written = set(outcome.written)
    outcome.fixed_findings = [
        f for f in applied if all(e.path in written or e.path not in outcome.texts for e in f.fix.edits)
    ]
    outcome.fixed = len(outcome.fixed_findings)
    return outcome


def _where(finding: Finding, cwd: str) -> str:
    """`path:row:col` of a finding for a notice; `nb.ipynb:cell 3:4:16` in a notebook."""
    return ReportContext(cwd=cwd, notebooks=_notebooks_of([finding])).where(finding.span.path, finding.span.start)


def _notebooks_of(findings: Sequence[Finding]) -> dict[str, object]:
    from fabric_lsp.report.common import notebook_locators

    return notebook_locators(
        [f.span.path for f in findings] + [r.span.path for f in findings for r in f.related]
        + [e.path for f in findings if f.fix is not None for e in f.fix.edits])


def _without_cell_spanning(selected: list[Finding], outcome: FixOutcome, cwd: str) -> list[Finding]:
    """The fixes that edit notebooks cell by cell: an edit across a cell boundary has no place in
    the notebook's JSON, so its fix is left out (said once)."""
    from fabric_lsp.sources.notebook import SpansCells, cell_edit

    kept = []
    for finding in selected:
        try:
            for edit in finding.fix.edits:
                source = outcome.originals.get(edit.path)
                if source is not None and source.notebook is not None:
                    cell_edit(source.notebook.joined(), edit.start, edit.end, edit.new_text)
        except SpansCells as error:
            outcome.messages.append(
                f"{PROG}: notice: {_where(finding, cwd)}: "
                f"{finding.code} fix not applied: {error}")
            continue
        kept.append(finding)
    return kept


def _notebook_result(path: str, applied: list[Finding], outcome: FixOutcome) -> None:
    """The notebook's JSON with the applied fixes' edits made in its cells (every other byte kept)."""
    from fabric_lsp.sources.notebook import apply_cell_edits, cell_edit

    notebook = outcome.originals[path].notebook
    joined = notebook.joined()
    edits: dict[int, list] = {}
    seen = set()
    for finding in applied:
        for edit in finding.fix.edits:
            key = (edit.start, edit.end, edit.new_text)
            if edit.path != path or key in seen:
                continue  # the same edit from two fixes is made once (as edits.apply_fixes does)
            seen.add(key)
            mapped = cell_edit(joined, edit.start, edit.end, edit.new_text)
            edits.setdefault(mapped.number, []).append(mapped)
    sources = {}
    for number, cell_edits in edits.items():
        before = joined.cell(number).text
        sources[number] = apply_cell_edits(before, cell_edits)
        outcome.cell_changes.setdefault(path, {})[number] = (before, sources[number])
    outcome.notebook_json[path] = notebook.updated(sources)


def add_noqa(findings: Sequence[Finding], checked_digests: Mapping[str, str], cwd: str,
             max_file_size: int) -> tuple[int, bool]:
    """`check --add-noqa` (ruff's): a `# noqa: CODE` on the line of each finding, added to a `# noqa:`
    list already there (noqa.noqa_edit, the editor's "Disable for this line"). Written only over the
    bytes that were analysed; notebooks and invalid-syntax entries are left as they are.
    Returns (directives added, whether a file could not be written)."""
    from fabric_lsp.fixes import noqa
    from fabric_lsp.fixes.edits import apply_text_edits

    by_file: dict[str, list[Finding]] = {}
    for finding in findings:
        if not is_syntax_finding(finding):
            by_file.setdefault(os.path.abspath(finding.span.path), []).append(finding)
    added, failed = 0, False
    for path, found in sorted(by_file.items()):
        digest = checked_digests.get(path)
        source, _ = read_source(path, max_file_size)
        if source is None or digest is None or source.digest != digest:
            _say(f"{PROG}: notice: {display_path(path, cwd)}: changed since it was checked; no noqa added")
            continue
        if source.notebook is not None:
            _say(f"{PROG}: notice: {display_path(path, cwd)}: a notebook; --add-noqa adds nothing to notebooks")
            continue
        lines = source.text.splitlines(keepends=True)
        edits = []
        in_file = 0
        for line in sorted({f.noqa_line for f in found}):
            text = lines[line] if line < len(lines) else ""
            content = text.rstrip("\r\n")
            for code in sorted({f.code for f in found if f.noqa_line == line}):
                edit = noqa.noqa_edit(content, line, code)
                if edit is None:
                    continue
                start, end = edit.start.character, edit.end.character
                content = content[:start] + edit.new_text + content[end:]
                in_file += 1
            edits.append(TextEdit(path, Position(line, 0), Position(line, len(text.rstrip("\r\n"))), content))
        if not in_file:
            continue
        text = apply_text_edits(source.text, edits)
        if _parses(source.text, path) and not _parses(text, path):  # a comment that would land inside a string
            _say(f"{PROG}: notice: {display_path(path, cwd)}: a noqa comment would break the file; none added")
            continue
        try:
            _write(path, text, source.encoding, digest)
        except (OSError, ChangedSinceChecked) as error:
            _say_error(display_path(path, cwd), f"not written: {error}")
            failed = True
            continue
        added += in_file
    return added, failed


def exit_status(findings: Sequence[Finding], failed: bool, exit_zero: bool) -> int:
    if failed:
        return 2
    if exit_zero:
        return 0
    return 1 if any(f.severity.rank >= Severity.WARNING.rank for f in findings) else 0


def cmd_check(args: argparse.Namespace) -> int:
    from fabric_lsp import engine

    _refuse_programs_in_hook(args)
    _output_options(args)
    engine.remember_runs(False)  # each program is solved once here: nothing to replay later
    try:
        return _cmd_check(args)
    finally:
        engine.remember_runs(True)


def _refuse_programs_in_hook(args: argparse.Namespace) -> None:
    """Under pre-commit the options come from the repository's `.pre-commit-config.yaml` (`args:`,
    or an `entry` it overrides): one that runs a program is refused unless the user config, which
    lives outside every repository, allows it (`allow-programs-in-hooks = true`)."""
    if not in_pre_commit_hook():
        return
    if args.cache_dir is not None:  # where to write is the user's choice (FABRIC_LSP_CACHE_DIR), not the repository's
        raise UsageError("--cache-dir: refused in a pre-commit hook (PRE_COMMIT=1): the hook's options come from the "
                         "repository's .pre-commit-config.yaml, which must not choose where fabric-lsp writes; set "
                         f"{CACHE_DIR_ENV} in your environment instead")
    if args.watch:
        raise UsageError("--watch: not in a pre-commit hook (PRE_COMMIT=1): the commit would never end")
    chosen = [name for name, given in (("--python", args.python is not None),
                                       ("--trust-workspace", args.trust_workspace)) if given]
    if not chosen:
        return
    from fabric_lsp.settings.user_config import load_user_config, user_config_path

    if load_user_config()[0].allow_programs_in_hooks:
        return
    raise UsageError(f"{' and '.join(chosen)}: refused in a pre-commit hook (PRE_COMMIT=1): the hook's options "
                     "come from the repository's .pre-commit-config.yaml, which must not choose a program to run; "
                     f"to allow it, set allow-programs-in-hooks = true in your user config ({user_config_path()})")


def _cmd_check(args: argparse.Namespace) -> int:
    cwd = os.getcwd()
    if args.jobs < 0:
        raise UsageError("--jobs: expected 0 (automatic) or a positive number")
    if args.add_noqa and (args.fix or args.diff or args.watch):
        raise UsageError("--add-noqa cannot be used with --fix, --diff or --watch")
    configs = _build_config(args)
    if args.stdin_filename is not None or args.paths == ["-"]:
        if args.add_noqa or args.watch:
            raise UsageError(f"{'--add-noqa' if args.add_noqa else '--watch'}: not with a source on standard input")
        return _check_stdin(args, cwd, configs)
    paths = args.paths or ["."]
    if args.watch:
        return _watch(args, cwd, paths)
    return _check_paths(args, cwd, configs, paths)


# `check --watch`: how often the checked files' sizes and modification times are compared.
WATCH_POLL_SECONDS = 0.5


def _watch(args: argparse.Namespace, cwd: str, paths: list[str]) -> int:
    """ruff's `--watch`: check, then check again whenever a checked file, a file added to the
    checked folders or a settings file beside them changes (polled: no dependency, every platform),
    until Ctrl-C (exit 0). Settings are read again each time."""
    import time

    _say(f"{PROG}: watching {', '.join(paths)} for changes (Ctrl-C to stop)")
    previous = None
    try:
        while True:
            configs = _build_config(args)
            state = _watched_state(paths, configs, args)
            if state != previous:
                if previous is not None:
                    _say(f"{PROG}: a file changed; checking again")
                _check_paths(args, cwd, configs, paths)
                sys.stdout.flush()
                # The state seen before the check: a file saved while it ran is checked on the next
                # poll. Only --fix's own writes must not trigger a check, so then the state after it.
                previous = _watched_state(paths, _build_config(args), args) if args.fix else state
            time.sleep(WATCH_POLL_SECONDS)
    except KeyboardInterrupt:
        return 0


def _watched_state(paths: list[str], configs: ConfigResolver, args: argparse.Namespace) -> frozenset:
    from fabric_lsp.settings.config import CONFIG_FILE_NAMES

    existing = [path for path in paths if os.path.lexists(path)]
    files, _ = discover(existing, selection_for=configs.selection_for, force_exclude=args.force_exclude)
    folders = {os.path.dirname(os.path.abspath(path)) for path in files}
    folders |= {os.path.abspath(path) if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
                for path in existing}
    watched = set(files) | {os.path.join(folder, name) for folder in folders for name in CONFIG_FILE_NAMES}
    state = []
    for path in watched:
        try:
            info = os.stat(path)
        except OSError:
            continue
        state.append((path, info.st_mtime_ns, info.st_size))
    return frozenset(state)


def _check_paths(args: argparse.Namespace, cwd: str, configs: ConfigResolver, paths: list[str]) -> int:
    # As ruff's E902, a path that does not exist is an `io-error` entry of the report (every format;
    # status 1 as for any error) and the others are checked.
    missing = [path for path in paths if not os.path.lexists(path)]
    paths = [path for path in paths if path not in missing]
    files, notices = discover(paths, selection_for=configs.selection_for, force_exclude=args.force_exclude) \
        if paths else ([], [])
    for path in files:  # every settings file of the run read now: a mistake in one stops the run
        configs.for_path(path)
    if _say_settings_problems(configs):
        return 2
    if args.show_settings:
        return _show_settings((paths or missing)[0], configs, cwd)
    if args.show_files:
        for path in missing:
            _say(f"{PROG}: error: {path}: no such file or directory")
        for notice in sorted(notices, key=lambda n: n.path):
            _say(notice.format(cwd))
        sys.stdout.write("".join(escape_line(os.path.abspath(path)) + "\n" for path in sorted(files, key=os.path.abspath)))
        return 2 if missing else 0
    if not files and not missing and not notices:
        _say(f"{PROG}: warning: No Python files found under the given path(s)")
    if args.verbose:
        _say_verbose_plan(files, configs, cwd)
    _warn_noqa(files, configs, cwd)
    cache = None if args.no_cache else CacheSet(cwd, args.cache_dir or os.environ.get(CACHE_DIR_ENV) or None)
    status = _check_and_report(args, cwd, configs, files, notices, cache,
                               [missing_path_finding(path) for path in missing])
    if _say_settings_problems(configs):  # settings read late (none so far; said all the same)
        return 2
    return status


def _say_settings_problems(configs: ConfigResolver) -> bool:
    """Say the settings problems found so far; True when one is a mistake in a settings file
    (config.is_config_error): then, as ruff, the run stops with status 2 rather than check with
    settings other than those written."""
    failed = False
    for problem in configs.take_problems():
        _say(problem)
        failed = failed or is_config_error(problem)
    return failed


def _settings_source(configs: ConfigResolver, path: str) -> str:
    """The settings file that applies to `path` (`--config`'s, else the closest), or what stands in."""
    folder = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    found = configs.config_file or configs._settings_file(os.path.abspath(folder))
    return str(found) if found is not None else "(none: the defaults)"


def _interpreter_line(config: Config, root: str) -> str:
    from fabric_lsp.analysis.workspace import choose_interpreter

    chosen = choose_interpreter(root, config.python, config.trusted)
    how = "run to list its packages" if chosen.runnable else "read without running it: the workspace is not trusted"
    return f"{chosen.python} ({how})"


def _show_settings(path: str, configs: ConfigResolver, cwd: str) -> int:
    """ruff's `--show-settings`: the settings `check` uses for `path`, one `key = value` a line (the
    settings file's spelling, TOML values), then where the project is and what the analysis reads."""
    import dataclasses
    import json

    from fabric_lsp.settings.config import KNOWN_KEYS
    from fabric_lsp.engine import project_root_for

    absolute = os.path.abspath(path)
    config = configs.for_directory(absolute) if os.path.isdir(absolute) else configs.for_path(absolute)
    for problem in configs.take_problems():
        _say(problem)
    names = {field.name: field for field in dataclasses.fields(Config)}

    def value(raw) -> str:
        if isinstance(raw, (frozenset, set)):
            raw = sorted(raw)
        elif isinstance(raw, dict):
            return "{" + ", ".join(f"{k} = {value(v)}" for k, v in sorted(raw.items())) + "}"
        elif isinstance(raw, tuple) and raw and isinstance(raw[0], tuple):  # per-file-ignores
            return "{" + ", ".join(f"{json.dumps(glob)} = {value(codes)}" for glob, codes in raw) + "}"
        elif isinstance(raw, tuple):
            raw = list(raw)
        elif hasattr(raw, "value"):  # a Severity
            raw = raw.value
        return "null" if raw is None else json.dumps(raw)

    lines = [f"Resolved settings for: {json.dumps(absolute)}",
             f"Settings file: {_settings_source(configs, absolute)}", ""]
    for key in KNOWN_KEYS:
        name = key.replace("-", "_")
        if name in names:
            lines.append(f"{key} = {value(getattr(config, name))}")
    root = project_root_for(absolute, config.root, config.fallback_root)
    lines += ["", f"project root = {json.dumps(root)}", f"trusted = {json.dumps(config.trusted)}",
              f"analysis interpreter = {json.dumps(_interpreter_line(config, root))}"]
    sys.stdout.write(escape_lines("\n".join(lines) + "\n"))
    return 0


def _say_verbose_plan(files: Sequence[str], configs: ConfigResolver, cwd: str) -> None:
    """`-v`: per settings file, the files it covers; per project, its root and analysis interpreter."""
    from fabric_lsp.engine import project_root_for

    by_source: dict[str, int] = {}
    projects: dict[str, Config] = {}
    for path in files:
        by_source[_settings_source(configs, path)] = by_source.get(_settings_source(configs, path), 0) + 1
        config = configs.for_path(path)
        projects.setdefault(project_root_for(os.path.abspath(path), config.root, config.fallback_root), config)
    for source, count in sorted(by_source.items()):
        shown = display_path(source, cwd) if os.path.isabs(source) else source
        _say(f"{PROG}: verbose: settings {shown}: {count} file{'s' if count != 1 else ''}")
    for root, config in sorted(projects.items()):
        _say(f"{PROG}: verbose: project {display_path(root, cwd) or '.'}: interpreter {_interpreter_line(config, root)}")
    _say(f"{PROG}: verbose: checking {len(files)} file{'s' if len(files) != 1 else ''}")


def _warn_noqa(files: Sequence[str], configs: ConfigResolver, cwd: str) -> None:
    """One warning per malformed `# noqa` directive of the checked files (fabric_lsp.fixes.noqa, in
    ruff's words): such a directive suppresses nothing. Said on every run, cached results or not."""
    from fabric_lsp.fixes import noqa

    for path in files:
        try:
            limit = byte_limit(path, configs.for_path(path).max_file_size)
            mentions = b"noqa" in read_bytes(path, limit).lower()
        except OSError:  # unreadable, special, or too large: read_source says so where it matters
            continue
        if mentions:
            source, _ = read_source(path, configs.for_path(path).max_file_size)
            if source is not None and noqa.may_warn(source.text):
                _say_noqa_problems(source, cwd)


def _say_noqa_problems(source: DecodedFile, cwd: str, display: str | None = None) -> None:
    from fabric_lsp.fixes import noqa

    if not noqa.mentions_fabric(source.text):
        return  # another tool's directives (noqa.mentions_fabric)
    for problem in noqa.directives(source.text).problems:
        where = f"{display or display_path(source.path, cwd)}:{problem.line + 1}"
        if source.notebook is not None:
            from fabric_lsp.sources.notebook import NotebookLocator

            number, inside = NotebookLocator(source.notebook).cell_position(Position(problem.line, 0))
            if number is not None:
                where = f"{display or display_path(source.path, cwd)}:cell {number}:{inside.line + 1}"
        _say(f"{PROG}: warning: {where}: {problem.message}")


def _check_stdin(args: argparse.Namespace, cwd: str, configs: ConfigResolver) -> int:
    """`check -` or `--stdin-filename PATH`: the source read from standard input, checked as the
    file PATH would be (its settings, its project, a notebook's JSON for `.ipynb`; the file on disk,
    if there is one, is not read), as editors' linters run it (ALE, nvim-lint, flycheck,
    efm-langserver). As ruff: the report goes to stdout; with `--fix` the fixed source goes to
    stdout (unchanged when nothing is fixed) and the report to stderr; `--diff` prints the diff.
    A fix edits standard input only (a fix of another file offers its in-file alternative)."""
    from fabric_lsp.sources.walk import NOTEBOOK_SUFFIXES, decode_notebook, decode_source, force_excluded

    for other in args.paths:
        if other != "-":
            _say(f"{PROG}: warning: ignoring {other} in favor of standard input")
    name = args.stdin_filename if args.stdin_filename is not None else "-"
    path = os.path.abspath(name)
    config = configs.for_path(path)
    if _say_settings_problems(configs):
        return 2
    limit = byte_limit(path, config.max_file_size)
    data = sys.stdin.buffer.read(limit + 1)
    to_stdout = args.fix and not args.diff  # the fixed source is the output; the report goes to stderr
    report = sys.stderr if to_stdout else sys.stdout
    context = ReportContext(cwd=cwd, unsafe_fixes=args.unsafe_fixes, quiet=args.quiet, docs_url=config.docs_url,
                            color=args.output_file is None and use_color(args.color, report))

    def unchecked(reason: str | None) -> int:
        if reason:
            _say(f"{PROG}: notice: {display_path(path, cwd)}: {reason}")
        if to_stdout:
            sys.stdout.buffer.write(data + sys.stdin.buffer.read())
            sys.stdout.flush()
        report.write(render(args.format, [], context))
        report.flush()
        return 0

    if len(data) > limit:
        return unchecked(f"file is larger than max-file-size (> {limit} bytes)")
    if args.force_exclude and args.stdin_filename is not None and force_excluded(path, False, configs.selection_for):
        return unchecked(None)
    notebook = name.endswith(NOTEBOOK_SUFFIXES)
    if notebook and not config.notebooks:
        return unchecked("a notebook, and notebooks are off (notebooks = false); skipped")
    source, notice = decode_notebook(path, data, config.max_file_size) if notebook else decode_source(path, data)
    if source is None:
        return unchecked(notice.reason)
    if notice is not None:
        _say(notice.format(cwd))
    _say_noqa_problems(source, cwd)
    failed = False
    try:
        findings = _stdin_findings(source, config, cwd)
    except Exception as error:
        _say_error(display_path(path, cwd), _internal_error(error))
        findings, failed = [], True
    fixing = args.fix or args.diff
    bounds = FixBounds([path])
    findings = _confine(sorted(findings, key=sort_key), bounds, cwd, say=fixing)
    context.notebooks = _stdin_notebooks(source)
    if source.notebook is None:  # the frame shows the text checked, not the file on disk
        context.remember_text(path, source.text)
    if not fixing:
        write_report(args, findings, context)
        return exit_status(findings, failed, args.exit_zero)
    outcome = fix_findings(findings, unsafe_fixes=args.unsafe_fixes, write=False, max_file_size=config.max_file_size,
                           cwd=cwd, sources={path: source})
    for message in outcome.messages:
        _say(message)
    failed = failed or outcome.failed
    shown = display_path(path, cwd)
    if args.diff:
        for number, (before, after) in sorted(outcome.cell_changes.get(path, {}).items()):
            sys.stdout.write(escape_lines(unified_diff(before, after, escape_line(f"{shown}:cell {number}"))))
        if path in outcome.texts and path not in outcome.cell_changes:
            sys.stdout.write(escape_lines(unified_diff(source.text, outcome.texts[path], escape_line(shown))))
        sys.stdout.flush()
        count = outcome.fixed
        if not args.quiet:
            _say(f"Would fix {count} finding{'s' if count != 1 else ''}." if count else "No findings would be fixed.")
        return 2 if failed else (1 if outcome.texts else 0)
    if path in outcome.texts:
        fixed = outcome.notebook_json.get(path, outcome.texts[path]).encode(source.encoding)
        sys.stdout.buffer.write(fixed)
        sys.stdout.flush()
        source, _ = decode_notebook(path, fixed, config.max_file_size) if notebook else decode_source(path, fixed)
        try:
            findings = _stdin_findings(source, config, cwd, say=False) if source is not None else []
        except Exception as error:
            _say_error(display_path(path, cwd), _internal_error(error))
            findings, failed = [], True
        findings = _confine(sorted(findings, key=sort_key), bounds, cwd, say=False)
        context.notebooks = _stdin_notebooks(source) if source is not None else {}
        if source is not None and source.notebook is None:
            context.remember_text(path, source.text)
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    context.fix_mode, context.fixed = True, outcome.fixed
    report.write(render(args.format, findings, context))
    report.flush()
    status = exit_status(findings, failed, args.exit_zero)
    if status == 0 and path in outcome.texts and args.exit_non_zero_on_fix and not args.exit_zero:
        status = 1  # the source on stdout was changed (--exit-non-zero-on-fix)
    return status


def _stdin_findings(source: DecodedFile, config: Config, cwd: str, say: bool = True) -> list[Finding]:
    """The findings of a source given on standard input (the engine, with the project's files on
    disk around it), its invalid-syntax entries, and the analysis's notices said on stderr."""
    from fabric_lsp.analysis import incremental
    from fabric_lsp.engine import check_paths

    found, _, notes, _ = check_paths({source.path: source.text}, config)
    incremental.forget(source.path)
    findings = list(found.get(source.path, ()))
    try:
        from fabric_lsp.engine import workspace_for
        from fabric_lsp.report.syntax import syntax_report, without_syntax_notices
    except ImportError:  # pragma: no cover - shipped together
        entries: tuple = ()
    else:
        entries, unjudged = syntax_report(source.path, source.text, source.notebook,
                                          lambda: workspace_for(config, source.path).library_path)
        notes = list(notes) + list(unjudged)
        if entries:
            notes = without_syntax_notices(notes, {source.path})
    if say:
        for note in sorted(set(notes)):
            where, _, reason = note.partition(": ")
            _say(f"{PROG}: notice: {display_path(where, cwd) if os.path.isabs(where) else where}: {reason}")
    return findings + list(entries)


def _stdin_notebooks(source: DecodedFile) -> dict[str, object]:
    if source.notebook is None:
        return {}
    from fabric_lsp.sources.notebook import NotebookLocator

    return {source.path: NotebookLocator(source.notebook)}


def _library_paths(config: Config | ConfigResolver, files: Sequence[str]) -> list[str]:
    """The analysed interpreters' library paths (Workspace.library_path) of the checked projects."""
    from fabric_lsp.engine import workspace_for

    found: list[str] = []
    for group_config, group in _config_groups(files, config):
        found.extend(workspace_for(group_config, os.path.abspath(group[0])).library_path)
    return found


def _confine(findings: list[Finding], bounds: FixBounds, cwd: str, say: bool) -> list[Finding]:
    kept, refused = confine(findings, bounds)
    if say:
        for finding, path, reason in refused:
            offered = next((f for f in kept if f.span == finding.span and f.code == finding.code), None)
            instead = (f"; an in-file alternative is offered ({offered.fix.applicability.value}): {offered.fix.title}"
                       if offered is not None and offered.fix else "")
            _say(f"{PROG}: notice: {_where(finding, cwd)}: "
                 f"{finding.code} fix would edit {display_path(path, cwd)}: "
                 f"{reason}; not fixed{instead}")
    return kept


def _output_options(args: argparse.Namespace) -> None:
    """The output options checked and normalised (report/): a format alias by its format's name."""
    args.format = FORMAT_ALIASES.get(args.format, args.format)
    if args.statistics and args.format not in STATISTICS_FORMATS:
        raise UsageError(f"--statistics: only with --output-format {', '.join(STATISTICS_FORMATS[:-1])} "
                         f"or {STATISTICS_FORMATS[-1]}, not {args.format}")
    if args.output_file is not None and not args.output_file.strip():
        raise UsageError("--output-file: expected a file name")
    if args.output_file is not None:  # refused before the analysis too (checked again when writing)
        from fabric_lsp.output_file import OutputRefused, plan

        try:
            plan(args.output_file, os.getcwd())
        except OutputRefused as refused:
            raise UsageError(str(refused)) from None


def write_report(args: argparse.Namespace, findings: Sequence[Finding], context: ReportContext) -> None:
    """The report (or the statistics) on stdout, or into --output-file (notices stay on stderr)."""
    if args.statistics:
        text = render_statistics(args.format, findings, context)
    else:
        text = render(args.format, findings, context)
    if args.output_file is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    from fabric_lsp.output_file import OutputRefused, write_report_file

    try:
        write_report_file(args.output_file, text, os.getcwd())  # never through a link the repository planted
    except OutputRefused as refused:
        raise UsageError(str(refused)) from None
    except OSError as error:
        raise UsageError(f"--output-file: cannot write {args.output_file}: {error.strerror or error}") from None


def _syntax_broken(results) -> set[str]:
    """The files (absolute paths) reported as invalid-syntax among `results`."""
    return {os.path.abspath(f.span.path) for result in results for f in result.findings if is_syntax_finding(f)}


def _docs_url(configs) -> str | None:
    """The rule pages' `docs-url` for a report: the first that the run's settings files set (a report
    has one link per rule)."""
    return next((c.docs_url for c in getattr(configs, "configs", [configs]) if c.docs_url), None)


def _check_and_report(args: argparse.Namespace, cwd: str, config: Config, files: list[str], notices: list, cache,
                      unread: Sequence[Finding] = ()) -> int:
    """Check `files`, apply fixes, write the report. `unread`: the `io-error` entries of the paths
    that could not be read (report/io_error.py), reported with the findings."""
    fixing = args.fix or args.diff
    # Hashed before the analysis: a file that changes at any later point is not fixed.
    checked_digests = {}
    if fixing or args.add_noqa:
        for path in files:
            digest = file_digest(path, config.max_file_size)
            if digest is not None:
                checked_digests[os.path.abspath(path)] = digest
    # A fix edits only files inside the paths given (a file argument: that file only).
    bounds = FixBounds(args.paths or ["."], lambda: _library_paths(config, files))
    need_edits = bool(fixing) or args.format in ("json", "json-lines", "sarif", "rdjson")  # outputs that show or apply edits
    started = time.perf_counter()
    with Progress(len(files), sys.stderr, enabled=not args.quiet):
        results = check_files_cached(files, config, args.jobs, cache, need_edits)
    if getattr(args, "verbose", False):
        chosen = getattr(args, "cache_dir", None) or os.environ.get(CACHE_DIR_ENV)
        where = ("no cache (--no-cache)" if cache is None else
                 f"cache in {chosen}" if chosen else f"cache in {CACHE_DIR_NAME}/ of each project")
        _say(f"{PROG}: verbose: checked {len(files)} file{'s' if len(files) != 1 else ''} in "
             f"{time.perf_counter() - started:.2f} s; {where}")

    failed = False
    findings: list[Finding] = []
    analysis_notices: set[str] = set()
    broken = _syntax_broken(results)
    for result in results:
        analysis_notices.update(without_syntax_notices(result.analysis_notices, broken))
        if result.notice is not None:
            notices.append(result.notice)
        if result.error is not None:
            failed = True
            _say_error(display_path(result.path, cwd), result.error)
        findings.extend(result.findings)
    findings.extend(unread)
    for notice in sorted(notices, key=lambda n: n.path):
        _say(notice.format(cwd))
    for note in sorted(analysis_notices):
        path, _, reason = note.partition(": ")
        _say(f"{PROG}: notice: {display_path(path, cwd) if os.path.isabs(path) else path}: {reason}")
    findings.sort(key=sort_key)
    findings = _confine(findings, bounds, cwd, say=fixing)
    if args.add_noqa:
        added, failed_writes = add_noqa(findings, checked_digests, cwd, config.max_file_size)
        _say(f"Added {added} noqa directive{'s' if added != 1 else ''}.")
        return 2 if failed or failed_writes else 0

    context = ReportContext(cwd=cwd, unsafe_fixes=args.unsafe_fixes, notebooks=_notebooks_of(findings),
                            quiet=args.quiet, show_fixes=args.show_fixes, docs_url=_docs_url(config),
                            color=args.output_file is None and use_color(args.color, sys.stdout))
    stale = False
    if fixing:
        outcome = fix_findings(
            findings, unsafe_fixes=args.unsafe_fixes, write=not args.diff,
            max_file_size=config.max_file_size, cwd=cwd, checked_digests=checked_digests,
        )
        for message in outcome.messages:
            _say(message)
        failed = failed or outcome.failed
        stale = bool(outcome.stale)
        if args.diff:
            for path in sorted(outcome.texts):
                if path in outcome.cell_changes:  # a notebook: one diff per changed cell, as ruff shows them
                    for number, (before, after) in sorted(outcome.cell_changes[path].items()):
                        sys.stdout.write(escape_lines(unified_diff(before, after, escape_line(f"{display_path(path, cwd)}:cell {number}"))))
                    continue
                sys.stdout.write(escape_lines(unified_diff(outcome.originals[path].text, outcome.texts[path],
                                                          escape_line(display_path(path, cwd)))))
            sys.stdout.flush()
            count = outcome.fixed
            if not args.quiet:
                _say(f"Would fix {count} finding{'s' if count != 1 else ''}." if count else "No findings would be fixed.")
            return 2 if failed else (1 if outcome.texts or stale else 0)
        context.fix_mode, context.fixed, context.fixed_findings = True, outcome.fixed, outcome.fixed_findings
        if (args.format not in TEXT_FORMATS or args.statistics) and outcome.fixed and not args.quiet:
            n_written = len(outcome.written)
            _say(f"{PROG}: fixed {outcome.fixed} finding{'s' if outcome.fixed != 1 else ''} "
                 f"in {n_written} file{'s' if n_written != 1 else ''}")
        # A fix may change the findings of other files of its project (a mark after a setup in main.py
        # ends a finding in helpers.py): the projects written to are checked again as a whole.
        touched = set(outcome.written) | {f.span.path for f in outcome.fixed_findings}
        touched_roots = {_project_root(config, path) for path in touched}
        rechecked = sorted(path for path in files if _project_root(config, path) in touched_roots)
        if rechecked:
            with Progress(len(rechecked), sys.stderr, enabled=not args.quiet):
                fresh = {r.path: r for r in check_files_cached(rechecked, config, args.jobs, cache, need_edits)}
            for result in fresh.values():
                if result.error is not None:
                    failed = True
                    _say_error(display_path(result.path, cwd), result.error)
                if result.notice is not None:
                    _say(result.notice.format(cwd))
            findings = [f for f in findings if f.span.path not in fresh]
            findings += _confine([f for r in fresh.values() for f in r.findings], bounds, cwd, say=False)
            findings.sort(key=sort_key)

    context.notebooks = _notebooks_of(findings)  # read again: a fix may have changed a notebook
    write_report(args, findings, context)
    status = exit_status(findings, failed, args.exit_zero)
    if status == 0 and fixing and outcome.fixed and args.exit_non_zero_on_fix and not args.exit_zero:
        status = 1  # ruff's --exit-non-zero-on-fix: files were changed, even when nothing remains
    return 1 if stale and status == 0 else status  # a file left unfixed is never success, even with --exit-zero


# ---------------------------------------------------------------------------------------------
# explain, rules, serve


def cmd_explain(args: argparse.Namespace) -> int:
    """The record of a rule code or name, a record id, a runtime message, or a fragment of one
    (records/matching.py): best match first, with why it matched. Exit 0 when a record is shown;
    1 when the message matches none; 2 for usage errors, and for a code-shaped query (`FAB999`)
    that names no rule."""
    from fabric_lsp.records import (explain_note, explain_query, load_records, looks_like_code, render_markdown,
                                    render_text)

    queries = _separate_queries(args.query)
    query = queries[0] if queries else ""
    if query == "-":
        queries = [query := sys.stdin.read().strip()]
    if not query:
        raise UsageError("explain: give a rule code, a rule name, a record id or an error message")
    config, problems = load_config(Path(os.getcwd()))
    for problem in problems:
        _say(problem)
    records = load_records(config.extend_records)
    for problem in records.problems:
        _say(f"{PROG}: records: {problem}")
    for notice in records.notices:
        _say(f"{PROG}: notice: records: {notice}")
    renderer = render_markdown if args.format == "markdown" else render_text
    status = 0
    shown = 0
    for query in queries:
        notices: list[str] = []
        found = explain_query(records, query, notices)
        for notice in notices:
            _say(f"{PROG}: notice: records: {notice}")
        if not found:
            if looks_like_code(query):
                _say(f"{PROG}: error: no rule or record matches {query[:200]!r} (see `{PROG} rules`)")
                status = 2
            else:
                _say(f"{PROG}: no rule or record matches {query[:200]!r}: give a rule code (see `{PROG} rules`), "
                     "a runtime error message, or at least 3 words of one in order")
                status = max(status, 1)
            continue
        best = found[0]
        note = explain_note(best, found[1:])
        if shown:
            sys.stdout.write("\n")  # one blank line between the rules of `explain FAB001 FAB003`
        sys.stdout.write(escape_lines(renderer(best.record, context=best.context, code=best.code, note=note,
                                               docs_url=config.docs_url)))
        shown += 1
    return status


def _separate_queries(words: Sequence[str]) -> list[str]:
    """`explain FAB001 FAB003` (or rule names, record ids): one query per word when every word is one
    of those; any other words are one message (`explain You are calling the method`), as before."""
    from fabric_lsp.records import looks_like_code

    words = [word.strip() for word in words if word.strip()]
    single = re.compile(r"[a-z]+(?:-[a-z]+)+|[0-9a-f]{16}")
    if len(words) > 1 and all(looks_like_code(word) or single.fullmatch(word) for word in words):
        return words
    return [" ".join(words)] if words else []


def cmd_rules(args: argparse.Namespace) -> int:
    import json

    from fabric_lsp.records import RULES, default_records, rule_by_code

    chosen = []
    for code in args.codes:
        rule = rule_by_code(code)
        if rule is None:
            raise UsageError(f"rules: no rule {code!r} (see `{PROG} rules`)")
        chosen.append(rule)
    rules = tuple(chosen) or RULES
    if args.format == "markdown":
        from fabric_lsp.report.rule_docs import render_rule_pages

        sys.stdout.write(render_rule_pages([rule.code for rule in rules]))
        return 0
    records = default_records()
    if args.format == "json":
        from fabric_lsp.records.pages import page_url

        config, problems = load_config(Path(os.getcwd()))
        for problem in problems:
            _say(problem)
        rows = []
        for rule in rules:
            record = records.by_id(rule.record_id)
            rows.append(
                {
                    "code": rule.code,
                    "name": rule.name,
                    "record": rule.record_id,
                    "summary": rule.summary,
                    "url": page_url(rule.code, config.docs_url),  # the rule page (records/pages.py)
                    "source": record.github_url if record else None,  # Lightning's source: the evidence
                }
            )
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return 0
    name_width = max(len(rule.name) for rule in rules)
    for rule in rules:
        sys.stdout.write(f"{rule.code}  {rule.name:<{name_width}}  {rule.record_id}  {rule.summary}\n")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """LSP over stdio, or over TCP with `--tcp HOST:PORT` (one client at a time).

    Any local user (and any web page, through the browser) can connect to a TCP port: the server
    listens on loopback only and serves only a client that knows the token. A token given (`--token`,
    FABRIC_LSP_TOKEN) must be worth 128 bits (lsp/transport.weak_token_reason); without one, a random
    token is made and printed on stderr. Failed checks slow down the next ones (transport.TokenGate).

    `--stdio` names the default transport (vscode-languageclient appends it to an Executable with
    TransportKind.stdio). Its other transports are refused in one line: `--pipe NAME` and `--socket PORT`
    (the server would have to connect out to a pipe or port the client opened) and `--node-ipc`.
    `--clientProcessId N` (appended for Node modules) is accepted and not needed: the server already
    watches the `processId` of `initialize`."""
    unsupported = {
        "--pipe": "named pipes",
        "--socket": "connecting to a socket the client listens on",
        "--node-ipc": "Node IPC",
    }
    for option, what in unsupported.items():
        if getattr(args, option.lstrip("-").replace("-", "_")) not in (None, False):
            raise UsageError(f"serve {option}: {what} not supported; use stdio (the default, or --stdio), "
                             "or --tcp 127.0.0.1:PORT with a token")
    if args.clientProcessId is not None and not args.clientProcessId.strip().isdigit():
        raise UsageError(f"serve --clientProcessId: expected a process id, got {args.clientProcessId!r}")
    if args.stdio and args.tcp is not None:
        raise UsageError("serve: --stdio and --tcp exclude each other")
    tcp = None
    token = None
    if args.tcp is not None:
        host, _, port = args.tcp.rpartition(":")
        if not host or not port.isdigit() or not 0 <= int(port) < 65536:  # 0: a free port, printed
            raise UsageError(f"--tcp: expected HOST:PORT, got {args.tcp!r}")
        host = host.strip("[]")
        if not _is_loopback(host):
            raise UsageError(f"--tcp: {host!r} is not a loopback address (use 127.0.0.1, ::1 or localhost)")
        from fabric_lsp.lsp.transport import weak_token_reason

        token = args.token if args.token is not None else (os.environ.get("FABRIC_LSP_TOKEN") or None)
        if token is None:
            token = secrets.token_urlsafe(32)  # 256 bits
            _say(f"{PROG}: serve: the client must send this token as initializationOptions.token "
                 f"(choose your own with --token or FABRIC_LSP_TOKEN): {token}")
        else:
            weak = weak_token_reason(token)
            if weak is not None:
                source = "--token" if args.token is not None else "FABRIC_LSP_TOKEN"
                raise UsageError(f"{source}: {weak}")
        tcp = (host, int(port))
    elif args.token is not None:
        raise UsageError("--token: only with --tcp")
    from fabric_lsp.lsp.server import run

    return run(tcp, token)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # another name: it could resolve anywhere


# ---------------------------------------------------------------------------------------------


# pre-commit runs a hook as `entry + args + file names` and sets PRE_COMMIT=1 in its environment.
HOOK_ENV = "PRE_COMMIT"


def in_pre_commit_hook() -> bool:
    return os.environ.get(HOOK_ENV) == "1"


def _check_options(parser: argparse.ArgumentParser) -> dict[str, bool]:
    """`check`'s option strings, each with whether it takes a separate value (`--select FAB001`)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            check = action.choices["check"]
            return {name: option.nargs != 0 for option in check._actions for name in option.option_strings}
    return {}


def command_line(parser: argparse.ArgumentParser, argv: Sequence[str]) -> list[str]:
    """The arguments as argparse is to read them: for `check`, everything after `--` is a path (`-`
    too: `./-`, never standard input), so that no file name can set an option.

    Under pre-commit (PRE_COMMIT=1) the hook's entry ends with `--` and the user's `args:` come after
    it, before the file names: there the leading tokens after `--` that are options of `check` and
    name no existing file (pre-commit passes only files that exist) are those `args:`, moved before
    `--` (with the separate value of an option that takes one); the first other token starts the
    file list."""
    arguments = list(argv)
    command = next((i for i, token in enumerate(arguments) if not token.startswith("-")), None)
    if command is None or arguments[command] != "check":
        return arguments
    options = _check_options(parser)
    index = command + 1
    while index < len(arguments) and arguments[index] != "--":
        index += 2 if options.get(arguments[index]) else 1  # `--select --` is a value, not the end
    if index >= len(arguments):
        return arguments
    before, after = arguments[:index], arguments[index + 1:]
    moved: list[str] = []
    if in_pre_commit_hook():
        while after:
            token = after[0]
            name, equals, _ = token.partition("=")
            if name not in options or os.path.lexists(token):
                break
            width = 2 if options[name] and not equals else 1
            moved += after[:width]
            after = after[width:]
    return before + moved + ["--"] + [os.path.join(".", path) if path == "-" else path for path in after]


COMMANDS = ("check", "explain", "rules", "serve")


def _unknown_command(argv: Sequence[str]) -> str | None:
    """The error for a first word that is no command, with the closest one (`server`: `serve`)."""
    word = next((token for token in argv if not token.startswith("-")), None)
    if word is None or word in COMMANDS:
        return None
    import difflib

    close = difflib.get_close_matches(word, COMMANDS, n=1, cutoff=0.6)
    hint = f"; did you mean `{PROG} {close[0]}`?" if close else f" (commands: {', '.join(COMMANDS)})"
    return f"{PROG}: error: unknown command {word[:80]!r}{hint}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    arguments = sys.argv[1:] if argv is None else list(argv)
    if "-h" not in arguments and "--help" not in arguments and (unknown := _unknown_command(arguments)):
        parser.print_usage(sys.stderr)
        _say(unknown)
        return 2
    try:
        args = parser.parse_args(command_line(parser, arguments))
    except SystemExit as exit:  # argparse: 2 for usage errors, 0 for --help/--version
        return exit.code if isinstance(exit.code, int) else 2
    if args.command is None:
        parser.print_usage(sys.stderr)
        _say(f"{PROG}: error: a command is required (check, explain, rules, serve)")
        return 2
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    # The analysis allocates many small, short-lived, acyclic values (freed by reference counting)
    # next to a large, long-lived heap (syntax trees, the program's tables): with CPython's default
    # thresholds the collector keeps scanning that heap, and its full passes showed as 0.5-1 s
    # pauses in edit latency. Less frequent collections keep the cycles collected, without pauses.
    gc.set_threshold(100_000, 50, 100)
    handler = {"check": cmd_check, "explain": cmd_explain, "rules": cmd_rules, "serve": cmd_serve}[args.command]
    # The library's log warnings as notice lines (else logging's last-resort handler writes them raw);
    # the server logs to its client instead (lsp/server.py).
    notices = _NoticeHandler(logging.WARNING) if args.command != "serve" else None
    if notices is not None:
        logging.getLogger("fabric_lsp").addHandler(notices)
    try:
        return _run_command(handler, args)
    finally:
        if notices is not None:
            logging.getLogger("fabric_lsp").removeHandler(notices)


def _run_command(handler, args: argparse.Namespace) -> int:
    try:
        return handler(args)
    except UsageError as error:
        _say(f"{PROG}: error: {error}")
        return 2
    except BrokenPipeError:  # output piped into `head`
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        _say(f"{PROG}: error: internal error")
        for line in _traceback_lines(error):
            _say(line)
        return 2


def run() -> NoReturn:
    """The `fabric-lsp` command: main(), then leave without tearing the heap down. Freeing a large
    analysis's objects one by one at interpreter exit took as long as the analysis itself (1.2 s of
    2.5 s for `check` over lightning + litgpt). Everything is written and flushed first: reports,
    fixed files and the cache are written inside main(); the worker processes have ended."""
    code = main()
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        sys.exit(code)  # the server's own exit path (LSP `exit`) stays as it is
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed or broken pipe: nothing more can be written anyway
            code = code or 1
    os._exit(code)


if __name__ == "__main__":
    run()
