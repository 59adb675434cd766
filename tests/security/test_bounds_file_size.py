"""`max-file-size` from a repository cannot raise the limit above the hard ceiling: a huge value is
capped with a notice, and a file above the ceiling is skipped with a notice while the run goes on."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from fabric_lsp.settings.config import MAX_FILE_SIZE_CEILING, load_config

REPO = Path(__file__).resolve().parents[2]
CASE = REPO / "fixtures" / "cases" / "fab001_call_before_mark.py"


def test_huge_limit_in_pyproject_is_capped(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.fabric-lsp]\nmax-file-size = 1000000000000\n")
    config, problems = load_config(tmp_path)
    assert config.max_file_size == MAX_FILE_SIZE_CEILING
    assert len(problems) == 1 and "max-file-size" in problems[0] and str(MAX_FILE_SIZE_CEILING) in problems[0]


def test_big_file_is_skipped_with_notice_despite_the_repository_limit(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.fabric-lsp]\nmax-file-size = 1000000000000\n")
    shutil.copy(CASE, tmp_path / "main.py")
    # Valid Python above the ceiling: analysing it would take long and much memory.
    line = "value = fabric.setup(model)\n"
    (tmp_path / "big.py").write_text(line * (MAX_FILE_SIZE_CEILING // len(line) + 1000))
    env = {**os.environ, "PYTHONPATH": str(REPO / "server")}
    result = subprocess.run(  # the timeout is only a hang guard
        [sys.executable, "-m", "fabric_lsp", "check", "--no-cache", "--format", "json", "."],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )
    assert "Traceback" not in result.stderr
    assert result.returncode == 1, result.stderr  # the real finding in main.py
    assert sorted(Path(f["filename"]).name for f in json.loads(result.stdout)) == ["main.py"]
    lines = result.stderr.splitlines()
    assert any("big.py" in l and "larger than max-file-size" in l and str(MAX_FILE_SIZE_CEILING) in l for l in lines), lines
    assert any("max-file-size" in l and "ceiling" in l for l in lines), lines
    # Not timed: big.py's notice, and only main.py in the findings, say it was skipped, not analysed.
