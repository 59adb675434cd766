"""What a `fabric-lsp` child process cost: its CPU time as counted by the kernel (os.wait4), which a
busy machine does not inflate the way it inflates wall time, and its peak memory. Shared by the
bound tests of tests/security/.

The peak is the child's own high-water mark (VmHWM, read by the child as it ends), not wait4's
ru_maxrss: that one also holds the memory of the test process the child was forked from before it
ran Python (a pytest worker of 400 MB made every child look 400 MB large)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Measured:
    returncode: int
    stdout: str
    stderr: str
    cpu_seconds: float  # user + system time of the child
    peak_mb: float  # its largest resident set size


def cli_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "server"), env.get("PYTHONPATH")) if p)
    env.pop("VIRTUAL_ENV", None)
    return env


# `python -m fabric_lsp ARGS` as __main__ runs it (the current directory off sys.path, main(), a
# flush, os._exit), writing its peak memory in kB to the file named first: VmHWM counts this
# process's memory since it started Python, RUSAGE_CHILDREN the worker processes it ran.
_MEASURED_MAIN = """
import os, resource, sys
report = sys.argv.pop(1)
sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd())]
sys.argv[0] = "fabric-lsp"
from fabric_lsp.cli import main
code = main()
sys.stdout.flush()
sys.stderr.flush()
with open("/proc/self/status") as status:
    own = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
with open(report, "w") as handle:
    handle.write(str(max(own, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)))
os._exit(code)
"""


def run_cli(*args: str, cwd: Path, stdin: bytes | None = None, timeout: float = 300) -> Measured:
    """`python -m fabric_lsp ARGS` in `cwd`, measured; killed after `timeout` seconds (then the
    measure is what it had cost by then, and returncode is negative)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r", suffix=".peak") as peak:
        process = subprocess.Popen(
            [sys.executable, "-c", _MEASURED_MAIN, peak.name, *args], cwd=cwd, env=cli_env(),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL, stdout=out, stderr=err,
        )
        timer = threading.Timer(timeout, process.kill)
        timer.start()
        try:
            if stdin is not None:
                try:
                    process.stdin.write(stdin)
                    process.stdin.close()
                except BrokenPipeError:
                    pass
            _, status, usage = os.wait4(process.pid, 0)
        finally:
            timer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        out.seek(0)
        err.seek(0)
        written = peak.read().strip()
        return Measured(
            process.returncode,
            out.read().decode("utf-8", "replace"),
            err.read().decode("utf-8", "replace"),
            usage.ru_utime + usage.ru_stime,
            int(written) / 1024 if written else float("inf"),  # nothing written: killed or crashed
        )
