"""`fabric-lsp check`: the arguments turned into the API's options (api.CheckOptions), the API run on
the files found (or on standard input), fixes applied, and the report rendered (report/). Also
`--watch`, `--show-settings`, `--show-files`, `-v`."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Sequence

from fabric_lsp.cache import CACHE_DIR_ENV, CACHE_DIR_NAME
from fabric_lsp.settings.config import (Config, ConfigResolver, is_config_error)
from fabric_lsp.fixes.confinement import FixBounds
from fabric_lsp.fixes.edits import unified_diff
from fabric_lsp.findings import Finding
from fabric_lsp.report import (TEXT_FORMATS, ReportContext, fixable, render,
                               sort_key)
from fabric_lsp.report.io_error import missing_path_finding
from fabric_lsp.report.syntax import said_analysis_notices
from fabric_lsp.report.terminal import Progress, use_color
from fabric_lsp.report.escape import escape_line, escape_lines
from fabric_lsp.sources.walk import DecodedFile, byte_limit, discover, display_path
from fabric_lsp import api
from fabric_lsp.cli.arguments import PROG, UsageError, in_pre_commit_hook, split_codes
from fabric_lsp.cli.output import (say, say_error, say_notice, confine_saying, check_output_options, write_report, exit_status)
from fabric_lsp.cli.fixing import fix_findings, add_noqa, file_digest
from fabric_lsp.checking import (CacheSet, check_files_cached, docs_url, internal_error, library_paths,
                                 notebooks_of, noqa_warnings, project_root_of, source_findings, source_noqa_warnings,
                                 source_notebooks)

# --fix passes after the first: each fixes only findings the previous pass uncovered (one per earlier
# error on a path, in practice one or two); the bound keeps a pathological chain from re-checking forever.
MAX_FIX_PASSES = 10


def _build_config(args: argparse.Namespace) -> ConfigResolver:
    """The configuration of each checked file (api.settings), from the command line's options."""
    def codes(value: list[str] | None) -> tuple[str, ...] | None:
        return None if value is None else tuple(code for item in value for code in split_codes(item))

    options = api.CheckOptions(select=codes(args.select), extend_select=codes(args.extend_select),
                               ignore=codes(args.ignore), python=args.python, hints=args.hints, config=args.config,
                               isolated=args.isolated, trust_workspace=args.trust_workspace)
    try:
        return api.settings(options, os.getcwd())
    except api.OptionError as error:
        raise UsageError(str(error)) from None


def cmd_check(args: argparse.Namespace) -> int:
    from fabric_lsp import engine
    from fabric_lsp.analysis.incremental import freeze_what_analyses_keep

    _refuse_programs_in_hook(args)
    check_output_options(args)
    engine.remember_runs(False)  # each program is solved once here: nothing to replay later
    # This process owns its heap: what a large program's analysis leaves alive is not traversed
    # again by the collector (the run after an edit of litgpt/model.py: 1.45 -> 1.24 s, median of 6).
    freeze_what_analyses_keep()
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

    say(f"{PROG}: watching {', '.join(paths)} for changes (Ctrl-C to stop)")
    previous = None
    try:
        while True:
            configs = _build_config(args)
            state = _watched_state(paths, configs, args)
            if state != previous:
                if previous is not None:
                    say(f"{PROG}: a file changed; checking again")
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
            say(f"{PROG}: error: {path}: no such file or directory")
        for notice in sorted(notices, key=lambda n: n.path):
            say(notice.format(cwd))
        sys.stdout.write("".join(escape_line(os.path.abspath(path)) + "\n" for path in sorted(files, key=os.path.abspath)))
        return 2 if missing else 0
    if not files and not missing and not notices:
        say(f"{PROG}: warning: No Python files found under the given path(s)")
    if args.verbose:
        _say_verbose_plan(files, configs, cwd)
    _warn_noqa(files, configs, cwd)
    cache = None if args.no_cache else CacheSet(cwd, args.cache_dir or os.environ.get(CACHE_DIR_ENV) or None, say_notice)
    status = _check_and_report(args, cwd, configs, files, notices, cache,
                               [missing_path_finding(path) for path in missing])
    if _say_settings_problems(configs):  # settings read late (none so far; said all the same)
        return 2
    return status


