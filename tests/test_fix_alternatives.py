"""In-file alternatives (issue 11, "otherwise offer the in-file alternative") applied to runnable programs
under real Lightning: when a finding's fix would edit a file outside the checked paths (the setup of FAB001
in another module, the class of FAB002 in another module), `check --fix --unsafe-fixes <the finding's file>`
applies the alternative in that file only; every other file stays byte-identical and the program then runs
clean (no RuntimeError / TypeError / FSDP AttributeError / ModelParallel warning) in every mode its labels
were proven in."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.cases import applicable_modes, discover_cases, run_case, run_mode

ROOT = Path(__file__).resolve().parents[1]
SERVER = str(ROOT / "server")
CASES = {case.name: case for case in discover_cases(ROOT / "fixtures" / "cases")}
# Every labelled, runnable case whose fix edits another file than its finding's
# (test_every_cross_file_case_is_listed keeps this list complete).
CROSS_FILE = (
    "fab001_flow_helper_other_module",
    "fab001_flow_keyword_other_module",
    "fab001_flow_setup_factory_other_module",
    "fab001_flow_src_layout",
    "fab001_flow_trainer_base_other_module",
    "fab002_block_in_other_module",
    "fab002_flow_init_module_class_elsewhere",
    "fab002_flow_meta_factory_class_elsewhere",
    "fab002_subclass_init_runs_base",
)
# Cross-file fixes with no in-file alternative: FAB004's edit of a computed name's literal, written in the
# caller's file (the helper that builds the name has nothing to correct); FAB005's `fabric.launch()` after the
# constructor, in the file that makes the Fabric (the helper that sets up has no Fabric of its own to launch).
CROSS_FILE_NO_ALTERNATIVE = (
    "fab004_head_name_typo_helper",
    "fab005_setup_in_other_module",
)


def fabric_lsp(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=SERVER)
    return subprocess.run([sys.executable, "-m", "fabric_lsp", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def _json(*args: str, cwd: Path) -> list[dict]:
    result = fabric_lsp("check", "--no-cache", "--format", "json", "--hints", "--exit-zero", *args, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _copy(case, tmp_path: Path):
    target = tmp_path / "cases"
    target.mkdir()
    shutil.copytree(case.path, target / case.path.name)
    [copied] = discover_cases(target)
    return copied


def _cross_file_findings(findings: list[dict]) -> list[dict]:
    return [f for f in findings if f["fix"] and any("filename" in edit for edit in f["fix"]["edits"])]


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.py"))}


def _runs_clean(case, modes) -> None:
    for mode in modes:
        first = run_mode(case, mode).steps[0]
        assert first.returncode == 0 and first.exc_class is None and not first.warned, (
            f"{mode}: still fails: {first.exc_class}: {first.exc_message} warned={first.warned}\n{first.stderr[-3000:]}"
        )


@pytest.mark.ground_truth
@pytest.mark.parametrize("name", CROSS_FILE)
def test_alternative_applied_in_the_finding_file_runs_clean(name, tmp_path):
    copied = _copy(CASES[name], tmp_path)
    crossing = _cross_file_findings(_json(".", cwd=copied.root))
    assert crossing, "the case must have a fix that edits another file"
    own = sorted({os.path.relpath(f["filename"], copied.root) for f in crossing})
    before = _snapshot(copied.root)

    # Only the findings' files are checked: the files the fixes would edit are out of bounds.
    shown = _json(*own, cwd=copied.root)
    for finding in shown:
        if finding["fix"] is not None:
            assert all("filename" not in edit for edit in finding["fix"]["edits"]), finding  # in-file only
    assert shown and all(f["fix"] is not None for f in shown), "every finding of the file gets its in-file alternative"

    fixed = fabric_lsp("check", "--no-cache", "--fix", "--unsafe-fixes", "--hints", "--exit-zero", *own, cwd=copied.root)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "an in-file alternative is offered" in fixed.stderr, fixed.stderr
    after = _snapshot(copied.root)
    assert {k for k in before if before[k] != after[k]} == set(own), "only the findings' own files change"
    assert _json(*own, cwd=copied.root) == [], "nothing left to fix"
    _runs_clean(copied, applicable_modes(copied))


@pytest.mark.parametrize("name", CROSS_FILE_NO_ALTERNATIVE)
def test_cross_file_fix_without_alternative_is_not_applied(name, tmp_path):
    copied = _copy(CASES[name], tmp_path)
    crossing = _cross_file_findings(_json(".", cwd=copied.root))
    assert crossing, "the case must have a fix that edits another file"
    own = sorted({os.path.relpath(f["filename"], copied.root) for f in crossing})
    before = _snapshot(copied.root)
    shown = _json(*own, cwd=copied.root)
    assert shown and all(f["fix"] is None for f in shown), shown  # the finding stays, with no fix
    fixed = fabric_lsp("check", "--no-cache", "--fix", "--unsafe-fixes", "--hints", "--exit-zero", *own, cwd=copied.root)
    assert fixed.returncode == 0 and "outside the checked paths; not fixed" in fixed.stderr, fixed.stderr
    assert _snapshot(copied.root) == before, "no file changes"


def test_every_cross_file_case_is_listed(tmp_path):
    """The lists above are every multi-file case with labels whose fix edits another file."""
    found = []
    for case in CASES.values():
        if case.path.is_dir() and case.labels and not case.skip_reason \
                and _cross_file_findings(_json(str(case.path), cwd=tmp_path)):
            found.append(case.name)
    assert tuple(sorted(found)) == tuple(sorted(CROSS_FILE + CROSS_FILE_NO_ALTERNATIVE))


# -- programs the fixtures do not hold: every form of FAB001's alternative, and torch FSDP for FAB002 ------

POLICY = """\
from torch import nn


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 2)

    def forward(self, obs):
        return self.body(obs)

    def act(self, obs):
        return self(obs).argmax(-1)


