"""Python logging -> `window/logMessage` (at the configured level) and `$/logTrace` (when the client
turned tracing on with `$/setTrace` or `initialize.trace`).

Records may come from the analysis thread; they are sent from the event loop. Nothing is ever
written to stdout, which carries the protocol.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from typing import Protocol

from lsprotocol import types

from fabric_lsp.report.escape import escape_controls



class LogClient(Protocol):
    """What the handler needs of the server (lsp/session.py's FabricLanguageServer): named here so
    that the log, which the session uses, does not import the session back."""

    log_level: str

    def window_log_message(self, params: types.LogMessageParams) -> None: ...

    def trace(self, message: str) -> None: ...

LEVELS = {"error": logging.ERROR, "warning": logging.WARNING, "info": logging.INFO, "debug": logging.DEBUG}
_MESSAGE_TYPES = (
    (logging.ERROR, types.MessageType.Error),
    (logging.WARNING, types.MessageType.Warning),
    (logging.INFO, types.MessageType.Info),
    (0, types.MessageType.Log),
)
# The engine notes per file analysed ("not analysed: syntax error") at info; in an editor that is
# every keystroke, so they count as debug there.
_CHATTY = ("fabric_lsp.engine", "fabric_lsp.analysis")


DEBUG_ENV = "FABRIC_LSP_DEBUG"  # "1": full tracebacks in the log
MAX_LINE_CHARS = 1000


class OneLineFormatter(logging.Formatter):
    """Each record as one bounded line: a bad request or a failing handler is a line in the editor's
    log, not a traceback (and no client text can start a forged line). The exception's type and
    message end the line; FABRIC_LSP_DEBUG=1 adds the full traceback after it."""

    def __init__(self, fmt: str = "%(message)s") -> None:
        super().__init__(fmt)
        self.debug = os.environ.get(DEBUG_ENV) == "1"

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if self.debug:
            return super().format(record)
        if "Traceback (most recent call last)" in message:
            # pygls puts a formatted traceback in the message itself ("Unable to deserialize message\n...")
            message = message.split("\n", 1)[0] + f" (traceback with {DEBUG_ENV}=1)"
        error = record.exc_info[1] if record.exc_info else None
        if error is not None:
            message = f"{message}: {type(error).__name__}: {error}"
        # Whitespace runs (newlines too) become one space; other controls from file names or client
        # text are escaped: an editor's log buffer or a terminal tailing it shows them as text.
        line = escape_controls(" ".join(message.split()))
        if len(line) > MAX_LINE_CHARS:
            line = line[: MAX_LINE_CHARS - 1] + "…"
        record.message = line
        if self.usesTime():
            record.asctime = self.formatTime(record, self.datefmt)
        return self.formatMessage(record)


def drop_pygls_deserialize_errors(record: logging.LogRecord) -> bool:
    """A logging filter: pygls logs a traceback for every message whose params do not fit; the
    protocol (protocol.py) logs the same rejection as one line with its reason."""
    return os.environ.get(DEBUG_ENV) == "1" or not (
        record.name.startswith("pygls") and str(record.msg).startswith("Unable to deserialize message")
    )


def message_type(level: int) -> types.MessageType:
    for threshold, kind in _MESSAGE_TYPES:
        if level >= threshold:
            return kind
    return types.MessageType.Log


class ClientLogHandler(logging.Handler):
    def __init__(self, server: LogClient, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(logging.DEBUG)
        self.server = server
        self.loop = loop
        self.loop_thread = threading.get_ident()
        self._local = threading.local()
        self.setFormatter(OneLineFormatter())

    def effective_level(self, record: logging.LogRecord) -> int:
        if record.levelno == logging.INFO and record.name.startswith(_CHATTY):
            return logging.DEBUG
        return record.levelno

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(self._local, "busy", False):
            return  # sending a message logs too (pygls): never recurse
        self._local.busy = True
        try:
            level = self.effective_level(record)
            message = self.format(record)
            if threading.get_ident() == self.loop_thread:
                self._send(level, message)
            elif not self.loop.is_closed():
                self.loop.call_soon_threadsafe(self._send, level, message)
        except Exception:  # logging must never break the server
            pass
        finally:
            self._local.busy = False

    def _send(self, level: int, message: str) -> None:
        self._local.busy = True
        try:
            if level >= LEVELS.get(self.server.log_level, logging.INFO):
                self.server.window_log_message(types.LogMessageParams(type=message_type(level), message=message))
            self.server.trace(message)
        except Exception:
            pass
        finally:
            self._local.busy = False
