"""Checking many files at once (engine layer, under the API and the CLI): files grouped by project and
configuration, each group planned as programs (analysis.program), the programs solved in this process
or spread over forked worker processes, the findings cache (cache.py) answering unchanged programs,
and every file that does not parse reported (report/syntax.py). Runs in worker processes too:
module-level functions and picklable data only. Says nothing itself: what it has to say (the cache or
the worker processes unavailable) goes to the `notify` callback its callers pass (the CLI prints it,
the API logs it)."""

from __future__ import annotations

import hashlib
import logging
import multiprocessing
import os
import threading
import traceback
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from fabric_lsp import timing
from fabric_lsp.cache import CacheUnavailable, FindingsCache, interpreter_fingerprint
from fabric_lsp.findings import Finding, Position
from fabric_lsp.report import sort_key
from fabric_lsp.report.escape import escape_line
from fabric_lsp.report.syntax import is_syntax_finding, without_syntax_notices
from fabric_lsp.settings.config import Config, ConfigResolver
from fabric_lsp.sources.files import read_bytes
from fabric_lsp.sources.walk import DecodedFile, Notice, byte_limit, display_path, read_source

log = logging.getLogger("fabric_lsp.checking")

# Receives each notice (one line, without the `fabric-lsp: notice:` prefix the CLI adds).
Notify = Callable[[str], None]


def log_notice(message: str) -> None:
    log.warning("%s", message)


# Below this many files, starting worker processes (each importing jedi) costs more than it saves.
PARALLEL_MIN_FILES = 16


MAX_WORKERS = 8


def traceback_lines(error: BaseException) -> list[str]:
    """The traceback of `error`, one string per line (frames of fabric-lsp's and its libraries'
    code); the exception's own text, which may hold a file name, is one escaped line."""
    found = traceback.TracebackException.from_exception(error)
    lines = ["Traceback (most recent call last):"]
    for frame in found.stack.format():
        lines.extend(frame.rstrip("\n").split("\n"))
    lines.append(escape_line("".join(found.format_exception_only()).rstrip("\n")))
    return lines


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


def internal_error(error: BaseException) -> str:
    """One line for the user; the traceback only when FABRIC_LSP_DEBUG is set (it is a bug report)."""
    detail = escape_line("".join(traceback.format_exception_only(type(error), error)).strip())
    message = f"internal error while checking: {detail}"
    if os.environ.get("FABRIC_LSP_DEBUG"):
        message += "\n" + "\n".join(traceback_lines(error))
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
        with timing.phase("read"):
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
            message = internal_error(error)
            for path in texts:
                results[path] = FileResult(path, error=message)
    return [results[path] for path in paths]


def check_file(path: str, config: Config) -> FileResult:
    return check_project([path], config)[0]


def by_project(paths: Sequence[str], config: Config | ConfigResolver) -> list[list[str]]:
    return [group for _, group in config_groups(paths, config)]


def resolver_of(config: Config | ConfigResolver) -> ConfigResolver:
    return config if isinstance(config, ConfigResolver) else ConfigResolver.fixed(config)


def config_groups(paths: Sequence[str], config: Config | ConfigResolver) -> list[tuple[Config, list[str]]]:
    """The files grouped by (project root, configuration), each with its Config: as ruff, each file
    is checked with the settings of its closest settings file (config.ConfigResolver), whatever
    else is checked in the same run. Sorted by root."""
    from fabric_lsp.engine import project_root_for

    configs = resolver_of(config)
    groups: dict[tuple[str, int], tuple[Config, list[str]]] = {}
    for path in paths:
        file_config = configs.for_path(path)
        root = project_root_for(path, file_config.root, file_config.fallback_root)
        groups.setdefault((root, id(file_config)), (file_config, []))[1].append(path)
    return [groups[key] for key in sorted(groups, key=lambda key: key[0])]


def project_root_of(config: Config | ConfigResolver, path: str) -> str:
    return resolver_of(config).project_root(path)


# Plans made by the parent process, read by forked workers (they inherit the parent's memory).
_PLANS: dict[int, tuple] = {}


# Files whose syntax is still to be checked: (path, text, notebook, the resolver of its plan: the analysis
# interpreter's sys.path, asked only for a file that does not parse), read by forked workers too. A task
# with the token SYNTAX_TASK checks the files [start, end) of this list (report/syntax.py).
_SYNTAX: list[tuple[str, str, object, object]] = []


