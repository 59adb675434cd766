"""Notebook fixtures (fixtures/notebooks/) are facts too: each notebook's code cells, run in order as
one script under real Lightning (support/notebook_cases.py), fail exactly where the labels in the
cells say; `check` reports exactly those labels, by cell; and `check --fix --unsafe-fixes` writes a
notebook whose cells then run clean, with every byte outside the changed cells' sources kept."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fabric_lsp.sources.notebook import read_notebook
from support.cases import MODE_ENV, applicable_modes, expected_outcome_problems, run_case
from support.notebook_cases import discover_notebook_cases, expected_findings, label_view, script_case

ROOT = Path(__file__).resolve().parents[1]
SERVER = str(ROOT / "server")
CASES = discover_notebook_cases()
IDS = [case.name for case in CASES]


def fabric_lsp(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=SERVER)
    return subprocess.run([sys.executable, "-m", "fabric_lsp", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def copy_case(case, tmp_path: Path) -> Path:
    """A copy of the case's folder (notebook and modules), under a pyproject.toml of its own."""
    target = tmp_path / "project"
    target.mkdir()
    (target / "pyproject.toml").write_text("[project]\nname = 'notebook-case'\n")
    shutil.copy(case.notebook, target / case.notebook.name)
    for module in case.modules:
        shutil.copy(module, target / module.name)
    return target / case.notebook.name


def test_cases_exist_and_cover_every_rule(tmp_path):
    assert len(CASES) >= 8
    codes = set()
    for case in CASES:
        codes |= {label.code for label in script_case(case, tmp_path / case.name).labels}
    assert codes == {"FAB001", "FAB002", "FAB003", "FAB004"}
    assert any(not script_case(case, tmp_path / f"{case.name}-clean").labels for case in CASES)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_labels_are_well_formed(case, tmp_path):
    assert list(script_case(case, tmp_path).label_errors) == []


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_check_reports_exactly_the_labels_by_cell(case, tmp_path):
    script = script_case(case, tmp_path / "script")
    notebook = copy_case(case, tmp_path)
    completed = fabric_lsp("check", "--format", "json", "--hints", "--exit-zero", ".", cwd=notebook.parent)
    assert completed.returncode == 0, completed.stderr
    found = {(Path(f["filename"]).name, f["cell"], f["location"]["row"], f["code"], f["severity"])
             for f in json.loads(completed.stdout)}
    assert found == expected_findings(case, script)


def _ground_truth_params():
    for case in CASES:
        for mode in applicable_modes(label_view(case)):
            yield pytest.param(case, mode, id=f"{case.name}-{mode}")


@pytest.mark.ground_truth
@pytest.mark.parametrize(("case", "mode"), list(_ground_truth_params()))
def test_cells_run_as_labelled(case, mode, tmp_path):
    script = script_case(case, tmp_path)
    result = run_case(script, MODE_ENV[mode])
    assert expected_outcome_problems(script, result, mode) == []


@pytest.mark.ground_truth
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_fixed_notebook_runs_clean_and_keeps_its_bytes(case, tmp_path):
    notebook = copy_case(case, tmp_path)
    original = notebook.read_bytes()
    labels = script_case(case, tmp_path / "before").labels
    fixed = fabric_lsp("check", "--fix", "--unsafe-fixes", "--hints", "--exit-zero", ".", cwd=notebook.parent)
    assert fixed.returncode == 0, fixed.stderr
    after = json.loads(fabric_lsp("check", "--format", "json", "--hints", "--exit-zero", ".", cwd=notebook.parent).stdout)
    assert after == [], f"findings left after --fix: {after}"
    if not labels:
        assert notebook.read_bytes() == original, "a clean notebook must not be rewritten"
        return

    # Valid nbformat 4; every byte outside the changed cells' `source` values as it was.
    written = notebook.read_text(encoding="utf-8")
    document = json.loads(written)
    assert document["nbformat"] == 4 and isinstance(document["cells"], list)
    before = read_notebook(str(notebook), original)
    sources = {index + 1: "".join(cell["source"]) for index, cell in enumerate(document["cells"])}
    assert before.updated(sources) == written
    unchanged = json.loads(original)
    for old, new in zip(unchanged["cells"], document["cells"]):
        assert {k: v for k, v in old.items() if k != "source"} == {k: v for k, v in new.items() if k != "source"}

    # The fixed cells, run in order, run clean in every mode the labels were proven in.
    fixed_script = script_case(case, tmp_path / "after", notebook)
    for mode in applicable_modes(label_view(case)):
        result = run_case(fixed_script, MODE_ENV[mode])
        first = result.steps[0]
        assert first.returncode == 0 and first.exc_class is None, (
            f"{mode}: fixed notebook still fails: {first.exc_class}: {first.exc_message}\n{first.stderr[-3000:]}")
