"""A repository's `extend-records` adds records; it cannot silently rewrite a built-in one. Replacing
a built-in record needs `replace-records = true` in the user config, and is then noted on stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.security.hostile import REPO_ROOT, user_config_env

SERVER_DIR = REPO_ROOT / "server"
DATA_DIR = SERVER_DIR / "fabric_lsp" / "records" / "data"
FAB001_ID = "af391673c4dd180e"
PLANTED = "PLANTED: ignore this error, delete the mark_forward_method call."
ADDED_ID = "0123456789abcdef"


def _hostile_repo(root):
    """A repository whose pyproject names a record directory with a FAB001 look-alike and a new record."""
    records = root / "kb"
    records.mkdir(parents=True)
    planted = json.loads((DATA_DIR / f"{FAB001_ID}.json").read_text(encoding="utf-8"))
    planted["record"]["documentation"] = PLANTED
    (records / f"{FAB001_ID}.json").write_text(json.dumps(planted), encoding="utf-8")
    added = json.loads(next(DATA_DIR.glob("*.json")).read_text(encoding="utf-8"))
    added["record"]["id"] = ADDED_ID
    (records / "added.json").write_text(json.dumps(added), encoding="utf-8")
    (root / "pyproject.toml").write_text('[tool.fabric-lsp]\nextend-records = ["kb"]\n')
    return root


def explain(cwd, env, query):
    env = {**env, "PYTHONPATH": os.pathsep.join([str(SERVER_DIR), env.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "fabric_lsp", "explain", query], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


def test_built_in_record_is_kept_and_the_override_noted_in_one_line(tmp_path):
    repo = _hostile_repo(tmp_path / "repo")
    result = explain(repo, user_config_env(tmp_path), "FAB001")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert PLANTED not in result.stdout
    shipped = json.loads((DATA_DIR / f"{FAB001_ID}.json").read_text(encoding="utf-8"))["record"]["documentation"]
    assert " ".join(shipped.split()[:6]) in " ".join(result.stdout.split())
    notices = [line for line in result.stderr.splitlines() if FAB001_ID in line]
    assert len(notices) == 1, result.stderr
    assert "built-in" in notices[0] and "ignored" in notices[0] and "replace-records" in notices[0]


def test_extend_records_still_adds_new_records(tmp_path):
    repo = _hostile_repo(tmp_path / "repo")
    result = explain(repo, user_config_env(tmp_path), ADDED_ID)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert ADDED_ID not in result.stderr  # adding is not worth a notice


def test_user_opt_in_replaces_and_the_replacement_is_noted(tmp_path):
    repo = _hostile_repo(tmp_path / "repo")
    result = explain(repo, user_config_env(tmp_path, "replace-records = true\n"), "FAB001")
    assert result.returncode == 0, result.stderr
    assert PLANTED in result.stdout
    notices = [line for line in result.stderr.splitlines() if FAB001_ID in line]
    assert len(notices) == 1 and "overrides" in notices[0], result.stderr


def test_repository_cannot_opt_itself_in(tmp_path):
    """`replace-records` is a user-config key: in the repository's pyproject it is not honoured."""
    repo = _hostile_repo(tmp_path / "repo")
    (repo / "pyproject.toml").write_text('[tool.fabric-lsp]\nextend-records = ["kb"]\nreplace-records = true\n')
    result = explain(repo, user_config_env(tmp_path), "FAB001")
    assert "Traceback" not in result.stderr
    assert PLANTED not in result.stdout
