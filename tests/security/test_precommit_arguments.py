"""Issue 24, item 1: no file name becomes an option, and the pre-commit hook runs none of the
repository's programs.

pre-commit runs `entry + args + file names`. Before, the entry was `fabric-lsp check --force-exclude`,
so a committed file named `--python=a.py` made the repository's executable `a.py` the interpreter
whose sys.path is probed (run), `--trust-workspace` let the repository's own `python` run, and
`--exit-zero` made the hook pass with a finding. Now the entry ends with `--`: every file name is a
path. Under pre-commit (PRE_COMMIT=1) the options `args:` puts after `--` are read as options (they
name no file), and `--python`/`--trust-workspace` are refused wherever they come from (the
repository's `.pre-commit-config.yaml` is a repository file) unless the user config allows them.

The hook tests run the real `pre-commit run --all-files`; they share one hook environment (the
session's `precommit_hook` fixture, built once: 20-30 s). The direct tests run `check` as pre-commit
would, in about a second each.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from support.precommit import PRE_COMMIT, commit_project
from tests.security.hostile import REPO_ROOT, build_hostile_repo, user_config_env

CASE = REPO_ROOT / "fixtures" / "cases" / "fab001_generate_ddp_literal.py"
FINDING = "train.py:42:20: FAB001"
ALLOW = "allow-programs-in-hooks = true\n"
REFUSED = "refused in a pre-commit hook (PRE_COMMIT=1)"
# Committed files whose names are options of `check` (each a Python file for pre-commit: `.py`, or a
# python shebang on an executable file). `--exit-zero` does not parse: reported, it shows it was a path.
OPTION_NAMES = {
    "--python=a.py": "",
    "--trust-workspace": "#!/usr/bin/env python3\nx = 1\n",
    "--exit-zero": "#!/usr/bin/env python3\nnot python (\n",
}


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def hostile_project(root: Path, marker: Path) -> Path:
    """The trust tests' hostile repository (its pyproject `python` and `.venv/bin/python` leave the
    marker when run), a FAB001 file, an executable `a.py` leaving the marker, files named as options,
    and `--config=hide.toml` with `hide.toml` ignoring FAB001 (the finding would vanish if read)."""
    build_hostile_repo(root, marker, fabric_file=False)
    shutil.copy(CASE, root / "train.py")
    _executable(root / "a.py", f"#!{sys.executable}\nopen({str(marker)!r}, 'a').write('a.py ran\\n')\n")
    for name, text in OPTION_NAMES.items():
        _executable(root / name, text)
    (root / "hide.toml").write_text('ignore = ["FAB001"]\n')
    (root / "--config=hide.toml").write_text("")
    return root


def check(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    env = {**env, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "server"), env.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "fabric_lsp", "check", "--no-cache", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


NAMED_FILES = ["--config=hide.toml", *OPTION_NAMES, "a.py", "train.py"]  # as pre-commit lists them: sorted


@pytest.mark.parametrize("pre_commit", [False, True], ids=["shell", "PRE_COMMIT=1"])
def test_file_names_after_double_dash_are_paths(tmp_path, pre_commit):
    marker = tmp_path / "marker"
    project = hostile_project(tmp_path / "project", marker)
    env = user_config_env(tmp_path)
    env.pop("PRE_COMMIT", None)
    if pre_commit:
        env["PRE_COMMIT"] = "1"
    result = check(project, env, "--force-exclude", "--", *NAMED_FILES)
    assert not marker.exists(), marker.read_text()
    assert result.returncode == 1, result.stderr  # not 0: `--exit-zero` is a file, not the option
    assert FINDING in result.stdout  # not hidden by `--config=hide.toml`, a file too
    assert "--exit-zero:2:" in result.stdout and "invalid-syntax" in result.stdout  # checked as a path
    assert REFUSED not in result.stderr and "Traceback" not in result.stderr


def test_the_old_hook_command_is_refused_under_pre_commit(tmp_path):
    """The issue's reproduction: the old entry, file names appended without `--`. Under pre-commit,
    `--python` and `--trust-workspace` are refused in one line, whoever wrote them."""
    marker = tmp_path / "marker"
    project = hostile_project(tmp_path / "project", marker)
    env = {**user_config_env(tmp_path), "PRE_COMMIT": "1"}
    for option in ("--python=a.py", "--trust-workspace"):
        result = check(project, env, "--force-exclude", option, "a.py", "train.py")
        assert result.returncode == 2, result.stderr
        assert result.stdout == ""
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and REFUSED in lines[0] and "allow-programs-in-hooks = true" in lines[0], lines
        assert lines[0].startswith(f"fabric-lsp: error: {option.partition('=')[0]}:")
    assert not marker.exists(), marker.read_text()


def test_hook_args_after_double_dash(tmp_path):
    """pre-commit puts `args:` after the entry's `--`: under PRE_COMMIT=1 the leading options that name
    no file are options (with a separate value, or `--opt=value`); outside pre-commit they are paths."""
    marker = tmp_path / "marker"
    project = hostile_project(tmp_path / "project", marker)
    env = user_config_env(tmp_path)
    hook = {**env, "PRE_COMMIT": "1"}
    result = check(project, hook, "--", "--select", "FAB001", "--output-format=github",
                   *NAMED_FILES)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("::error file=train.py,line=42,col=20,") for line in lines), lines
    assert any(line.startswith("::error file=--exit-zero,line=2,") for line in lines), lines  # a path
    # An option of `args:` that names an existing file is a file: `--exit-zero` here (the safe side).
    exit_zero = check(project, hook, "--", "--exit-zero", "train.py")
    assert exit_zero.returncode == 1 and "--exit-zero:2:" in exit_zero.stdout, exit_zero.stdout
    (project / "--exit-zero").unlink()
    exit_zero = check(project, hook, "--", "--exit-zero", "train.py")
    assert exit_zero.returncode == 0 and FINDING in exit_zero.stdout, exit_zero.stdout
    # An option that runs a program, from `args:`: refused; allowed by the user config, it runs.
    refused = check(project, hook, "--force-exclude", "--", "--python=./a.py", "train.py")
    assert refused.returncode == 2 and REFUSED in refused.stderr, refused.stderr
    assert not marker.exists(), marker.read_text()
    (tmp_path / "allow").mkdir()
    allowed = check(project, {**user_config_env(tmp_path / "allow", ALLOW), "PRE_COMMIT": "1"}, "--force-exclude", "--",
                    "--python=./a.py", "train.py")
    assert REFUSED not in allowed.stderr, allowed.stderr
    assert marker.exists()  # the gate can fail: the user allowed it
    # a.py is no Python interpreter: a one-line usage error (issue 29 item 7), not a run against other packages
    assert allowed.returncode == 2 and "a.py: it is not a Python interpreter" in allowed.stderr, allowed.stderr
    # Outside pre-commit, everything after `--` is a path.
    shell = check(project, env, "--", "--select", "FAB001", "train.py")
    assert shell.returncode == 1 and "--select:1:1: io-error error: No such file or directory" in shell.stdout, \
        shell.stdout
    assert FINDING in shell.stdout


# -- the real pre-commit ---------------------------------------------------------------------------------

needs_pre_commit = pytest.mark.skipif(not PRE_COMMIT.is_file(),
                                      reason="pre-commit is in the test extras: pip install -e '.[test]'")


def hook_project(tmp_path: Path, hook, args: list[str] | None = None) -> tuple[Path, Path]:
    marker = tmp_path / "marker"
    project = hostile_project(tmp_path / "project", marker)
    (project / ".pre-commit-config.yaml").write_text(hook.config(args))
    commit_project(project)
    return project, marker


@needs_pre_commit
def test_pre_commit_hook_reads_file_names_as_paths(tmp_path, precommit_hook):
    project, marker = hook_project(tmp_path, precommit_hook)
    result = precommit_hook.run(project, FABRIC_LSP_USER_CONFIG=user_config_env(tmp_path)["FABRIC_LSP_USER_CONFIG"])
    output = result.stdout + result.stderr
    assert not marker.exists(), marker.read_text()
    assert result.returncode == 1 and "Failed" in output, output  # the finding fails the hook
    assert FINDING in output, output
    assert "--exit-zero:2:12: invalid-syntax" in output and REFUSED not in output, output  # a path


@needs_pre_commit
@pytest.mark.parametrize("allowed", [False, True], ids=["refused", "allowed-by-user-config"])
def test_pre_commit_args_cannot_run_a_program_unless_allowed(tmp_path, precommit_hook, allowed):
    project, marker = hook_project(tmp_path, precommit_hook, ["--python=./a.py"])
    config = user_config_env(tmp_path, ALLOW if allowed else "")["FABRIC_LSP_USER_CONFIG"]
    result = precommit_hook.run(project, FABRIC_LSP_USER_CONFIG=config)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    if allowed:  # a.py runs, and is then refused as no Python interpreter (issue 29 item 7)
        assert marker.exists() and REFUSED not in output and "a.py: it is not a Python interpreter" in output, output
    else:
        assert not marker.exists(), marker.read_text()
        assert f"fabric-lsp: error: --python: {REFUSED}" in output and FINDING not in output, output


@needs_pre_commit
def test_pre_commit_args_fix(tmp_path, precommit_hook):
    """The documented `args: [--fix]` (after `--` now) still fixes; the file names stay paths."""
    project, marker = hook_project(tmp_path, precommit_hook, ["--select", "FAB001", "--fix"])
    result = precommit_hook.run(project, FABRIC_LSP_USER_CONFIG=user_config_env(tmp_path)["FABRIC_LSP_USER_CONFIG"])
    output = result.stdout + result.stderr
    assert result.returncode == 1 and "files were modified by this hook" in output, output
    assert 'model.mark_forward_method("generate")' in (project / "train.py").read_text()
    assert not marker.exists() and "--exit-zero:2:12: invalid-syntax" in output, output
