"""Where a `check -v` run spends its time: the phases of the analysis (read, parse, solve, facts,
rules, jedi, ...) and its slowest programs, for the user's report only.

Off unless the command line turns it on (`enable()`): the server and the API never time anything.
No answer depends on what is measured here (bounds are counts, never times). A phase nested in
another (jedi asked while solving) is counted in the inner one only, so the phases add up to the
work done. Forked workers send what they measured back with their results (checking._run_tasks).
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager, nullcontext

# The order phases are reported in.
PHASES = ("read", "interpreter", "parse", "solve", "jedi", "facts", "rules", "syntax", "cache")

_enabled = False
_lock = threading.Lock()
_totals: dict[str, float] = {}
_programs: list[tuple[float, str, int]] = []  # (seconds, a file naming the program, its number of files)
_local = threading.local()  # the phases open in this thread: [name, started] pairs, innermost last


def enable(on: bool = True) -> None:
    global _enabled
    _enabled = on


def enabled() -> bool:
    return _enabled


_OFF = nullcontext()


def phase(name: str):
    """Time the block as phase `name` (a no-op unless enabled)."""
    return _timed(name) if _enabled else _OFF


@contextmanager
def _timed(name: str):
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    now = time.perf_counter()
    if stack:  # the outer phase pauses while this one runs
        outer = stack[-1]
        _add(outer[0], now - outer[1])
    stack.append([name, now])
    try:
        yield
    finally:
        now = time.perf_counter()
        _, started = stack.pop()
        _add(name, now - started)
        if stack:
            stack[-1][1] = now


def _add(name: str, seconds: float) -> None:
    with _lock:
        _totals[name] = _totals.get(name, 0.0) + seconds


def program_done(seconds: float, named_by: str, files: int) -> None:
    """One program analysed (parse to rules) in `seconds`."""
    if _enabled:
        with _lock:
            _programs.append((seconds, named_by, files))


def take() -> tuple[dict[str, float], list[tuple[float, str, int]]]:
    """What was measured so far in this process, and start again from nothing."""
    global _totals, _programs
    with _lock:
        taken = (_totals, _programs)
        _totals, _programs = {}, []
    return taken


def merge(taken: tuple[dict[str, float], list[tuple[float, str, int]]]) -> None:
    """Add what another process (or an earlier take) measured."""
    totals, programs = taken
    with _lock:
        for name, seconds in totals.items():
            _totals[name] = _totals.get(name, 0.0) + seconds
        _programs.extend(programs)


def report(slowest: int = 5) -> tuple[list[tuple[str, float]], list[tuple[float, str, int]]]:
    """The phases in PHASES order (those that ran), and the `slowest` programs, slowest first."""
    with _lock:
        phases = [(name, _totals[name]) for name in PHASES if name in _totals]
        phases += sorted((name, s) for name, s in _totals.items() if name not in PHASES)
        programs = sorted(_programs, key=lambda p: (-p[0], p[1]))[:slowest]
    return phases, programs
