"""docs/ci.md: every YAML block parses, and every `fabric-lsp` command its GitHub Actions steps
(`run:`) and GitLab jobs (`script:`) run is executed here on a fixture repository: it exits as the
recipe expects (1 on findings, 0 with --exit-zero) and writes the file the recipe uploads
(upload-sarif's `sarif_file`, GitLab's `artifacts: reports:`), in the format the consumer reads."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "ci.md"
EXAMPLES = ROOT / "fixtures" / "examples"
FABRIC_LSP = Path(sys.executable).with_name("fabric-lsp")


def _blocks() -> list[object]:
    text = DOC.read_text(encoding="utf-8")
    found = re.findall(r"^```yaml\n(.*?)^```$", text, flags=re.S | re.M)
    assert len(found) >= 6, ("docs/ci.md: pre-commit (hook, local), GitHub Actions, GitLab Code Quality, GitLab JUnit, "
                             "GitLab Pages")
    return [yaml.safe_load(block) for block in found]


def _commands(run: str) -> list[str]:
    return [line.strip() for line in run.splitlines() if line.strip().startswith("fabric-lsp ")]


def _github_steps(document) -> list[tuple[str, dict]]:
    """(command, the step after it) for each `run: fabric-lsp ...` of a workflow."""
    found = []
    for job in document["jobs"].values():
        steps = job["steps"]
        for index, step in enumerate(steps):
            for command in _commands(step.get("run", "")):
                found.append((command, steps[index + 1] if index + 1 < len(steps) else {}))
    return found


def _gitlab_jobs(document) -> list[tuple[str, dict]]:
    """(command, the job's artifacts) for each `fabric-lsp ...` line of a job's script."""
    return [(command, job.get("artifacts", {}))
            for job in document.values() if isinstance(job, dict) and "script" in job
            for line in job["script"] for command in _commands(line)]


@pytest.fixture()
def repository(tmp_path) -> Path:
    """The bundled training scripts as a repository (labels are comments: they change nothing)."""
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLES, repo)
    (repo / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    return repo


def _run(command: str, cwd: Path) -> subprocess.CompletedProcess:
    argv = shlex.split(command)
    assert argv[0] == "fabric-lsp"
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run([str(FABRIC_LSP), *argv[1:]], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def _expected_status(command: str) -> int:
    return 0 if "--exit-zero" in shlex.split(command) else 1  # the fixture has findings


def test_every_block_parses_and_has_the_recipes():
    documents = _blocks()
    workflows = [d for d in documents if isinstance(d, dict) and "jobs" in d]
    gitlab = [d for d in documents if isinstance(d, dict) and any(
        isinstance(job, dict) and "script" in job and any(_commands(line) for line in job["script"])
        for job in d.values())]
    precommit = [d for d in documents if isinstance(d, dict) and "repos" in d and d["repos"][0]["repo"] != "local"]
    local = [d for d in documents if isinstance(d, dict) and "repos" in d and d["repos"][0]["repo"] == "local"]
    assert len(workflows) == 1 and len(gitlab) == 2 and len(precommit) == 1
    # The `repo: local` recipe is run by tests/test_doc_commands.py (real pre-commit, fabric-lsp on PATH).
    assert [hook["entry"] for d in local for hook in d["repos"][0]["hooks"]] == ["fabric-lsp check --force-exclude --"]
    # Publishing the documentation site: a GitLab Pages job that builds it with `make docs`.
    (pages,) = [d["pages"] for d in documents if isinstance(d, dict) and "pages" in d]
    assert "make docs" in pages["script"] and pages["artifacts"]["paths"] == ["public"]
    uses = [step.get("uses", "") for job in workflows[0]["jobs"].values() for step in job["steps"]]
    assert "github/codeql-action/upload-sarif@v3" in uses
    assert workflows[0]["jobs"]["code-scanning"]["permissions"]["security-events"] == "write"
    hooks = precommit[0]["repos"][0]["hooks"]
    declared = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert [hook["id"] for hook in hooks] == [hook["id"] for hook in declared]


def test_github_actions_commands(repository):
    (workflow,) = [d for d in _blocks() if isinstance(d, dict) and "jobs" in d]
    steps = _github_steps(workflow)
    assert len(steps) == 2
    formats = set()
    for command, following in steps:
        result = _run(command, repository)
        assert result.returncode == _expected_status(command), (command, result.stderr)
        argv = shlex.split(command)
        output_format = argv[argv.index("--output-format") + 1]
        formats.add(output_format)
        if output_format == "sarif":
            assert following.get("uses", "").startswith("github/codeql-action/upload-sarif@")
            report = repository / following["with"]["sarif_file"]
            assert report.is_file(), f"{command} did not write {report.name}"
            sarif = json.loads(report.read_text())
            assert sarif["version"] == "2.1.0"
            run = sarif["runs"][0]
            assert {r["ruleId"] for r in run["results"]} >= {"FAB001", "FAB002", "FAB003"}
            assert all(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith((".py", ".ipynb"))
                       for r in run["results"])
            assert all(rule.get("helpUri") for rule in run["tool"]["driver"]["rules"])
        elif output_format == "github":
            lines = result.stdout.splitlines()
            assert lines and all(line.startswith(("::error ", "::warning ", "::notice ")) for line in lines), lines
            assert any("file=train_char_gpt.py,line=130," in line and "title=FAB001" in line for line in lines)
    assert formats == {"sarif", "github"}


def test_gitlab_commands(repository):
    jobs = [job for d in _blocks() if isinstance(d, dict) for job in _gitlab_jobs(d)]
    assert len(jobs) == 2
    seen = set()
    for command, artifacts in jobs:
        result = _run(command, repository)
        assert result.returncode == _expected_status(command), (command, result.stderr)
        assert artifacts.get("when") == "always"
        for kind, name in artifacts["reports"].items():
            seen.add(kind)
            report = repository / name
            assert report.is_file(), f"{command} did not write {name}"
            if kind == "codequality":
                entries = json.loads(report.read_text())
                assert {e["check_name"] for e in entries} >= {"FAB001", "FAB002", "FAB003"}
                for entry in entries:
                    assert {"description", "check_name", "fingerprint", "severity", "location"} <= set(entry)
                    assert entry["severity"] in ("info", "minor", "major", "critical", "blocker")
                    assert (repository / entry["location"]["path"]).is_file()
                    assert entry["location"]["lines"]["begin"] >= 1
                assert len({e["fingerprint"] for e in entries}) == len(entries)
            elif kind == "junit":
                tree = ElementTree.parse(report)
                cases = tree.getroot().iter("testcase")
                assert any(case.find("failure") is not None for case in cases)
            else:
                raise AssertionError(f"unexpected report {kind}")
    assert seen == {"codequality", "junit"}


def _install_lines() -> set[str]:
    lines = set()
    for document in _blocks():
        if not isinstance(document, dict):
            continue
        runs = [step.get("run", "") for job in document.get("jobs", {}).values() for step in job["steps"]]
        runs += [line for job in document.values() if isinstance(job, dict) for line in job.get("script", [])]
        lines |= {line.strip() for run in runs for line in run.splitlines() if line.strip().startswith("pip install")}
    return lines


def test_the_install_line_installs_a_working_fabric_lsp_alone(repository, tmp_path):
    """Issue 29: the recipes installed `fabric-lsp` from PyPI, where it is not. Their install line is run
    as written in a new virtual environment (the wheel built from this tree, where the recipe keeps it;
    the dependencies from the package index), and a recipe's command then runs with that copy alone."""
    (line,) = _install_lines()
    argv = shlex.split(line)
    assert argv[:2] == ["pip", "install"] and argv[2].endswith(".whl"), line
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "LICENSE", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "docs", source / "docs")
    shutil.copytree(ROOT / "server", source / "server", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", str(source), "-w",
                            str(tmp_path / "dist")], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    target = repository / argv[2]
    assert wheel.name == target.name, "the recipe names another version's wheel"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(wheel, target)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    installed = subprocess.run([str(venv / "bin" / "python"), "-m", *argv, "--quiet"], cwd=repository, env=env,
                               capture_output=True, text=True, timeout=900)
    assert installed.returncode == 0, installed.stderr[-2000:]
    (workflow,) = [d for d in _blocks() if isinstance(d, dict) and "jobs" in d]
    command, _ = next((c, f) for c, f in _github_steps(workflow) if "sarif" in c)
    result = subprocess.run([str(venv / "bin" / "fabric-lsp"), *shlex.split(command)[1:]], cwd=repository, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == _expected_status(command), result.stderr
    origin = subprocess.run([str(venv / "bin" / "python"), "-c", "import fabric_lsp; print(fabric_lsp.__file__)"],
                            env=env, capture_output=True, text=True, timeout=60).stdout
    assert str(venv) in origin  # the installed copy, not this checkout's
    sarif = json.loads((repository / "fabric-lsp.sarif").read_text())
    assert {r["ruleId"] for r in sarif["runs"][0]["results"]} >= {"FAB001", "FAB002", "FAB003"}
