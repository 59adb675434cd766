"""Issue 29 item 5: what applies, as ruff shows it (a real `python -m fabric_lsp check` process):
`--show-settings` (the settings of the first PATH: its settings file, every key, the project root and
the analysis interpreter), `--show-files` (the files a run checks, one absolute path a line) and
`-v/--verbose` (on stderr: the settings files, projects and interpreters used, the time taken)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASE = ROOT / "fixtures" / "cases" / "fab001_generate_ddp_literal.py"


def check(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "FORCE_COLOR")}
    env["PYTHONPATH"] = str(ROOT / "server")
    return subprocess.run([sys.executable, "-m", "fabric_lsp", "check", "--no-cache", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.fabric-lsp]\nselect = ["FAB001", "FAB003"]\nexclude = ["build"]\n'
        '[tool.fabric-lsp.per-file-ignores]\n"tests/*" = ["FAB001"]\n'
        '[tool.fabric-lsp.severity]\nFAB003 = "warning"\n')
    shutil.copy(CASE, tmp_path / "train.py")
    for folder in ("tests", "build", "sub", "ignored"):
        (tmp_path / folder).mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("x = 1\n")
    (tmp_path / "build" / "gen.py").write_text("x = 1\n")
    (tmp_path / "ignored" / "scratch.py").write_text("x = 1\n")
    (tmp_path / ".gitignore").write_text("ignored/\n")
    (tmp_path / ".git").mkdir()
    # A nested project with settings of its own: its files get those (the closest settings file).
    (tmp_path / "sub" / "pyproject.toml").write_text('[tool.fabric-lsp]\nignore = ["FAB002"]\n')
    (tmp_path / "sub" / "model.py").write_text("x = 1\n")
    return tmp_path


def test_show_settings_prints_what_applies_to_the_file(tmp_path):
    root = project(tmp_path)
    shown = check("--show-settings", "train.py", cwd=root)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == f'Resolved settings for: "{root / "train.py"}"'
    assert lines[1] == f"Settings file: {root / 'pyproject.toml'}"
    assert 'select = ["FAB001", "FAB003"]' in lines
    assert 'severity = {FAB003 = "warning"}' in lines
    assert 'per-file-ignores = {"tests/*" = ["FAB001"]}' in lines
    assert 'exclude = ["build"]' in lines and "docs-url = null" in lines and "hints = false" in lines
    assert f'project root = "{root}"' in lines
    assert any(line.startswith('analysis interpreter = "') for line in lines)
    assert "train.py:" not in shown.stdout and "Found" not in shown.stdout  # nothing was checked
    # The command line's options count, as in a run.
    overridden = check("--show-settings", "--select", "FAB002", "--hints", "train.py", cwd=root).stdout.splitlines()
    assert 'select = ["FAB002"]' in overridden and "hints = true" in overridden
    # The nested project's file: its own settings file.
    nested = check("--show-settings", "sub/model.py", cwd=root).stdout.splitlines()
    assert nested[1] == f"Settings file: {root / 'sub' / 'pyproject.toml'}"
    assert any(line.startswith("select = [") and '"FAB001"' in line for line in nested)
    assert 'ignore = ["FAB002"]' in nested and f'project root = "{root / "sub"}"' in nested
    # --config: that file for every file.
    other = root / "other.toml"
    other.write_text('[tool.fabric-lsp]\nselect = ["FAB004"]\n')
    configured = check("--show-settings", "--config", str(other), "sub/model.py", cwd=root).stdout.splitlines()
    assert configured[1] == f"Settings file: {other}" and 'select = ["FAB004"]' in configured


def test_show_files_lists_what_a_run_checks(tmp_path):
    root = project(tmp_path)
    listed = check("--show-files", cwd=root)
    assert listed.returncode == 0, listed.stderr
    # Sorted absolute paths; `exclude` and .gitignore apply as in a run; nothing is analysed.
    assert listed.stdout.splitlines() == [str(root / "sub" / "model.py"), str(root / "tests" / "test_x.py"),
                                          str(root / "train.py")]
    assert check("--show-files", "train.py", "build/gen.py", cwd=root).stdout.splitlines() == [
        str(root / "build" / "gen.py"), str(root / "train.py")]  # named on the command line: checked, as in ruff
    assert check("--show-files", "--force-exclude", "build/gen.py", cwd=root).stdout == ""


def test_verbose_says_what_the_run_uses_and_changes_no_output(tmp_path):
    root = project(tmp_path)
    quiet = check(".", cwd=root)
    verbose = check("-v", ".", cwd=root)
    assert verbose.returncode == quiet.returncode == 1
    assert verbose.stdout == quiet.stdout
    said = [line for line in verbose.stderr.splitlines() if line.startswith("fabric-lsp: verbose: ")]
    assert "fabric-lsp: verbose: settings pyproject.toml: 2 files" in said
    assert "fabric-lsp: verbose: settings sub/pyproject.toml: 1 file" in said
    assert any(line.startswith("fabric-lsp: verbose: project .: interpreter ") for line in said)
    assert any(line.startswith("fabric-lsp: verbose: project sub: interpreter ") for line in said)
    assert "fabric-lsp: verbose: checking 3 files" in said
    assert any(line.startswith("fabric-lsp: verbose: checked 3 files in ") and line.endswith("no cache (--no-cache)")
               for line in said)
    assert "verbose" not in quiet.stderr
    # settings, project, checking, checked, phases, and the one program analysed
    assert check("--verbose", "train.py", cwd=root).stderr.count("fabric-lsp: verbose: ") == 6


def _phases(stderr: str) -> list[str]:
    [line] = [line for line in stderr.splitlines() if line.startswith("fabric-lsp: verbose: phases ")]
    return [part.split()[0] for part in line.split("): ", 1)[1].split(", ")]


def test_verbose_says_where_the_time_went_also_from_worker_processes(tmp_path):
    """Issue 36: `-v` prints the phases' times and the slowest programs. Two programs checked by two
    worker processes: their parse and solve are measured there and sent back with the results."""
    for name in ("alpha", "beta"):
        (tmp_path / name).mkdir()
        shutil.copy(CASE, tmp_path / name / "train.py")
        (tmp_path / name / "util.py").write_text("x = 1\n")
    for jobs in ("1", "2"):
        run = check("-v", "--jobs", jobs, ".", cwd=tmp_path)
        assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
        phases = _phases(run.stderr)
        assert [p for p in phases if p in ("read", "parse", "solve", "facts", "rules")] == \
            ["read", "parse", "solve", "facts", "rules"], (jobs, phases)
        slow = sorted(line.rsplit(": ", 1)[0] for line in run.stderr.splitlines()
                      if line.startswith("fabric-lsp: verbose: slow program: "))
        assert slow == [f"fabric-lsp: verbose: slow program: {name}/train.py" for name in ("alpha", "beta")], slow


def test_verbose_after_a_cached_run_shows_no_analysis(tmp_path):
    shutil.copy(CASE, tmp_path / "train.py")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "FORCE_COLOR")}
    env["PYTHONPATH"] = str(ROOT / "server")
    runs = [subprocess.run([sys.executable, "-m", "fabric_lsp", "check", "-v", "."], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=300) for _ in range(2)]
    assert {"parse", "solve", "rules", "cache"} <= set(_phases(runs[0].stderr)), runs[0].stderr
    # The second run answers from the cache: nothing is parsed or solved, and no program is listed.
    assert not {"parse", "solve", "facts", "rules"} & set(_phases(runs[1].stderr)), runs[1].stderr
    assert "slow program" not in runs[1].stderr and runs[1].stdout == runs[0].stdout
