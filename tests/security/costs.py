"""What a `fabric-lsp` child process cost: its CPU time and peak memory as counted by the kernel
(os.wait4), which a busy machine does not inflate the way it inflates wall time. Shared by the
bound tests of tests/security/."""

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


def run_cli(*args: str, cwd: Path, stdin: bytes | None = None, timeout: float = 300) -> Measured:
    """`python -m fabric_lsp ARGS` in `cwd`, measured; killed after `timeout` seconds (then the
    measure is what it had cost by then, and returncode is negative)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "fabric_lsp", *args], cwd=cwd, env=cli_env(),
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
        return Measured(
            process.returncode,
            out.read().decode("utf-8", "replace"),
            err.read().decode("utf-8", "replace"),
            usage.ru_utime + usage.ru_stime,
            usage.ru_maxrss / 1024,
        )
