"""The public Python API (issue 14): `fabric_lsp.check_paths` / `check_source` return exactly what
`fabric-lsp check --output-format json` prints, typed (TypedDicts, py.typed), with a cheap
`import fabric_lsp`, no cache or other file written, and nothing from the workspace run."""

from __future__ import annotations

import gc
import json
import logging
import os
import shutil
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import fabric_lsp
from fabric_lsp import api

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "fixtures" / "cases"
SERVER_DIR = ROOT / "server"
CASE = "fab001_generate_ddp_literal.py"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SERVER_DIR), env.get("PYTHONPATH")) if p)
    return env


def _cli_json(cwd: Path, *args: str) -> list[dict]:
    result = subprocess.run([sys.executable, "-m", "fabric_lsp", "check", "--output-format", "json", "--no-cache",
                             *args], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=120)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def _project(tmp_path: Path, *names: str) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    for name in names:
        shutil.copy(CASES / name, project / name)
    return project


def test_check_paths_is_the_commands_json(tmp_path, monkeypatch):
    project = _project(tmp_path, CASE, "fab002_build_and_materialize_split.py",
                       "fab004_typo_generate.py", "fab004_neg_classmethod_and_bound_attribute.py")
    (project / "broken.py").write_text("def f(:\n")
    monkeypatch.chdir(project)
    found = fabric_lsp.check_paths(["."])
    assert found == _cli_json(project, ".")
    assert {f["code"] for f in found} >= {"FAB001", "FAB002", "FAB004", "invalid-syntax"}
    assert fabric_lsp.check_paths([Path(CASE)]) == _cli_json(project, CASE)
    # Options: the command line's.
    assert {f["code"] for f in fabric_lsp.check_paths(["."], select=["FAB002"])} == {"FAB002", "invalid-syntax"}
    assert "FAB001" not in {f["code"] for f in fabric_lsp.check_paths(["."], ignore="FAB001")}
    assert fabric_lsp.check_paths(["."], select="FAB001,FAB004") == _cli_json(project, ".", "--select", "FAB001,FAB004")
    assert fabric_lsp.check_paths(["."], hints=True) == _cli_json(project, ".", "--hints")
    assert fabric_lsp.check_paths([]) == []


def test_check_source_is_the_file_checked_as_that_path(tmp_path, monkeypatch):
    project = _project(tmp_path, CASE)
    monkeypatch.chdir(project)
    text = (project / CASE).read_text()
    from_disk = fabric_lsp.check_paths([CASE])
    assert fabric_lsp.check_source(text, CASE) == from_disk
    assert fabric_lsp.check_source(text.encode(), project / CASE) == from_disk
    # The path need not exist; the file on disk, when it does, is not read.
    unsaved = fabric_lsp.check_source(text, "not_saved_yet.py")
    assert [(f["code"], f["location"]) for f in unsaved] == [(f["code"], f["location"]) for f in from_disk]
    assert unsaved[0]["filename"] == str(project / "not_saved_yet.py")
    assert fabric_lsp.check_source("print('fixed')\n", CASE) == []
    assert fabric_lsp.check_source(text, "snippet.py", ignore=["FAB001"]) == []
    syntax = fabric_lsp.check_source("def f(:\n")
    assert [f["code"] for f in syntax] == ["invalid-syntax"] and syntax[0]["filename"].endswith("untitled.py")


def test_findings_are_the_typed_dicts():
    assert (SERVER_DIR / "fabric_lsp" / "py.typed").is_file()
    found = fabric_lsp.check_source((CASES / "fab002_build_and_materialize_split.py").read_text(), "m.py")
    assert found
    hints = typing.get_type_hints(fabric_lsp.Finding)
    for finding in found:
        assert set(finding) == set(hints)
        assert set(finding["location"]) == set(typing.get_type_hints(fabric_lsp.Location))
        assert finding["severity"] in typing.get_args(hints["severity"])
        fix = finding["fix"]
        if fix is not None:
            assert set(fix) == set(typing.get_type_hints(fabric_lsp.Fix))
            for edit in fix["edits"]:
                assert set(fabric_lsp.Edit.__required_keys__) <= set(edit)
                assert set(edit) <= set(typing.get_type_hints(fabric_lsp.Edit))
        for related in finding["related"]:
            assert set(fabric_lsp.Related.__required_keys__) <= set(related)
            assert set(related) <= set(typing.get_type_hints(fabric_lsp.Related))


def test_import_is_cheap_and_lazy():
    code = ("import sys; import fabric_lsp; "
            "print(sorted(m for m in sys.modules if m.startswith(('fabric_lsp', 'jedi', 'pygls', 'lsprotocol'))))")
    result = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['fabric_lsp']"
    # The API loads on first use, and `dir()` lists it before that.
    code = ("import fabric_lsp; names = dir(fabric_lsp); import sys; before = 'fabric_lsp.api' in sys.modules; "
            "fabric_lsp.check_paths; print(before, 'check_paths' in names, 'fabric_lsp.api' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, timeout=60)
    assert result.stdout.split() == ["False", "True", "True"], result.stderr
    with pytest.raises(AttributeError):
        fabric_lsp.no_such_name  # noqa: B018


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else b"") for p in sorted(root.rglob("*"))}


