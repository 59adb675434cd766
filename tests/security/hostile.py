"""Hostile repositories: a .venv whose python and a pyproject `python` that are programs leaving a
marker file when run. Shared by the trust tests (CLI, server, Neovim)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
FABRIC_CASE = REPO_ROOT / "fixtures" / "cases" / "fab001_compile_before_setup.py"


def _script(path: Path, marker: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho ran >> '{marker}'\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def build_hostile_repo(root: Path, marker: Path, *, fabric_file: bool = True, library: bool = False) -> Path:
    """`root` with .venv/bin/python and ./evil.sh as marker-writing scripts, a pyproject naming
    ./evil.sh as `python`, and `x = 1` (plus the FAB001 case when `fabric_file`)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text('[project]\nname = "hostile"\n\n[tool.fabric-lsp]\npython = "./evil.sh"\n')
    _script(root / "evil.sh", marker)
    venv = root / ".venv"
    _script(venv / "bin" / "python", marker)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.2\n")
    site = venv / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    # A .pth with code: site.py would run it; it must never run here.
    (site / "evil.pth").write_text(f"import os; open({str(marker)!r}, 'a').write('pth ran')\n")
    if library:
        (site / "hostilelib").mkdir()
        (site / "hostilelib" / "__init__.py").write_text("def only_in_repo_venv():\n    return 1\n")
    (root / "plain.py").write_text("x = 1\n")
    if fabric_file:
        (root / "train.py").write_text(FABRIC_CASE.read_text())
    return root


def user_config_env(tmp: Path, text: str = "") -> dict[str, str]:
    path = tmp / "user-config.toml"
    path.write_text(text)
    env = dict(os.environ)
    env["FABRIC_LSP_USER_CONFIG"] = str(path)
    env.pop("VIRTUAL_ENV", None)
    return env


# -- costs, counted in CPU time (a busy machine stretches wall time, not CPU time) -----------------


def run_check_measured(cwd: Path, *args: str, timeout: float = 60, env: dict[str, str] | None = None,
                       cache: bool = False):
    """`python -m fabric_lsp check ARGS` in `cwd` (with --no-cache unless `cache`): the completed
    process and the CPU seconds it (and the workers it waited for) spent."""
    import resource
    import subprocess
    import sys

    environment = {**os.environ, **(env or {})}
    environment["PYTHONPATH"] = str(REPO_ROOT / "server")
    environment.pop("VIRTUAL_ENV", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run([sys.executable, "-m", "fabric_lsp", "check", *([] if cache else ["--no-cache"]), *args],
                            cwd=cwd, env=environment, capture_output=True, text=True, timeout=timeout,
                            stdin=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return result, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def process_cpu_seconds(pid: int) -> float:
    """CPU seconds a live process (a language server) and its reaped children have spent so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(value) for value in fields[11:15])
    return (utime + stime + cutime + cstime) / os.sysconf("SC_CLK_TCK")
