"""Issue 11, item 3: fixes edit only files inside the checked paths whose real path is inside too,
never installed code. Each test builds the hostile layout, runs the real CLI, and compares the
outside file byte for byte."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
CASE = REPO_ROOT / "fixtures" / "cases" / "fab002_block_in_other_module"


def _check(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fabric_lsp", "check", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "p"\n')
    shutil.copy(CASE / "main.py", project / "main.py")
    return project


def test_symlinked_module_target_outside_the_tree_is_not_edited(tmp_path):
    project = _project(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(CASE / "model.py", outside / "model.py")
    before = (outside / "model.py").read_bytes()
    (project / "model.py").symlink_to(outside / "model.py")
    result = _check(["--fix", "--unsafe-fixes", "."], project)
    assert (outside / "model.py").read_bytes() == before
    assert "FAB002" in result.stdout, result.stdout + result.stderr
    assert "outside the checked paths" in result.stderr and "not fixed" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert result.returncode == 1  # the finding remains


def test_control_same_layout_without_symlink_is_fixed(tmp_path):
    """The gate can fail: the same fix inside the tree is applied."""
    project = _project(tmp_path)
    shutil.copy(CASE / "model.py", project / "model.py")
    result = _check(["--fix", "--unsafe-fixes", "."], project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "def reset_parameters" in (project / "model.py").read_text()


def test_a_file_argument_allows_only_that_file(tmp_path):
    project = _project(tmp_path)
    shutil.copy(CASE / "model.py", project / "model.py")
    before = (project / "model.py").read_bytes()
    result = _check(["--fix", "--unsafe-fixes", "main.py"], project)
    assert (project / "model.py").read_bytes() == before
    assert "not fixed" in result.stderr and "Traceback" not in result.stderr, result.stderr


def _assert_found_and_library_untouched(project: Path, python: Path, model: Path) -> None:
    """The finding is reported, no fix edit names the library file, and --fix leaves it alone."""
    import json
    before = model.read_bytes()
    report = _check(["--python", str(python), "--format", "json", "--unsafe-fixes", "."], project)
    findings = json.loads(report.stdout)
    assert [item["code"] for item in findings] == ["FAB002"], report.stdout + report.stderr
    targets = {os.path.realpath(edit.get("filename", findings[0]["filename"]))
               for item in findings if item.get("fix") for edit in item["fix"]["edits"]}
    assert os.path.realpath(model) not in targets
    result = _check(["--python", str(python), "--fix", "--unsafe-fixes", "."], project)
    assert model.read_bytes() == before
    assert "Traceback" not in result.stderr, result.stderr


def _venv_with_library(tmp_path: Path, folder_name: str) -> tuple[Path, Path]:
    """A real venv (the user's choice, passed with --python) whose library folder holds model.py."""
    venv = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())
    library = site if folder_name == "site-packages" else tmp_path / "vendor" / folder_name
    library.mkdir(parents=True, exist_ok=True)
    if library != site:
        (site / "vendor.pth").write_text(str(library) + "\n")
    shutil.copy(CASE / "model.py", library / "model.py")
    return python, library / "model.py"


def test_class_in_site_packages_of_the_analysed_interpreter_is_not_edited(tmp_path):
    project = _project(tmp_path)
    python, model = _venv_with_library(tmp_path, "site-packages")
    _assert_found_and_library_untouched(project, python, model)


def test_class_in_dist_packages_on_a_library_path_is_not_edited(tmp_path):
    project = _project(tmp_path)
    python, model = _venv_with_library(tmp_path, "dist-packages")
    _assert_found_and_library_untouched(project, python, model)


def test_editable_sibling_project_is_not_edited(tmp_path):
    """A sibling project on the interpreter's path through a .pth (an editable install)."""
    project = _project(tmp_path)
    python, _ = _venv_with_library(tmp_path, "site-packages")
    sibling = tmp_path / "sibling" / "src"
    sibling.mkdir(parents=True)
    shutil.copy(CASE / "model.py", sibling / "model.py")
    site = next((tmp_path / "env").glob("lib/python3*/site-packages"))
    (site / "model.py").unlink()
    (site / "__editable__sibling.pth").write_text(str(sibling) + "\n")
    _assert_found_and_library_untouched(project, python, sibling / "model.py")
