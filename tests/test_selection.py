"""Which rules and which files (issue 14, "Selection"): `--select` replaces the configured selection,
`--extend-select` adds to it, `--ignore` adds to the configured ignore list (as ruff); the
`extend-select`, `per-file-ignores`, `extend-exclude` and `respect-gitignore` keys; `--force-exclude`;
file-level `# fabric-lsp: noqa`. Each through `python -m fabric_lsp check`, as users run it."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabric_lsp.sources.gitignore import GitIgnore, parse
from fabric_lsp.sources.walk import discover

from support.cli_runs import (BOTH, FAB001_LINE, FAB003_LINE, PROGRAM, codes_by_file, findings, program_with,
                              run_check, write)


def check_codes(tmp_path, *argv) -> dict[str, set[str]]:
    result = run_check(["--format", "json", *argv], tmp_path)
    assert result.returncode in (0, 1), result.stderr
    return codes_by_file(result, tmp_path)


# --- rule selection on the command line, on top of the settings file --------------------------------


def test_ignore_on_the_command_line_adds_to_the_configured_ignore_list(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.fabric-lsp]\nignore = ["FAB001"]\n')
    write(tmp_path / "train.py", PROGRAM)
    assert check_codes(tmp_path) == {"train.py": {"FAB003"}}
    # Before: --ignore replaced the list and FAB001, which the project turned off, came back.
    assert check_codes(tmp_path, "--ignore", "FAB003") == {}
    assert check_codes(tmp_path, "--ignore", "FAB002", "--ignore", "FAB004") == {"train.py": {"FAB003"}}


def test_select_replaces_and_extend_select_adds(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.fabric-lsp]\nselect = ["FAB003"]\n')
    write(tmp_path / "train.py", PROGRAM)
    assert check_codes(tmp_path) == {"train.py": {"FAB003"}}
    assert check_codes(tmp_path, "--select", "FAB001") == {"train.py": {"FAB001"}}
    assert check_codes(tmp_path, "--extend-select", "FAB001") == {"train.py": BOTH}
    assert check_codes(tmp_path, "--select", "FAB00", "--ignore", "FAB003") == {"train.py": {"FAB001"}}


def test_a_later_layer_re_enables_what_the_settings_file_ignores(tmp_path):
    # ruff: the command line is a later layer: its select / extend-select win over the file's ignore.
    write(tmp_path / "pyproject.toml", '[tool.fabric-lsp]\nignore = ["FAB001"]\n')
    write(tmp_path / "train.py", PROGRAM)
    assert check_codes(tmp_path, "--extend-select", "FAB001") == {"train.py": BOTH}
    assert check_codes(tmp_path, "--select", "FAB001") == {"train.py": {"FAB001"}}


def test_extend_select_key(tmp_path):
    write(tmp_path / "fabric-lsp.toml", 'select = ["FAB003"]\nextend-select = ["FAB001"]\n')
    write(tmp_path / "train.py", PROGRAM)
    assert check_codes(tmp_path) == {"train.py": BOTH}
    write(tmp_path / "fabric-lsp.toml", 'select = ["FAB002"]\nextend-select = ["FAB003"]\n')
    assert check_codes(tmp_path) == {"train.py": {"FAB003"}}


def test_bad_extend_select_is_a_usage_error(tmp_path):
    result = run_check(["--extend-select", "FAB123"], tmp_path)
    assert result.returncode == 2 and "--extend-select: unknown rule code 'FAB123'" in result.stderr


# --- per-file-ignores --------------------------------------------------------------------------------


def test_per_file_ignores_globs_relative_to_the_settings_folder_or_a_bare_file_name(tmp_path):
    write(tmp_path / "pyproject.toml", """[tool.fabric-lsp.per-file-ignores]
