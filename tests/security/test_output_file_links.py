"""Issue 24, item 13: `--output-file` never writes through a symbolic link the repository planted.

docs/ci.md writes reports to `fabric-lsp.sarif`, `gl-code-quality-report.json` and
`fabric-lsp-junit.xml` in the checkout. Before, a repository that committed a link at one of those
paths (to `~/.bashrc`) had the report replace the link target's content (ruff does the same). Now,
inside the repository (below the nearest folder holding `.git`), a link at the target or at a folder
of its path is refused (exit 2, one line) and the report is written to a new file renamed into place;
a path outside the repository is the user's own and is written as given.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.security.hostile import REPO_ROOT, user_config_env

CASE = REPO_ROOT / "fixtures" / "cases" / "fab001_generate_ddp_literal.py"
CI_REPORTS = {"fabric-lsp.sarif": "sarif", "gl-code-quality-report.json": "gitlab", "fabric-lsp-junit.xml": "junit"}
PRECIOUS = b"export PATH=$HOME/bin:$PATH  # the user's own file\n"


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)  # the repository's root (only its presence matters)
    (root / "sub").mkdir()
    shutil.copy(CASE, root / "train.py")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_bytes(PRECIOUS)
    return root


def run(cwd, env, *args):
    env = {**env, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "server"), env.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "fabric_lsp", "check", "--no-cache", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def assert_refused(result, shown: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"fabric-lsp: error: --output-file: refused: {shown} is a symbolic link"), lines
    assert result.stdout == ""


def test_the_ci_paths_are_the_documented_ones():
    documented = (REPO_ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    for name in CI_REPORTS:
        assert f"--output-file {name}" in documented


@pytest.mark.parametrize("name", sorted(CI_REPORTS))
def test_planted_link_at_a_ci_report_path_is_refused(repo, tmp_path, name):
    bashrc = tmp_path / "home" / ".bashrc"
    os.symlink(os.path.relpath(bashrc, repo), repo / name)
    result = run(repo, user_config_env(tmp_path), "--output-format", CI_REPORTS[name], "--output-file", name,
                 "--exit-zero", ".")
    assert_refused(result, name)
    assert bashrc.read_bytes() == PRECIOUS
    assert os.path.islink(repo / name)
    assert [entry for entry in os.listdir(repo) if entry.endswith(".tmp")] == []


def test_linked_folder_dangling_link_and_subdirectory(repo, tmp_path):
    env = user_config_env(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, repo / "reports")  # a folder of the report's path
    assert_refused(run(repo, env, "--output-file", "reports/fabric-lsp.sarif", "."), "reports")
    os.symlink(outside / "new.sarif", repo / "dangling.sarif")  # would create a file outside
    assert_refused(run(repo, env, "--output-file", "dangling.sarif", "."), "dangling.sarif")
    assert os.listdir(outside) == []
    # CI running in a subdirectory of the repository: its root (.git) still bounds the check.
    os.symlink(tmp_path / "home" / ".bashrc", repo / "fabric-lsp.sarif")
    result = run(repo / "sub", env, "--output-file", "../fabric-lsp.sarif", "../train.py")
    assert_refused(result, str(repo / "fabric-lsp.sarif"))
    assert (tmp_path / "home" / ".bashrc").read_bytes() == PRECIOUS


def test_regular_paths_still_written(repo, tmp_path):
    """Inside the repository: a file replaced, missing folders created. Outside it, the user's own
    path, through the user's own link: written there."""
    env = user_config_env(tmp_path)
    (repo / "old.txt").write_text("stale\n")
    result = run(repo, env, "--output-file", "old.txt", ".")
    assert result.returncode == 1, result.stderr
    assert (repo / "old.txt").read_text().startswith("train.py:42:20: FAB001")
    result = run(repo, env, "--output-format", "sarif", "--output-file", "out/deeper/r.sarif", ".")
    assert result.returncode == 1 and (repo / "out" / "deeper" / "r.sarif").is_file(), result.stderr
    real = tmp_path / "user-reports"
    real.mkdir()
    os.symlink(real, tmp_path / "reports-link")
    result = run(repo, env, "--output-file", str(tmp_path / "reports-link" / "r.txt"), ".")
    assert result.returncode == 1 and "FAB001" in (real / "r.txt").read_text(), result.stderr


def test_a_link_planted_after_the_check_is_not_followed(repo, tmp_path, monkeypatch):
    """The check (plan) and the write are apart in time: the write itself opens each folder and the
    file without following links, so a link planted in between is refused, never written through."""
    from fabric_lsp.cli import output_file

    bashrc = tmp_path / "home" / ".bashrc"
    (repo / "reports").mkdir()
    plan = output_file.plan
    early = plan("reports/deep/fabric-lsp.sarif", str(repo))
    monkeypatch.setattr(output_file, "plan", lambda path, cwd: early)
    os.symlink(bashrc, repo / "reports" / "fabric-lsp.sarif")
    os.symlink(tmp_path / "home", repo / "reports" / "deep")
    with pytest.raises(output_file.OutputRefused, match="reports/deep is a symbolic link"):
        output_file.write_report_file("reports/deep/fabric-lsp.sarif", "report\n", str(repo))
    os.unlink(repo / "reports" / "deep")
    later = plan("reports/x.sarif", str(repo))
    monkeypatch.setattr(output_file, "plan", lambda path, cwd: later)
    os.symlink(bashrc, repo / "reports" / "x.sarif")
    with pytest.raises(output_file.OutputRefused, match="reports/x.sarif is a symbolic link"):
        output_file.write_report_file("reports/x.sarif", "report\n", str(repo))
    assert bashrc.read_bytes() == PRECIOUS
    assert os.listdir(tmp_path / "home") == [".bashrc"]