SYNTAX_TASK = -1
TIMING_TASK = -2  # a worker's measurements for `check -v` (fabric_lsp.timing), sent with its results
JEDI_TASK = -3  # the jedi answers a worker added (cache.JediAnswers), merged into its parent's


# The stores of jedi's answers the run's workspaces use (cache.JediAnswers, one per findings cache),
# inherited by forked workers, which send what they add back (JEDI_TASK): the parent writes them.
_JEDI_STORES: list = []


SYNTAX_TASK_CHARS = 1 << 20  # about 0.1 s of parsing per task


def _run_tasks(tasks: list[tuple[int, list[int]]], config: Config | None = None) -> list[tuple[int, int, list[FileResult]]]:
    """(plan token, program number, the results of the program's checked files) for each task; for
    a syntax task (SYNTAX_TASK, start, a result with the invalid-syntax entries of each file that has some)."""
    done = []
    # A forked worker starts with its parent's measurements: only what the tasks add is sent back.
    before = timing.take() if timing.enabled() else None
    for token, numbers in tasks:
        if token == SYNTAX_TASK:
            with timing.phase("syntax"):
                done.append((token, numbers[0], _check_syntax(*numbers)))
            continue
        paths, plan, plan_config = _PLANS[token]  # each plan is checked with its files' configuration
        members = {path for number in numbers for path in plan.groups[number]}
        mine = [path for path in paths if os.path.abspath(path) in members]  # the task's own files only
        if mine:
            done.append((token, numbers[0], check_project(mine, plan_config, plan, numbers)))
    if before is not None:
        done.append((TIMING_TASK, 0, timing.take()))
        timing.merge(before)
    fresh = [(index, store.take_fresh()) for index, store in enumerate(_JEDI_STORES)]
    fresh = [(index, answers) for index, answers in fresh if answers]
    if fresh:
        done.append((JEDI_TASK, 0, fresh))
    return done


def _merge_jedi(fresh) -> None:
    for index, answers in fresh:
        _JEDI_STORES[index].merge(answers)


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

    def jedi_for(self, root: str):
        """Where the workspace of the project at `root` keeps jedi's answers between runs (the
        folder of its findings cache: cache.JediAnswers), or None."""
        cache = self.cache_for(root)
        return cache.jedi if cache is not None else None

    def lookup(self, root: str, key: str) -> tuple[dict[str, tuple[Finding, ...]], tuple[str, ...]] | None:
        interpreter = self.interpreters.get(root)
        cache = self.cache_for(root)
        with timing.phase("cache"):
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
                programs: ProgramResults | None = None, notify: Notify | None = None) -> list[FileResult]:
    """Results for `paths`, in the same order. `jobs`: 0 = automatic, 1 = serial. The files of one
    project and one configuration (`config`: one Config for all, or a ConfigResolver giving each
    file its own) are planned together (which files form which programs); the programs are spread
    over the worker processes. With `programs`, a program kept from an earlier run is not solved again."""
    groups = config_groups(paths, config)
    workers = jobs if jobs > 0 else min(os.cpu_count() or 1, MAX_WORKERS)
    forkable = "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1
    from fabric_lsp.engine import plan_for, workspace_for

    found: dict[str, FileResult] = {}
    tasks: list[tuple[int, list[int], int]] = []  # (plan token, program numbers, size)
    keys: dict[tuple[int, int], tuple[str, str]] = {}  # (token, number) -> (root, program key)
    broken: dict[str, tuple[Finding, ...]] = {}  # path -> its invalid-syntax entries (report/syntax.py)
    unjudged: dict[str, tuple[str, ...]] = {}  # path -> notices of syntax that cannot be judged here
    attached: list = []  # the workspaces given the run's store of jedi answers (cache.JediAnswers)
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
            workspace = workspace_for(group_config, next(iter(absolute)))
            plan = plan_for(sorted(absolute), group_config, workspace, absolute)
            store = programs.jedi_for(plan.root) if programs is not None else None
            if store is not None and workspace.answers is None:
                workspace.answers = store  # for this run only (detached below)
                attached.append(workspace)
                if store not in _JEDI_STORES:
                    _JEDI_STORES.append(store)
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
        _detach(attached)
        message = internal_error(error)
        return [FileResult(path, error=message) for path in paths]
    try:
        for token, number, results in _solve_tasks(tasks, None, workers, jobs, len(paths), forkable):
            if token == TIMING_TASK:
                timing.merge(results)
                continue
            if token == JEDI_TASK:
                _merge_jedi(results)
                continue
            if token == SYNTAX_TASK:
                _syntax_results(results, broken, unjudged)
                continue
            for result in results:
                found[result.path] = result
            if (token, number) in keys and programs is not None:
                programs.store(*keys[(token, number)], results)
    except (OSError, RuntimeError) as error:  # cannot start processes (sandbox, limits): go serial
        (notify or log_notice)(f"parallel checking unavailable ({error}); checking serially")
        for token, number, results in _run_tasks([(token, numbers) for token, numbers, _ in tasks]):
            if token == TIMING_TASK:
                timing.merge(results)
            elif token == JEDI_TASK:
                _merge_jedi(results)
            elif token == SYNTAX_TASK:
                _syntax_results(results, broken, unjudged)
            else:
                found.update((result.path, result) for result in results)
    finally:
        _PLANS.clear()
        _SYNTAX.clear()
        _detach(attached)
    for path, entries in broken.items():
        found[path] = replace(found[path], findings=tuple(sorted(found[path].findings + entries, key=sort_key)))
    for path, notes in unjudged.items():
        found[path] = replace(found[path], analysis_notices=tuple(dict.fromkeys(found[path].analysis_notices + notes)))
    return [found[path] for path in paths]


