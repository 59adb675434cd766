"""Issue 24, item 9: a file name holding a line break cannot inject a CI workflow command.

GitHub Actions reads every line of a step's output (leading spaces trimmed) that starts with `::` as
a command: `::error file=...` annotates, `::add-mask::` hides a value, `::stop-commands::` turns the
commands off. Before, a file named `x\\n::error file=evil.py::pwned.py` reached stderr notices and
`--diff` headers with its line break raw. Now every line-based output escapes it (`x\\x0a::error`):
notices, warnings, errors, the library's log lines, diff headers and the text, github and junit
reports; the JSON-based reports escape it as JSON does.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest

from tests.security.hostile import REPO_ROOT, user_config_env

CASE = REPO_ROOT / "fixtures" / "cases" / "fab001_generate_ddp_literal.py"
FILE = "x\n::error file=evil.py::pwned.py"  # FAB001, and a malformed `# noqa` (a warning)
FOLDER = "y\n::add-mask::sub"  # its pyproject has a bad glob (a config notice)
BIG = "big\n::stop-commands::tok.py"  # in FOLDER, over its max-file-size (a notice)
INTERPRETER = "q\r::warning::v"  # a folder of the --python the user names (a log line)
ESCAPED = ["x\\x0a::error file=evil.py::pwned.py"]
# One of our own annotations: `::error file=...,title=CODE::message`, its properties without a raw `:`.
ANNOTATION = re.compile(r"::(error|warning|notice) file=[^:\s][^:]*,line=\d+,col=\d+,endLine=\d+,endColumn=\d+,"
                        r"title=[A-Za-z0-9-]+::")


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    (root / FILE).write_text(CASE.read_text() + "y = 1  # noqa: FAB001: why\n")
    (root / FOLDER).mkdir()
    (root / FOLDER / "pyproject.toml").write_text('[tool.fabric-lsp]\nexclude = ["[z"]\nmax-file-size = 1\n')
    (root / FOLDER / BIG).write_text("x = 1\n" * 100)
    python = tmp_path / INTERPRETER / "python"
    python.parent.mkdir()
    python.write_text("#!/bin/sh\necho not json\n")
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    return root


def run(cwd, env, *args, stdin: str | None = None):
    env = {**env, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "server"), env.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "fabric_lsp", "check", "--no-cache", *args], cwd=cwd, env=env,
                          input=stdin, capture_output=True, text=True, encoding="utf-8", timeout=120)


def commands(output: str) -> list[str]:
    """The lines GitHub Actions would read as workflow commands (Python splits at every line break
    the runner does, and more)."""
    return [line.lstrip() for line in output.splitlines() if line.lstrip().startswith("::")]


def assert_stderr_safe(result) -> None:
    assert commands(result.stderr) == [], result.stderr
    assert "Traceback" not in result.stderr
    for raw in (FILE, FOLDER, BIG):
        assert raw not in result.stderr


@pytest.mark.parametrize("format", ["text", "github", "junit", "json", "sarif", "gitlab"])
def test_reports_and_notices_keep_names_on_their_line(repo, tmp_path, format):
    result = run(repo, user_config_env(tmp_path), "--output-format", format, ".")
    assert result.returncode == 1, result.stderr
    assert_stderr_safe(result)
    assert "y\\x0a::add-mask::sub/pyproject.toml: exclude: " in result.stderr  # said, escaped
    assert f"{os.path.join(FOLDER, BIG)}".replace("\n", "\\x0a") + ": file is larger than max-file-size" in result.stderr
    noqa_line = len(CASE.read_text().splitlines()) + 1
    assert f"x\\x0a::error file=evil.py::pwned.py:{noqa_line}: invalid # noqa directive" in result.stderr
    found = commands(result.stdout)
    if format == "github":
        assert len(found) == 1 and ANNOTATION.match(found[0]), found  # ours, the name's `::` escaped
        assert found[0].startswith("::error file=x%0A%3A%3Aerror file=evil.py%3A%3Apwned.py,line=42,"), found
    else:
        assert found == [], result.stdout
    if format == "text":
        assert all(escaped in result.stdout for escaped in ESCAPED), result.stdout
    elif format == "junit":
        suite = ElementTree.fromstring(result.stdout).find("testsuite")
        assert suite is not None and suite.get("name") == ESCAPED[0]
    elif format in ("json", "gitlab"):
        paths = json.dumps(json.loads(result.stdout))
        assert json.dumps(FILE)[1:-1] in paths  # the real name, JSON-escaped


def test_diff_fix_and_statistics(repo, tmp_path):
    env = user_config_env(tmp_path)
    diff = run(repo, env, "--diff", ".")
    assert diff.returncode == 1, diff.stderr
    assert_stderr_safe(diff)
    assert commands(diff.stdout) == [], diff.stdout
    assert "--- a/x\\x0a::error file=evil.py::pwned.py\n+++ b/x\\x0a::error file=evil.py::pwned.py\n" in diff.stdout
    statistics = run(repo, env, "--statistics", ".")
    assert_stderr_safe(statistics)
    assert commands(statistics.stdout) == []
    fixed = run(repo, env, "--fix", "--show-fixes", ".")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert_stderr_safe(fixed)
    assert commands(fixed.stdout) == [] and "- x\\x0a::error file=evil.py::pwned.py:" in fixed.stdout, fixed.stdout


def test_stdin_filename_and_log_lines(repo, tmp_path):
    """`--stdin-filename` with a line break (a CI script looping over names), and the library's log
    warning naming an interpreter in a folder whose name holds a carriage return."""
    env = user_config_env(tmp_path)
    for option in ("--diff", "--output-format=text"):
        result = run(repo, env, option, "--stdin-filename", FILE, stdin=CASE.read_text())
        assert result.returncode == 1, result.stderr
        assert_stderr_safe(result)
        assert commands(result.stdout) == [] and ESCAPED[0] in result.stdout, result.stdout
    logged = run(repo, env, "--python", str(tmp_path / INTERPRETER / "python"), FILE)
    assert_stderr_safe(logged)
    assert "q\\x0d::warning::v/python" in logged.stderr, logged.stderr  # `cannot read sys.path of ...`
    assert "\r" not in logged.stderr


def test_a_config_error_keeps_the_name_on_its_line(repo, tmp_path):
    """A mistake in a settings file stops the run (status 2, issue 29); its line names the file escaped."""
    (repo / FOLDER / "pyproject.toml").write_text('[tool.fabric-lsp]\nspeed = 1\n')
    result = run(repo, user_config_env(tmp_path), "--output-format", "github", ".")
    assert result.returncode == 2 and result.stdout == "", result.stdout
    assert_stderr_safe(result)
    assert "y\\x0a::add-mask::sub/pyproject.toml:2: speed: unknown key" in result.stderr, result.stderr