def build(fabric):
    policy = Policy()
    return fabric.setup(policy)
"""

FAB001_MAIN = """\
import torch
from lightning.fabric import Fabric

from builders import build


def helper(model, obs):
    return model.act(obs)


def main():
    fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp")
    fabric.launch()
    policy = build(fabric)
    obs = torch.randn(3, 4)
    score = lambda o: policy.act(o)
    print(score(obs))
    if obs.numel(): print(policy.act(obs))
    models = {"policy": policy}
    print(models["policy"].act(obs))
    print([policy.act(o[None]) for o in obs])
    print(build(fabric).act(obs))
    print(helper(policy, obs), helper(policy.module, obs))


if __name__ == "__main__":
    main()
"""

FAB001_FIXED = {
    # a lambda runs later: no mark before it; the unwrapped module instead (unsafe)
    "    score = lambda o: policy.module.act(o)\n",
    # a one-line suite: the mark joins it with `;`
    '    if obs.numel(): policy.mark_forward_method("act"); print(policy.act(obs))\n',
    # receivers that are not a name: `.module` (unsafe)
    '    print(models["policy"].module.act(obs))\n',
    '    policy.mark_forward_method("act")\n    print([policy.act(o[None]) for o in obs])\n',
    "    print(build(fabric).module.act(obs))\n",
}


def _program(tmp_path: Path, files: dict[str, str]):
    root = tmp_path / "cases" / "program"
    root.mkdir(parents=True)
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    [case] = discover_cases(root.parent)
    return case


@pytest.mark.ground_truth
def test_fab001_alternatives_of_every_form_run_clean_under_ddp(tmp_path):
    case = _program(tmp_path, {"main.py": FAB001_MAIN, "builders.py": POLICY})
    first = run_case(case, {}).steps[0]
    assert first.exc_class == "RuntimeError" and "from outside the model" in first.exc_message, first.stderr[-2000:]

    shown = {f["location"]["row"]: f["fix"] for f in _json("main.py", cwd=case.root)}
    assert shown[8] is None, "the helper also gets `policy.module`: neither alternative exists there"
    assert {row: fix["applicability"] for row, fix in shown.items() if fix} == {
        16: "unsafe", 18: "safe", 20: "unsafe", 21: "safe", 22: "unsafe"}

    builders = (case.root / "builders.py").read_bytes()
    fixed = fabric_lsp("check", "--no-cache", "--fix", "--unsafe-fixes", "main.py", cwd=case.root)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert (case.root / "builders.py").read_bytes() == builders
    text = (case.root / "main.py").read_text()
    assert all(line in text for line in FAB001_FIXED), text
    _runs_clean(case, ["plain"])


LAYERS = """\
import torch
from torch import nn


class Scale(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.g = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * self.g
"""

FSDP_MAIN = """\
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import FullyShardedDataParallel

from layers import Scale


def main():
    dist.init_process_group("gloo", init_method="file://" + os.path.abspath("pg.store"), rank=0, world_size=1)
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(4, 4), Scale(4))
    model = FullyShardedDataParallel(model, device_id=torch.device("cpu"))
    print(model(torch.randn(2, 4)).shape)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
"""


@pytest.mark.ground_truth
def test_fab002_alternative_under_torch_fsdp_runs_clean(tmp_path):
    """What FSDPStrategy does (it needs a GPU in Lightning): torch FSDP on a meta module calls
    reset_parameters; built on the CPU instead, nothing is materialized."""
    case = _program(tmp_path, {"main.py": FSDP_MAIN, "layers.py": LAYERS})
    first = run_case(case, {}).steps[0]
    assert first.rule == "FAB002" and first.exc_class == "AttributeError", first.stderr[-2000:]
    [finding] = _json("main.py", cwd=case.root)
    assert finding["code"] == "FAB002" and finding["fix"]["applicability"] == "unsafe", finding
    layers = (case.root / "layers.py").read_bytes()
    fixed = fabric_lsp("check", "--no-cache", "--fix", "--unsafe-fixes", "main.py", cwd=case.root)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert (case.root / "layers.py").read_bytes() == layers
    assert 'with torch.device("cpu"):' in (case.root / "main.py").read_text()
    _runs_clean(case, ["plain"])
