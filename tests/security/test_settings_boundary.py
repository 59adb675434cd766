"""Issue 24, item 16: settings files (and project markers) are not looked for above the checkout.
A settings file in a shared ancestor (`/tmp`, a build folder) configured the checkout and hid its
findings. The search upwards stops at the repository root (the folder holding `.git`) or the home
folder, and a settings file, project marker or `.git` that another user (not root) owns is passed
over (fabric_lsp.sources.upward). The tests run as root, so they chown files to another uid for real."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "lsp"))  # lspkit

from lspkit import capabilities, diagnostics, open_doc, session  # noqa: E402

from tests.security.hostile import run_check_measured  # noqa: E402

CASE = REPO / "fixtures" / "cases" / "fab001_call_before_mark.py"
HIDING = '[tool.fabric-lsp]\nignore = ["FAB001"]\n'
OTHER_UID = 65534  # nobody

needs_chown = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                 reason="giving a file to another user needs root")


def codes(result) -> list[str]:
    assert "Traceback" not in result.stderr
    return [item["code"] for item in json.loads(result.stdout)]


def checkout(folder: Path, git: bool = True) -> Path:
    if git:
        (folder / ".git").mkdir(parents=True)
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(CASE, folder / "main.py")
    return folder


def env_for(tmp_path: Path) -> dict[str, str]:
    # The home folder is elsewhere (not an ancestor), and no user config of the tester is read.
    return {"HOME": str(tmp_path / "home"), "FABRIC_LSP_USER_CONFIG": str(tmp_path / "no-user-config.toml")}


def test_settings_above_the_repository_root_do_not_apply(tmp_path):
    (tmp_path / "outer").mkdir()
    (tmp_path / "outer" / "pyproject.toml").write_text(HIDING)
    repo = checkout(tmp_path / "outer" / "checkout")
    result, _ = run_check_measured(repo, "--format", "json", ".", env=env_for(tmp_path))
    assert codes(result) == ["FAB001"] and result.returncode == 1
    # From above the checkout too: the file's own search decides, not the working directory.
    result, _ = run_check_measured(tmp_path / "outer", "--format", "json", "checkout/main.py", env=env_for(tmp_path))
    assert codes(result) == ["FAB001"]
    # The repository's own settings still apply, up to its root.
    (repo / "pyproject.toml").write_text(HIDING)
    result, _ = run_check_measured(repo, "--format", "json", ".", env=env_for(tmp_path))
    assert codes(result) == [] and result.returncode == 0


def test_settings_above_the_home_folder_do_not_apply(tmp_path):
    (tmp_path / "pyproject.toml").write_text(HIDING)
    project = checkout(tmp_path / "home" / "scratch", git=False)
    result, _ = run_check_measured(project, "--format", "json", ".", env=env_for(tmp_path))
    assert codes(result) == ["FAB001"]
    (tmp_path / "home" / "fabric-lsp.toml").write_text('ignore = ["FAB001"]\n')  # the home folder's own: yours
    result, _ = run_check_measured(project, "--format", "json", ".", env=env_for(tmp_path))
    assert codes(result) == []


@needs_chown
def test_a_settings_file_another_user_owns_is_passed_over(tmp_path):
    # No .git and outside the home: the search goes up to `/`, and only the ownership rule applies.
    shared = tmp_path / "shared"
    shared.mkdir()
    settings = shared / "pyproject.toml"
    settings.write_text(HIDING)
    project = checkout(shared / "project", git=False)
    result, _ = run_check_measured(project, "--format", "json", ".", env=env_for(tmp_path))
    assert codes(result) == []  # control: yours, so it applies
    os.chown(settings, OTHER_UID, OTHER_UID)
    result, _ = run_check_measured(project, "--format", "json", ".", env=env_for(tmp_path))
    assert codes(result) == ["FAB001"]
    notices = [line for line in result.stderr.splitlines() if str(settings) in line]
    assert notices == [f"fabric-lsp: notice: {settings}: ignored: owned by another user (uid {OTHER_UID}); "
                       "a settings file counts only when you or root own it (--config PATH uses it all the same)"]
    # A link you own to it is no way round: the file it names is not yours.
    settings.rename(shared / "theirs.toml")
    (shared / "fabric-lsp.toml").symlink_to(shared / "theirs.toml")
    result, _ = run_check_measured(project, "--format", "json", ".", env=env_for(tmp_path))
    assert codes(result) == ["FAB001"]
    # Named with --config, it is used: the user chose it.
    result, _ = run_check_measured(project, "--format", "json", "--config", str(shared / "theirs.toml"), ".",
                                   env=env_for(tmp_path))
    assert codes(result) == []


MODEL = """import torch
from torch import nn


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 2)

    def forward(self, obs):
        return self.net(obs)

    def act(self, obs):
        return self(obs).argmax(-1)
