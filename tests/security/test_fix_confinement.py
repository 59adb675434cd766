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


CPU_ALTERNATIVE = 'with torch.device("cpu"):'  # FAB002's in-file alternative for main.py


def test_symlinked_module_target_outside_the_tree_is_not_edited(tmp_path):
    project = _project(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(CASE / "model.py", outside / "model.py")
    before = (outside / "model.py").read_bytes()
    main_before = (project / "main.py").read_bytes()
    (project / "model.py").symlink_to(outside / "model.py")
    result = _check(["--fix", "."], project)  # the alternative is unsafe: not applied without --unsafe-fixes
    assert (outside / "model.py").read_bytes() == before and (project / "main.py").read_bytes() == main_before
    assert "FAB002" in result.stdout, result.stdout + result.stderr
    assert "outside the checked paths" in result.stderr and "not fixed" in result.stderr, result.stderr
    assert "an in-file alternative is offered (unsafe)" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert result.returncode == 1  # the finding remains

    # With --unsafe-fixes the in-file alternative is applied to main.py; model.py stays as it was.
    result = _check(["--fix", "--unsafe-fixes", "."], project)
    assert (outside / "model.py").read_bytes() == before
    assert CPU_ALTERNATIVE in (project / "main.py").read_text(), result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert result.returncode == 0, result.stdout + result.stderr  # built for real: nothing to materialize


def test_json_and_diff_show_the_in_file_alternative(tmp_path):
    """`fix` stays one object: the alternative, with edits in the finding's own file (no "filename")."""
    import json
    project = _project(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(CASE / "model.py", outside / "model.py")
    (project / "model.py").symlink_to(outside / "model.py")
    before = {p: p.read_bytes() for p in (outside / "model.py", project / "main.py")}
    [finding] = json.loads(_check(["--format", "json", "."], project).stdout)
    fix = finding["fix"]
    assert fix["applicability"] == "unsafe" and fix["message"].startswith("Build the model on the CPU"), fix
    assert [edit["content"] for edit in fix["edits"]] == ['"cpu"'] and all("filename" not in e for e in fix["edits"])
    diff = _check(["--diff", "--unsafe-fixes", "."], project)
    assert "+++ b/main.py" in diff.stdout and "model.py" not in diff.stdout.replace("from model import", ""), diff.stdout
    assert '+    with torch.device("cpu"):' in diff.stdout
    assert {p: p.read_bytes() for p in before} == before


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
    assert CPU_ALTERNATIVE in (project / "main.py").read_text()  # the in-file alternative instead


FAB001_CASE = REPO_ROOT / "fixtures" / "cases" / "fab001_flow_setup_factory_other_module"
MARK_BEFORE_CALL = '        policy.mark_forward_method("act")\n        actions = policy.act(obs)'


def _fab001_project(tmp_path: Path, link_builders: bool) -> tuple[Path, Path]:
    """main.py calls policy.act; the setup (and so the main fix) is in builders.py."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "p"\n')
    for name in ("main.py", "networks.py"):
        shutil.copy(FAB001_CASE / name, project / name)
    builders = project / "builders.py"
    if link_builders:
        outside = tmp_path / "outside"
        outside.mkdir()
        shutil.copy(FAB001_CASE / "builders.py", outside / "builders.py")
        builders.symlink_to(outside / "builders.py")
        builders = outside / "builders.py"
    else:
        shutil.copy(FAB001_CASE / "builders.py", builders)
    return project, builders


def test_fab001_setup_in_a_linked_module_gets_the_mark_at_the_call(tmp_path):
    """The mark after `fabric.setup` would edit builders.py (a link outside): the safe in-file
    alternative marks the method just before the call, applied by --fix without --unsafe-fixes."""
    import json
    project, builders = _fab001_project(tmp_path, link_builders=True)
    before = builders.read_bytes()
    [finding] = json.loads(_check(["--format", "json", "."], project).stdout)
    assert finding["code"] == "FAB001" and finding["fix"]["applicability"] == "safe", finding
    assert all("filename" not in edit for edit in finding["fix"]["edits"]), finding
    result = _check(["--fix", "."], project)
    assert builders.read_bytes() == before
    assert "an in-file alternative is offered (safe)" in result.stderr, result.stderr
    assert MARK_BEFORE_CALL in (project / "main.py").read_text()
    assert result.returncode == 0, result.stdout + result.stderr


def test_fab001_control_setup_module_inside_the_tree_gets_the_main_fix(tmp_path):
    """The gate can fail: with builders.py inside the tree the mark goes after its setup."""
    project, builders = _fab001_project(tmp_path, link_builders=False)
    main_before = (project / "main.py").read_bytes()
    result = _check(["--fix", "."], project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'policy.mark_forward_method("act")' in builders.read_text()
    assert (project / "main.py").read_bytes() == main_before


def test_fab001_no_alternative_when_the_receiver_may_be_unwrapped(tmp_path):
    """A helper that also receives `model.module`: a mark (or `.module`) there would raise
    AttributeError for the unwrapped call, so nothing is offered and nothing is edited."""
    import json
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(FAB001_CASE / "networks.py", project / "networks.py")
    (project / "helpers.py").write_text("def act(model, obs):\n    return model.act(obs)\n")
    (project / "main.py").write_text(
        "import torch\nfrom lightning.fabric import Fabric\nfrom networks import PolicyNet\nfrom helpers import act\n\n"
        "fabric = Fabric(accelerator='cpu', devices=1, strategy='ddp')\npolicy = fabric.setup(PolicyNet(4, 2))\n"
        "act(policy, torch.randn(2, 4))\nact(policy.module, torch.randn(2, 4))\n")
    before = {p.name: p.read_bytes() for p in project.glob("*.py")}
    [finding] = json.loads(_check(["--format", "json", "helpers.py"], project).stdout)
    assert finding["code"] == "FAB001" and finding["fix"] is None, finding
    result = _check(["--fix", "--unsafe-fixes", "helpers.py"], project)
    assert {p.name: p.read_bytes() for p in project.glob("*.py")} == before
    assert "not fixed" in result.stderr and "alternative" not in result.stderr, result.stderr
    assert result.returncode == 1


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
    assert [item["fix"]["edits"][0]["content"] for item in findings] == ['"cpu"']  # the in-file alternative
    result = _check(["--python", str(python), "--fix", "--unsafe-fixes", "."], project)
    assert model.read_bytes() == before
    assert "Traceback" not in result.stderr, result.stderr
    assert CPU_ALTERNATIVE in (project / "main.py").read_text()


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


def test_cached_findings_keep_the_alternative_and_fix_from_fresh_edits(tmp_path):
    """The cache stores no edit (only each fix's title and files): a cached run shows the same
    alternative, and --fix recomputes its edits rather than applying placeholders."""
    project = _project(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(CASE / "model.py", outside / "model.py")
    (project / "model.py").symlink_to(outside / "model.py")
    before = (outside / "model.py").read_bytes()
    first = _check(["--unsafe-fixes", "."], project)
    assert "help: Build the model on the CPU" in first.stdout and "(1 fixable)" in first.stdout, first.stdout
    cached = _check(["--unsafe-fixes", "."], project)
    assert cached.stdout == first.stdout
    stored = [p for p in (project / ".fabric-lsp-cache").rglob("check-*.json")]
    body = b"".join(p.read_bytes() for p in stored)
    assert b'"alternatives":[{"title":"Build the model on the CPU' in body  # stored: title, applicability, files
    assert b'"edits"' not in body and b'"new_text"' not in body and b'\\"cpu\\"' not in body  # never the edits
    result = _check(["--fix", "--unsafe-fixes", "."], project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert CPU_ALTERNATIVE in (project / "main.py").read_text()
    assert (outside / "model.py").read_bytes() == before
