"""`fabric-lsp check` output options, as users run them (a real `python -m fabric_lsp` process):
the summary's wording, `--output-format` (and its alias `--format`), `--output-file`,
`--statistics`, `--quiet`/`-q`, `--show-fixes`, colour (`--color`, NO_COLOR, FORCE_COLOR, a
terminal) and the progress line on a terminal's stderr (pty-based)."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "fixtures" / "cases"
SERVER = ROOT / "server"

ERROR_CASE = "fab001_generate_ddp_literal.py"  # FAB001 error, safe fix
WARNING_CASE = "fab001_strategy_from_argparse.py"  # FAB001 warning (strategy from argparse), safe fix
ANSI = "\x1b["


def environment(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("NO_COLOR", "FORCE_COLOR", "TERM")}
    env["PYTHONPATH"] = os.pathsep.join([str(SERVER), os.environ.get("PYTHONPATH", "")])
    env.update(extra)
    return env


def check(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fabric_lsp", "check", *args], cwd=cwd, env=environment(**env),
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """a.py: one FAB001 error; b.py: one FAB001 warning (both with a safe fix)."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    shutil.copy(CASES / ERROR_CASE, tmp_path / "a.py")
    shutil.copy(CASES / WARNING_CASE, tmp_path / "b.py")
    return tmp_path


# --- 1. the summary ---------------------------------------------------------------------------


def test_summary_counts_findings_and_says_which_are_errors(project):
    completed = check("--no-cache", ".", cwd=project)
    assert completed.returncode == 1
    assert completed.stdout.endswith("\n\nFound 2 findings: 1 error, 1 warning (2 fixable).\n")
    assert "of these" not in completed.stdout and "2 errors" not in completed.stdout


def test_summary_after_fix_and_show_fixes(project):
    diff = check("--no-cache", "--diff", ".", cwd=project)
    assert diff.stderr.endswith("Would fix 2 findings.\n")
    fixed = check("--no-cache", "--fix", "--show-fixes", ".", cwd=project)
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.stdout == (
        "Fixed 2 findings:\n"
        "- a.py:\n"
        "    1 × FAB001 (unmarked-forward-method)\n"
        "- b.py:\n"
        "    1 × FAB001 (unmarked-forward-method)\n"
        "\n"
        "Found 2 findings (2 fixed, 0 remaining).\n"
    )
    assert check("--no-cache", "--fix", "--show-fixes", ".", cwd=project).stdout == "All checks passed!\n"


def test_fix_without_show_fixes_lists_nothing(project):
    fixed = check("--no-cache", "--fix", ".", cwd=project)
    assert fixed.stdout == "Found 2 findings (2 fixed, 0 remaining).\n"


# --- 2. output options ------------------------------------------------------------------------


def test_output_format_and_its_alias_format(project):
    by_new_name = check("--no-cache", "--output-format", "json", ".", cwd=project)
    by_old_name = check("--no-cache", "--format", "json", ".", cwd=project)
    assert by_new_name.returncode == by_old_name.returncode == 1
    assert by_new_name.stdout == by_old_name.stdout
    assert [item["code"] for item in json.loads(by_new_name.stdout)] == ["FAB001", "FAB001"]
    # ruff's names: `full` is the default text (headline, code frame, notes); `concise` one line each.
    default = check("--no-cache", ".", cwd=project).stdout
    assert check("--no-cache", "--output-format", "full", ".", cwd=project).stdout == default
    assert check("--no-cache", "--output-format", "text", ".", cwd=project).stdout == default
    concise = check("--no-cache", "--output-format", "concise", ".", cwd=project).stdout
    assert concise.splitlines()[:2] == [line for line in default.splitlines() if line.startswith(("a.py:", "b.py:"))]
    assert concise.splitlines()[2:] == ["", default.splitlines()[-1]]
    refused = check("--output-format", "xml", ".", cwd=project)
    assert refused.returncode == 2 and "invalid choice: 'xml'" in refused.stderr