"""
USER = """import torch
from lightning.fabric import Fabric
from models import Policy

fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp"); fabric.launch()
policy = fabric.setup(Policy())
policy.act(torch.randn(8, 4))
"""


@needs_chown
def test_a_project_marker_another_user_owns_does_not_make_the_shared_folder_the_project(tmp_path):
    """shared/setup.py made shared/ the project: its models.py was analysed with main.py (a finding
    about a class the checkout does not have). Another user's marker is passed over; the project is
    then the working directory, as with no marker at all."""
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "setup.py").write_text("")
    (shared / "models.py").write_text(MODEL)
    project = shared / "project"
    project.mkdir()
    (project / "main.py").write_text(USER)
    result, _ = run_check_measured(project, "--format", "json", ".", env=env_for(tmp_path))
    assert codes(result) == ["FAB001"]  # control: your marker, so shared/ is the project and models.py is read
    os.chown(shared / "setup.py", OTHER_UID, OTHER_UID)
    result, _ = run_check_measured(project, "--format", "json", ".", env=env_for(tmp_path))
    assert codes(result) == []  # `models` is not found from the project: unknown, no finding

    from fabric_lsp.engine import forget_project_roots, project_root_for

    forget_project_roots()
    assert project_root_for(str(project / "main.py"), None, str(project)) == str(project)
    assert project_root_for(str(project / "main.py"), None, None) == str(project)


@needs_chown
def test_a_git_folder_another_user_owns_does_not_bring_its_ignore_rules(tmp_path):
    # git refuses such a repository too ("dubious ownership").
    shared = tmp_path / "shared"
    (shared / ".git").mkdir(parents=True)
    (shared / ".gitignore").write_text("*.py\n")
    for path in (shared / ".git", shared / ".gitignore"):
        os.chown(path, OTHER_UID, OTHER_UID)
    project = checkout(shared / "project", git=False)
    result, _ = run_check_measured(project, "--format", "json", ".", env=env_for(tmp_path))
    assert codes(result) == ["FAB001"]


async def test_server_reports_what_a_settings_file_above_the_repository_would_hide(tmp_path):
    (tmp_path / "outer").mkdir()
    (tmp_path / "outer" / "pyproject.toml").write_text(HIDING)
    repo = checkout(tmp_path / "outer" / "checkout")
    async with session(capabilities("neovim"), [repo], env=env_for(tmp_path)) as (client, _):
        found = await diagnostics(client, open_doc(client, repo / "main.py"), version=1)
        assert [d.code for d in found] == ["FAB001"]


@needs_chown
async def test_server_passes_over_a_settings_file_another_user_owns(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "fabric-lsp.toml").write_text('ignore = ["FAB001"]\n')
    os.chown(shared / "fabric-lsp.toml", OTHER_UID, OTHER_UID)
    project = checkout(shared / "project", git=False)
    async with session(capabilities("neovim"), [project], env=env_for(tmp_path)) as (client, _):
        found = await diagnostics(client, open_doc(client, project / "main.py"), version=1)
        assert [d.code for d in found] == ["FAB001"]
