"""The persistent cache of `fabric-lsp check` (.fabric-lsp-cache/): a project's answers are reused
only while its Python files, the tool and the analysis interpreter are unchanged; a
corrupted cache is ignored; `--no-cache` neither reads nor writes it. No timings are asserted:
whether an answer came from the cache is seen by planting a marker in a cached entry."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from dataclasses import replace
from pathlib import Path

import pytest

from fabric_lsp import cache as cache_module
from fabric_lsp.cache import CACHE_DIR_NAME, finding_from_json, finding_to_json

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "fixtures" / "cases"
MARKER = "planted in the cache by the test"


def _project(tmp_path: Path, case: str) -> Path:
    project = tmp_path / "project"
    source = CASES / case
    if source.is_dir():
        shutil.copytree(source, project)
    else:
        project.mkdir()
        shutil.copy(source, project / source.name)
    (project / "pyproject.toml").write_text("[tool.fabric-lsp]\nhints = true\n")
    return project


def _check(project: Path, *extra: str, env: dict | None = None) -> list[dict]:
    """The findings as the github format shows them: json output needs the fixes' edits, which
    are never cached (a project with a fixable finding is analysed again for it)."""
    completed = subprocess.run(
        [sys.executable, "-m", "fabric_lsp", "check", "--format", "github", "--exit-zero", *extra, "."],
        cwd=project, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT / "server"), **(env or {})},
    )
    assert completed.returncode == 0, completed.stderr
    found = []
    for line in completed.stdout.splitlines():
        head, _, message = line[2:].partition("::")
        level, _, properties = head.partition(" ")
        fields = dict(item.split("=", 1) for item in properties.split(","))
        found.append({"code": fields["title"], "level": level, "file": fields["file"], "line": fields["line"], "message": message})
    return found


def _read_cache(path: Path) -> dict:
    """A cache file's JSON, its signature checked with the tests' secret (conftest.py)."""
    body = cache_module.verified_body(cache_module.user_secret(), path.name, path.read_bytes())
    assert body is not None
    return json.loads(body)


def _write_cache(path: Path, data: dict) -> None:
    """Signed like fabric-lsp signs it: the test stands in for this user's own earlier run."""
    path.write_bytes(cache_module.sign(cache_module.user_secret(), path.name, json.dumps(data).encode()))


def _cache_files(project: Path, prefix: str = "check-") -> list[Path]:
    return sorted((project / CACHE_DIR_NAME).glob(f"*/{prefix}*.json"))


def _plant(project: Path) -> None:
    """Rewrite every cached finding's message: a later run that prints it answered from the cache."""
    for path in _cache_files(project):
        data = _read_cache(path)
        for entry in data["projects"].values():
            for findings in entry["findings"].values():
                for finding in findings:
                    finding["message"] = MARKER
                    finding["notes"] = []  # the reasons printed after the headline (issue 29)
        _write_cache(path, data)


def _messages(findings: list[dict]) -> set[str]:
    return {f["message"] for f in findings}


def test_second_run_is_answered_from_the_cache_and_equal(tmp_path):
    project = _project(tmp_path, "fab001_model_in_other_file")
    first = _check(project)
    assert first and _cache_files(project)
    assert (project / CACHE_DIR_NAME / ".gitignore").read_text().strip().endswith("*")
    assert _check(project) == first  # same findings, same order, from the cache
    _plant(project)
    assert _messages(_check(project)) == {MARKER}


def test_changed_content_is_checked_again(tmp_path):
    project = _project(tmp_path, "fab001_model_in_other_file")
    assert [f["code"] for f in _check(project)] == ["FAB001"]
    _plant(project)
    main = project / "main.py"
    main.write_text(main.read_text().replace(
        "    train(fabric, model, optimizer)\n",
        "    train(fabric, model, optimizer)\n    model.mark_forward_method(\"embed\")\n",
    ))
    assert _check(project) == []


def test_changed_dependency_is_checked_again(tmp_path):
    """The class lives in models.py: making `embed` run no module there removes the finding in main.py."""
    project = _project(tmp_path, "fab001_model_in_other_file")
    assert [f["code"] for f in _check(project)] == ["FAB001"]
    _plant(project)
    models = project / "models.py"
    models.write_text(models.read_text().replace("        return self.tower(x)\n", "        return x * 2\n"))
    assert _check(project) == []