def _detach(workspaces: list) -> None:
    """The run is over: its workspaces (kept by the engine for later calls, which may be made without
    a cache) no longer use its store of jedi answers; the findings cache writes it (FindingsCache.save)."""
    for workspace in workspaces:
        workspace.answers = None
    _JEDI_STORES.clear()


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

    def __init__(self, cwd: str, cache_dir: str | None = None, notify: Notify | None = None) -> None:
        self.cwd = cwd
        self.notify = notify or log_notice
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
                self.notify(str(error))
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
                       cache: CacheSet | FindingsCache | None, need_edits: bool = False,
                       notify: Notify | None = None) -> list[FileResult]:
    """check_files, answering from the persistent cache (see cache.py) the projects whose files
    have not changed (with `need_edits`, not those with fixable findings: no edit is cached). Each
    (project, configuration) group is looked up in the cache of its configuration."""
    if cache is None:
        return check_files(paths, config, jobs, notify=notify)
    caches = cache if isinstance(cache, CacheSet) else _OneCache(cache)
    from fabric_lsp.analysis.compat import requires_python
    from fabric_lsp.analysis.workspace import choose_interpreter
    from fabric_lsp.engine import project_files, project_root_for

    results: dict[str, FileResult] = {}
    misses: list[str] = []
    pending: list[tuple[str, str, dict | None, list[str], FindingsCache]] = []
    for group_config, group in config_groups(paths, config):
        group_cache = caches.for_config(group_config)
        if group_cache is None:
            misses.extend(group)
            continue
        root = project_root_for(group[0], group_config.root, group_config.fallback_root)
        chosen = choose_interpreter(root, group_config.python, group_config.trusted)
        # The project's requires-python too: it decides which syntax is judged (analysis/compat.py).
        interpreter = f"{interpreter_fingerprint(chosen.python, chosen.runnable)}:{requires_python(root)}"
        with timing.phase("cache"):  # the project's files and their states are the cache's key
            files = project_files(root, group_config, group)
            found = group_cache.lookup(root, interpreter, [os.path.abspath(p) for p in group], files, need_edits)
        if found is not None:
            notes = group_cache.notices(root)
            for path in group:
                results[path] = FileResult(path, findings=found[os.path.abspath(path)], analysis_notices=notes)
            continue
        with timing.phase("cache"):
            states = group_cache.file_states(files)  # the states before the check
        pending.append((root, interpreter, states, group, group_cache))
        misses.extend(group)
    programs = ProgramResults(None, need_edits, {os.path.abspath(root): interpreter for root, interpreter, *_ in pending},
                              {os.path.abspath(root): group_cache for root, _, _, _, group_cache in pending})
    fresh = {r.path: r for r in check_files(misses, config, jobs, programs, notify)}
    for root, interpreter, states, group, group_cache in pending:
        group_results = [fresh[path] for path in group]
        results.update((r.path, r) for r in group_results)
        if all(r.error is None and r.notice is None for r in group_results):
            kept = programs.fresh.get(os.path.abspath(root), {})
            with timing.phase("cache"):
                group_cache.store(root, interpreter, states,
                                  {os.path.abspath(r.path): r.findings for r in group_results},
                                  sorted({note for r in group_results for note in r.analysis_notices}), kept)
    results.update((path, fresh[path]) for path in misses if path not in results)
    with timing.phase("cache"):
        caches.save()
    return [results[path] for path in paths]


