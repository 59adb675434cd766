"""The findings cache sees changes outside the project that the analysis read (issue 24, item 11).

The model class lives in a sibling folder, reached through an editable `.pth` line of the
project's `.venv` or through `sys.path.insert(0, "../lib")` in the script. A cached `check` said
"All checks passed!" after the sibling's method started calling a submodule, while `--no-cache`
reported FAB001: the cache stamped only the project's own files (and the interpreter's folders,
whose modification times an edit in place does not change). Now each program's entry keeps what
its analysis read outside the project (the library modules read as text, the folders listed to
resolve imports), each with its modification and change times, size and inode, and a lookup
checks them. What a run read is counted, not timed (tests/security/audited.py): only the project,
the sibling folder and Python's own files.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.security.audited import FOLDERS_BOUND, run_cli_audited
from tests.security.hostile import user_config_env

MODEL = '''import torch
from torch import nn


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 2)

    def forward(self, obs):
        return self.net(obs)

    def act(self, obs):
        return {body}
'''
CLEAN = MODEL.format(body="obs.sum()          ")  # runs no submodule
RUNS_A_SUBMODULE = MODEL.format(body="self.net(obs).sum()")  # the same size: FAB001 under DDP
TRAIN = '''import torch
from lightning.fabric import Fabric
from sibling_model import Policy

fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp"); fabric.launch()
policy = fabric.setup(Policy())
policy.act(torch.randn(8, 4))
'''


def _layout(tmp_path: Path, variant: str) -> tuple[Path, Path]:
    project, lib = tmp_path / "project", tmp_path / "lib"
    project.mkdir()
    lib.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (lib / "sibling_model.py").write_text(CLEAN)
    if variant == "editable-pth":
        venv = project / ".venv"
        site = venv / "lib" / "python3.11" / "site-packages"
        site.mkdir(parents=True)
        (venv / "bin").mkdir()
        (venv / "bin" / "python").write_text("#!/bin/sh\nexit 1\n")  # read as files, never run
        (venv / "pyvenv.cfg").write_text(f"home = {os.path.dirname(sys.executable)}\n"
                                         "include-system-site-packages = false\nversion = 3.11.2\n")
        (site / "__editable__.sibling-0.1.pth").write_text(f"{lib}\n")
        (project / "train.py").write_text(TRAIN)
    else:
        (project / "train.py").write_text("import sys\nsys.path.insert(0, '../lib')\n" + TRAIN)
    return project, lib / "sibling_model.py"


def _check(project: Path, env: dict, *extra: str) -> list[dict]:
    result, reads = run_cli_audited(project, env, "check", "--output-format", "json", *extra, ".", timeout=120)
    assert "Traceback" not in result.stderr and result.returncode in (0, 1), result
    # Counted, not timed: stamping what the analysis read outside the project reads nothing beyond
    # the sibling folder (and the user config beside it, under the test's folder).
    assert reads.outside(project.parent) == ([], []), reads.outside(project.parent)
    assert len(set(reads.listed)) <= FOLDERS_BOUND, len(set(reads.listed))
    return json.loads(result.stdout)


@pytest.mark.parametrize("keep_times", [False, True], ids=["edited", "edited-size-and-mtime-kept"])
@pytest.mark.parametrize("variant", ["editable-pth", "sys-path-insert"])
def test_cached_check_sees_an_edit_of_the_sibling(tmp_path, variant, keep_times):
    project, sibling = _layout(tmp_path, variant)
    env = user_config_env(tmp_path)
    assert _check(project, env) == []
    assert _check(project, env) == []  # answered from the cache
    before = sibling.stat()
    sibling.write_text(RUNS_A_SUBMODULE)  # in place: the folder's modification time stays
    if keep_times:  # as `cp -p` or `rsync -t` leave it: only the change time tells
        assert sibling.stat().st_size == before.st_size
        os.utime(sibling, ns=(before.st_atime_ns, before.st_mtime_ns))
    cached = _check(project, env)
    assert [finding["code"] for finding in cached] == ["FAB001"]
    assert cached == _check(project, env, "--no-cache")
    sibling.write_text(CLEAN)
    assert _check(project, env) == []


def test_a_module_added_to_the_sibling_folder_is_seen(tmp_path):
    """Import resolution lists the sibling folder: a module appearing there changes the answer."""
    project, sibling = _layout(tmp_path, "sys-path-insert")
    (project / "train.py").write_text((project / "train.py").read_text().replace(
        "from sibling_model import Policy", "from sibling_extra import Policy"))
    env = user_config_env(tmp_path)
    assert _check(project, env) == []  # sibling_extra does not exist: the class is unknown
    (sibling.parent / "sibling_extra.py").write_text(RUNS_A_SUBMODULE)
    assert [finding["code"] for finding in _check(project, env)] == ["FAB001"]
