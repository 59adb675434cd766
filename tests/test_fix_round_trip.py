"""Apply `fabric-lsp check --fix --unsafe-fixes` to a copy of every failing case and run it under real
Lightning: it must run clean, in every mode its labels name. Safe FAB002 fixes must also rebuild the
constructor's tensors exactly (compared with an eagerly built module under the same seed)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.cases import MODE_ENV, applicable_modes, discover_cases, label_class, run_case

ROOT = Path(__file__).resolve().parents[1]
# The library cases (issue 25) too: fixed without the libraries where the analysis looks (the tables
# answer), then run with them (run_case picks `.venv-libs` for a `# ground-truth: libs` case).
CASES = [case for folder in ("cases", "library_cases") for case in discover_cases(ROOT / "fixtures" / folder)
         if case.labels and not case.skip_reason]
SERVER = str(ROOT / "server")
VERIFY_RESET = str(Path(__file__).parent / "support" / "verify_reset.py")


def fabric_lsp(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=SERVER)
    return subprocess.run(
        [sys.executable, "-m", "fabric_lsp", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def copy_case(case, tmp_path: Path):
    target = tmp_path / "cases"
    target.mkdir()
    if case.path.is_dir():
        shutil.copytree(case.path, target / case.path.name)
    else:
        shutil.copy(case.path, target / case.path.name)
    [copied] = discover_cases(target)
    return copied


@pytest.mark.ground_truth
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_fixed_case_runs_clean(case, tmp_path):
    copied = copy_case(case, tmp_path)
    before = json.loads(fabric_lsp("check", "--format", "json", "--hints", "--exit-zero", str(copied.path), cwd=tmp_path).stdout)
    assert before, "the case has labels, so the checker must report something to fix"
    safe_fab002_classes = set()
    for finding in before:
        if finding["code"] == "FAB002" and finding["fix"] and finding["fix"]["applicability"] == "safe":
            label = next(l for l in copied.labels if l.line == finding["location"]["row"] and l.code == "FAB002")
            safe_fab002_classes.add(label_class(copied, label))

    fixed = fabric_lsp("check", "--fix", "--unsafe-fixes", "--hints", "--exit-zero", str(copied.path), cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stderr
    after = json.loads(fabric_lsp("check", "--format", "json", "--hints", "--exit-zero", str(copied.path), cwd=tmp_path).stdout)
    assert after == [], f"findings left after --fix: {after}"

    # The modes the labels were proven in: a forced "ddp" also changes what an error-only case's own
    # strategy chose (find_unused_parameters, ...), which no fix of these rules is about.
    for mode in applicable_modes(copied):
        result = run_case(copied, MODE_ENV[mode])
        first = result.steps[0]
        assert first.returncode == 0 and first.exc_class is None, (
            f"{mode}: fixed case still fails: {first.exc_class}: {first.exc_message}\n{first.stderr[-3000:]}"
        )

    if safe_fab002_classes:
        run = subprocess.run(
            [sys.executable, VERIFY_RESET, str(copied.entry), *sorted(safe_fab002_classes)],
            cwd=copied.root, capture_output=True, text=True, timeout=300,
            env=dict(os.environ, CUDA_VISIBLE_DEVICES=""),
        )
        assert run.returncode == 0, run.stderr[-3000:]
        report = json.loads(run.stdout.strip().splitlines()[-1])
        assert report["compared"] > 0 and report["mismatches"] == [], report