def notebooks_of(findings: Sequence[Finding]) -> dict[str, object]:
    from fabric_lsp.report.common import notebook_locators

    return notebook_locators(
        [f.span.path for f in findings] + [r.span.path for f in findings for r in f.related]
        + [e.path for f in findings if f.fix is not None for e in f.fix.edits])


def source_notebooks(source: DecodedFile) -> dict[str, object]:
    if source.notebook is None:
        return {}
    from fabric_lsp.sources.notebook import NotebookLocator

    return {source.path: NotebookLocator(source.notebook)}


def library_paths(config: Config | ConfigResolver, files: Sequence[str]) -> list[str]:
    """The analysed interpreters' library paths (Workspace.library_path) of the checked projects."""
    from fabric_lsp.engine import workspace_for

    found: list[str] = []
    for group_config, group in config_groups(files, config):
        found.extend(workspace_for(group_config, os.path.abspath(group[0])).library_path)
    return found


def syntax_broken(results) -> set[str]:
    """The files (absolute paths) reported as invalid-syntax among `results`."""
    return {os.path.abspath(f.span.path) for result in results for f in result.findings if is_syntax_finding(f)}


def docs_url(configs) -> str | None:
    """The rule pages' `docs-url` for a report: the first that the run's settings files set (a report
    has one link per rule)."""
    return next((c.docs_url for c in getattr(configs, "configs", [configs]) if c.docs_url), None)



def noqa_warnings(files: Sequence[str], configs: ConfigResolver, cwd: str) -> list[str]:
    """One warning (`<where>: <problem>`) per malformed `# noqa` directive of the checked files
    (fabric_lsp.fixes.noqa, in ruff's words): such a directive suppresses nothing. Given on every
    run, cached results or not."""
    from fabric_lsp.fixes import noqa

    found: list[str] = []
    for path in files:
        try:
            limit = byte_limit(path, configs.for_path(path).max_file_size)
            mentions = b"noqa" in read_bytes(path, limit).lower()
        except OSError:  # unreadable, special, or too large: read_source says so where it matters
            continue
        if mentions:
            source, _ = read_source(path, configs.for_path(path).max_file_size)
            if source is not None and noqa.may_warn(source.text):
                found += source_noqa_warnings(source, cwd)
    return found


def source_noqa_warnings(source: DecodedFile, cwd: str) -> list[str]:
    from fabric_lsp.fixes import noqa

    if not noqa.mentions_fabric(source.text):
        return []  # another tool's directives (noqa.mentions_fabric)
    found: list[str] = []
    for problem in noqa.directives(source.text).problems:
        where = f"{display_path(source.path, cwd)}:{problem.line + 1}"
        if source.notebook is not None:
            from fabric_lsp.sources.notebook import NotebookLocator

            number, inside = NotebookLocator(source.notebook).cell_position(Position(problem.line, 0))
            if number is not None:
                where = f"{display_path(source.path, cwd)}:cell {number}:{inside.line + 1}"
        found.append(f"{where}: {problem.message}")
    return found


def source_findings(source: DecodedFile, config: Config) -> tuple[list[Finding], list[str]]:
    """The findings of one source given as text (standard input, the API's check_source), checked
    with the project's files on disk around it, with its invalid-syntax entries; and the analysis's
    notices (`<path>: <reason>`, sorted)."""
    from fabric_lsp.analysis import incremental
    from fabric_lsp.engine import check_paths, workspace_for
    from fabric_lsp.report.syntax import syntax_report

    found, _, notes, _ = check_paths({source.path: source.text}, config)
    incremental.forget(source.path)
    findings = list(found.get(source.path, ()))
    entries, unjudged = syntax_report(source.path, source.text, source.notebook,
                                      lambda: workspace_for(config, source.path).library_path)
    notes = list(notes) + list(unjudged)
    if entries:
        notes = without_syntax_notices(notes, {source.path})
    return findings + list(entries), sorted(set(notes))
