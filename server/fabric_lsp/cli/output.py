"""What the command line says besides the report: one-line notices and errors on stderr (escaped,
report/escape.py), the report itself on stdout or into `--output-file`, and the exit status."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Sequence

from fabric_lsp.fixes.confinement import FixBounds, confine
from fabric_lsp.findings import Finding, Severity
from fabric_lsp.report import (FORMAT_ALIASES, STATISTICS_FORMATS, ReportContext, render,
                               render_statistics)
from fabric_lsp.report.escape import escape_line
from fabric_lsp.sources.walk import display_path
from fabric_lsp.cli.arguments import PROG, UsageError


def say(message: str) -> None:
    """One line on stderr. Notices carry file names and source text: no raw control character
    reaches the terminal, and no line break from a name starts a line of its own (report/escape.py)."""
    print(escape_line(message), file=sys.stderr, flush=True)


def say_error(where: str, error: str) -> None:
    """`fabric-lsp: error: <where>: <error>`; the lines after the first of an internal error (its
    traceback with FABRIC_LSP_DEBUG, made by traceback_lines) one notice line each."""
    first, *rest = error.rstrip().split("\n")
    say(f"{PROG}: error: {where}: {first}")
    for line in rest:
        say(line)


class NoticeHandler(logging.Handler):
    """The library's log warnings (`cannot read sys.path of ...`) as `fabric-lsp: notice:` lines."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            say(f"{PROG}: notice: {record.getMessage()}")
        except Exception:  # a log line must never end the run
            self.handleError(record)


def say_notice(message: str) -> None:
    """`fabric-lsp: notice: <message>`: what the engine or the API hands the CLI to say (their `notify`)."""
    say(f"{PROG}: notice: {message}")


def where_of(finding: Finding, cwd: str) -> str:
    """`path:row:col` of a finding for a notice; `nb.ipynb:cell 3:4:16` in a notebook."""
    from fabric_lsp.checking import notebooks_of

    return ReportContext(cwd=cwd, notebooks=notebooks_of([finding])).where(finding.span.path, finding.span.start)


def exit_status(findings: Sequence[Finding], failed: bool, exit_zero: bool) -> int:
    if failed:
        return 2
    if exit_zero:
        return 0
    return 1 if any(f.severity.rank >= Severity.WARNING.rank for f in findings) else 0


def confine_saying(findings: list[Finding], bounds: FixBounds, cwd: str, speak: bool) -> list[Finding]:
    kept, refused = confine(findings, bounds)
    if speak:
        for finding, path, reason in refused:
            offered = next((f for f in kept if f.span == finding.span and f.code == finding.code), None)
            instead = (f"; an in-file alternative is offered ({offered.fix.applicability.value}): {offered.fix.title}"
                       if offered is not None and offered.fix else "")
            say(f"{PROG}: notice: {where_of(finding, cwd)}: "
                 f"{finding.code} fix would edit {display_path(path, cwd)}: "
                 f"{reason}; not fixed{instead}")
    return kept


def check_output_options(args: argparse.Namespace) -> None:
    """The output options checked and normalised (report/): a format alias by its format's name."""
    args.format = FORMAT_ALIASES.get(args.format, args.format)
    if args.statistics and args.format not in STATISTICS_FORMATS:
        raise UsageError(f"--statistics: only with --output-format {', '.join(STATISTICS_FORMATS[:-1])} "
                         f"or {STATISTICS_FORMATS[-1]}, not {args.format}")
    if args.output_file is not None and not args.output_file.strip():
        raise UsageError("--output-file: expected a file name")
    if args.output_file is not None:  # refused before the analysis too (checked again when writing)
        from fabric_lsp.cli.output_file import OutputRefused, plan

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
    from fabric_lsp.cli.output_file import OutputRefused, write_report_file

    try:
        write_report_file(args.output_file, text, os.getcwd())  # never through a link the repository planted
    except OutputRefused as refused:
        raise UsageError(str(refused)) from None
    except OSError as error:
        raise UsageError(f"--output-file: cannot write {args.output_file}: {error.strerror or error}") from None

