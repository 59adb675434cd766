"""Analysis work grows linearly with the number of `fabric.setup()` statements in one file: the
work one more setup costs is the same with 250 of them as with 2,000 (the quadratic scan made a
file with 8k setups cost ~13x one with 1k, and a 2 MB file minutes). Work is counted, not timed
(tests/support/work.py: the lines of the analysis executed), so a loaded machine cannot change the
verdict; the time it takes is a benchmark row (benchmarks/bounds_bench.py, `make bench`)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

from fabric_lsp.settings.config import Config
from fabric_lsp.engine import check_source

from tests.support.work import lines_of

REPO = Path(__file__).resolve().parents[2]
CASE = REPO / "fixtures" / "cases" / "fab001_call_before_mark.py"


def server_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "server"), env.get("PYTHONPATH")) if p)
    return env


RUN = itertools.count()


def source_with_setups(count: int) -> str:
    # Each setup's wrapped model calls an unmarked method: one real FAB001 per statement. The run
    # number makes every text new, so no memo of an earlier analysis answers instead.
    body = "".join(f"m{i}, o{i} = fabric.setup(Policy(), optimizer)\nm{i}.act(obs)\n" for i in range(count))
    return f"# run {next(RUN)}\n" + CASE.read_text() + body


def analysis_work(tmp_path: Path, count: int) -> int:
    """Lines of the analysis executed to check a file of `count` setups (each finding checked too)."""
    text = source_with_setups(count)
    findings, work = lines_of(check_source, str(tmp_path / f"setups_{count}.py"), text, Config())
    assert sum(f.code == "FAB001" for f in findings) == count + 1  # the case's own finding too
    assert all(solver.bound_hit is None for solver in work.solvers)
    return work.lines


def test_analysis_work_is_linear_in_setup_statements(tmp_path):
    analysis_work(tmp_path, 20)  # warm up: imports, library tables (read once per process)
    base = analysis_work(tmp_path, 0)  # the case alone: what every size pays once
    small = analysis_work(tmp_path, 250) - base
    large = analysis_work(tmp_path, 2000) - base
    # 8x the statements: linear is 8.0x (measured 8.03x: every setup costs ~4,340 lines); the old
    # scan of every event per finding, or a frame carrying every wrapped model, grow with n^2.
    assert large <= 9 * small, f"250 setups: {small} lines, 2000 setups: {large} lines: {large / small:.2f}x"


def test_setup_calls_past_the_memory_bound_leave_flows_unknown(tmp_path):
    """Past MAX_SETUP_SITES `fabric.setup()` calls in one program the value-flow analysis stops
    (counted, so at the same point on every run) and says so once: a 4 MiB file of setups took
    2.2 GB before the bound, 1.2 GB with it (benchmarks/RESULTS.md). At the bound, everything is found."""
    from fabric_lsp.analysis.flow_state import MAX_SETUP_SITES

    # The case's own FAB001 counts too: MAX_SETUP_SITES - 1 statements make exactly the bound.
    at_bound = source_with_setups(MAX_SETUP_SITES - 1)
    findings = check_source(str(tmp_path / "at_bound.py"), at_bound, Config())
    assert sum(f.code == "FAB001" for f in findings) == MAX_SETUP_SITES

    path = tmp_path / "past_bound.py"
    path.write_text(source_with_setups(MAX_SETUP_SITES))
    result = subprocess.run([sys.executable, "-m", "fabric_lsp", "check", "--no-cache", str(path)],
                            capture_output=True, text=True, timeout=300, env=server_env())
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    notices = [line for line in result.stderr.splitlines() if f"more than {MAX_SETUP_SITES} fabric.setup()" in line]
    assert len(notices) == 1, result.stderr
    assert "FAB001" not in result.stdout  # unknown is never a finding at warning or above


def test_order_of_setups_past_the_bound_says_so(tmp_path):
    """A frame carries the order of at most MAX_ORDERED_WRAPS wrapped models (carrying all of them made 8k
    setups cost 18x 1k); past it the old rule holds for the rest, once in a notice, and every call is
    still found."""
    from fabric_lsp.analysis.flow_state import MAX_ORDERED_WRAPS

    for count, noticed in ((MAX_ORDERED_WRAPS - 1, False), (MAX_ORDERED_WRAPS + 6, True)):
        path = tmp_path / f"setups_{count}.py"
        path.write_text(source_with_setups(count), encoding="utf-8")
        result = subprocess.run([sys.executable, "-m", "fabric_lsp", "check", "--no-cache", "--format", "json", str(path)],
                                cwd=tmp_path, env=server_env(), capture_output=True, text=True, timeout=300)
        findings = json.loads(result.stdout)
        assert sum(f["code"] == "FAB001" for f in findings) == count + 1, result.stderr
        assert result.stderr.count("the order of setups was followed") == (1 if noticed else 0), result.stderr
