"""`[tool.fabric-lsp]` loading: discovery, every key, every kind of bad value, overrides."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

import fabric_lsp.settings.config as config_module
from fabric_lsp.settings.config import ALL_CODES, DEFAULT_MAX_FILE_SIZE, Config, find_pyproject, load_config
from fabric_lsp.findings import Severity

DEFAULT = Config()


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_no_pyproject_gives_the_defaults(tmp_path):
    config, problems = load_config(tmp_path)
    assert problems == []
    assert config == DEFAULT
    assert config.select == frozenset(ALL_CODES) and config.hints is False
    assert config.max_file_size == DEFAULT_MAX_FILE_SIZE == 2 * 1024 * 1024


def test_every_key_is_read(tmp_path):
    (tmp_path / "venv" / "bin").mkdir(parents=True)
    python = tmp_path / "venv" / "bin" / "python"
    python.write_text("")
    (tmp_path / "kb").mkdir()
    write(
        tmp_path / "pyproject.toml",
        """
        [project]
        name = "demo"

        [tool.fabric-lsp]
        select = ["FAB001", "fab002"]
        ignore = ["FAB002"]
        python = "venv/bin/python"
        exclude = ["legacy/", "*_generated.py"]
        extend-records = ["kb"]
        hints = true
        max-file-size = 4096

        [tool.fabric-lsp.severity]
        FAB001 = "warning"
        fab003 = "Information"
        """,
    )
    (tmp_path / "src").mkdir()
    config, problems = load_config(tmp_path / "src", trust_workspace=True)
    assert problems == []
    assert config.select == {"FAB001", "FAB002"}
    assert config.ignore == {"FAB002"}
    assert config.enabled("FAB001") and not config.enabled("FAB002") and not config.enabled("FAB003")
    assert config.severity == {"FAB001": Severity.WARNING, "FAB003": Severity.INFORMATION}
    assert config.python == str(python)  # relative to the pyproject's directory, not to the start
    assert config.exclude == ("legacy/", "*_generated.py")
    assert config.extend_records == (str(tmp_path / "kb"),)
    assert config.hints is True
    assert config.max_file_size == 4096
    assert config.root == str(tmp_path)


def test_selectors_accept_prefixes_and_all(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.fabric-lsp]\nselect = ["FAB00"]\nignore = ["ALL"]\n')
    config, problems = load_config(tmp_path)
    assert problems == []
    assert config.select == set(ALL_CODES) and config.ignore == set(ALL_CODES)


def test_nearest_pyproject_with_the_table_wins(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.fabric-lsp]\nselect = ["FAB003"]\n')
    write(tmp_path / "pkg" / "pyproject.toml", '[project]\nname = "pkg"\n')  # no table: does not stop the search
    write(tmp_path / "pkg" / "sub" / "pyproject.toml", '[tool.fabric-lsp]\nselect = ["FAB002"]\n')
    (tmp_path / "pkg" / "sub" / "deep").mkdir()
    file_in_pkg = write(tmp_path / "pkg" / "train.py", "")
    assert find_pyproject(file_in_pkg) == tmp_path / "pyproject.toml"
    assert load_config(file_in_pkg)[0].select == {"FAB003"}
    assert load_config(tmp_path / "pkg" / "sub" / "deep")[0].select == {"FAB002"}


def test_explicit_config_file(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.fabric-lsp]\nselect = ["FAB003"]\n')
    dedicated = write(tmp_path / "ci" / "fabric-lsp.toml", 'select = ["FAB001"]\nhints = true\n')
    config, problems = load_config(tmp_path, config_file=dedicated)
    assert problems == []
    assert config.select == {"FAB001"} and config.hints is True and config.root == str(tmp_path / "ci")


def test_overrides_beat_the_file_and_none_means_not_set(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.fabric-lsp]\nselect = ["FAB003"]\nhints = true\nmax-file-size = 10\n')
    config, problems = load_config(tmp_path, {"select": ["FAB001"], "hints": None, "max_file_size": 20})
    assert problems == []
    assert config.select == {"FAB001"}
    assert config.hints is True  # None did not override the file
    assert config.max_file_size == 20  # underscore spelling accepted (editor settings)


def test_bad_override_keeps_the_files_value(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.fabric-lsp]\nselect = ["FAB003"]\n')
    config, problems = load_config(tmp_path, {"select": ["NOPE"]}, overrides_source="settings")
    assert config.select == {"FAB003"}
    assert problems == [
        "fabric-lsp: config: settings: select: unknown rule code 'NOPE' (known: FAB001, FAB002, FAB003, FAB004, FAB005, FAB006, FAB007, FAB008, FAB009); not overriding"
    ]
    # One bad entry among good ones: the good ones keep their meaning (never every rule).
    config, problems = load_config(tmp_path, {"select": ["FAB002", "FAB01"]}, overrides_source="settings")
    assert config.select == {"FAB002"}
    assert problems == ["fabric-lsp: config: settings: select: unknown rule code 'FAB01' (did you mean 'FAB001'?); "
                        "the others apply"]


@pytest.mark.parametrize(
    "line, key, problem",
    [
        ('select = ["FAB001", "FAB999"]', "select", "unknown rule code 'FAB999' (did you mean 'FAB009'?)"),
        ('select = "FAB001"', "select", "expected a list of rule codes, got string 'FAB001'"),
        ("ignore = [1]", "ignore", "found integer 1"),
        ('severity = "error"', "severity", "expected a table of code = severity, got string 'error'"),
        ('severity = {FAB010 = "error"}', "severity", "unknown rule code 'FAB010' (did you mean 'FAB009'?)"),
        ('severity = {FAB001 = "fatal"}', "severity", "FAB001: expected one of error, warning, information, hint, got 'fatal'"),
        ("python = 3", "python", "expected a path to a Python interpreter, got integer 3"),
        ('exclude = "build"', "exclude", "expected a list of strings, got string 'build'"),
        ('extend-records = ["missing-dir"]', "extend-records", "'missing-dir' is not a directory"),
        ('hints = "yes"', "hints", "expected true or false, got string 'yes'"),
        ("max-file-size = -1", "max-file-size", "expected a positive number of bytes, got integer -1"),
        ("max-file-size = true", "max-file-size", "expected a positive number of bytes, got boolean True"),
        ("colour = true", "colour", "unknown key (known keys: select, ignore, severity, python, exclude, "
         "extend-records, hints, max-file-size, include, extend-include, notebooks, extend-select, per-file-ignores, "
         "extend-exclude, respect-gitignore, docs-url)"),
        ("selct = []", "selct", 'unknown key (did you mean "select"?)'),
    ],
)
def test_each_bad_value_is_reported_and_defaulted(tmp_path, line, key, problem):
    # A good key beside the bad one must survive: only the bad key falls back.
    pyproject = write(tmp_path / "pyproject.toml", f"[tool.fabric-lsp]\nmax-file-size = 1234\n{line}\n")
    if key == "max-file-size":
        pyproject.write_text(f"[tool.fabric-lsp]\nhints = true\n{line}\n")
    config, problems = load_config(tmp_path)
    # A settings file's mistake: file:line, key, problem (with "did you mean"), as ruff says it.
    assert problems == [f"fabric-lsp: config error: {pyproject}:3: {key}: {problem}"]
    field = {"extend-records": "extend_records", "max-file-size": "max_file_size"}.get(key, key)
    if line == 'select = ["FAB001", "FAB999"]':  # the good entry keeps its meaning: never every rule
        assert config.select == {"FAB001"}
    elif hasattr(DEFAULT, field):
        assert getattr(config, field) == getattr(DEFAULT, field)
    if key == "max-file-size":
        assert config.hints is True
    else:
        assert config.max_file_size == 1234


def test_missing_interpreter_is_reported(tmp_path):
    pyproject = write(tmp_path / "pyproject.toml", '[tool.fabric-lsp]\npython = ".venv/bin/python"\n')
    config, problems = load_config(tmp_path)
    assert config.python is None
    assert problems == [
        f"fabric-lsp: config error: {pyproject}:2: python: no interpreter at {tmp_path / '.venv/bin/python'}"
    ]


def test_interpreter_symlink_is_not_resolved(tmp_path):
    # A venv's bin/python is a link to the base interpreter; resolving it would lose the venv.
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    link = tmp_path / ".venv" / "bin" / "python"
    link.symlink_to(sys.executable)
    write(tmp_path / "pyproject.toml", '[tool.fabric-lsp]\npython = ".venv/bin/python"\n')
    assert load_config(tmp_path, trust_workspace=True)[0].python == str(link)


def test_bad_toml_is_reported_and_everything_defaulted(tmp_path):
    pyproject = write(tmp_path / "pyproject.toml", "[tool.fabric-lsp]\nselect = [\"FAB001\"\nhints = true\n")
    config, problems = load_config(tmp_path)
    assert config == Config(root=str(tmp_path))
    assert problems == [f"fabric-lsp: config error: {pyproject}:3: invalid TOML: Unclosed array (at line 3, column 1)"]


def test_table_of_wrong_type(tmp_path):
    pyproject = write(tmp_path / "pyproject.toml", '[tool]\nfabric-lsp = "on"\n')
    config, problems = load_config(tmp_path)
    assert config.select == DEFAULT.select
    assert problems == [f"fabric-lsp: config error: {pyproject}:1: tool.fabric-lsp: expected a table, got string 'on'"]


def test_without_a_toml_parser_the_file_is_skipped_with_a_notice(tmp_path, monkeypatch):
    # Python 3.10 has no tomllib; without tomli the settings are skipped, not a crash.
    pyproject = write(tmp_path / "pyproject.toml", '[tool.fabric-lsp]\nselect = ["FAB001"]\n')
    monkeypatch.setattr(config_module, "_toml", None)
    config, problems = load_config(tmp_path)
    assert config.select == DEFAULT.select
    assert problems == [f"fabric-lsp: config error: {pyproject}: reading TOML needs Python 3.11+ or the tomli package"]


def test_unreadable_pyproject_does_not_raise(tmp_path):
    # A directory named pyproject.toml cannot be read as a file: ignored during discovery.
    (tmp_path / "pyproject.toml").mkdir()
    assert load_config(tmp_path) == (DEFAULT, [])


def test_relative_override_paths_are_relative_to_start(tmp_path):
    (tmp_path / "envs").mkdir()
    python = tmp_path / "envs" / "py"
    python.write_text("")
    config, problems = load_config(tmp_path, {"python": os.path.join("envs", "py")})
    assert problems == [] and config.python == str(python)


def test_a_misspelt_table_and_bad_entries_are_errors_that_keep_the_good_entries(tmp_path):
    """Issue 29 item 2: `[tool.fabric_lsp]` is not silently ignored; a bad `select` entry never widens the
    run (the good entries keep their meaning); each problem says file:line, key and "did you mean"."""
    pyproject = write(tmp_path / "pyproject.toml", '[project]\nname = "p"\n\n[tool.fabric_lsp]\nselect = ["FAB002"]\n')
    config, problems = load_config(tmp_path)
    assert problems == [f'fabric-lsp: config error: {pyproject}:4: [tool.fabric_lsp]: unknown table (did you mean '
                        f'"[tool.fabric-lsp]"?); its settings are not used']
    pyproject.write_text('[tool.fabric-lsp]\nhints = true\n\nselect = ["FAB002", "FAB01"]\n'
                         '[tool.fabric-lsp.severity]\nFAB002 = "warning"\nFAB001 = "warnin"\n')
    config, problems = load_config(tmp_path)
    assert config.select == {"FAB002"} and config.hints is True
    assert config.severity == {"FAB002": Severity.WARNING}
    assert problems == [
        f"fabric-lsp: config error: {pyproject}:4: select: unknown rule code 'FAB01' (did you mean 'FAB001'?)",
        f"fabric-lsp: config error: {pyproject}:5: severity: FAB001: expected one of error, warning, information, "
        "hint, got 'warnin' (did you mean 'warning'?)",
    ]
    dedicated = write(tmp_path / "sub" / ".fabric-lsp.toml", 'hints = true\nignore = ["FAB0008"]\n')
    assert load_config(tmp_path / "sub")[1] == [
        f"fabric-lsp: config error: {dedicated}:2: ignore: unknown rule code 'FAB0008' (did you mean 'FAB008'?)"]
