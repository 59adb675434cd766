"""pre-commit in tests: a hook repository made from the working tree, and a project that uses it.

The hook repository is the working tree as it is now (what pip needs to build the package, and the
hook file), committed in a temporary git repository: the tests do not depend on this checkout's
git state. pre-commit builds its own virtual environment and pip-installs fabric-lsp into it from
that repository (20-30 s), with the package index the environment configures. `HookRepository`
keeps one PRE_COMMIT_HOME, so that environment is built once for every `pre-commit run` of a test
session (the `precommit_hook` fixture of tests/conftest.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRE_COMMIT = Path(sys.executable).with_name("pre-commit")
# What building the package reads (pyproject.toml's readme and license files, the package).
PACKAGE_FILES = ["pyproject.toml", "LICENSE", "docs/pypi.md", ".pre-commit-hooks.yaml"]


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_GLOBAL": os.devnull}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True, timeout=60)
    return done.stdout


def hook_repository(where: Path) -> Path:
    where.mkdir()
    for name in PACKAGE_FILES:
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, where / name)
    shutil.copytree(ROOT / "server", where / "server",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
    git(where, "init", "-q", "-b", "main")
    git(where, "add", "-A")
    git(where, "commit", "-q", "-m", "fabric-lsp")
    return where


@dataclass(frozen=True)
class HookRepository:
    path: Path  # the hook repository (a git repository holding .pre-commit-hooks.yaml)
    rev: str  # its commit
    home: Path  # PRE_COMMIT_HOME shared by the runs: the hook's environment is built once

    def config(self, args: list[str] | None = None) -> str:
        """A .pre-commit-config.yaml using the hook (with `args:` when given)."""
        hook = "      - id: fabric-lsp\n"
        if args is not None:
            hook += "        args: [" + ", ".join(f"'{arg}'" for arg in args) + "]\n"
        return f"repos:\n  - repo: {self.path}\n    rev: {self.rev}\n    hooks:\n{hook}"

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ)
        env["PRE_COMMIT_HOME"] = str(self.home)
        env.pop("PYTHONPATH", None)  # the hook's environment must use the package pre-commit installed
        env.update(extra)
        return env

    def run(self, project: Path, *, timeout: float = 600, **extra_env: str) -> subprocess.CompletedProcess:
        """`pre-commit run --all-files` in `project` (a git repository with its config committed)."""
        return subprocess.run([str(PRE_COMMIT), "run", "--all-files", "--verbose", "--color", "never"], cwd=project,
                              env=self.env(**extra_env), capture_output=True, text=True, timeout=timeout)


def make_hook_repository(where: Path) -> HookRepository:
    path = hook_repository(where / "hook")
    return HookRepository(path, git(path, "rev-parse", "HEAD").strip(), where / "pre-commit-home")


def commit_project(project: Path) -> None:
    """`project` as a git repository with every file committed (pre-commit runs on git's files)."""
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "project")