"scripts/*.py" = ["FAB001"]
"conftest.py" = ["FAB003"]
"legacy/" = ["FAB"]
"!src/**" = ["FAB004"]
""")
    for name in ("scripts/run.py", "scripts/deeper/run.py", "tests/conftest.py", "legacy/old/x.py", "src/main.py"):
        write(tmp_path / name, PROGRAM)
    assert check_codes(tmp_path) == {
        "scripts/run.py": {"FAB003"},  # relative to the folder of the settings file
        "scripts/deeper/run.py": BOTH,  # `*` does not cross a folder
        "tests/conftest.py": {"FAB001"},  # a bare name matches at any depth
        "src/main.py": BOTH,  # "legacy/": a folder; its files are ignored
    }


def test_per_file_ignores_negation(tmp_path):
    write(tmp_path / "fabric-lsp.toml", '[per-file-ignores]\n"!keep_*.py" = ["FAB001"]\n')
    write(tmp_path / "keep_this.py", PROGRAM)
    write(tmp_path / "other.py", PROGRAM)
    assert check_codes(tmp_path) == {"keep_this.py": BOTH, "other.py": {"FAB003"}}


def test_bad_per_file_ignores_entries_are_reported_and_the_others_apply(tmp_path):
    write(tmp_path / "fabric-lsp.toml", '[per-file-ignores]\n"a.py" = ["FAB999"]\n"[z-a].py" = ["FAB001"]\n"b.py" = ["FAB001"]\n')
    write(tmp_path / "a.py", PROGRAM)
    write(tmp_path / "b.py", PROGRAM)
    result = run_check(["--format", "json"], tmp_path)
    assert codes_by_file(result, tmp_path) == {"a.py": BOTH, "b.py": {"FAB003"}}
    assert "per-file-ignores: \"a.py\": unknown rule code 'FAB999'" in result.stderr
    assert 'per-file-ignores: "[z-a].py": invalid range z-a' in result.stderr


# --- extend-exclude, respect-gitignore, --force-exclude ------------------------------------------------


def test_extend_exclude_adds_to_exclude(tmp_path):
    write(tmp_path / "fabric-lsp.toml", 'exclude = ["legacy/"]\nextend-exclude = ["*_gen.py"]\n')
    for name in ("legacy/a.py", "model_gen.py", "train.py"):
        write(tmp_path / name, PROGRAM)
    assert set(check_codes(tmp_path)) == {"train.py"}


def gitignored_tree(tmp_path, git: bool = True):
    if git:
        (tmp_path / ".git" / "info").mkdir(parents=True)
        write(tmp_path / ".git" / "info" / "exclude", "local/\n")
    write(tmp_path / ".gitignore", "# generated\n/build_out\n*.tmp.py\ndata/*\n!data/keep.py\nnotes/\n")
    write(tmp_path / "src" / ".gitignore", "secret.py\n!also_kept.tmp.py\n")
    names = ("train.py", "build_out/x.py", "src/build_out/y.py", "a.tmp.py", "data/drop.py", "data/keep.py",
             "notes/n.py", "local/l.py", "src/secret.py", "src/also_kept.tmp.py", "src/other.tmp.py")
    for name in names:
        write(tmp_path / name, PROGRAM)
    return {"train.py", "src/build_out/y.py", "data/keep.py", "src/also_kept.tmp.py"}


def test_respect_gitignore_skips_what_git_ignores_in_a_walk(tmp_path):
    kept = gitignored_tree(tmp_path)
    assert set(check_codes(tmp_path)) == kept
    files, _ = discover([str(tmp_path)], root=str(tmp_path))
    assert {Path(path).relative_to(tmp_path).as_posix() for path in files} == kept


def test_respect_gitignore_false_and_outside_a_repository(tmp_path):
    everything = {"train.py", "build_out/x.py", "src/build_out/y.py", "a.tmp.py", "data/drop.py", "data/keep.py",
                  "notes/n.py", "local/l.py", "src/secret.py", "src/also_kept.tmp.py", "src/other.tmp.py"}
    gitignored_tree(tmp_path / "nogit", git=False)  # as git (and ruff): .gitignore applies inside a repository
    assert set(check_codes(tmp_path / "nogit")) == everything
    gitignored_tree(tmp_path / "off")
    write(tmp_path / "off" / "fabric-lsp.toml", "respect-gitignore = false\n")
    assert set(check_codes(tmp_path / "off")) == everything


def test_explicit_files_are_checked_unless_force_exclude(tmp_path):
    gitignored_tree(tmp_path)
    write(tmp_path / "fabric-lsp.toml", 'exclude = ["vendored/"]\nextend-exclude = ["*_gen.py"]\n')
    write(tmp_path / "vendored" / "v.py", PROGRAM)
    write(tmp_path / "model_gen.py", PROGRAM)
    write(tmp_path / ".hidden" / "h.py", PROGRAM)
    named = ["train.py", "a.tmp.py", "data/drop.py", "local/l.py", "src/secret.py", "vendored/v.py", "model_gen.py",
             ".hidden/h.py", "notes"]
    assert set(check_codes(tmp_path, *named)) == set(named[:-1]) | {"notes/n.py"}
    # Under pre-commit every file is named: --force-exclude applies exclude, extend-exclude and
    # .gitignore to them (a file inside an excluded or ignored folder too) as the walk would.
    assert set(check_codes(tmp_path, "--force-exclude", *named)) == {"train.py"}


# --- file-level suppression ---------------------------------------------------------------------------


def test_file_level_noqa(tmp_path):
    write(tmp_path / "all.py", "# fabric-lsp: noqa\n" + PROGRAM)
    write(tmp_path / "some.py", PROGRAM + "    # fabric-lsp: noqa: FAB003\n")
    write(tmp_path / "other_tool.py", "# ruff: noqa\n# fabric-lsp: noqa: E501\n" + PROGRAM)
    write(tmp_path / "inline.py", program_with(FAB001_LINE, "model.encode(None)  # fabric-lsp: noqa"))
    result = run_check(["--format", "json"], tmp_path)
    assert findings(result, tmp_path) == {
        ("some.py", "FAB001", FAB001_LINE),
        ("other_tool.py", "FAB001", FAB001_LINE + 2), ("other_tool.py", "FAB003", FAB003_LINE + 2),
        ("inline.py", "FAB001", FAB001_LINE), ("inline.py", "FAB003", FAB003_LINE),
    }
    # As ruff: the file-level form on a line of code is refused, with a warning.
    assert (f"fabric-lsp: warning: inline.py:{FAB001_LINE}: unexpected # fabric-lsp: noqa directive: file-level "
            "suppression comments must appear on their own line") in result.stderr


# --- git's ignore rules, read from the files -------------------------------------------------------------


@pytest.mark.parametrize("pattern, path, is_dir, ignored", [
    ("foo", "a/b/foo", False, True),
    ("foo/", "a/foo", False, False),
    ("foo/", "a/foo", True, True),
    ("/foo", "a/foo", False, False),
    ("/foo", "foo", False, True),
    ("a/*.py", "a/x.py", False, True),
    ("a/*.py", "a/b/x.py", False, False),
    ("a/**/x.py", "a/b/c/x.py", False, True),
    ("**/cache", "x/y/cache", True, True),
    ("*.py[co]", "m.pyc", False, True),
    ("\\#notes", "#notes", False, True),
    ("\\!important", "!important", False, True),
    ("trailing   ", "trailing", False, True),
    ("space\\ ", "space ", False, True),
    ("lit\\*", "lit*", False, True),
    ("lit\\*", "litx", False, False),
    ("# a comment", "# a comment", False, False),
])
def test_gitignore_patterns(tmp_path, pattern, path, is_dir, ignored):
    layer = parse(pattern + "\n", str(tmp_path))
    verdict = layer.verdict(path, path.rsplit("/", 1)[-1], is_dir)
    assert (verdict is True) == ignored


def test_gitignore_last_match_wins_and_deeper_files_override(tmp_path):
    (tmp_path / ".git").mkdir()
    write(tmp_path / ".gitignore", "*.py\n!keep.py\n")
    write(tmp_path / "sub" / ".gitignore", "keep.py\n!drop_not.py\n")
    git = GitIgnore()
    assert git.ignored(str(tmp_path / "x.py"), False)
    assert not git.ignored(str(tmp_path / "keep.py"), False)
    assert git.ignored(str(tmp_path / "sub" / "keep.py"), False)
    assert not git.ignored(str(tmp_path / "sub" / "drop_not.py"), False)
    # A nested repository starts again: the outer .gitignore does not apply inside it.
    (tmp_path / "inner" / ".git").mkdir(parents=True)
    assert not git.ignored(str(tmp_path / "inner" / "x.py"), False)


def test_launch_rules_are_selected_ignored_and_suppressed_like_the_others(tmp_path):
    """FAB005/FAB008 (issue 27) go through the same selection and `# noqa` as FAB001-FAB004."""
    cases = Path(__file__).resolve().parent.parent / "fixtures" / "cases"
    write(tmp_path / "a.py", (cases / "fab005_ddp_one_device_no_launch.py").read_text())
    write(tmp_path / "b.py", (cases / "fab008_launch_called.py").read_text())
    assert check_codes(tmp_path) == {"a.py": {"FAB005"}, "b.py": {"FAB008"}}
    assert check_codes(tmp_path, "--select", "FAB008") == {"b.py": {"FAB008"}}
    assert check_codes(tmp_path, "--ignore", "FAB005") == {"b.py": {"FAB008"}}
    write(tmp_path / "a.py", (tmp_path / "a.py").read_text().replace("# expect: FAB005 warning", "# noqa: FAB005"))
    assert check_codes(tmp_path) == {"b.py": {"FAB008"}}
