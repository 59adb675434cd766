"""Python logging -> `window/logMessage` (at the configured level) and `$/logTrace` (when the client
turned tracing on with `$/setTrace` or `initialize.trace`).

Records may come from the analysis thread; they are sent from the event loop. Nothing is ever
written to stdout, which carries the protocol.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from fabric_lsp.lsp.server import FabricLanguageServer

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


def message_type(level: int) -> types.MessageType:
    for threshold, kind in _MESSAGE_TYPES:
        if level >= threshold:
            return kind
    return types.MessageType.Log


class ClientLogHandler(logging.Handler):
    def __init__(self, server: FabricLanguageServer, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(logging.DEBUG)
        self.server = server
        self.loop = loop
        self.loop_thread = threading.get_ident()
        self._local = threading.local()
        self.setFormatter(logging.Formatter("%(message)s"))

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
