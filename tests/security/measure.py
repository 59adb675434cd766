"""Run the real CLI in a child process and measure what it cost: its CPU time and its peak memory
(os.wait4's rusage of that child alone), so bounds are counted, not timed by a wall clock that
other work on the machine stretches. The timeout only ends a run that hangs."""

from __future__ import annotations

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


@dataclass
class Measured:
    returncode: int
    stdout: str
    stderr: str
    cpu_seconds: float
    peak_mb: float
    timed_out: bool


ADDRESS_SPACE_MB = 3072  # a run that reads without bound fails here instead of taking the machine's memory


def limit_memory() -> None:
    """preexec_fn: cap the child's address space at ADDRESS_SPACE_MB."""
    limit = ADDRESS_SPACE_MB * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def run_cli(cwd: Path, env: dict[str, str], *argv: str, timeout: float = 120.0) -> Measured:
    """`python -m fabric_lsp ARGV` from this repository's server/, with `env` (address space capped)."""
    env = {**env, "PYTHONPATH": str(REPO_ROOT / "server")}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen([sys.executable, "-m", "fabric_lsp", *argv], cwd=cwd, env=env,
                                   stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True,
                                   preexec_fn=limit_memory)
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
            _, status, usage = os.wait4(process.pid, 0)
        finally:
            timer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Measured(process.returncode, out.read().decode(errors="replace"), err.read().decode(errors="replace"),
                        usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, expired.is_set())