def _say_where_the_time_went(run: api.CheckResult, cwd: str) -> None:
    """`-v`: the phases' seconds (summed over the worker processes) and the slowest programs."""
    if run.phases:
        said = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in run.phases)
        say(f"{PROG}: verbose: phases (summed over worker processes): {said}")
    for seconds, named_by, files in run.slowest_programs:
        others = f" and {files - 1} other file{'s' if files != 2 else ''}" if files > 1 else ""
        say(f"{PROG}: verbose: slow program: {display_path(named_by, cwd)}{others}: {seconds:.2f} s")


def _say_settings_problems(configs: ConfigResolver) -> bool:
    """Say the settings problems found so far; True when one is a mistake in a settings file
    (config.is_config_error): then, as ruff, the run stops with status 2 rather than check with
    settings other than those written."""
    failed = False
    for problem in configs.take_problems():
        say(problem)
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
        say(problem)
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
        say(f"{PROG}: verbose: settings {shown}: {count} file{'s' if count != 1 else ''}")
    for root, config in sorted(projects.items()):
        say(f"{PROG}: verbose: project {display_path(root, cwd) or '.'}: interpreter {_interpreter_line(config, root)}")
    say(f"{PROG}: verbose: checking {len(files)} file{'s' if len(files) != 1 else ''}")


def _warn_noqa(files: Sequence[str], configs: ConfigResolver, cwd: str) -> None:
    for line in noqa_warnings(files, configs, cwd):
        say(f"{PROG}: warning: {line}")


def _say_noqa_problems(source: DecodedFile, cwd: str) -> None:
    for line in source_noqa_warnings(source, cwd):
        say(f"{PROG}: warning: {line}")


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
            say(f"{PROG}: warning: ignoring {other} in favor of standard input")
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
            say(f"{PROG}: notice: {display_path(path, cwd)}: {reason}")
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
        say(notice.format(cwd))
    _say_noqa_problems(source, cwd)
    failed = False
    try:
        findings = _stdin_findings(source, config, cwd)
    except Exception as error:
        say_error(display_path(path, cwd), internal_error(error))
        findings, failed = [], True
    fixing = args.fix or args.diff
    bounds = FixBounds([path])
    findings = confine_saying(sorted(findings, key=sort_key), bounds, cwd, speak=fixing)
    context.notebooks = source_notebooks(source)
    if source.notebook is None:  # the frame shows the text checked, not the file on disk
        context.remember_text(path, source.text)
    if not fixing:
        write_report(args, findings, context)
        return exit_status(findings, failed, args.exit_zero)
    outcome = fix_findings(findings, unsafe_fixes=args.unsafe_fixes, write=False, max_file_size=config.max_file_size,
                           cwd=cwd, sources={path: source})
    for message in outcome.messages:
        say(message)
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
            say(f"Would fix {count} finding{'s' if count != 1 else ''}." if count else "No findings would be fixed.")
        return 2 if failed else (1 if outcome.texts else 0)
    fixed_count, changed = outcome.fixed, path in outcome.texts
    tried = {_fix_key(f) for f in findings if fixable(f, args.unsafe_fixes)}
    for fix_pass in range(1 + MAX_FIX_PASSES):  # as a file's --fix: again while a pass uncovers a new fixable finding
        if path not in outcome.texts:
            break
        fixed = outcome.notebook_json.get(path, outcome.texts[path]).encode(source.encoding)
        data = fixed
        source, _ = decode_notebook(path, fixed, config.max_file_size) if notebook else decode_source(path, fixed)
        try:
            findings = _stdin_findings(source, config, cwd, speak=False) if source is not None else []
        except Exception as error:
            say_error(display_path(path, cwd), internal_error(error))
            findings, failed = [], True
        findings = confine_saying(sorted(findings, key=sort_key), bounds, cwd, speak=False)
        context.notebooks = source_notebooks(source) if source is not None else {}
        if source is not None and source.notebook is None:
            context.remember_text(path, source.text)
        uncovered = [f for f in findings if fixable(f, args.unsafe_fixes) and _fix_key(f) not in tried]
        if source is None or not uncovered or fix_pass == MAX_FIX_PASSES:
            break
        tried |= {_fix_key(f) for f in uncovered}
        outcome = fix_findings(uncovered, unsafe_fixes=args.unsafe_fixes, write=False,
                               max_file_size=config.max_file_size, cwd=cwd, sources={path: source})
        for message in outcome.messages:
            say(message)
        failed = failed or outcome.failed
        fixed_count += outcome.fixed
    sys.stdout.buffer.write(data)
    sys.stdout.flush()
    context.fix_mode, context.fixed = True, fixed_count
    report.write(render(args.format, findings, context))
    report.flush()
    status = exit_status(findings, failed, args.exit_zero)
    if status == 0 and changed and args.exit_non_zero_on_fix and not args.exit_zero:
        status = 1  # the source on stdout was changed (--exit-non-zero-on-fix)
    return status


