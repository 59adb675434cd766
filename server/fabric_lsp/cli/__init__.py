"""The `fabric-lsp` command: check / explain / rules / serve (DESIGN.md "Command line").

One module per command (`check`, `explain`, `rules`, `serve`), over `arguments` (the parser, argv as
argparse is to read it), `output` (notices on stderr, the report, the exit status), `fixing` (`--fix`,
`--diff`, `--add-noqa`) and `output_file`. `check` parses its arguments into the API's typed options
(api.CheckOptions), gets each file's Config from api.settings (defaults <- its closest settings file <-
command line: settings.config.ConfigResolver, ruff's hierarchy) and the findings from api.check_files
(the engine, in parallel processes for many files: checking.py), then applies fixes and renders the
report (report/).

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

`fabric-lsp --version` and `fabric-lsp serve` over stdio (no other option than `--stdio` or
`--clientProcessId N`) skip the parser and its imports (the settings, the cache, the report formats):
the version is printed as argparse prints it, and the server answers `initialize` before pygls is even
imported (lsp/early_initialize.py; issue 36).
"""

from __future__ import annotations

import gc
import os
import sys

TYPE_CHECKING = False  # not typing's: importing typing costs more than `--version` itself
if TYPE_CHECKING:
    import argparse
    from typing import Any, NoReturn, Sequence

__all__ = ["PROG", "UsageError", "build_parser", "main", "run"]
_PROG = "fabric-lsp"  # arguments.PROG, without importing the parser (tests/lsp/test_lsp_early_initialize.py)
_LAZY = ("PROG", "UsageError", "build_parser")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from fabric_lsp.cli import arguments

        return getattr(arguments, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def plain_stdio_serve(arguments: Sequence[str]) -> bool:
    """`serve` with nothing but `--stdio` and `--clientProcessId N` (what editors append): the parser
    would read it as stdio with nothing else to check."""
    if not arguments or arguments[0] != "serve":
        return False
    rest = list(arguments[1:])
    while rest:
        token = rest.pop(0)
        if token == "--stdio":
            continue
        if token == "--clientProcessId" and rest and rest[0].isdigit():
            rest.pop(0)
        elif not (token.startswith("--clientProcessId=") and token.partition("=")[2].isdigit()):
            return False
    return True


def _reconfigure_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    if arguments == ["--version"]:
        from fabric_lsp.version import __version__

        sys.stdout.write(f"{_PROG} {__version__}\n")
        return 0
    if plain_stdio_serve(arguments):
        _reconfigure_streams()
        gc.set_threshold(100_000, 50, 100)  # as below

        def serve(_: Any) -> int:
            from fabric_lsp.lsp.early_initialize import serve_stdio

            return serve_stdio()

        return _run_command(serve, None)
    import logging

    from fabric_lsp.cli.arguments import PROG, build_parser, command_line, unknown_command
    from fabric_lsp.cli.output import NoticeHandler, say

    parser = build_parser()
    if "-h" not in arguments and "--help" not in arguments and (unknown := unknown_command(arguments)):
        parser.print_usage(sys.stderr)
        say(unknown)
        return 2
    try:
        args = parser.parse_args(command_line(parser, arguments))
    except SystemExit as exit:  # argparse: 2 for usage errors, 0 for --help/--version
        return exit.code if isinstance(exit.code, int) else 2
    if args.command is None:
        parser.print_usage(sys.stderr)
        say(f"{PROG}: error: a command is required (check, explain, rules, serve)")
        return 2
    _reconfigure_streams()
    # The analysis allocates many small, short-lived, acyclic values (freed by reference counting)
    # next to a large, long-lived heap (syntax trees, the program's tables): with CPython's default
    # thresholds the collector keeps scanning that heap, and its full passes showed as 0.5-1 s
    # pauses in edit latency. Less frequent collections keep the cycles collected, without pauses.
    gc.set_threshold(100_000, 50, 100)
    # Only the command's own module is imported (`serve` answers `initialize` before the analysis and the
    # checking machinery load: tests/lsp/test_lsp_startup.py).
    import importlib

    handler = getattr(importlib.import_module(f"fabric_lsp.cli.{args.command}"), f"cmd_{args.command}")
    # The library's log warnings as notice lines (else logging's last-resort handler writes them raw);
    # the server logs to its client instead (lsp/server.py).
    notices = NoticeHandler(logging.WARNING) if args.command != "serve" else None
    if notices is not None:
        logging.getLogger("fabric_lsp").addHandler(notices)
    try:
        return _run_command(handler, args)
    finally:
        if notices is not None:
            logging.getLogger("fabric_lsp").removeHandler(notices)


def _run_command(handler, args: argparse.Namespace | None) -> int:
    try:
        return handler(args)
    except BrokenPipeError:  # output piped into `head`
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        from fabric_lsp.cli.arguments import PROG, UsageError
        from fabric_lsp.cli.output import say

        if isinstance(error, UsageError):
            say(f"{PROG}: error: {error}")
            return 2
        say(f"{PROG}: error: internal error")
        from fabric_lsp.checking import traceback_lines

        for line in traceback_lines(error):
            say(line)
        return 2


def run() -> NoReturn:
    """The `fabric-lsp` command: main(), then leave without tearing the heap down. Freeing a large
    analysis's objects one by one at interpreter exit took as long as the analysis itself (1.2 s of
    2.5 s for `check` over lightning + litgpt). Everything is written and flushed first: reports,
    fixed files and the cache are written inside main(); the worker processes have ended."""
    code = main()
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        sys.exit(code)  # the server's own exit path (LSP `exit`) stays as it is
    if "logging" in sys.modules:
        sys.modules["logging"].shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed or broken pipe: nothing more can be written anyway
            code = code or 1
    os._exit(code)