def test_output_file_gets_the_report_and_stderr_keeps_the_notices(project):
    (project / "blob.py").write_bytes(b"x = 1\0\n")  # a notice: binary file
    completed = check("--no-cache", "--output-format", "json", "--output-file", "reports/out.json", ".", cwd=project)
    assert completed.returncode == 1
    assert completed.stdout == ""
    assert "blob.py: binary file" in completed.stderr
    report = json.loads((project / "reports" / "out.json").read_text(encoding="utf-8"))
    assert [Path(item["filename"]).name for item in report] == ["a.py", "b.py"]
    text = check("--no-cache", "--output-file", "out.txt", "--color", "always", ".", cwd=project)
    written = (project / "out.txt").read_text(encoding="utf-8")
    assert text.stdout == "" and written.endswith("Found 2 findings: 1 error, 1 warning (2 fixable).\n")
    assert ANSI not in written  # a file is never coloured


def test_output_file_that_cannot_be_written_is_a_usage_error(project):
    (project / "taken").write_text("a file, not a folder")
    completed = check("--no-cache", "--output-file", "taken/out.json", ".", cwd=project)
    assert completed.returncode == 2 and "--output-file: cannot write taken/out.json" in completed.stderr


def test_statistics(project):
    shutil.copy(CASES / ERROR_CASE, project / "c.py")
    completed = check("--no-cache", "--statistics", ".", cwd=project)
    assert completed.returncode == 1
    assert completed.stdout == "3\tFAB001\t[*] unmarked-forward-method\n"
    as_json = check("--no-cache", "--statistics", "--output-format", "json", ".", cwd=project)
    assert json.loads(as_json.stdout) == [{"code": "FAB001", "name": "unmarked-forward-method", "count": 3, "fixable": True}]
    assert check("--no-cache", "--statistics", "--select", "FAB002", ".", cwd=project).stdout == ""
    refused = check("--statistics", "--output-format", "sarif", ".", cwd=project)
    assert refused.returncode == 2 and "--statistics: only with --output-format text, concise or json" in refused.stderr


def test_statistics_without_fixable_rows_has_no_fix_column(tmp_path):
    (tmp_path / "broken.py").write_text("x = (\n")
    assert check("--no-cache", "--statistics", ".", cwd=tmp_path).stdout == "1\tinvalid-syntax\n"


@pytest.mark.parametrize("flag", ["-q", "--quiet"])
def test_quiet_prints_the_findings_only(project, flag):
    loud = check("--no-cache", ".", cwd=project)
    quiet = check("--no-cache", flag, ".", cwd=project)
    assert quiet.returncode == 1
    assert quiet.stdout == loud.stdout.split("\n\nFound ")[0] + "\n"
    assert "Found" not in quiet.stdout
    (project / "a.py").unlink()
    (project / "b.py").unlink()
    clean = check("--no-cache", flag, ".", cwd=project)
    assert (clean.returncode, clean.stdout) == (0, "")


# --- colour -----------------------------------------------------------------------------------


def test_colour_is_off_in_a_pipe_and_follows_color_no_color_and_force_color(project):
    plain = check("--no-cache", ".", cwd=project).stdout
    assert ANSI not in plain
    coloured = check("--no-cache", "--color", "always", ".", cwd=project).stdout
    assert "\x1b[1ma.py\x1b[0m:42:20: \x1b[31m\x1b[1mFAB001\x1b[0m" in coloured  # bold path, red error code
    assert "\x1b[1mb.py\x1b[0m:45:21: \x1b[33m\x1b[1mFAB001\x1b[0m" in coloured  # yellow warning code
    assert _strip_ansi(coloured) == plain
    assert check("--no-cache", ".", cwd=project, FORCE_COLOR="1").stdout == coloured
    assert check("--no-cache", ".", cwd=project, FORCE_COLOR="1", NO_COLOR="1").stdout == plain
    assert check("--no-cache", "--color", "never", ".", cwd=project, FORCE_COLOR="1").stdout == plain
    assert check("--no-cache", "--color", "always", ".", cwd=project, NO_COLOR="1").stdout == coloured
    assert ANSI not in check("--no-cache", "--color", "always", "--output-format", "json", ".", cwd=project).stdout


def test_colour_is_on_for_a_terminal(project):
    out, _, code = run_with_terminal(["--no-cache", "."], project, stdout_tty=True, stderr_tty=False)
    assert code == 1
    assert "\x1b[31m\x1b[1mFAB001" in out
    out, _, _ = run_with_terminal(["--no-cache", "."], project, stdout_tty=True, stderr_tty=False, NO_COLOR="1")
    assert ANSI not in out


def _strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


# --- the progress line ------------------------------------------------------------------------


