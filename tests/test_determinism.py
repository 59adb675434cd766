"""The same input gives the same findings on every run and under any load (DESIGN.md "Determinism").

The accuracy suite's run (`check --format json --hints` over fixtures/cases, no cache) is made
quiet, with every core kept busy by spinning processes for its whole duration, and under other
hash seeds (sets of strings and of objects iterate in another order under another PYTHONHASHSEED,
so an answer that depended on iteration order would change). Every output must be byte for byte
the same. No wall-clock bound exists in the analysis that could make a loaded run differ; this test
is what would notice one.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES_DIR = ROOT / "fixtures" / "cases"


def _check(seed: str, jobs: str = "0") -> str:
    completed = subprocess.run(
        [sys.executable, "-m", "fabric_lsp", "check", "--no-cache", "--format", "json", "--hints", "--exit-zero",
         "--jobs", jobs, str(CASES_DIR)],
        capture_output=True, text=True, timeout=900,
        env=dict(os.environ, PYTHONPATH=str(ROOT / "server"), PYTHONHASHSEED=seed),
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def _spin(stop_at: float) -> None:
    while time.monotonic() < stop_at:
        pass


def test_findings_do_not_depend_on_load_or_on_iteration_order():
    quiet = _check("0")
    assert quiet.count('"code"') >= 40  # the fixtures do have findings to change
    busy_processes = []
    stop_at = time.monotonic() + 600
    context = multiprocessing.get_context("spawn")
    for _ in range(max(2, (os.cpu_count() or 1) * 2)):  # more spinners than cores: every core busy
        process = context.Process(target=_spin, args=(stop_at,), daemon=True)
        process.start()
        busy_processes.append(process)
    try:
        loaded = _check("0")
        loaded_serial = _check("0", jobs="1")
    finally:
        for process in busy_processes:
            process.terminate()
        for process in busy_processes:
            process.join(10)
    assert loaded == quiet
    assert loaded_serial == quiet
    for seed in ("1", "4242", "random"):
        assert _check(seed) == quiet, f"PYTHONHASHSEED={seed}"