def test_writes_nothing_and_runs_nothing_from_the_workspace(tmp_path, monkeypatch):
    project = _project(tmp_path, CASE)
    marker = tmp_path / "ran"
    # A repository that asks for its own interpreter and carries a .venv whose python, if run,
    # leaves a marker; a sitecustomize and a conftest likewise.
    hook = f"#!/bin/sh\ntouch {marker}\nexec {sys.executable} \"$@\"\n"
    (project / ".venv" / "bin").mkdir(parents=True)
    (project / ".venv" / "bin" / "python").write_text(hook)
    (project / ".venv" / "bin" / "python").chmod(0o755)
    (project / ".venv" / "pyvenv.cfg").write_text(f"home = {Path(sys.executable).parent}\n")
    (project / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.fabric-lsp]\npython = ".venv/bin/python"\n')
    for name in ("sitecustomize.py", "conftest.py", "setup.py"):
        (project / name).write_text(f"open({str(marker)!r}, 'w').close()\n")
    cache_home = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_home))
    monkeypatch.chdir(project)
    before = _tree(project)
    found = fabric_lsp.check_paths(["."])
    assert [f["code"] for f in found] == ["FAB001"]
    assert fabric_lsp.check_source((project / CASE).read_text(), CASE) == found
    assert not marker.exists()
    assert _tree(project) == before  # no .fabric-lsp-cache/, nothing else
    assert not cache_home.exists()


def test_errors_and_what_the_command_says(tmp_path, monkeypatch, caplog):
    project = _project(tmp_path, CASE)
    (project / "latin1.py").write_bytes(b"# -*- coding: ascii -*-\nname = '\xe9'\n")
    monkeypatch.chdir(project)
    with pytest.raises(FileNotFoundError):
        fabric_lsp.check_paths(["missing.py"])
    with pytest.raises(TypeError):
        fabric_lsp.check_paths("train.py")
    with pytest.raises(TypeError):
        fabric_lsp.check_paths(["."], select=[1])
    with pytest.raises(ValueError, match="unknown rule code 'FAB999'"):
        fabric_lsp.check_paths(["."], select="FAB999")
    with pytest.raises(TypeError):
        fabric_lsp.check_source(None)
    # What the command prints on stderr is logged; the process's streams and collector are untouched.
    stdout, stderr, threshold = sys.stdout, sys.stderr, gc.get_threshold()
    with caplog.at_level(logging.WARNING, logger="fabric_lsp.api"):
        found = fabric_lsp.check_paths(["."])
    assert [f["code"] for f in found] == ["FAB001"]
    assert any("latin1.py" in record.getMessage() and "cannot decode" in record.getMessage()
               for record in caplog.records), caplog.text
    assert (sys.stdout, sys.stderr, gc.get_threshold()) == (stdout, stderr, threshold)
    assert api.CheckError is fabric_lsp.CheckError


def test_other_threads_output_is_not_captured(tmp_path, monkeypatch):
    # The API never points the process's streams elsewhere (issue 28): a thread that prints while a
    # check runs keeps every line on its stream, and the check's findings are whole.
    project = _project(tmp_path, CASE)
    monkeypatch.chdir(project)
    import io
    import threading

    stream = io.StringIO()
    monkeypatch.setattr(sys, "stdout", stream)
    started, done = threading.Event(), threading.Event()
    printed = 0

    def tick():
        nonlocal printed
        started.set()
        while not done.is_set():
            print("tick")
            printed += 1
            done.wait(0.002)

    thread = threading.Thread(target=tick)
    thread.start()
    started.wait()
    try:
        found = fabric_lsp.check_paths(["."])
        found_source = fabric_lsp.check_source((project / CASE).read_text(), CASE)
    finally:
        done.set()
        thread.join()
    assert [f["code"] for f in found] == ["FAB001"] and found_source == found
    assert stream.getvalue() == "tick\n" * printed


def test_the_typed_surface_under_check_paths(tmp_path, monkeypatch):
    # What the command line is built on: options -> settings -> check_files -> findings as data.
    project = _project(tmp_path, CASE, "fab004_typo_generate.py")
    (project / "latin1.py").write_bytes(b"# -*- coding: ascii -*-\nname = '\xe9'\n")
    monkeypatch.chdir(project)
    from fabric_lsp.sources.walk import discover

    configs = api.settings(api.CheckOptions(select=("FAB001",)))
    files, _ = discover(["."], selection_for=configs.selection_for)
    said: list[str] = []
    result = api.check_files(files, configs, notify=said.append)
    assert isinstance(result, api.CheckResult) and not result.failed
    assert sorted(f.code for f in result.findings) == ["FAB001"]
    assert [n.path for n in result.notices] == [str(project / "latin1.py")]
    assert [(f.code, f.span.start.line + 1) for f in result.findings] == \
        [(f["code"], f["location"]["row"]) for f in fabric_lsp.check_paths(["."], select="FAB001")]
    with pytest.raises(api.OptionError, match="--ignore: unknown rule code 'FAB999'"):
        api.settings(api.CheckOptions(ignore=("FAB999",)))
    assert issubclass(api.OptionError, ValueError)


def test_the_api_module_runs_no_command_line():
    # api.py (and the engine-level checking.py under it) import no part of the CLI and touch no
    # process stream: the CLI is built on them, not the other way round (issue 28).
    import ast

    for name in ("api.py", "checking.py"):
        tree = ast.parse((SERVER_DIR / "fabric_lsp" / name).read_text())
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        assert not {m for m in imported if m and (m == "fabric_lsp.cli" or m.startswith("fabric_lsp.cli."))}, name
        streams = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
                   and isinstance(node.value, ast.Name) and node.value.id == "sys"}
        assert not streams & {"stdin", "stdout", "stderr"}, (name, streams)
