"""Issue 24, item 5: directory walks stay inside the tree. A committed `rootfs -> /` made `check .`
walk the machine (killed at 60 s, other projects' settings applied, `.fabric-lsp-cache/` created at
their roots) and the server's project index read up to 20,000 files of it. As ruff, a link to a
folder met in a walk is not followed (inside the tree or out of it); a link to a file is checked as
the file it names; the walks are bounded in folders as well as files, with one notice. What the CLI
and the server read is counted, not timed (tests/security/audited.py: every file opened, every folder
listed): nothing outside the tree."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "lsp"))  # lspkit

import lspkit  # noqa: E402
from lspkit import capabilities, diagnostics, open_doc, replace_text, session  # noqa: E402

from tests.security.audited import FOLDERS_BOUND, audited_command, reads_in, run_cli_audited  # noqa: E402
from tests.security.hostile import run_check_measured  # noqa: E402

CASE = REPO / "fixtures" / "cases" / "fab001_call_before_mark.py"


def hostile_repo(tmp_path: Path) -> tuple[Path, Path]:
    """repo/ (a git checkout with one FAB001 in main.py) holding `rootfs -> /`, `sib -> ../outside`
    (a project whose settings ignore FAB001, with a FAB001 of its own) and `alias -> pkg` (a link
    inside the tree); returns (repo, outside)."""
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    (repo / ".git").mkdir(parents=True)
    shutil.copy(CASE, repo / "main.py")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "util.py").write_text("x = 1\n")
    (repo / "rootfs").symlink_to("/", target_is_directory=True)
    (repo / "sib").symlink_to("../outside", target_is_directory=True)
    (repo / "alias").symlink_to("pkg", target_is_directory=True)
    outside.mkdir()
    (outside / "pyproject.toml").write_text('[tool.fabric-lsp]\nignore = ["FAB001"]\n')
    shutil.copy(CASE, outside / "planted.py")
    return repo, outside


def test_check_does_not_follow_links_out_of_the_tree(tmp_path):
    repo, outside = hostile_repo(tmp_path)
    env = {key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"}
    env.update(FABRIC_LSP_CACHE_SECRET_DIR=str(tmp_path / "secret"), FABRIC_LSP_USER_CONFIG=str(tmp_path / "none"),
               XDG_CONFIG_HOME=str(tmp_path / "config"))  # git's global excludes file: $XDG_CONFIG_HOME/git/ignore
    for cached in (False, True):
        # The timeout is only a hang guard (walking the machine through rootfs was killed at 60 s).
        result, reads = run_cli_audited(repo, env, "check", *([] if cached else ["--no-cache"]), "--format", "json",
                                        ".", timeout=30)
        assert "Traceback" not in result.stderr
        assert result.returncode == 1, result.stderr[-2000:]
        reported = sorted({Path(item["filename"]).relative_to(repo).as_posix() for item in json.loads(result.stdout)})
        assert reported == ["main.py"]  # nothing through rootfs/ or sib/ (whose settings would hide FAB001)
        # Counted, not timed: no file or folder read outside the tree, through a link or otherwise.
        assert reads.outside(repo, tmp_path / "none", tmp_path / "config") == ([], []), reads.outside(repo)
        assert len(set(reads.listed)) <= FOLDERS_BOUND, len(set(reads.listed))
        assert "rootfs" not in result.stderr and "sib" not in result.stderr
    assert (repo / ".fabric-lsp-cache").is_dir()  # the cache is where the project is ...
    assert sorted(p.name for p in outside.iterdir()) == ["planted.py", "pyproject.toml"]  # ... and nowhere else


def test_a_linked_folder_named_on_the_command_line_is_checked(tmp_path):
    """The user may still choose a linked folder (as ruff): `check sib` checks the sibling project,
    with its own settings."""
    repo, _ = hostile_repo(tmp_path)
    result, _ = run_check_measured(repo, "--format", "json", "sib", timeout=30)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []  # sib/planted.py checked with its own settings, which ignore FAB001
    result, _ = run_check_measured(repo, "--format", "json", "--extend-select", "FAB001", "sib", timeout=30)
    assert [Path(item["filename"]).name for item in json.loads(result.stdout)] == ["planted.py"]


async def test_server_publishes_diagnostics_in_a_workspace_with_links_out(tmp_path, monkeypatch):
    repo, outside = hostile_repo(tmp_path)
    main = repo / "main.py"
    log = tmp_path / "reads.log"  # what the server read (tests/security/audited.py), counted not timed
    log.write_text("")
    monkeypatch.setattr(lspkit, "SERVER_COMMAND", [*audited_command(log), "serve"])
    config = tmp_path / "config"  # $XDG_CONFIG_HOME: git's global excludes file
    async with session(capabilities("neovim"), [repo], env={"XDG_CONFIG_HOME": str(config)}) as (client, _):
        uri = open_doc(client, main)
        found = await diagnostics(client, uri, version=1)
        assert [d.code for d in found] == ["FAB001"]
        assert reads_in(log).outside(repo, config) == ([], []), reads_in(log).outside(repo, config)
        for version in range(2, 6):  # keystrokes: the index is not walked through the links again
            replace_text(client, uri, version, main.read_text() + f"\n# edit {version}\n")
            found = await diagnostics(client, uri, version=version)
            assert [d.code for d in found] == ["FAB001"]
        reads = reads_in(log)
        assert reads.outside(repo, config) == ([], []), reads.outside(repo, config)
        assert len(set(reads.listed)) <= FOLDERS_BOUND, len(set(reads.listed))
    assert sorted(p.name for p in outside.iterdir()) == ["planted.py", "pyproject.toml"]


# -- the bounds on the walks' volume (counted; lowered here so that the test builds a small tree) ---


def test_the_walk_stops_at_its_folder_bound_with_one_notice(tmp_path, monkeypatch):
    from fabric_lsp.sources import walk

    monkeypatch.setattr(walk, "MAX_WALK_FOLDERS", 40)
    for index in range(60):
        (tmp_path / f"d{index:02}").mkdir()
        (tmp_path / f"d{index:02}" / "m.py").write_text("x = 1\n")
    files, notices = walk.discover([str(tmp_path), str(tmp_path / "d59")])
    assert len(files) == 39  # the root and the first 39 folders, in name order
    assert files[-1] == str(tmp_path / "d38" / "m.py")
    assert [n.reason for n in notices] == ["the walk stops at 40 folders or 100,000 files; what it did not reach "
                                           "is not checked"]
    monkeypatch.setattr(walk, "MAX_WALK_FOLDERS", 1000)
    monkeypatch.setattr(walk, "MAX_WALK_FILES", 10)
    files, notices = walk.discover([str(tmp_path)])
    assert len(files) == 10 and len(notices) == 1


def test_the_project_index_stops_at_its_folder_bound_with_one_notice(tmp_path, monkeypatch):
    from fabric_lsp import engine
    from fabric_lsp.analysis import program
    from fabric_lsp.settings.config import Config

    monkeypatch.setattr(program, "MAX_WALKED_FOLDERS", 20)
    program._walks.clear()
    (tmp_path / ".git").mkdir()
    for index in range(30):
        (tmp_path / f"d{index:02}").mkdir()
    (tmp_path / "d29" / "late.py").write_text("x = 1\n")
    shutil.copy(CASE, tmp_path / "main.py")
    files = engine.project_files(str(tmp_path), Config())
    assert str(tmp_path / "d29" / "late.py") not in files and str(tmp_path / "main.py") in files
    config = Config(root=str(tmp_path))
    findings = engine.check_source(str(tmp_path / "main.py"), CASE.read_text(), config)
    assert [f.code for f in findings] == ["FAB001"]
    result = engine.project_result([str(tmp_path / "main.py")], config, engine.workspace_for(config))
    assert [n for n in result.notices if "the project index stops at 20 folders" in n] == [
        f"{tmp_path}: the project index stops at 20 folders or 20,000 Python files; the files it did not reach "
        "are not analysed with the others"]
    program._walks.clear()


def test_the_project_index_does_not_follow_links(tmp_path):
    from fabric_lsp import engine
    from fabric_lsp.settings.config import Config

    repo, _ = hostile_repo(tmp_path)
    files = engine.project_files(str(repo), Config())
    assert sorted(Path(f).relative_to(repo).as_posix() for f in files) == ["main.py", "pkg/util.py"]
