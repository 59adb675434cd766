"""`fabric-lsp check` over the generated 2,000-file tree, and the reference points measured on the
same tree in the same run: `ruff check`, and a jedi-only pass (what asking jedi to resolve every
import of every file costs, the work a jedi-based checker cannot avoid)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CACHE_DIR = ".fabric-lsp-cache"


def as_installed(env: dict[str, str]) -> dict[str, str]:
    """The server and CLI measured as a user runs them: pip (and the editor's first start of the
    bundled server) writes the package's bytecode once, so no run compiles its ~80 modules again.
    A shell with PYTHONDONTWRITEBYTECODE=1 (this machine's) made every measured process compile
    them (~0.3 s of each start); `compile_package` writes the bytecode before measuring."""
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def compile_package() -> None:
    import compileall

    compileall.compile_dir(str(REPO / "server" / "fabric_lsp"), quiet=1)


def _env() -> dict[str, str]:
    env = as_installed(dict(os.environ))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "server"), env.get("PYTHONPATH")) if p)
    env.pop("VIRTUAL_ENV", None)
    return env


def run_check(tree: Path, *options: str) -> tuple[float, str]:
    """Wall time of one `fabric-lsp check` process over the tree (JSON output kept to compare runs)."""
    command = [sys.executable, "-m", "fabric_lsp", "check", "--exit-zero", "--format", "json", *options, str(tree)]
    started = time.perf_counter()
    completed = subprocess.run(command, cwd=tree, env=_env(), capture_output=True, text=True, timeout=1800)
    elapsed = time.perf_counter() - started
    if completed.returncode != 0:
        raise RuntimeError(f"fabric-lsp check failed ({completed.returncode}): {completed.stderr[-2000:]}")
    return elapsed, completed.stdout


def clear_caches(tree: Path) -> None:
    shutil.rmtree(tree / CACHE_DIR, ignore_errors=True)


def ruff_executable() -> str | None:
    candidate = Path(sys.executable).with_name("ruff")
    if candidate.exists():
        return str(candidate)
    return shutil.which("ruff")


def run_ruff(tree: Path, *options: str) -> float | None:
    ruff = ruff_executable()
    if ruff is None:
        return None
    command = [ruff, "check", "--exit-zero", "--quiet", *options, str(tree)]
    started = time.perf_counter()
    subprocess.run(command, cwd=tree, capture_output=True, timeout=600, check=True)
    return time.perf_counter() - started


JEDI_PASS = r"""
import ast, sys, time
import jedi
paths = sys.argv[2:]
project = jedi.Project(sys.argv[1], smart_sys_path=True, load_unsafe_extensions=False)
asked = 0
started = time.perf_counter()
for path in paths:
    text = open(path, encoding="utf-8").read()
    script = jedi.Script(code=text, path=path, project=project)
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    # the imported name as written: where it is defined, following the import
                    script.goto(alias.lineno, alias.col_offset, follow_imports=True)
                    asked += 1
print(time.perf_counter() - started, asked)
"""


def run_jedi_pass(tree: Path, paths: list[str]) -> tuple[float, int]:
    """A fresh process (like a checker run), one core: jedi resolves each import of each file.
    Returns (wall seconds of the process, questions asked)."""
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-c", JEDI_PASS, str(tree), *paths], capture_output=True, text=True, timeout=1800,
        env=_env(), check=True,
    )
    _, asked = completed.stdout.split()
    return time.perf_counter() - started, int(asked)
