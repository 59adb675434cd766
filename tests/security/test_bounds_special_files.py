"""Special files behind committed links cannot hang or exhaust a run (issue 24, item 8).

A repository (or its `.venv`) can hold a link to `/dev/zero` (endless NUL bytes: one endless
line), to `/dev/urandom` (endless lines), or a FIFO (an open that waits for a writer forever)
where a settings file, a `.pth` file, a setuptools editable finder, `setup.cfg`, `.gitignore` or a
module is expected. Every such file is read by one reader (fabric_lsp.sources.files: O_NONBLOCK, regular
files only, a size cap, a line cap for `.pth`): the CLI and the server finish, in bounded CPU time
(a hang is the 60 s timeout; reading without end is the memory bound), and still report the FAB001 finding of the repository's `train.py`. Before: the
`.pth`, finder, `pyproject.toml` and `setup.cfg` cases hung (killed after 30 s) or ran out of memory.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Callable

import pytest

from tests.security.hostile import REPO_ROOT, user_config_env
from tests.security.measure import limit_memory, run_cli

sys.path.insert(0, str(REPO_ROOT / "tests" / "robustness"))
from rpc_client import RawServer, server_env  # noqa: E402

CASE = REPO_ROOT / "fixtures" / "cases" / "fab001_call_before_mark.py"
MEMORY_BOUND_MB = 300  # measured about 35 MB (the CLI) and 60 MB (the server)


def _site(root: Path) -> Path:
    return root / ".venv" / "lib" / "python3.11" / "site-packages"


def _repo(root: Path) -> Path:
    """A repository with a FAB001 in train.py and a .venv that is read as files (never run)."""
    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "hostile"\n')
    shutil.copy(CASE, root / "train.py")
    venv = root / ".venv"
    _site(root).mkdir(parents=True)
    (venv / "bin").mkdir()
    (venv / "bin" / "python").write_text("#!/bin/sh\nexit 1\n")
    (venv / "bin" / "python").chmod(0o755)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.2\n")
    (root / ".git").mkdir()
    return root


def _replace(path: Path, make: Callable[[Path], None]) -> None:
    if path.exists() or path.is_symlink():
        path.unlink()
    make(path)


def _link(target: str) -> Callable[[Path], None]:
    return lambda path: path.symlink_to(target)


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _finder_fifo(root: Path) -> None:
    site = _site(root)
    (site / "__editable__.x-1.0.pth").write_text("import __editable___x_1_0_finder; __editable___x_1_0_finder.install()\n")
    os.mkfifo(site / "__editable___x_1_0_finder.py")


def _module(root: Path) -> None:
    (root / "helpers.py").symlink_to("/dev/zero")
    (root / "train.py").write_text("import helpers\n" + CASE.read_text())


def _library_module(root: Path) -> None:
    (_site(root) / "evil.py").symlink_to("/dev/zero")
    (root / "train.py").write_text("from evil import Policy as Other\n" + CASE.read_text())


VARIANTS: dict[str, Callable[[Path], None]] = {
    "pth-dev-zero": lambda root: _replace(_site(root) / "x.pth", _link("/dev/zero")),
    "pth-dev-urandom": lambda root: _replace(_site(root) / "x.pth", _link("/dev/urandom")),
    "pth-fifo": lambda root: _replace(_site(root) / "x.pth", _fifo),
    "editable-finder-fifo": _finder_fifo,
    "pyvenv-cfg-fifo": lambda root: _replace(root / ".venv" / "pyvenv.cfg", _fifo),
    "pyproject-dev-zero": lambda root: _replace(root / "pyproject.toml", _link("/dev/zero")),
    "pyproject-fifo": lambda root: _replace(root / "pyproject.toml", _fifo),
    "setup-cfg-dev-zero": lambda root: _replace(root / "setup.cfg", _link("/dev/zero")),
    "setup-cfg-fifo": lambda root: _replace(root / "setup.cfg", _fifo),
    "settings-file-dev-zero": lambda root: _replace(root / ".fabric-lsp.toml", _link("/dev/zero")),
    "gitignore-dev-zero": lambda root: _replace(root / ".gitignore", _link("/dev/zero")),
    "git-exclude-fifo": lambda root: (root / ".git" / "info").mkdir() or _fifo(root / ".git" / "info" / "exclude"),
    "module-dev-zero": _module,
    "library-module-dev-zero": _library_module,
}
SERVER_VARIANTS = ["pth-dev-zero", "pth-dev-urandom", "pth-fifo", "pyproject-dev-zero", "gitignore-dev-zero",
                   "module-dev-zero"]


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_cli_finishes_and_reports_the_finding(tmp_path, variant):
    repo = _repo(tmp_path / "repo")
    VARIANTS[variant](repo)
    result = run_cli(repo, user_config_env(tmp_path), "check", "--no-cache", ".", timeout=60)
    assert not result.timed_out, f"{variant}: still running after 60 s"
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == 1 and "train.py" in result.stdout and "FAB001" in result.stdout, result
    assert result.peak_mb < MEMORY_BOUND_MB, result.peak_mb


def test_a_special_file_named_with_config_is_a_usage_error(tmp_path):
    repo = _repo(tmp_path / "repo")
    for name, make in (("zero.toml", _link("/dev/zero")), ("fifo.toml", _fifo)):
        make(tmp_path / name)
        result = run_cli(repo, user_config_env(tmp_path), "check", "--no-cache", "--config", str(tmp_path / name), ".",
                         timeout=60)
        assert result.returncode == 2 and result.stderr.strip().endswith(f"{name}: not a regular file"), result


def test_an_oversized_settings_file_is_a_config_error_read_no_further(tmp_path):
    from fabric_lsp.sources.files import MAX_SETTINGS_BYTES

    repo = _repo(tmp_path / "repo")
    text = '[tool.fabric-lsp]\nselect = ["FAB004"]\n'
    (repo / "pyproject.toml").write_text(text + "#" * MAX_SETTINGS_BYTES + "\n")
    result = run_cli(repo, user_config_env(tmp_path), "check", "--no-cache", ".", timeout=60)
    # Read up to the bound only; a settings file that cannot be read is a config error (issue 29: status 2).
    assert result.returncode == 2 and result.stdout == "", result
    [error] = [line for line in result.stderr.splitlines() if "pyproject.toml" in line]
    assert f"larger than {MAX_SETTINGS_BYTES} bytes" in error and error.startswith("fabric-lsp: config error: "), error


def test_a_pth_file_over_the_line_cap_is_read_up_to_it(tmp_path):
    from fabric_lsp.analysis.workspace import venv_sys_path
    from fabric_lsp.sources.files import MAX_PTH_LINES

    repo = _repo(tmp_path / "repo")
    extra = tmp_path / "extra"
    extra.mkdir()
    (_site(repo) / "many.pth").write_text(f"{extra}\n" + "# nothing\n" * (MAX_PTH_LINES * 3) + f"{tmp_path}\n")
    found = venv_sys_path(str(repo / ".venv"))
    assert str(extra) in found and str(tmp_path) not in found


@pytest.mark.parametrize("variant", SERVER_VARIANTS)
def test_server_publishes_the_finding(tmp_path, variant):
    repo = _repo(tmp_path / "repo")
    VARIANTS[variant](repo)
    env = server_env(FABRIC_LSP_USER_CONFIG=user_config_env(tmp_path)["FABRIC_LSP_USER_CONFIG"])
    server = RawServer(repo, env=env, stderr_path=tmp_path / "server-stderr.txt", preexec_fn=limit_memory)
    try:
        server.initialize(repo)
        uri = server.open(repo / "train.py")
        published = server.diagnostics(uri, timeout=60)  # only a hang guard: never a time bound
        assert "FAB001" in [d["code"] for d in published["diagnostics"]], server.stderr_tail()
        assert (server.peak_rss_mb() or 0) < MEMORY_BOUND_MB
        assert "Traceback" not in server.stderr_tail(20_000)
        assert server.shutdown_and_exit() == 0
    finally:
        server.close()