def test_touched_but_unchanged_files_still_hit(tmp_path):
    project = _project(tmp_path, "fab001_model_in_other_file")
    _check(project)
    _plant(project)
    for path in project.glob("*.py"):
        os.utime(path)  # new mtime, same bytes
    assert _messages(_check(project)) == {MARKER}


def test_another_tool_version_does_not_reuse(tmp_path, monkeypatch):
    project = _project(tmp_path, "fab001_generate_ddp_literal.py")
    _check(project)
    _plant(project)
    monkeypatch.setattr(cache_module, "tool_fingerprint", lambda: "another-build")
    from fabric_lsp.settings.config import load_config

    config, _ = load_config(project)
    reopened = cache_module.FindingsCache.open(config, sys.executable, str(project))
    assert reopened is not None and reopened.projects == {}
    # Through the command line: a copy of the package with one file changed is another tool.
    copy = tmp_path / "build" / "server"
    shutil.copytree(ROOT / "server" / "fabric_lsp", copy / "fabric_lsp", ignore=shutil.ignore_patterns("__pycache__"))
    env = {"PYTHONPATH": str(copy)}
    _check(project, env=env)
    _plant(project)
    assert _messages(_check(project, env=env)) == {MARKER}
    rule = copy / "fabric_lsp" / "rules" / "fab001_unmarked_forward_method.py"
    rule.write_text(rule.read_text() + "\n# changed\n")
    assert MARKER not in _messages(_check(project, env=env))


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("bare") / "venv"
    venv.EnvBuilder(with_pip=False).create(target)
    return target


def test_interpreter_and_its_packages_are_part_of_the_key(tmp_path, bare_python):
    project = _project(tmp_path, "fab001_generate_ddp_literal.py")
    _check(project)
    _plant(project)
    python = str(bare_python / "bin" / "python")
    assert MARKER not in _messages(_check(project, "--python", python))  # another interpreter
    _plant(project)
    assert _messages(_check(project, "--python", python)) == {MARKER}
    site = next(bare_python.glob("lib/python*/site-packages"))
    (site / "newly_installed_package").mkdir()  # what `pip install` does to site-packages
    try:
        assert MARKER not in _messages(_check(project, "--python", python))
    finally:
        (site / "newly_installed_package").rmdir()


def test_corrupted_cache_files_are_ignored_and_replaced(tmp_path):
    project = _project(tmp_path, "fab001_model_in_other_file")
    expected = _check(project)
    for path in _cache_files(project) + _cache_files(project, "jedi-"):
        path.write_bytes(b"\x00{not json")
    assert _check(project) == expected
    check_file = _cache_files(project)[0]
    assert _read_cache(check_file)["projects"]  # rewritten, valid
    # Entries of the wrong shape are skipped one by one.
    data = _read_cache(check_file)
    for entry in data["projects"].values():
        entry["findings"] = {path: [{"code": 1}] for path in entry["findings"]}
        entry["files"] = {path: "nonsense" for path in entry["files"]}
    _write_cache(check_file, data)
    assert _check(project) == expected


def test_no_cache_neither_reads_nor_writes(tmp_path):
    project = _project(tmp_path, "fab001_generate_ddp_literal.py")
    expected = _check(project, "--no-cache")
    assert not (project / CACHE_DIR_NAME).exists()
    _check(project)
    _plant(project)
    assert _check(project, "--no-cache") == expected


def test_findings_survive_the_json_round_trip():
    from fabric_lsp.settings.config import Config
    from fabric_lsp.engine import check_source

    seen = 0
    for path in sorted(CASES.rglob("*.py")):
        for finding in check_source(str(path), path.read_text(), Config(root=str(path.parent), hints=True)):
            stored = finding_to_json(finding)
            assert all("edits" not in fix for fix in (stored["fix"] or {}, *stored["alternatives"]))
            again = finding_from_json(json.loads(json.dumps(stored)))
            # Everything but the fixes' edits, which are never stored (only the files they edit).
            assert replace(again, fix=None) == replace(finding, fix=None) and again.context == finding.context
            for before, after in zip((finding.fix, *finding.alternatives), (again.fix, *again.alternatives)):
                if before is None:  # a finding without a fix (FAB007 under DeepSpeed) stays without one
                    assert after is None
                    continue
                assert (after.title, after.applicability) == (before.title, before.applicability)
                assert {e.path for e in after.edits} == {e.path for e in before.edits}
                assert all(e.new_text == "" and e.start == e.end for e in after.edits)
            assert len(again.alternatives) == len(finding.alternatives) and (again.fix is None) == (finding.fix is None)
            seen += 1
    assert seen >= 40


