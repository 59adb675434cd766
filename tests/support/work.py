"""Work counted, never timed (developers' guide; issue 36): what the tests bound is the work the
analysis does, so that a bound says the same on an idle laptop and on a 2-core CI runner with
other processes busy.

Two measures:

* `lines`: the lines of fabric_lsp's own code executed (a `sys.settrace` hook that follows only
  frames of the package's files). It grows with every loop the analysis runs in Python, so a
  scan that turns quadratic, a lookup re-read per name or a recursion that runs away shows up in
  it, and it does not depend on the machine's load or speed. (Work inside C, such as a
  `str.find`, is not counted; the peak-memory bounds and the subprocess timeouts cover those.)
  Tracing makes the code run ~3-4x slower: measure the inputs the test needs, no larger.
* the value-flow solver's own count, `Solver.steps` (with `max_steps` and `bound_hit`): `solvers()`
  keeps every solver the engine makes inside its block.

`counting_main(out)`: the same line count for a whole `python -m fabric_lsp ...` process, written
to `out` as JSON at exit (tests/security/measure.py runs the CLI with it).
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass, field

SERVER = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "server")
PACKAGE_PREFIX = os.path.join(SERVER, "fabric_lsp") + os.sep


@dataclass
class Work:
    lines: int = 0  # lines of fabric_lsp's code executed in the block (this thread)
    solvers: list = field(default_factory=list)  # the value-flow solvers the engine ran in the block

    @property
    def steps(self) -> int:
        return sum(solver.steps for solver in self.solvers)


class _LineCounter:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.lines = 0

    def local(self, frame, event, arg):
        if event == "line":
            self.lines += 1
        return self.local

    def call(self, frame, event, arg):
        # Only the package's frames are followed line by line; others cost one call each.
        return self.local if frame.f_code.co_filename.startswith(self.prefix) else None


@contextlib.contextmanager
def counted(prefix: str = PACKAGE_PREFIX):
    """`with counted() as work: ...` -> `work.lines`, `work.solvers`, `work.steps` for the block."""
    import fabric_lsp.engine as engine

    work = Work()
    original_solve = engine.solve

    def solve(*args, **kwargs):
        solver = original_solve(*args, **kwargs)
        work.solvers.append(solver)
        return solver

    counter = _LineCounter(prefix)
    previous = sys.gettrace()
    engine.solve = solve
    sys.settrace(counter.call)
    try:
        yield work
    finally:
        sys.settrace(previous)
        engine.solve = original_solve
        work.lines = counter.lines


def lines_of(function, *args, **kwargs) -> tuple[object, Work]:
    """(function(*args, **kwargs), the Work it took)."""
    with counted() as work:
        result = function(*args, **kwargs)
    return result, work


def counting_main(out: str) -> None:
    """Run `python -m fabric_lsp` (sys.argv[1:] as its arguments) counting the lines of fabric_lsp
    executed in the main thread, and write {"lines": n} to `out` however it ends."""
    import json
    import runpy

    counter = _LineCounter(PACKAGE_PREFIX)
    sys.settrace(counter.call)
    try:
        runpy.run_module("fabric_lsp", run_name="__main__", alter_sys=True)
    finally:
        sys.settrace(None)
        with open(out, "w") as handle:
            json.dump({"lines": counter.lines}, handle)


# `python -c COUNTING_MAIN OUT ARGV...`: the CLI counted (the snippet imports this module by path,
# so it needs nothing of the tests on sys.path).
COUNTING_MAIN = f"""
import importlib.util, sys
spec = importlib.util.spec_from_file_location("_fabric_lsp_work", {os.path.abspath(__file__)!r})
work = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = work
spec.loader.exec_module(work)
out = sys.argv[1]
sys.argv = ["fabric_lsp", *sys.argv[2:]]
work.counting_main(out)
"""
