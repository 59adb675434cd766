"""Per-file configuration, ruff's hierarchy (issue 14): each checked file gets the closest settings
file above it (`.fabric-lsp.toml`, then `fabric-lsp.toml`, then a pyproject.toml with
`[tool.fabric-lsp]`, in each folder), whatever the other arguments and their order; `--config`
forces one file; relative paths are relative to the settings file's folder; the cache keeps one
entry per configuration; the language server reads the same file (config.find_config_file)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fabric_lsp.settings.config import ConfigResolver, find_config_file

from support.cli_runs import BOTH, PROGRAM, codes_by_file, run_check, write

sys.path.insert(0, str(Path(__file__).resolve().parent / "lsp"))  # lspkit, for the server test


@pytest.fixture
def two_projects(tmp_path):
    """a/ ignores FAB001 (fabric-lsp.toml), b/ ignores FAB003 (pyproject.toml); the same program in each."""
    write(tmp_path / "a" / "fabric-lsp.toml", 'ignore = ["FAB001"]\n')
    write(tmp_path / "b" / "pyproject.toml", '[project]\nname = "b"\n\n[tool.fabric-lsp]\nignore = ["FAB003"]\n')
    write(tmp_path / "a" / "train.py", PROGRAM)
    write(tmp_path / "b" / "train.py", PROGRAM)
    return tmp_path


EXPECTED = {"a/train.py": {"FAB003"}, "b/train.py": {"FAB001"}}


@pytest.mark.parametrize("argv", [["a", "b"], ["b", "a"], ["b/train.py", "a/train.py"], ["a/train.py", "b"], []])
def test_each_file_is_checked_with_its_closest_settings_file_in_any_argument_order(two_projects, argv):
    # Before: the first argument's configuration applied to every file, so `a b` and `b a` differed.
    result = run_check(["--format", "json", *argv], two_projects)
    assert result.returncode == 1, result.stderr
    assert codes_by_file(result, two_projects) == EXPECTED


def test_dedicated_files_take_precedence_over_pyproject_in_the_same_folder(tmp_path):
    write(tmp_path / "train.py", PROGRAM)
    pyproject = write(tmp_path / "pyproject.toml", '[tool.fabric-lsp]\nselect = ["FAB001"]\n')
    assert find_config_file(tmp_path / "train.py") == pyproject
    assert codes_by_file(run_check(["--format", "json"], tmp_path), tmp_path) == {"train.py": {"FAB001"}}
    dedicated = write(tmp_path / "fabric-lsp.toml", 'select = ["FAB003"]\n')
    assert find_config_file(tmp_path / "train.py") == dedicated
    assert codes_by_file(run_check(["--format", "json"], tmp_path), tmp_path) == {"train.py": {"FAB003"}}
    hidden = write(tmp_path / ".fabric-lsp.toml", 'select = ["FAB001", "FAB003"]\n')
    assert find_config_file(tmp_path / "train.py") == hidden
    assert codes_by_file(run_check(["--format", "json"], tmp_path), tmp_path) == {"train.py": BOTH}


def test_the_closest_folder_wins_and_a_pyproject_without_the_table_is_passed_over(tmp_path):
    write(tmp_path / "fabric-lsp.toml", 'ignore = ["FAB001"]\n')
    write(tmp_path / "pkg" / "pyproject.toml", '[project]\nname = "pkg"\n')  # not ours: the search goes on
    write(tmp_path / "pkg" / "deep" / ".fabric-lsp.toml", 'ignore = ["FAB003"]\n')
    for folder in ("", "pkg", "pkg/deep"):
        write(tmp_path / folder / "train.py", PROGRAM)
    result = run_check(["--format", "json", "pkg/deep/train.py", "train.py", "pkg/train.py"], tmp_path)
    assert codes_by_file(result, tmp_path) == {
        "train.py": {"FAB003"}, "pkg/train.py": {"FAB003"}, "pkg/deep/train.py": {"FAB001"}}


def test_config_option_forces_one_file_for_every_file(two_projects):
    write(two_projects / "ci.toml", 'select = ["FAB001", "FAB003"]\n')
    result = run_check(["--format", "json", "--config", "ci.toml", "a", "b"], two_projects)
    assert codes_by_file(result, two_projects) == {"a/train.py": BOTH, "b/train.py": BOTH}


def test_relative_paths_in_a_settings_file_are_relative_to_its_folder(tmp_path):
    # `/gen` is anchored at the settings file's folder: sub/gen is excluded, the top-level gen is not.
    write(tmp_path / "sub" / "fabric-lsp.toml", 'exclude = ["/gen"]\n[per-file-ignores]\n"/tools/*.py" = ["FAB001"]\n')
    for name in ("gen/a.py", "sub/gen/a.py", "sub/tools/t.py", "tools/t.py", "sub/main.py"):
        write(tmp_path / name, PROGRAM)
    result = run_check(["--format", "json", "."], tmp_path)
    assert codes_by_file(result, tmp_path) == {
        "gen/a.py": BOTH, "sub/tools/t.py": {"FAB003"}, "tools/t.py": BOTH, "sub/main.py": BOTH}
    # The same from inside sub/ (another working directory): the same files of sub/ are left out.
    result = run_check(["--format", "json", "."], tmp_path / "sub")
    assert codes_by_file(result, tmp_path / "sub") == {"tools/t.py": {"FAB003"}, "main.py": BOTH}


def test_problems_of_each_settings_file_are_said_once(two_projects):
    write(two_projects / "a" / "fabric-lsp.toml", 'ignore = ["FAB001"]\nspeed = 3\n')
    write(two_projects / "a" / "more.py", PROGRAM)
    result = run_check(["--format", "json", "a", "b", "a/train.py"], two_projects)
    # A mistake in a settings file stops the run, as in ruff (issue 29 item 2): said once, status 2.
    assert result.returncode == 2 and result.stdout == "", result.stdout
    problems = [line for line in result.stderr.splitlines() if "speed" in line]
    assert len(problems) == 1 and "a/fabric-lsp.toml:2: speed: unknown key" in problems[0], problems


def test_the_cache_keys_each_configuration_and_follows_its_changes(two_projects, tmp_path_factory):
    env = {"FABRIC_LSP_CACHE_SECRET_DIR": str(tmp_path_factory.mktemp("secret"))}
    first = run_check(["--format", "json", "a", "b"], two_projects, cache=True, env=env)
    assert codes_by_file(first, two_projects) == EXPECTED
    again = run_check(["--format", "json", "b", "a"], two_projects, cache=True, env=env)  # from the caches
    assert codes_by_file(again, two_projects) == EXPECTED
    assert (two_projects / "a" / ".fabric-lsp-cache").is_dir() and (two_projects / "b" / ".fabric-lsp-cache").is_dir()
    # A changed setting (per-file-ignores, then ignore) is a changed key: the findings follow.
    write(two_projects / "b" / "pyproject.toml",
          '[tool.fabric-lsp]\nignore = ["FAB003"]\n[tool.fabric-lsp.per-file-ignores]\n"train.py" = ["FAB001"]\n')
    result = run_check(["--format", "json", "a", "b"], two_projects, cache=True, env=env)
    assert codes_by_file(result, two_projects) == {"a/train.py": {"FAB003"}}
    write(two_projects / "a" / "fabric-lsp.toml", 'ignore = []\n')
    result = run_check(["--format", "json", "a", "b"], two_projects, cache=True, env=env)
    assert codes_by_file(result, two_projects) == {"a/train.py": BOTH}


def test_the_resolver_reads_each_settings_file_once(two_projects):
    resolver = ConfigResolver(fallback_root=str(two_projects))
    a = resolver.for_path(str(two_projects / "a" / "train.py"))
    assert resolver.for_directory(str(two_projects / "a")) is a
    assert resolver.for_path(str(two_projects / "b" / "train.py")).ignore == {"FAB003"}
    assert a.ignore == {"FAB001"} and a.root == str(two_projects / "a")
    assert resolver.take_problems() == []


async def test_the_server_publishes_what_check_reports_with_a_dedicated_settings_file(two_projects):
    from lspkit import capabilities, diagnostics, open_doc, session

    expected = codes_by_file(run_check(["--format", "json", "a", "b"], two_projects), two_projects)
    assert expected == EXPECTED
    async with session(capabilities("neovim"), [two_projects]) as (client, _):
        for name, codes in EXPECTED.items():
            found = await diagnostics(client, open_doc(client, two_projects / name), version=1)
            assert {d.code for d in found} == codes, name