# -- programs ---------------------------------------------------------------------------------------
# A project's entry also keeps each program's results: after an edit, only the programs holding the
# edited file are solved again (a model module edited in one training script's program leaves the
# others' answers standing).


def _plant_programs(project: Path) -> None:
    for path in _cache_files(project):
        data = _read_cache(path)
        for entry in data["projects"].values():
            for program in entry["programs"].values():
                for findings in program["findings"].values():
                    for finding in findings:
                        finding["message"] = MARKER
                        finding["notes"] = []
        _write_cache(path, data)


def _two_programs(tmp_path: Path) -> Path:
    project = _project(tmp_path, "fab001_model_in_other_file")
    other = project / "second"
    other.mkdir()
    shutil.copy(CASES / "fab001_call_before_mark.py", other / "train_other.py")
    return project


def test_an_edit_solves_again_only_the_programs_of_the_edited_file(tmp_path):
    project = _two_programs(tmp_path)
    first = _check(project)
    assert sorted(f["file"] for f in first) == ["main.py", "second/train_other.py"]
    _plant_programs(project)
    models = project / "models.py"
    models.write_text(models.read_text() + "\n# edited\n")
    second = {f["file"]: f["message"] for f in _check(project)}
    assert second["second/train_other.py"] == MARKER  # its program's files are unchanged: kept
    assert second["main.py"] != MARKER and second["main.py"] == next(f["message"] for f in first if f["file"] == "main.py")


def test_a_kept_program_is_not_reused_once_its_files_change(tmp_path):
    project = _two_programs(tmp_path)
    _check(project)
    _plant_programs(project)
    other = project / "second" / "train_other.py"
    other.write_text(other.read_text() + "\n# edited\n")
    (project / "models.py").write_text((project / "models.py").read_text() + "\n# edited too\n")
    assert MARKER not in _messages(_check(project))


def test_a_new_file_in_the_project_makes_every_kept_program_stale(tmp_path):
    # Imports resolve among the project's files: a new `utils.py` can change what `import utils` means.
    project = _two_programs(tmp_path)
    _check(project)
    _plant_programs(project)
    (project / "second" / "notes.py").write_text("x = 1\n")
    assert MARKER not in _messages(_check(project))


def test_other_tools_folders_in_the_project_keep_the_cache(tmp_path):
    """ruff run before us (pre-commit) makes `.ruff_cache/`, Python makes `__pycache__/`: neither is a
    document FAB005 reads nor a Python file, so the answers stay (before: any new entry in the project
    folder changed its mtime, which the launch-document scan kept, and the whole project was solved
    again). A new README is a document: the project is analysed again."""
    project = _project(tmp_path, "fab001_model_in_other_file")
    (project / ".git").mkdir()  # a repository's root: its parent (tmp_path) is not read
    first = _check(project)
    _plant(project)
    (project / ".ruff_cache").mkdir()
    (project / ".ruff_cache" / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
    (project / "__pycache__").mkdir()
    (project / ".mypy_cache").mkdir()
    assert _messages(_check(project)) == {MARKER}
    (project / "README.md").write_text("# A project\n")
    assert _check(project) == first


def test_a_new_entry_beside_the_project_keeps_the_cache_unless_it_is_listed(tmp_path):
    """A script folder without a `.git` has its parent's documents read (launch_docs): the parent's
    hidden entries and its other repositories' caches change nothing read; a new folder there is."""
    project = _project(tmp_path, "fab001_model_in_other_file")
    sibling = tmp_path / "other-checkout"
    (sibling / ".git").mkdir(parents=True)
    first = _check(project)
    _plant(project)
    (sibling / ".ruff_cache").mkdir()  # another repository's own churn
    (sibling / "build").mkdir()
    (tmp_path / ".cache").mkdir()
    assert _messages(_check(project)) == {MARKER}
    (tmp_path / "docs").mkdir()  # listed for documents: the answer is made again
    assert _check(project) == first
