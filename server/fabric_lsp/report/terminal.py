"""What `check` shows only on a terminal: colours in the text output, and a progress line on stderr.

Colour (`--color auto|always|never`, default auto): `always` and `never` decide; otherwise a
non-empty `NO_COLOR` turns it off, a non-empty `FORCE_COLOR` on, and else it is on when the output
is a terminal (and `TERM` is not `dumb`). A report written with `--output-file` is never coloured.

Progress: when checking takes longer than PROGRESS_DELAY seconds and stderr is a terminal, one line
`checking 1,234 files…` is written to stderr, then erased (`\\r`, clear to the end of the line) when
checking ends. It is shown from a one-shot SIGALRM timer on the main thread (a thread would keep
`check` from forking its workers), written with os.write (never re-entering a Python stream), and
only when no other interval timer is running. It is display only: nothing about the findings
depends on it. FABRIC_LSP_PROGRESS_DELAY (seconds) overrides the delay, for tests.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import TextIO

from fabric_lsp.findings import Severity

RESET = "\x1b[0m"
BOLD = "\x1b[1m"
RED = "\x1b[31m"
GREEN = "\x1b[32m"
YELLOW = "\x1b[33m"
CYAN = "\x1b[36m"

PROGRESS_DELAY = 2.0
CLEAR_LINE = "\r\x1b[K"


def use_color(choice: str, stream: TextIO) -> bool:
    if choice == "always":
        return True
    if choice == "never":
        return False
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return _isatty(stream) and os.environ.get("TERM") != "dumb"


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def paint(text: str, *styles: str, on: bool) -> str:
    return f"{''.join(styles)}{text}{RESET}" if on and text else text


def severity_color(severity: Severity) -> str:
    return {Severity.ERROR: RED, Severity.WARNING: YELLOW}.get(severity, CYAN)


class Progress:
    """`with Progress(count, sys.stderr):` around the checking; see the module's docstring."""

    def __init__(self, count: int, stream: TextIO, enabled: bool = True) -> None:
        self.count = count
        self.stream = stream
        self.enabled = enabled and _isatty(stream) and hasattr(signal, "setitimer")
        self.shown = False
        self._previous = None
        self._armed = False

    def _delay(self) -> float:
        try:
            return max(float(os.environ.get("FABRIC_LSP_PROGRESS_DELAY", PROGRESS_DELAY)), 0.001)
        except ValueError:
            return PROGRESS_DELAY

    def _write(self, text: str) -> None:
        encoding = getattr(self.stream, "encoding", None) or "utf-8"
        try:
            os.write(self.stream.fileno(), text.encode(encoding, "replace"))
        except (OSError, ValueError, LookupError):
            pass

    def _show(self, signum, frame) -> None:
        self.shown = True
        noun = "file" if self.count == 1 else "files"
        self._write(f"\rchecking {self.count:,} {noun}…")

    def __enter__(self) -> "Progress":
        if not self.enabled or threading.current_thread() is not threading.main_thread():
            return self
        try:
            if signal.getitimer(signal.ITIMER_REAL)[0] > 0:
                return self  # someone else's timer: leave it alone
            self._previous = signal.signal(signal.SIGALRM, self._show)
            signal.setitimer(signal.ITIMER_REAL, self._delay())
            self._armed = True
        except (ValueError, OSError):
            pass
        return self

    def __exit__(self, *exc) -> None:
        if self._armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._previous if self._previous is not None else signal.SIG_DFL)
            self._armed = False
        if self.shown:
            self._write(CLEAR_LINE)
            self.shown = False
