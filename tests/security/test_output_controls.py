"""Control and bidi characters from file names, source text and records never reach the terminal raw:
text, github, --diff, stderr notices and explain show them escaped (`\\x1b`, `\\u202e`); JSON keeps
the data (JSON-escaped), so a consumer still gets the real file name."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.security.hostile import FABRIC_CASE, REPO_ROOT, user_config_env

SERVER_DIR = REPO_ROOT / "server"
DATA_DIR = SERVER_DIR / "fabric_lsp" / "records" / "data"
FAB004_CASE = REPO_ROOT / "fixtures" / "cases" / "fab004_typo_generate.py"
FAB001_ID = "af391673c4dd180e"
# Clear the screen, set the window title, and reverse the rest of the line.
HOSTILE = "\x1b[2J\x1b]0;owned\x07\u202e"
RAW = ("\x1b", "\x07", "\u202e")


def run(cwd, env, *args):
    env = {**env, "PYTHONPATH": os.pathsep.join([str(SERVER_DIR), env.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "fabric_lsp", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, encoding="utf-8", errors="surrogateescape", timeout=120)


def assert_no_raw_controls(result):
    for stream in (result.stdout, result.stderr):
        for char in RAW:
            assert char not in stream, repr(stream[:2000])
    assert "Traceback" not in result.stderr


@pytest.fixture
def repo(tmp_path):
    """FAB001 in a file whose name has the hostile characters; FAB004 on a mark_forward_method name
    holding them (in a string literal, where the source may hold them); a symbolic link loop with them
in its name (a notice on stderr)."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / f"train{HOSTILE}.py").write_text(FABRIC_CASE.read_text())
    (root / "story.py").write_text(FAB004_CASE.read_text().replace('"genrate"', f'"gen{HOSTILE}rate"'))
    os.symlink(f"loop{HOSTILE}.py", root / f"loop{HOSTILE}.py")
    return root


@pytest.mark.parametrize("format", ["text", "github"])
def test_report_escapes_controls(repo, tmp_path, format):
    result = run(repo, user_config_env(tmp_path), "check", "--no-cache", "--format", format, ".")
    assert_no_raw_controls(result)
    assert "FAB001" in result.stdout and "FAB004" in result.stdout
    assert "\\x1b[2J" in result.stdout and "\\u202e" in result.stdout  # shown, not dropped
    assert "loop\\x1b" in result.stderr  # the notice about the link loop


def test_json_keeps_the_data(repo, tmp_path):
    result = run(repo, user_config_env(tmp_path), "check", "--no-cache", "--format", "json", ".")
    assert "Traceback" not in result.stderr
    assert "\x1b" not in result.stdout  # JSON escapes it ...
    filenames = {os.path.basename(item["filename"]) for item in json.loads(result.stdout)}
    assert f"train{HOSTILE}.py" in filenames  # ... and keeps it


def test_diff_escapes_controls(repo, tmp_path):
    result = run(repo, user_config_env(tmp_path), "check", "--no-cache", "--diff", "--unsafe-fixes", ".")
    assert_no_raw_controls(result)
    assert "+++ b/train\\x1b[2J" in result.stdout


def test_explain_escapes_record_text(tmp_path):
    records = tmp_path / "repo" / "kb"
    records.mkdir(parents=True)
    document = json.loads((DATA_DIR / f"{FAB001_ID}.json").read_text(encoding="utf-8"))
    document["record"]["documentation"] = f"Read this{HOSTILE} carefully."
    (records / f"{FAB001_ID}.json").write_text(json.dumps(document), encoding="utf-8")
    (tmp_path / "repo" / "pyproject.toml").write_text('[tool.fabric-lsp]\nextend-records = ["kb"]\n')
    env = user_config_env(tmp_path, "replace-records = true\n")
    for fmt in ("text", "markdown"):
        result = run(tmp_path / "repo", env, "explain", "--format", fmt, "FAB001")
        assert result.returncode == 0, result.stderr
        assert_no_raw_controls(result)
        assert "Read this\\x1b[2J" in result.stdout
    result = run(tmp_path / "repo", env, "explain", f"no such{HOSTILE} error")
    assert_no_raw_controls(result)
