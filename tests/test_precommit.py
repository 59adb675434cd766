"""The pre-commit hook (.pre-commit-hooks.yaml), run by the real `pre-commit try-repo` (issue 14).

The hook repository is the working tree as it is now (support/precommit.py). A project with a
FAB001 finding fails the hook; after `fabric-lsp check --fix` it passes; a file matched by the
project's `exclude` is not checked although pre-commit names it (`--force-exclude`). try-repo builds
the hook's environment in a store of its own at each run: this takes about a minute. The hostile
file names and `args:` are tested in security/test_precommit_arguments.py, with one environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from support.precommit import PRE_COMMIT, ROOT, git, hook_repository

CASE = ROOT / "fixtures" / "cases" / "fab001_generate_ddp_literal.py"
FABRIC_LSP = Path(sys.executable).with_name("fabric-lsp")


def test_hook_definition():
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert [hook["id"] for hook in hooks] == ["fabric-lsp"]
    hook = hooks[0]
    assert hook["entry"] == "fabric-lsp check --force-exclude --"  # no file name becomes an option
    assert hook["language"] == "python"
    assert hook["types_or"] == ["python", "jupyter"]
    assert hook["require_serial"] is True
    # The command the hook runs exists with these options.
    result = subprocess.run([str(FABRIC_LSP), "check", "--force-exclude", "--help"], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0 and "--force-exclude" in result.stdout


@pytest.mark.skipif(not PRE_COMMIT.is_file(), reason="pre-commit is in the test extras: pip install -e '.[test]'")
def test_try_repo_fails_on_a_finding_and_passes_after_fix(tmp_path):
    hook_repo = hook_repository(tmp_path / "hook")
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\n\n[tool.fabric-lsp]\nexclude = ["scratch/*"]\n')
    shutil.copy(CASE, project / "train.py")
    (project / "scratch").mkdir()
    shutil.copy(CASE, project / "scratch" / "try_generate.py")  # the same finding, excluded by the project
    (project / "README.md").write_text("not Python: the hook is not run on it\n")
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "a training script")

    env = dict(os.environ)
    env["PRE_COMMIT_HOME"] = str(tmp_path / "pre-commit-home")  # its own cache: the environment is built here
    env.pop("PYTHONPATH", None)  # the hook's environment must use the package pre-commit installed
    env["FABRIC_LSP_CACHE_SECRET_DIR"] = str(tmp_path / "secret")
    command = [str(PRE_COMMIT), "try-repo", str(hook_repo), "fabric-lsp", "--all-files", "--verbose",
               "--color", "never"]

    started = time.monotonic()
    failing = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=600)
    first = time.monotonic() - started
    output = failing.stdout + failing.stderr
    assert failing.returncode == 1, output
    assert "fabric-lsp" in output and "Failed" in output, output
    assert "train.py:42:20: FAB001" in output, output
    assert "try_generate.py" not in output, output  # --force-exclude: `exclude` applies to named files

    fixed = subprocess.run([str(FABRIC_LSP), "check", "--fix", "train.py"], cwd=project, env=env,
                           capture_output=True, text=True, timeout=120)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert 'model.mark_forward_method("generate")' in (project / "train.py").read_text()

    started = time.monotonic()
    passing = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=600)
    second = time.monotonic() - started
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert "Passed" in passing.stdout, passing.stdout
    print(f"pre-commit try-repo: {first:.1f} s (builds the hook's environment), then {second:.1f} s")


# A model class that lives in a package installed in the project's .venv (not in the project).
INSTALLED_MODEL = '''import torch
from torch import nn


class CharLM(nn.Module):
    def __init__(self, vocab_size: int = 32, hidden: int = 16):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden)
        self.head = nn.Linear(hidden, vocab_size)

    def forward(self, tokens):
        return self.head(self.embed(tokens))

    @torch.no_grad()
    def generate(self, prompt, steps: int = 5):
        tokens = prompt
        for _ in range(steps):
            tokens = torch.cat([tokens, self(tokens)[:, -1].argmax(-1, keepdim=True)], dim=1)
        return tokens
'''
TRAIN_WITH_INSTALLED_MODEL = '''import torch
from lightning.fabric import Fabric
from tinymodels import CharLM


def main():
    fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp")
    fabric.launch()
    model = fabric.setup(CharLM())
    sample = model.generate(torch.zeros(1, 3, dtype=torch.long))
    fabric.print(sample.tolist())
'''


def project_with_installed_model(project: Path) -> Path:
    """A project whose model class is in a package of its `.venv` (git-ignored, as usual)."""
    project.mkdir()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(project / ".venv")], check=True,
                   capture_output=True, timeout=120)
    site = next((project / ".venv" / "lib").glob("python3*/site-packages"))
    (site / "tinymodels").mkdir()
    (site / "tinymodels" / "__init__.py").write_text(INSTALLED_MODEL)
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    (project / ".gitignore").write_text(".venv/\n")
    (project / "train.py").write_text(TRAIN_WITH_INSTALLED_MODEL)
    return project


@pytest.mark.skipif(not PRE_COMMIT.is_file(), reason="pre-commit is in the test extras: pip install -e '.[test]'")
def test_pre_commit_finds_what_check_finds_with_the_projects_venv(tmp_path, precommit_hook):
    """Issue 29 item 1: pre-commit sets VIRTUAL_ENV to the hook's own environment; that environment
    (the one fabric-lsp runs in) is passed over, so the project's .venv is read as `check` reads it."""
    from support.precommit import commit_project

    project = project_with_installed_model(tmp_path / "project")
    (project / ".pre-commit-config.yaml").write_text(precommit_hook.config())
    commit_project(project)
    env = precommit_hook.env(FABRIC_LSP_USER_CONFIG=str(tmp_path / "no-user-config.toml"))
    env.pop("VIRTUAL_ENV", None)
    cli = subprocess.run([sys.executable, "-m", "fabric_lsp", "check", "--no-cache", "train.py"], cwd=project,
                         env={**env, "PYTHONPATH": str(ROOT / "server")}, capture_output=True, text=True, timeout=120)
    assert cli.returncode == 1 and "train.py:10:20: FAB001" in cli.stdout, cli.stdout + cli.stderr

    hook = subprocess.run([str(PRE_COMMIT), "run", "--all-files", "--verbose", "--color", "never"], cwd=project,
                          env=env, capture_output=True, text=True, timeout=600)
    output = hook.stdout + hook.stderr
    assert hook.returncode == 1 and "Failed" in output, output
    assert "train.py:10:20: FAB001" in output, output
