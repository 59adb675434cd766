"""Issue 11, item 4 and "--fix replaces the file": a fix is written only if the file's bytes still
equal what was analysed, never as text that does not parse, and in place (inode, mode and hard
links kept)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import fabric_lsp.engine
from fabric_lsp.cli import main

REPO_ROOT = Path(__file__).resolve().parents[2]
FAB001_CASE = REPO_ROOT / "fixtures" / "cases" / "fab001_compile_before_setup.py"
EDITOR_TEXT = "# saved by the editor while the check ran\n"


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "p"\n')
    shutil.copy(FAB001_CASE, project / "train.py")
    return project


def _editor_saves_during_analysis(monkeypatch, path: Path) -> None:
    """The real analysis runs; when it returns, an editor has saved the file (a concurrent writer)."""
    analyse = fabric_lsp.engine.check_paths

    def analyse_then_save(*args, **kwargs):
        result = analyse(*args, **kwargs)
        path.write_text(path.read_text() + EDITOR_TEXT)
        return result

    monkeypatch.setattr(fabric_lsp.engine, "check_paths", analyse_then_save)


def test_a_file_changed_during_the_run_is_not_fixed_and_the_run_fails(tmp_path, monkeypatch, capsys):
    project = _project(tmp_path)
    target = project / "train.py"
    expected = target.read_text() + EDITOR_TEXT
    _editor_saves_during_analysis(monkeypatch, target)
    monkeypatch.chdir(project)
    code = main(["check", "--no-cache", "--jobs", "1", "--fix", "--exit-zero", "."])
    out, err = capsys.readouterr()
    assert target.read_text() == expected  # the editor's bytes, no stale insertion
    assert "train.py: changed since it was checked; not fixed" in err, err
    assert code == 1  # even with --exit-zero
    assert "0 remaining" not in out


def test_control_the_same_run_without_a_concurrent_writer_fixes(tmp_path, monkeypatch, capsys):
    project = _project(tmp_path)
    before = (project / "train.py").read_text()
    monkeypatch.chdir(project)
    code = main(["check", "--no-cache", "--jobs", "1", "--fix", "."])
    capsys.readouterr()
    assert code == 0
    assert (project / "train.py").read_text() != before


def test_fix_keeps_inode_mode_and_hard_links(tmp_path):
    project = _project(tmp_path)
    target = project / "train.py"
    target.chmod(0o640)
    link = tmp_path / "hard-link.py"
    os.link(target, link)
    inode = target.stat().st_ino
    result = subprocess.run([sys.executable, "-m", "fabric_lsp", "check", "--fix", "."], cwd=project,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "mark_forward_method" in target.read_text()
    assert target.stat().st_ino == inode
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert link.read_text() == target.read_text() and target.stat().st_nlink == 2
