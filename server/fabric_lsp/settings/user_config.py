"""The user's own settings: the only place (besides the command line and the editor's user settings)
where the user can allow what a repository must never decide for itself.

A repository is untrusted by default: its `pyproject.toml` cannot name a program for us to run, and
its `.venv` is read as files, never executed. This file lives outside every repository:
`$FABRIC_LSP_USER_CONFIG`, else `$XDG_CONFIG_HOME/fabric-lsp/config.toml`, else
`~/.config/fabric-lsp/config.toml`. Keys:

    python = "/usr/bin/python3.12"   # interpreter to analyse against (its sys.path is probed by running it)
    trusted = true                  # trust every workspace: its `python` setting and its .venv may run
    trusted-paths = ["~/work"]      # trust workspaces at or under these folders only
    replace-records = true          # `extend-records` may replace built-in records (not only add)
    allow-programs-in-hooks = true  # `check --python`/`--trust-workspace` allowed in a pre-commit hook
    record-paths = ["~/kb"]         # record folders outside a repository that its `extend-records` may name

A pre-commit hook's options come from the repository's `.pre-commit-config.yaml` (its `args:`), so
under pre-commit (`PRE_COMMIT=1`) `check` refuses the options that run programs unless
`allow-programs-in-hooks` is true here.

Like the project config, a bad value is reported in one line and replaced by its default.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabric_lsp.sources.files import MAX_SETTINGS_BYTES, read_bytes, reason
from fabric_lsp.sources.toml_reader import toml as _toml  # the same TOML reader as the project config

ENV_PATH = "FABRIC_LSP_USER_CONFIG"


@dataclass(frozen=True)
class UserConfig:
    path: str | None = None  # the file the values came from (None: no file)
    python: str | None = None
    trusted: bool = False
    trusted_paths: tuple[str, ...] = ()
    replace_records: bool = False
    allow_programs_in_hooks: bool = False
    record_paths: tuple[str, ...] = ()  # real paths

    def trusts(self, root: str | os.PathLike[str] | None) -> bool:
        """True when the workspace at `root` may choose programs for us to run."""
        if self.trusted:
            return True
        if root is None or not self.trusted_paths:
            return False
        real = os.path.realpath(root)
        for base in self.trusted_paths:
            if real == base or real.startswith(base.rstrip(os.sep) + os.sep):
                return True
        return False

    def allows_records(self, folder: str, settings_folder: str) -> bool:
        """May a settings file in `settings_folder` load the records of `folder`? Inside that
        folder (real paths: a link leading out is outside), in a trusted workspace, or at or under
        one of `record-paths`."""
        real = os.path.realpath(folder)
        inside = [os.path.realpath(settings_folder), *self.record_paths]
        if any(real == base or real.startswith(base.rstrip(os.sep) + os.sep) for base in inside):
            return True
        return self.trusts(settings_folder)


def user_config_path() -> Path:
    explicit = os.environ.get(ENV_PATH)
    if explicit:
        return Path(os.path.expanduser(explicit))
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "fabric-lsp" / "config.toml"


def _problem(source: str, key: str, problem: str) -> str:
    return f"fabric-lsp: user config: {source}: {key}: {problem}; using the default"


def load_user_config(path: Path | None = None) -> tuple[UserConfig, list[str]]:
    """The user's settings and one line per problem. A missing file is not a problem."""
    path = path if path is not None else user_config_path()
    source = str(path)
    try:
        if not path.is_file():  # missing, or /dev/null to do without one
            return UserConfig(), []
        if _toml is None:
            return UserConfig(), [_problem(source, "(file)", "reading TOML needs Python 3.11+ or tomli")]
        document = _toml.loads(read_bytes(path, MAX_SETTINGS_BYTES).decode("utf-8"))  # regular files only
    except OSError as error:
        return UserConfig(), [_problem(source, "(file)", f"cannot read: {reason(error)}")]
    except (ValueError, UnicodeDecodeError) as error:  # TOMLDecodeError is a ValueError
        return UserConfig(), [_problem(source, "(file)", f"invalid TOML: {error}")]
    fields: dict[str, Any] = {"path": source}
    problems: list[str] = []
    base = path.parent
    for raw_key, value in document.items():
        key = str(raw_key).replace("_", "-")
        if key == "python":
            if isinstance(value, str) and value.strip():
                candidate = Path(os.path.expanduser(value))
                candidate = candidate if candidate.is_absolute() else base / candidate
                fields["python"] = os.path.abspath(candidate)
            else:
                problems.append(_problem(source, key, f"expected a path to a Python interpreter, got {value!r}"))
        elif key in ("trusted", "replace-records", "allow-programs-in-hooks"):
            if isinstance(value, bool):
                fields[key.replace("-", "_")] = value
            else:
                problems.append(_problem(source, key, f"expected true or false, got {value!r}"))
        elif key in ("trusted-paths", "record-paths"):
            if isinstance(value, list) and all(isinstance(item, str) and item for item in value):
                fields[key.replace("-", "_")] = tuple(os.path.realpath(os.path.expanduser(item)) for item in value)
            else:
                problems.append(_problem(source, key, "expected a list of folders"))
        else:
            problems.append(_problem(source, str(raw_key), "unknown key (known keys: python, trusted, "
                                                           "trusted-paths, replace-records, "
                                                           "allow-programs-in-hooks, record-paths)"))
    return UserConfig(**fields), problems
