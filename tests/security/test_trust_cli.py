"""`fabric-lsp check` on a hostile repository runs nothing of it, unless the user trusts it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.security.hostile import REPO_ROOT, build_hostile_repo, user_config_env

SERVER_DIR = REPO_ROOT / "server"


def check(cwd, env, *args):
    env = {**env, "PYTHONPATH": os.pathsep.join([str(SERVER_DIR), env.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "fabric_lsp", "check", "--format", "json", *map(str, args)],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def codes(stdout: str) -> list[tuple[str, str]]:
    document = json.loads(stdout)
    files = document["files"] if isinstance(document, dict) and "files" in document else document
    found = []
    for item in files if isinstance(files, list) else []:
        for finding in item.get("findings", []):
            found.append((os.path.basename(item.get("path", "")), finding.get("code")))
    return found


@pytest.mark.parametrize("fabric_file", [False, True], ids=["only-x=1", "fabric-file"])
@pytest.mark.parametrize("cache", [True, False], ids=["cache", "no-cache"])
def test_untrusted_repo_runs_nothing(tmp_path, fabric_file, cache):
    marker = tmp_path / "marker"
    repo = build_hostile_repo(tmp_path / "repo", marker, fabric_file=fabric_file)
    result = check(repo, user_config_env(tmp_path), *(() if cache else ("--no-cache",)), ".")
    assert "Traceback" not in result.stderr
    assert not marker.exists(), marker.read_text()
    assert "python: ignored: a repository cannot choose a program to run" in result.stderr
    assert str(repo / "pyproject.toml") in result.stderr
    if fabric_file:
        assert result.returncode == 1, result.stderr
        assert "FAB001" in result.stdout
    else:
        assert result.returncode == 0, result.stderr


def test_trust_workspace_flag_uses_the_pyproject_python(tmp_path):
    """The gate can fail: trusted, the repository's python is run (the marker appears; at the
    latest when the findings cache fingerprints the interpreter's packages)."""
    marker = tmp_path / "marker"
    repo = build_hostile_repo(tmp_path / "repo", marker)
    result = check(repo, user_config_env(tmp_path), "--trust-workspace", ".")
    assert "Traceback" not in result.stderr
    assert marker.exists()
    assert "python: ignored" not in result.stderr


def test_user_config_trusted_paths_trusts_the_repo(tmp_path):
    marker = tmp_path / "marker"
    repo = build_hostile_repo(tmp_path / "repo", marker)
    env = user_config_env(tmp_path, f"trusted-paths = [{str(tmp_path)!r}]\n")
    result = check(repo, env, ".")
    assert "Traceback" not in result.stderr
    assert marker.exists()


def test_trusted_workspace_without_pyproject_python_runs_its_venv(tmp_path):
    marker = tmp_path / "marker"
    repo = build_hostile_repo(tmp_path / "repo", marker)
    (repo / "pyproject.toml").write_text('[project]\nname = "hostile"\n')
    untrusted = check(repo, user_config_env(tmp_path), "--no-cache", ".")
    assert not marker.exists() and untrusted.returncode == 1, untrusted.stderr
    trusted = check(repo, user_config_env(tmp_path, "trusted = true\n"), ".")
    assert "Traceback" not in trusted.stderr
    assert marker.exists()


def test_python_flag_and_user_config_python_are_user_choices(tmp_path):
    """--python and the user config's python are run (the user chose them); the repo's are not."""
    marker = tmp_path / "marker"
    repo = build_hostile_repo(tmp_path / "repo", marker)
    result = check(repo, user_config_env(tmp_path, f"python = {sys.executable!r}\n"), "--no-cache", ".")
    assert result.returncode == 1 and not marker.exists(), result.stderr
    user_marker = tmp_path / "user-marker"
    chosen = tmp_path / "chosen.sh"
    chosen.write_text(f"#!/bin/sh\necho ran >> '{user_marker}'\n")
    chosen.chmod(0o755)
    result = check(repo, user_config_env(tmp_path), "--python", chosen, ".")
    assert "Traceback" not in result.stderr
    assert user_marker.exists() and not marker.exists()
