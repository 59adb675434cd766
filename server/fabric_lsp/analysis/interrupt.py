"""A time bound for one call into jedi, enforced by interrupting it.

Some 40-line files make jedi's inference exponential (`x1 = x0 + x0` ... `x29 = x28 + x28`, then a
value derived from x29: hours). Checking a deadline between calls cannot stop one call, and a
signal only reaches the main thread. jedi is pure Python, so a watchdog thread raises CallTimedOut
in the calling thread (PyThreadState_SetAsyncExc), which CPython delivers at the next bytecode.

CallTimedOut derives from BaseException so that jedi's `except Exception` blocks do not swallow it;
if something does, the watchdog raises it again every REPEAT_SECONDS until the call returns. The
interrupted call may leave jedi's state half-updated: the caller drops that state (workspace.py).
Where ctypes.pythonapi is missing (not CPython), calls are not bounded.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import time
from typing import Iterator

try:
    import ctypes

    _set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
except (ImportError, AttributeError):  # pragma: no cover - not CPython
    _set_async_exc = None

REPEAT_SECONDS = 0.25


class CallTimedOut(BaseException):
    """Raised inside a bounded call that ran out of time."""


class _Watchdog:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._armed: dict[int, list] = {}  # token -> [thread id, next deadline, fired]
        self._tokens = itertools.count()
        self._thread = threading.Thread(target=self._watch, name="fabric-lsp-jedi-watchdog", daemon=True)
        self._thread.start()

    def arm(self, seconds: float) -> int:
        with self._cond:
            token = next(self._tokens)
            self._armed[token] = [threading.get_ident(), time.monotonic() + seconds, False]
            self._cond.notify()
            return token

    def disarm(self, token: int) -> None:
        """Stop watching; an interrupt sent but not yet delivered is cleared."""
        with self._cond:
            thread_id, _, fired = self._armed.pop(token)
            if fired:
                _set_async_exc(ctypes.c_ulong(thread_id), None)

    def _watch(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                for entry in self._armed.values():
                    if entry[1] <= now:
                        _set_async_exc(ctypes.c_ulong(entry[0]), ctypes.py_object(CallTimedOut))
                        entry[1], entry[2] = now + REPEAT_SECONDS, True
                deadlines = [entry[1] for entry in self._armed.values()]
                self._cond.wait(max(0.0, min(deadlines) - now) if deadlines else None)


_watchdog: _Watchdog | None = None
_watchdog_pid = 0
_watchdog_lock = threading.Lock()


def _get_watchdog() -> _Watchdog:
    global _watchdog, _watchdog_pid
    with _watchdog_lock:
        if _watchdog is None or _watchdog_pid != os.getpid():  # a forked `check` worker has no threads
            _watchdog, _watchdog_pid = _Watchdog(), os.getpid()
        return _watchdog


@contextlib.contextmanager
def bounded(seconds: float) -> Iterator[None]:
    """Run the block; past `seconds`, CallTimedOut is raised inside it (and out of the block)."""
    if _set_async_exc is None:
        yield
        return
    watchdog = _get_watchdog()
    token = watchdog.arm(seconds)
    try:
        yield
    finally:
        # An interrupt that arrives after the block but before disarm is raised from here: the caller
        # catches CallTimedOut around the whole `with`, so it is never lost or misplaced.
        watchdog.disarm(token)
