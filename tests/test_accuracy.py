"""`fabric-lsp check --format json` over fixtures/cases reports exactly the labelled findings (recall and
precision 1.0, severities equal), analysing against an interpreter with torch + lightning installed and
against one without them (then answers come from the import statements and the torch tables)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from support.cases import discover_cases

ROOT = Path(__file__).resolve().parents[1]
CASES_DIR = ROOT / "fixtures" / "cases"


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> str:
    """A fresh interpreter with nothing installed: no torch, no lightning."""
    target = tmp_path_factory.mktemp("bare") / "venv"
    venv.EnvBuilder(with_pip=False).create(target)
    python = target / "bin" / "python"
    probe = subprocess.run([python, "-c", "import torch"], capture_output=True)
    assert probe.returncode != 0, "the bare interpreter must not see torch"
    return str(python)


def labelled() -> set[tuple[str, int, str, str]]:
    expected = set()
    for case in discover_cases(CASES_DIR):
        for label in case.labels:
            path = (case.root / label.file).resolve()
            expected.add((str(path), label.line, label.code, label.severity))
    return expected


def reported(python: str) -> set[tuple[str, int, str, str]]:
    completed = subprocess.run(
        [sys.executable, "-m", "fabric_lsp", "check", "--format", "json", "--hints", "--python", python, str(CASES_DIR)],
        capture_output=True, text=True, timeout=600, env=dict(os.environ, PYTHONPATH=str(ROOT / "server")),
    )
    assert completed.returncode in (0, 1), completed.stderr
    findings = json.loads(completed.stdout)
    return {(f["filename"], f["location"]["row"], f["code"], f["severity"]) for f in findings}


@pytest.mark.parametrize("interpreter", ["with-torch", "without-torch"])
def test_reports_exactly_the_labels(interpreter, bare_python):
    python = sys.executable if interpreter == "with-torch" else bare_python
    if interpreter == "with-torch":
        pytest.importorskip("torch")
        pytest.importorskip("lightning")
    expected, found = labelled(), reported(python)
    true_positives = len(expected & found)
    precision = true_positives / len(found) if found else 1.0
    recall = true_positives / len(expected) if expected else 1.0
    print(f"{interpreter}: {len(expected)} labels, {len(found)} findings, precision {precision:.3f}, recall {recall:.3f}")
    assert sorted(found - expected) == [], "reported but not labelled"
    assert sorted(expected - found) == [], "labelled but not reported"
    assert len(expected) >= 40