def run_with_terminal(args: list[str], cwd: Path, stdout_tty: bool, stderr_tty: bool, **env: str):
    """`check ARGS` with stdout and/or stderr on a pseudo-terminal: (stdout, stderr, exit status)."""
    masters, slaves = {}, {}
    for name, wanted in (("stdout", stdout_tty), ("stderr", stderr_tty)):
        if wanted:
            masters[name], slaves[name] = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "fabric_lsp", "check", *args], cwd=cwd, env=environment(TERM="xterm", **env),
        stdin=subprocess.DEVNULL, stdout=slaves.get("stdout", subprocess.PIPE), stderr=slaves.get("stderr", subprocess.PIPE),
    )
    for fd in slaves.values():
        os.close(fd)
    chunks: dict[str, bytearray] = {"stdout": bytearray(), "stderr": bytearray()}
    streams = {masters[name]: name for name in masters}
    pipes = {getattr(process, name).fileno(): name for name in ("stdout", "stderr") if getattr(process, name) is not None}
    open_fds = {**streams, **pipes}
    while open_fds:
        ready, _, _ = select.select(list(open_fds), [], [], 120)
        assert ready, "the check did not finish"
        for fd in ready:
            try:
                data = os.read(fd, 65536)
            except OSError:  # EIO: the terminal's other end is closed
                data = b""
            if not data:
                del open_fds[fd]
                continue
            chunks[open_fds[fd]] += data
    code = process.wait(timeout=120)
    for fd in masters.values():
        os.close(fd)
    decode = lambda data: data.decode("utf-8").replace("\r\n", "\n") if data else ""  # a tty's ONLCR
    return decode(chunks["stdout"]), chunks["stderr"].decode("utf-8"), code


def test_progress_line_only_on_a_terminal_and_it_changes_nothing_else(project):
    # FABRIC_LSP_PROGRESS_DELAY=0 shows it at once (the default waits about 2 s).
    _, on_terminal, code = run_with_terminal(["--no-cache", "."], project, stdout_tty=False, stderr_tty=True,
                                             FABRIC_LSP_PROGRESS_DELAY="0")
    assert code == 1
    assert "\rchecking 2 files…" in on_terminal
    assert on_terminal.rstrip("\n").endswith("\r\x1b[K")  # erased at the end
    piped = check("--no-cache", ".", cwd=project, FABRIC_LSP_PROGRESS_DELAY="0")
    assert "checking" not in piped.stderr and piped.stderr == ""
    # The same report either way (the progress line is display only).
    out, _, _ = run_with_terminal(["--no-cache", "."], project, stdout_tty=False, stderr_tty=True,
                                  FABRIC_LSP_PROGRESS_DELAY="0")
    assert out == piped.stdout
    # A run quicker than the delay never shows it, and --quiet never does.
    _, quick, _ = run_with_terminal(["--no-cache", "."], project, stdout_tty=False, stderr_tty=True,
                                    FABRIC_LSP_PROGRESS_DELAY="600")
    assert "checking" not in quick
    _, quiet, _ = run_with_terminal(["--no-cache", "-q", "."], project, stdout_tty=False, stderr_tty=True,
                                    FABRIC_LSP_PROGRESS_DELAY="0")
    assert "checking" not in quiet


def test_colour_never_lets_control_characters_of_names_and_messages_through(tmp_path):
    """With colour on, only the report's own colour codes are written: a file name or a message with
    control characters is still escaped (tests/security/test_output_controls.py, without colour)."""
    from fabric_lsp.findings import Finding, Position, Severity, Span
    from fabric_lsp.report import ReportContext, render_text

    path = tmp_path / "a\x1b[2Jb.py"
    finding = Finding("FAB001", Severity.WARNING, Span(str(path), Position(0, 0), Position(0, 1)),
                      "x\x1b]0;owned\x07 \u202e", "")
    out = render_text([finding], ReportContext(cwd=str(tmp_path), color=True))
    assert "a\\x1b[2Jb.py" in out and "x\\x1b]0;owned\\x07 \\u202e" in out
    assert "\x07" not in out and "\u202e" not in out and "\x1b[2J" not in out and "\x1b]" not in out
    assert set(re.findall(r"\x1b\[[0-9;]*m", out)) <= {"\x1b[0m", "\x1b[1m", "\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[36m"}
