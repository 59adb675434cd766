"""Run the real CLI in a child process and measure what it cost: its CPU time and its peak memory,
so bounds are counted, not timed by a wall clock that other work on the machine stretches. The
timeout only ends a run that hangs.

The CLI is started by a small launcher process, which reads the CLI's rusage with os.wait4: Linux
gives an exec'd child the peak memory of the process it was forked from, so a child of the test
process (hundreds of MB after a few tests) would report the test's own memory. The launcher also
caps the address space (ADDRESS_SPACE_MB): a run that reads without bound fails instead of taking
the machine's memory.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
ADDRESS_SPACE_MB = 3072

_LAUNCHER = """
import json, os, resource, subprocess, sys
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
child = subprocess.Popen(sys.argv[3:])
_, status, usage = os.wait4(child.pid, 0)
with open(sys.argv[2], "w") as out:
    json.dump([os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024], out)
"""


@dataclass
class Measured:
    returncode: int
    stdout: str
    stderr: str
    cpu_seconds: float
    peak_mb: float
    timed_out: bool


def limit_memory() -> None:
    """preexec_fn: cap the child's address space at ADDRESS_SPACE_MB (for a server started directly)."""
    limit = ADDRESS_SPACE_MB * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def run_cli(cwd: Path, env: dict[str, str], *argv: str, timeout: float = 120.0, stdin: bytes | None = None) -> Measured:
    """`python -m fabric_lsp ARGV` from this repository's server/, with `env` (and `stdin` as its
    standard input)."""
    env = {**env, "PYTHONPATH": str(REPO_ROOT / "server")}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r", suffix=".json") as usage:
        command = [sys.executable, "-c", _LAUNCHER, str(ADDRESS_SPACE_MB * 1024 * 1024), usage.name,
                   sys.executable, "-m", "fabric_lsp", *argv]
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=err, start_new_session=True,
                                   stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE)
        expired = threading.Event()

        def stop() -> None:
            expired.set()
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except OSError:
                pass

        timer = threading.Timer(timeout, stop)
        timer.start()
        try:
            if stdin is not None:  # the launcher's standard input is the CLI's
                try:
                    process.stdin.write(stdin)
                    process.stdin.close()
                except BrokenPipeError:
                    pass
            process.wait()
        finally:
            timer.cancel()
        out.seek(0)
        err.seek(0)
        try:
            returncode, cpu, peak = json.loads(Path(usage.name).read_text())
        except ValueError:  # killed before the launcher could write
            returncode, cpu, peak = process.returncode, float("inf"), float("inf")
        return Measured(returncode, out.read().decode(errors="replace"), err.read().decode(errors="replace"),
                        cpu, peak, expired.is_set())
