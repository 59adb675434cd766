"""Analysis time grows linearly with the number of `fabric.setup()` statements in one file: a file
with 8k of them costs about 4x one with 2k (the quadratic scan made it ~10x, and a 2 MB file minutes).
Measured as a ratio in one run, so a slower machine does not change the verdict."""

from __future__ import annotations

import gc
import time
from pathlib import Path

from fabric_lsp.config import Config
from fabric_lsp.engine import check_source

CASE = Path(__file__).resolve().parents[2] / "fixtures" / "cases" / "fab001_call_before_mark.py"


def source_with_setups(count: int) -> str:
    # Each setup's wrapped model calls an unmarked method: one real FAB001 per statement.
    body = "".join(f"m{i}, o{i} = fabric.setup(Policy(), optimizer)\nm{i}.act(obs)\n" for i in range(count))
    return CASE.read_text() + body


def analysis_seconds(tmp_path: Path, count: int) -> float:
    text = source_with_setups(count)
    path = str(tmp_path / f"setups_{count}.py")
    gc.collect()
    # The collector's pauses grow with the heap and vary between runs; this measures the analysis.
    gc.disable()
    try:
        started = time.perf_counter()
        findings = check_source(path, text, Config())
        elapsed = time.perf_counter() - started
    finally:
        gc.enable()
    assert sum(f.code == "FAB001" for f in findings) == count + 1  # the case's own finding too
    return elapsed


def test_analysis_time_is_linear_in_setup_statements(tmp_path):
    analysis_seconds(tmp_path, 200)  # warm up: imports, library tables
    small = analysis_seconds(tmp_path, 2000)
    large = analysis_seconds(tmp_path, 8000)
    assert large / small < 8, f"2k setups {small:.2f}s, 8k setups {large:.2f}s: ratio {large / small:.1f}"
