"""A `.fabric-lsp-cache/` that comes with the repository (or was written by another user) is never
believed: cache files are signed with this user's secret (HMAC-SHA256), fix edits are never read
from the cache, and the cache folder's links, FIFOs and devices are refused without blocking."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from fabric_lsp import cache as cache_module
from fabric_lsp.cache import CACHE_DIR_NAME

from tests.security.hostile import FABRIC_CASE, REPO_ROOT

BOUND_SECONDS = 60
PLANTED = "planted by the repository's cache"


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "repo"
    project.mkdir()
    shutil.copy(FABRIC_CASE, project / "train.py")
    (project / "pyproject.toml").write_text("[tool.fabric-lsp]\n")
    return project


def _run(project: Path, *extra: str, secret_dir: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "server")}
    if secret_dir is not None:
        env["FABRIC_LSP_CACHE_SECRET_DIR"] = str(secret_dir)
    return subprocess.run(
        [sys.executable, "-m", "fabric_lsp", "check", *extra, "."], cwd=project, env=env,
        capture_output=True, text=True, timeout=BOUND_SECONDS,
    )


def _cache_files(project: Path) -> list[Path]:
    return sorted((project / CACHE_DIR_NAME).glob("*/check-*.json"))


def _forge(project: Path, other_secret_dir: Path, outside: Path) -> bytes:
    """Another user's cache entry, rewritten: the real finding replaced by a planted one whose fix
    writes `outside`, the file states kept (so that the entry looks fresh), signed with that user's
    secret."""
    completed = _run(project, secret_dir=other_secret_dir)
    assert "FAB001" in completed.stdout, completed.stderr
    (written,) = _cache_files(project)
    secret = bytes.fromhex((other_secret_dir / "secret").read_text().strip())
    data = json.loads(cache_module.verified_body(secret, written.name, written.read_bytes()))
    for entry in data["projects"].values():
        for path, found in entry["findings"].items():
            start = {"path": path, "start": [0, 0], "end": [0, 1]}
            found[:] = [{
                "code": "FAB004", "severity": "error", "span": start, "message": PLANTED, "record": "",
                "related": [], "context": {}, "alternatives": [],
                "fix": {"title": "planted", "applicability": "safe", "paths": [str(outside)],
                        "edits": [{"path": str(outside), "start": [0, 0], "end": [0, 0], "text": "owned\n"}]},
            }]
    return cache_module.sign(secret, written.name, json.dumps(data).encode())


def test_another_users_cache_is_not_used(tmp_path):
    project = _project(tmp_path)
    outside = tmp_path / "outside.py"
    outside.write_bytes(b"x = 1\n")
    forged = _forge(project, tmp_path / "other-user", outside)
    # This user's own file name (learnt from a run, then removed): the forgery is put there too.
    shutil.rmtree(project / CACHE_DIR_NAME)
    assert "FAB001" in _run(project).stdout
    own = _cache_files(project)
    assert len(own) == 1
    shutil.rmtree(project / CACHE_DIR_NAME)
    own[0].parent.mkdir(parents=True)
    own[0].write_bytes(forged)
    other_name = own[0].parent / "check-0123456789abcdef0123456789abcdef.json"
    other_name.write_bytes(forged)
    for extra in ((), ("--format", "github"), ("--format", "json"), ("--diff",), ("--fix", "--unsafe-fixes")):
        own[0].write_bytes(forged)
        completed = _run(project, *extra)
        # The real finding: reported, or its fix of train.py shown (--diff) or made (--fix).
        real = {"--diff": "+++ b/train.py", "--fix": "1 fixed"}.get(extra[0] if extra else "", "FAB001")
        assert real in completed.stdout, (extra, completed.stdout, completed.stderr)
        assert PLANTED not in completed.stdout + completed.stderr, extra
        assert "Traceback" not in completed.stderr, completed.stderr
        assert outside.read_bytes() == b"x = 1\n"


def test_dangling_gitignore_link_is_not_followed(tmp_path):
    project = _project(tmp_path)
    target = tmp_path / "outside" / "created-by-the-cache"
    target.parent.mkdir()
    (project / CACHE_DIR_NAME).mkdir()
    (project / CACHE_DIR_NAME / ".gitignore").symlink_to(target)
    (project / CACHE_DIR_NAME / "CACHEDIR.TAG").symlink_to(tmp_path / "outside" / "tag")
    for _ in range(2):
        completed = _run(project)
        assert "FAB001" in completed.stdout and "Traceback" not in completed.stderr, completed.stderr
    assert list(target.parent.iterdir()) == []


def test_linked_cache_folders_are_not_written_through(tmp_path):
    project = _project(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / CACHE_DIR_NAME).symlink_to(outside)
    completed = _run(project)
    assert "FAB001" in completed.stdout and "Traceback" not in completed.stderr
    assert list(outside.iterdir()) == []
    (project / CACHE_DIR_NAME).unlink()
    (project / CACHE_DIR_NAME).mkdir()
    (project / CACHE_DIR_NAME / cache_module.__version__).symlink_to(outside)
    completed = _run(project)
    assert "FAB001" in completed.stdout and "Traceback" not in completed.stderr
    assert list(outside.iterdir()) == []


def test_fifo_and_device_as_cache_file_do_not_block(tmp_path):
    project = _project(tmp_path)
    assert "FAB001" in _run(project).stdout
    (own,) = _cache_files(project)
    for make in (lambda: os.mkfifo(own), lambda: own.symlink_to("/dev/zero")):
        own.unlink()
        make()
        completed = _run(project)  # subprocess.run's timeout is the bound
        assert completed.returncode == 1, completed.stderr
        assert "FAB001" in completed.stdout and "Traceback" not in completed.stderr, completed.stderr


def test_oversized_cache_file_is_ignored(tmp_path):
    project = _project(tmp_path)
    assert "FAB001" in _run(project).stdout
    (own,) = _cache_files(project)
    with open(own, "wb") as out:
        out.truncate(cache_module.MAX_CACHE_FILE_SIZE + 1)  # sparse: no disk used
    completed = _run(project)
    assert "FAB001" in completed.stdout and "Traceback" not in completed.stderr


def test_unusable_secret_turns_caching_off_with_one_line(tmp_path):
    project = _project(tmp_path)
    secret_dir = tmp_path / "secret-dir"
    secret_dir.mkdir()
    (secret_dir / "secret").write_text("0" * 64 + "\n")
    os.chmod(secret_dir / "secret", 0o644)  # readable by others: not a secret
    completed = _run(project, secret_dir=secret_dir)
    assert "FAB001" in completed.stdout and "Traceback" not in completed.stderr
    notices = [line for line in completed.stderr.splitlines() if "caching is off" in line]
    assert len(notices) == 1
    assert _cache_files(project) == []
