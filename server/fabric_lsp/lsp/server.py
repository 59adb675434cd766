"""The language server's entry points: `create_server()` (a session with every handler registered)
and `run()` (`fabric-lsp serve`). The modules behind them are listed in fabric_lsp/lsp/__init__.py;
the names other code imported from here before the split are re-exported.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from fabric_lsp.lsp.handlers import register_all
from fabric_lsp.lsp.handlers.commands import EXPLAIN_COMMAND, RECHECK_COMMAND
from fabric_lsp.lsp.handlers.guard import guarded
from fabric_lsp.lsp.handlers.lifecycle import PROCESS_POLL_SECONDS, client_features, process_alive
from fabric_lsp.lsp.handlers.text_documents import text_differs_from_disk
from fabric_lsp.lsp.logs import OneLineFormatter, drop_pygls_deserialize_errors
from fabric_lsp.lsp.scheduling import (
    ANALYSIS_DELAY_ENV,
    DEPENDENTS_DELAY,
    TRIM_EVERY,
    release_free_memory,
    utf8_size_over,
)
from fabric_lsp.lsp.session import (
    AUTH_TIMEOUT_SECONDS,
    CLIENT_REQUEST_TIMEOUT,
    NAME,
    NOTEBOOK_SYNC,
    SECTION,
    FabricLanguageServer,
)
from fabric_lsp.lsp.transport import authenticated_initialize

__all__ = [
    "ANALYSIS_DELAY_ENV",
    "AUTH_TIMEOUT_SECONDS",
    "CLIENT_REQUEST_TIMEOUT",
    "DEPENDENTS_DELAY",
    "EXPLAIN_COMMAND",
    "NAME",
    "NOTEBOOK_SYNC",
    "PROCESS_POLL_SECONDS",
    "RECHECK_COMMAND",
    "SECTION",
    "TRIM_EVERY",
    "FabricLanguageServer",
    "authenticated_initialize",
    "client_features",
    "create_server",
    "guarded",
    "process_alive",
    "release_free_memory",
    "run",
    "text_differs_from_disk",
    "utf8_size_over",
]


def create_server() -> FabricLanguageServer:
    server = FabricLanguageServer()
    register_all(server)
    return server


def _configure_logging() -> None:
    # stderr is the editor's server log; stdout is the protocol and must stay clean.
    # Warnings and errors also go to stderr (the editor's server log, and the only place before
    # the client is connected); the client gets fabric_lsp's records at its logLevel.
    root = logging.getLogger()
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(OneLineFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(drop_pygls_deserialize_errors)
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("fabric_lsp").setLevel(logging.DEBUG)
    logging.getLogger("pygls").setLevel(logging.WARNING)


def run(
    tcp: tuple[str, int] | None = None,
    token: str | None = None,
    *,
    stdin: Any = None,
    stdout: Any = None,
    answered: tuple[Any, Any] | None = None,
) -> int:
    """Serve one client over stdio (or TCP); the exit status follows LSP (1 after `exit` without
    `shutdown`). `answered`: the (id, result) of the `initialize` already answered on stdout
    (early_initialize.serve_stdio, which passes `stdin` with that request's bytes first)."""
    stdin = stdin if stdin is not None else sys.stdin.buffer
    stdout = stdout if stdout is not None else sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print() must not corrupt the protocol stream
    _configure_logging()
    server = create_server()
    server.protocol.early_answer = answered
    try:
        if tcp is not None:
            server.start_tcp(*tcp, token or "")
        else:
            server.start_io(stdin, stdout)
    finally:
        server.stop_analysis()
    if server.analysis_busy.is_set():
        # The worker is inside one document's analysis, which cannot be interrupted; the interpreter
        # would wait for it at exit. The client asked to exit: leave now.
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(server.exit_code)
    return server.exit_code
