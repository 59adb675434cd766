"""The command line's grammar: the parser of every command, and how argv is read before argparse sees
it (`--` ends the options of `check`; pre-commit's `args:` after its `--`; an unknown command named
with the closest one)."""

from __future__ import annotations

import argparse
import os
from typing import Sequence

from fabric_lsp.version import __version__
from fabric_lsp.cache import CACHE_DIR_ENV, CACHE_DIR_NAME
from fabric_lsp.report import (FORMAT_ALIASES, FORMATS)


PROG = "fabric-lsp"


class UsageError(Exception):
    pass


def split_codes(value: str) -> list[str]:
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
                            "the cache answered, how long it took and where the time went (the phases' seconds and "
                            "the slowest programs)")
    check.add_argument("--cache-dir", metavar="PATH",
                       help=f"keep the cache in PATH instead of each project's {CACHE_DIR_NAME}/ "
                            f"(default: ${CACHE_DIR_ENV})")

    explain = commands.add_parser("explain", help="show the documentation of a rule or a runtime error")
    explain.add_argument(
        "query", nargs="+", metavar="CODE|MESSAGE",
        help="a rule code or name, a record id, a runtime error message or at least 3 words of it, or - for stdin"
    )
    explain.add_argument("--format", choices=("text", "markdown"), default="text",
                         help="markdown: the record as hover shows it")
    explain.add_argument("--url", action="store_true",
                         help="print only the link of the rule's page (docs-url's, else the installed copy's)")

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


def unknown_command(argv: Sequence[str]) -> str | None:
    """The error for a first word that is no command, with the closest one (`server`: `serve`)."""
    word = next((token for token in argv if not token.startswith("-")), None)
    if word is None or word in COMMANDS:
        return None
    import difflib

    close = difflib.get_close_matches(word, COMMANDS, n=1, cutoff=0.6)
    hint = f"; did you mean `{PROG} {close[0]}`?" if close else f" (commands: {', '.join(COMMANDS)})"
    return f"{PROG}: error: unknown command {word[:80]!r}{hint}"

