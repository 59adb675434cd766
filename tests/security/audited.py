"""The CLI run as tests/security/measure.run_cli runs it (its peak memory measured, its address space
capped, a timeout that only ends a hang), with a Python audit hook that records every file the run
opens and every folder it lists: a test then counts what a run read instead of timing it.

The hook is installed before fabric_lsp is imported and follows the process's forked workers (each
event is written at once, with os.write on a descriptor opened for appending, which raises no audit
event of its own). Programs the run starts (the interpreter probe) are not followed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from tests.security.measure import _LAUNCHER, ADDRESS_SPACE_MB, REPO_ROOT, Measured

# Folders a small project's run lists, Python's imports included: measured 30-80. Walking the machine
# or an environment's site-packages lists thousands.
FOLDERS_BOUND = 1000

_AUDITED_MAIN = """
import os, runpy, sys
log = os.open(sys.argv.pop(1), os.O_WRONLY | os.O_APPEND)
EVENTS = {"open": "opened", "os.listdir": "listed", "os.scandir": "listed"}

def hook(event, args):
    kind = EVENTS.get(event)
    if kind is None or isinstance(args[0], int):  # an open descriptor: opened before, recorded then
        return
    path = os.path.abspath(os.fsdecode(args[0] if args[0] is not None else "."))
    os.write(log, (kind + " " + path.replace("\\n", "\\\\n") + "\\n").encode("utf-8", "surrogateescape"))

sys.addaudithook(hook)
sys.argv = ["fabric_lsp", *sys.argv[1:]]
runpy.run_module("fabric_lsp", run_name="__main__", alter_sys=True)
"""


@dataclass
class Reads:
    opened: list[str]  # files opened, absolute, in order (repeats kept)
    listed: list[str]  # folders listed
    own: list[str]  # what any run may read: Python's files, /dev/null, the cache secret's folder

    def outside(self, *roots: str | Path) -> tuple[list[str], list[str]]:
        """(files opened, folders listed) under none of `roots` nor the run's own places."""
        allowed = [os.path.realpath(root) for root in (*roots, *self.own)]

        def inside(path: str) -> bool:
            real = os.path.realpath(path)
            return any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in allowed)

        return ([p for p in self.opened if not inside(p)], [p for p in self.listed if not inside(p)])


def python_roots() -> list[str]:
    """The interpreter's own files: its prefixes, its library and site-packages, and fabric_lsp's source."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, str(REPO_ROOT / "server")}
    paths.update(value for value in sysconfig.get_paths().values())
    return sorted(paths)


def audited_command(log: Path) -> list[str]:
    """`python -m fabric_lsp` with the hook, appending to `log` (which must exist): a server's command
    is this and "serve"."""
    return [sys.executable, "-c", _AUDITED_MAIN, str(log)]


def reads_in(log: Path, env: dict[str, str] | None = None) -> Reads:
    """What the process(es) logging to `log` read so far (`env`: the one they ran with)."""
    secret = (env if env is not None else os.environ).get("FABRIC_LSP_CACHE_SECRET_DIR")
    reads = Reads([], [], [*python_roots(), os.devnull, *([secret] if secret else [])])
    for line in Path(log).read_bytes().decode("utf-8", "surrogateescape").splitlines():
        kind, _, path = line.partition(" ")
        getattr(reads, kind).append(path)
    return reads


def run_cli_audited(cwd: Path, env: dict[str, str], *argv: str, timeout: float = 120.0) -> tuple[Measured, Reads]:
    """`python -m fabric_lsp ARGV` as measure.run_cli runs it, and what it read."""
    env = {**env, "PYTHONPATH": str(REPO_ROOT / "server")}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r", suffix=".json") as usage, \
            tempfile.NamedTemporaryFile("rb", suffix=".log") as log:
        command = [sys.executable, "-c", _LAUNCHER, str(ADDRESS_SPACE_MB * 1024 * 1024), usage.name,
                   *audited_command(Path(log.name)), *argv]
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=err, start_new_session=True,
                                   stdin=subprocess.DEVNULL)
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
            process.wait()
        finally:
            timer.cancel()
        out.seek(0)
        err.seek(0)
        try:
            returncode, cpu, peak = json.loads(Path(usage.name).read_text())
        except ValueError:  # killed before the launcher could write
            returncode, cpu, peak = process.returncode, float("inf"), float("inf")
        reads = reads_in(Path(log.name), env)
        measured = Measured(returncode, out.read().decode(errors="replace"), err.read().decode(errors="replace"),
                            cpu, peak, expired.is_set())
        return measured, reads