def _fix_key(finding: Finding) -> tuple[str, str, str]:
    """A finding across fix passes (its line moves when an edit above it adds lines)."""
    return finding.span.path, finding.code, finding.message


def _stdin_findings(source: DecodedFile, config: Config, cwd: str, speak: bool = True) -> list[Finding]:
    """The findings of a source given on standard input (checking.source_findings), the analysis's
    notices said on stderr."""
    findings, notes = source_findings(source, config)
    if speak:
        for note in notes:
            where, _, reason = note.partition(": ")
            say(f"{PROG}: notice: {display_path(where, cwd) if os.path.isabs(where) else where}: {reason}")
    return findings


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
    bounds = FixBounds(args.paths or ["."], lambda: library_paths(config, files))
    need_edits = bool(fixing) or args.format in ("json", "json-lines", "sarif", "rdjson")  # outputs that show or apply edits
    started = time.perf_counter()
    with Progress(len(files), sys.stderr, enabled=not args.quiet):
        run = api.check_files(files, config, jobs=args.jobs, cache=cache, need_edits=need_edits, notify=say_notice,
                              measure=getattr(args, "verbose", False))
    if getattr(args, "verbose", False):
        chosen = getattr(args, "cache_dir", None) or os.environ.get(CACHE_DIR_ENV)
        where = ("no cache (--no-cache)" if cache is None else
                 f"cache in {chosen}" if chosen else f"cache in {CACHE_DIR_NAME}/ of each project")
        say(f"{PROG}: verbose: checked {len(files)} file{'s' if len(files) != 1 else ''} in "
             f"{time.perf_counter() - started:.2f} s; {where}")
        _say_where_the_time_went(run, cwd)

    failed = run.failed
    for path, error in run.errors:
        say_error(display_path(path, cwd), error)
    findings: list[Finding] = run.findings + list(unread)
    for notice in sorted(notices + run.notices, key=lambda n: n.path):
        say(notice.format(cwd))
    for line in said_analysis_notices(run.analysis_notices, cwd, verbose=getattr(args, "verbose", False)):
        say(f"{PROG}: notice: {line}")
    findings.sort(key=sort_key)
    findings = confine_saying(findings, bounds, cwd, speak=fixing)
    if args.add_noqa:
        added, failed_writes = add_noqa(findings, checked_digests, cwd, config.max_file_size)
        say(f"Added {added} noqa directive{'s' if added != 1 else ''}.")
        return 2 if failed or failed_writes else 0

    context = ReportContext(cwd=cwd, unsafe_fixes=args.unsafe_fixes, notebooks=notebooks_of(findings),
                            quiet=args.quiet, show_fixes=args.show_fixes, docs_url=docs_url(config),
                            color=args.output_file is None and use_color(args.color, sys.stdout))
    stale = False
    if fixing:
        outcome = fix_findings(
            findings, unsafe_fixes=args.unsafe_fixes, write=not args.diff,
            max_file_size=config.max_file_size, cwd=cwd, checked_digests=checked_digests,
        )
        for message in outcome.messages:
            say(message)
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
                say(f"Would fix {count} finding{'s' if count != 1 else ''}." if count else "No findings would be fixed.")
            return 2 if failed else (1 if outcome.texts or stale else 0)
        fixed_findings, written = list(outcome.fixed_findings), set(outcome.written)
        # As ruff: fixing until nothing more is fixable. A fix may change the findings of other files of
        # its project (a mark after a setup in main.py ends a finding in helpers.py), and may uncover one
        # an earlier error masked (the first error on a path: once a refused setup is fixed, the call after
        # it raises), so the projects written to are checked again as a whole. Only findings new in a pass
        # are fixed in the next one: a fix that did not remove its finding is never applied twice.
        tried = {_fix_key(f) for f in findings if fixable(f, args.unsafe_fixes)}
        for _ in range(MAX_FIX_PASSES):
            touched = set(outcome.written) | {f.span.path for f in outcome.fixed_findings}
            touched_roots = {project_root_of(config, path) for path in touched}
            rechecked = sorted(path for path in files if project_root_of(config, path) in touched_roots)
            if not rechecked:
                break
            digests = {os.path.abspath(path): digest for path in rechecked
                       if (digest := file_digest(path, config.max_file_size)) is not None}
            with Progress(len(rechecked), sys.stderr, enabled=not args.quiet):
                fresh = {r.path: r for r in check_files_cached(rechecked, config, args.jobs, cache, need_edits, say_notice)}
            for result in fresh.values():
                if result.error is not None:
                    failed = True
                    say_error(display_path(result.path, cwd), result.error)
                if result.notice is not None:
                    say(result.notice.format(cwd))
            findings = [f for f in findings if f.span.path not in fresh]
            findings += confine_saying([f for r in fresh.values() for f in r.findings], bounds, cwd, speak=False)
            findings.sort(key=sort_key)
            uncovered = [f for f in findings if f.span.path in fresh and fixable(f, args.unsafe_fixes)
                         and _fix_key(f) not in tried]
            if not uncovered:
                break
            tried |= {_fix_key(f) for f in uncovered}
            outcome = fix_findings(uncovered, unsafe_fixes=args.unsafe_fixes, write=True,
                                   max_file_size=config.max_file_size, cwd=cwd, checked_digests=digests)
            for message in outcome.messages:
                say(message)
            failed = failed or outcome.failed
            stale = stale or bool(outcome.stale)
            fixed_findings += outcome.fixed_findings
            written |= set(outcome.written)
            if not outcome.fixed:
                break
        context.fix_mode, context.fixed, context.fixed_findings = True, len(fixed_findings), fixed_findings
        if (args.format not in TEXT_FORMATS or args.statistics) and fixed_findings and not args.quiet:
            count, n_written = len(fixed_findings), len(written)
            say(f"{PROG}: fixed {count} finding{'s' if count != 1 else ''} "
                 f"in {n_written} file{'s' if n_written != 1 else ''}")

    context.notebooks = notebooks_of(findings)  # read again: a fix may have changed a notebook
    write_report(args, findings, context)
    status = exit_status(findings, failed, args.exit_zero)
    if status == 0 and fixing and context.fixed and args.exit_non_zero_on_fix and not args.exit_zero:
        status = 1  # ruff's --exit-non-zero-on-fix: files were changed, even when nothing remains
    return 1 if stale and status == 0 else status  # a file left unfixed is never success, even with --exit-zero

