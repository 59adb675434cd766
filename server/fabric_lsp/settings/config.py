"""Settings of one check: defaults, overridden by the file's settings file, overridden by the caller.

The settings file of a Python file is the closest one above it, as ruff finds `ruff.toml`: in each
folder from the file's upwards, `.fabric-lsp.toml`, then `fabric-lsp.toml` (top-level keys), then a
`pyproject.toml` with a `[tool.fabric-lsp]` table (`find_config_file`; the command line and the
language server both use it). The search stops at the repository root (the folder holding `.git`)
or the home folder, and passes over settings files another user owns (fabric_lsp.sources.upward), so a file
planted in a shared folder above a checkout does not configure it. `ConfigResolver` gives each file
of a run its Config.

The engine applies `select`/`ignore`/`per-file-ignores`/`severity`/`hints` itself from the Config
it is given, so the CLI and the language server only build a Config (with `load_config`) and pass
it through.

Every bad value is reported as one line (`fabric-lsp: config: <file>: <key>: <problem>; using the
default`) and replaced by its default; loading never fails.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from fabric_lsp.sources.files import MAX_SETTINGS_BYTES, FileRefused, read_bytes
from fabric_lsp.sources.files import reason as file_reason
from fabric_lsp.findings import Severity
from fabric_lsp.sources.globs import (MAX_GLOB_CHARACTERS_PER_FILE, MAX_GLOBS_PER_FILE, GlobBudget, GlobError, GlobSet,
                              compile_glob)
from fabric_lsp.records.rules_table import RULES
from fabric_lsp.sources.upward import home_folder, is_boundary, owned_by_user, owner_of
from fabric_lsp.sources.project_root import project_root_for
from fabric_lsp.sources.walk import DEFAULT_INCLUDE, Selection

from fabric_lsp.sources.toml_reader import toml as _toml

ALL_CODES = tuple(rule.code for rule in RULES)  # ("FAB001", ..., "FAB004"), from the one rules table
SECTION = "fabric-lsp"
# The settings files of a folder, first wins (ruff: `.ruff.toml`, `ruff.toml`, `pyproject.toml`).
# The dedicated files hold the keys at the top level; pyproject.toml counts only with our table.
CONFIG_FILE_NAMES = (".fabric-lsp.toml", "fabric-lsp.toml", "pyproject.toml")
DEFAULT_MAX_FILE_SIZE = 2 * 1024 * 1024
# No configuration can raise the limit above this: analysis costs time and memory in proportion to
# a file's size (benchmarks/bounds_bench.py), and a repository must not choose how much of either
# a check or the editor's server spends on one file.
MAX_FILE_SIZE_CEILING = 4 * 1024 * 1024


@dataclass(frozen=True)
class Config:
    select: frozenset[str] = frozenset(ALL_CODES)
    ignore: frozenset[str] = frozenset()
    severity: dict[str, Severity] = field(default_factory=dict)  # per-code override
    python: str | None = None  # interpreter jedi analyses against
    exclude: tuple[str, ...] = ()  # glob patterns, relative to the config's root
    extend_records: tuple[str, ...] = ()  # extra record directories
    hints: bool = False  # report hint-level findings
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    root: str | None = None  # directory holding the pyproject.toml the config came from
    # The project root of a file with no pyproject.toml/setup.py/setup.cfg/.git above it, when it
    # holds the file: the command line's working directory (the editor sets `root` instead).
    fallback_root: str | None = None
    # The workspace may choose programs to run (its pyproject `python`, its .venv): only from the
    # user level (user config `trusted`/`trusted-paths`, --trust-workspace), never from the repository.
    trusted: bool = False
    # Which files a directory walk checks (ruff's `include`/`extend-include`), and whether Jupyter
    # notebooks are read at all (`notebooks = false`: never, even when named on the command line).
    include: tuple[str, ...] = DEFAULT_INCLUDE
    extend_include: tuple[str, ...] = ()
    notebooks: bool = True
    # (glob, codes) in the file's order: the codes are not reported in the files a glob matches
    # (ruff's `per-file-ignores`; globs relative to `root`, a leading `!` negates).
    per_file_ignores: tuple[tuple[str, frozenset[str]], ...] = ()
    # Directory walks skip what git ignores (.gitignore files, .git/info/exclude), read as files.
    respect_gitignore: bool = True
    # Where the team publishes the rule pages (records/pages.py): links point there instead of the
    # installed copy. `https://docs.example.org/rules/{code}.html`, or a folder URL (+ `FAB001.md`).
    docs_url: str | None = None

    def enabled(self, code: str) -> bool:
        return code in self.select and code not in self.ignore

    @property
    def included(self) -> tuple[str, ...]:
        return self.include + self.extend_include

    def per_file_ignored(self, path: str) -> frozenset[str]:
        """The codes `per-file-ignores` turns off in the file `path`."""
        if not self.per_file_ignores:
            return frozenset()
        return _per_file_ignored(self.per_file_ignores, os.path.abspath(self.root or self.fallback_root or os.getcwd()),
                                 os.path.abspath(path))

    @property
    def selection(self) -> Selection:
        """What a directory walk needs from this configuration (walk.discover)."""
        return Selection(self.exclude, self.root, self.included, self.notebooks, self.respect_gitignore)


@functools.lru_cache(maxsize=64)
def _per_file_globs(entries: tuple[tuple[str, frozenset[str]], ...]) -> tuple[GlobSet, tuple[int, ...]]:
    """The entries' globs compiled together, once per table, and the entry of each glob."""
    globs, owners = [], []
    for number, (pattern, _) in enumerate(entries):
        try:
            globs.append(compile_glob(pattern[1:] if pattern.startswith("!") else pattern))
        except GlobError:
            continue
        owners.append(number)
    return GlobSet(globs), tuple(owners)


# Each file's answer is kept: the server asks again for the same files at every keystroke.
@functools.lru_cache(maxsize=8192)
def _per_file_ignored(entries: tuple[tuple[str, frozenset[str]], ...], base: str, path: str) -> frozenset[str]:
    # As ruff: a glob matches the path relative to the settings file's folder, or the bare file
    # name; as `exclude`, a glob that matches one of the file's folders matches the file.
    globs, owners = _per_file_globs(entries)
    relative = os.path.relpath(path, base)
    inside = not (relative == ".." or relative.startswith(".." + os.sep))
    accepted = globs.matching(os.path.basename(path), False)
    if inside:
        accepted |= globs.matching_path_or_folders(relative.replace(os.sep, "/"))
    hits = {owners[number] for number in globs.indices(accepted)}
    codes: set[str] = set()
    for number, (pattern, ignored) in enumerate(entries):
        if (number in hits) != pattern.startswith("!"):
            codes |= ignored
    return frozenset(codes)


# ---------------------------------------------------------------------------------------------
# Validation of single values. Each validator returns the converted value or raises _Bad(problem).


class _Bad(ValueError):
    pass


@dataclass(frozen=True)
class _Partial:
    """A value kept in part: `value` is used, each of `notices` is shown (one line each)."""

    value: Any
    notices: tuple[str, ...]


def expand_codes(items: Any) -> frozenset[str]:
    """A list of rule selectors -> the set of codes.

    A selector is a full code (`FAB001`, any case), a prefix of codes (`FAB`, `FAB00`) or `ALL`,
    like ruff's selectors. A selector that matches no code is an error.
    """
    if isinstance(items, str) or not isinstance(items, (list, tuple, set, frozenset)):
        raise _Bad(f"expected a list of rule codes, got {_describe(items)}")
    codes: set[str] = set()
    for item in items:
        if not isinstance(item, str):
            raise _Bad(f"expected a list of rule codes, found {_describe(item)}")
        selector = item.strip().upper()
        matched = set(ALL_CODES) if selector == "ALL" else {c for c in ALL_CODES if c.startswith(selector)}
        if not selector or not matched:
            raise _Bad(_unknown_code(item))
        codes |= matched
    return frozenset(codes)


def _unknown_code(item: Any) -> str:
    guess = did_you_mean(str(item).strip().upper(), ALL_CODES)
    return f"unknown rule code {item!r}" + (guess or f" (known: {', '.join(ALL_CODES)})")


def did_you_mean(word: str, choices: Sequence[str], quote: str = "'") -> str:
    """` (did you mean 'select'?)` for the closest of `choices`, as ruff suggests; "" when none is close."""
    import difflib

    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {quote}{found[0]}{quote}?)" if found else ""


class _KeptInPart(ValueError):
    """A list or table with bad entries: `value` holds the good ones, which keep their meaning."""

    def __init__(self, value: Any, problem: str) -> None:
        super().__init__(problem)
        self.value = value


def _codes_in_part(items: Any) -> frozenset[str]:
    """expand_codes for a settings layer: a bad entry is reported and left out, the others keep their
    meaning (`select = ["FAB002", "FAB01"]` selects FAB002, never every rule)."""
    if isinstance(items, str) or not isinstance(items, (list, tuple, set, frozenset)):
        raise _Bad(f"expected a list of rule codes, got {_describe(items)}")
    codes: set[str] = set()
    bad: list[str] = []
    for item in items:
        try:
            codes |= expand_codes([item])
        except _Bad as problem:
            bad.append(f"found {_describe(item)}" if not isinstance(item, str) else str(problem))
    if bad:
        raise _KeptInPart(frozenset(codes), "; ".join(bad))
    return frozenset(codes)


def _severity_table(value: Any) -> dict[str, Severity]:
    if not isinstance(value, Mapping):
        raise _Bad(f"expected a table of code = severity, got {_describe(value)}")
    table: dict[str, Severity] = {}
    names = ", ".join(s.value for s in Severity)
    bad: list[str] = []
    for code, level in value.items():
        if not isinstance(code, str) or code.upper() not in ALL_CODES:
            bad.append(_unknown_code(code))
        elif not isinstance(level, str) or level.lower() not in {s.value for s in Severity}:
            guess = did_you_mean(str(level).lower(), [s.value for s in Severity]) if isinstance(level, str) else ""
            bad.append(f"{code}: expected one of {names}, got {level!r}{guess}")
        else:
            table[code.upper()] = Severity(level.lower())
    if bad:  # the good entries keep their meaning
        raise _KeptInPart(table, "; ".join(bad))
    return table


def resolve_interpreter(value: str, base: Path | str) -> str:
    """The interpreter a `python` setting or `--python` names, as uv reads `--python`: a path to an
    interpreter, a virtual environment's folder (its bin/python; `.venv`), or a bare name
    (`python3.11`) looked up on PATH only, never as a file of the current or the workspace's folder,
    so a file a repository plants there is not taken for it. Relative paths are relative to `base`. The path is made
    absolute, not resolved: a venv's python is a symlink whose target loses the venv. Raises
    ValueError with one line saying what is missing."""
    bare = os.sep not in value and "/" not in value
    if bare and not os.path.isdir(Path(base) / value):  # `.venv` is a folder; `python3` a name on PATH
        found = shutil.which(value)
        if found:
            return os.path.abspath(found)
        raise ValueError(f"no interpreter named {value!r} on PATH")
    candidate = Path(os.path.expanduser(value))
    path = os.path.abspath(candidate if candidate.is_absolute() else Path(base) / candidate)
    if os.path.isdir(path):
        for inside in (("bin", "python"), ("bin", "python3"), ("Scripts", "python.exe")):
            if os.path.isfile(os.path.join(path, *inside)):
                return os.path.join(path, *inside)
        raise ValueError(f"{path} is a folder without bin/python (not a virtual environment)")
    if os.path.isfile(path):
        return path
    raise ValueError(f"no interpreter at {path}")


def _interpreter(base: Path) -> Callable[[Any], str]:
    def convert(value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise _Bad(f"expected a path to a Python interpreter, got {_describe(value)}")
        try:
            return resolve_interpreter(value, base)
        except ValueError as missing:
            raise _Bad(str(missing)) from None

    return convert


def _string_list(value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise _Bad(f"expected a list of strings, got {_describe(value)}")
    for item in value:
        if not isinstance(item, str) or not item:
            raise _Bad(f"expected a list of non-empty strings, found {_describe(item)}")
    return tuple(value)


def _directories(base: Path) -> Callable[[Any], tuple[str, ...]]:
    def convert(value: Any) -> tuple[str, ...]:
        dirs = []
        for item in _string_list(value):
            path = Path(os.path.expanduser(item))
            path = path if path.is_absolute() else base / path
            if not path.is_dir():
                raise _Bad(f"{item!r} is not a directory")
            dirs.append(os.path.abspath(path))
        return tuple(dirs)

    return convert


def _exclude_globs(source: str, key: str = "exclude") -> Callable[[Any], Any]:
    # Each glob is validated on its own: a bad one is reported and ignored, the others apply.
    def convert(value: Any) -> Any:
        kept = []
        notices = []
        for pattern in _string_list(value):
            try:
                compile_glob(pattern)
            except GlobError as error:
                notices.append(f'fabric-lsp: notice: {source}: {key}: "{pattern}": {error}; ignored')
                continue
            kept.append(pattern)
        return _Partial(tuple(kept), tuple(notices)) if notices else tuple(kept)

    return convert


def _per_file_ignores(source: str) -> Callable[[Any], Any]:
    # A table of glob -> list of codes; a bad entry is reported and left out, the others apply.
    def convert(value: Any) -> Any:
        if not isinstance(value, Mapping):
            raise _Bad(f"expected a table of glob = [codes], got {_describe(value)}")
        kept = []
        notices = []
        for pattern, codes in value.items():
            body = pattern[1:] if isinstance(pattern, str) and pattern.startswith("!") else pattern
            try:
                if not isinstance(pattern, str) or not body:
                    raise GlobError("empty pattern")
                compile_glob(body)
                kept.append((pattern, expand_codes(codes)))
            except GlobError as error:
                notices.append(f'fabric-lsp: notice: {source}: per-file-ignores: "{pattern}": {error}; ignored')
            except _Bad as bad:
                notices.append(_problem(source, f'per-file-ignores: "{pattern}"', str(bad), "ignored"))
        return _Partial(tuple(kept), tuple(notices)) if notices else tuple(kept)

    return convert


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Bad(f"expected true or false, got {_describe(value)}")
    return value


def _max_file_size(source: str) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise _Bad(f"expected a positive number of bytes, got {_describe(value)}")
        if value > MAX_FILE_SIZE_CEILING:
            return _Partial(MAX_FILE_SIZE_CEILING, (
                f"fabric-lsp: notice: {source}: max-file-size: {value} is above the ceiling of "
                f"{MAX_FILE_SIZE_CEILING} bytes; using {MAX_FILE_SIZE_CEILING}",))
        return value

    return convert


def _docs_url(value: Any) -> str:
    from fabric_lsp.records.pages import valid_docs_url

    if not isinstance(value, str) or not valid_docs_url(value):
        raise _Bad(f"expected an http(s) URL such as \"https://docs.example.org/rules/{{code}}.html\", got {_describe(value)}")
    return value


def _describe(value: Any) -> str:
    kind = {str: "string", bool: "boolean", int: "integer", float: "number", list: "array",
            dict: "table"}.get(type(value), type(value).__name__)
    text = repr(value)
    return f"{kind} {text if len(text) <= 40 else text[:37] + '...'}"


# key in the file -> (Config field, validator factory taking the base directory and the source)
_KEYS: dict[str, tuple[str, Callable[[Path, str], Callable[[Any], Any]]]] = {
    "select": ("select", lambda base, source: _codes_in_part),
    "ignore": ("ignore", lambda base, source: _codes_in_part),
    "severity": ("severity", lambda base, source: _severity_table),
    "python": ("python", lambda base, source: _interpreter(base)),
    "exclude": ("exclude", lambda base, source: _exclude_globs(source)),
    "extend-records": ("extend_records", lambda base, source: _directories(base)),
    "hints": ("hints", lambda base, source: _boolean),
    "max-file-size": ("max_file_size", lambda base, source: _max_file_size(source)),
    "include": ("include", lambda base, source: _exclude_globs(source, "include")),
    "extend-include": ("extend_include", lambda base, source: _exclude_globs(source, "extend-include")),
    "notebooks": ("notebooks", lambda base, source: _boolean),
    "extend-select": ("extend_select", lambda base, source: _codes_in_part),
    "per-file-ignores": ("per_file_ignores", lambda base, source: _per_file_ignores(source)),
    "extend-exclude": ("extend_exclude", lambda base, source: _exclude_globs(source, "extend-exclude")),
    "respect-gitignore": ("respect_gitignore", lambda base, source: _boolean),
    "docs-url": ("docs_url", lambda base, source: _docs_url),
}
KNOWN_KEYS = tuple(_KEYS)
# key -> the Config field it sets (extend-select / extend-exclude: merged into select / exclude as read).
KEY_FIELDS = {key: name for key, (name, _) in _KEYS.items()}


def _problem(source: str, key: str, problem: str, outcome: str = "using the default") -> str:
    return f"fabric-lsp: config: {source}: {key}: {problem}; {outcome}"


# A mistake in a settings file, as ruff treats one: `check` says where (file:line), which key and what
# is wrong (with a "did you mean"), and exits 2 without checking; the server shows it once and keeps
# the last good settings of that file.
CONFIG_ERROR = "fabric-lsp: config error: "


def is_config_error(line: str) -> bool:
    return line.startswith(CONFIG_ERROR)


def _error(where: str, key: str | None, problem: str) -> str:
    return f"{CONFIG_ERROR}{where}: {key + ': ' if key else ''}{problem}"


_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(?:#.*)?$")
_KEY = re.compile(r"""^\s*(?:"([^"]+)"|'([^']+)'|([A-Za-z0-9_-]+))\s*=""")


def key_lines(text: str, in_pyproject: bool) -> dict[str, int]:
    """The 1-based line of each key of our settings in a settings file's text (`[tool.fabric-lsp]` of
    a pyproject.toml, the top level of a dedicated file; a sub-table `[tool.fabric-lsp.severity]` is
    the line of `severity`), so that a problem can say where it is. `""`: the table's own line."""
    prefix = ("tool", SECTION) if in_pyproject else ()
    lines: dict[str, int] = {}
    inside = not in_pyproject
    for number, line in enumerate(text.splitlines(), 1):
        header = _HEADER.match(line)
        if header is not None:
            parts = tuple(part.strip().strip("\"'") for part in header.group(1).split("."))
            inside = parts == prefix
            if parts == prefix:
                lines.setdefault("", number)
            elif parts[:len(prefix)] == prefix and len(parts) > len(prefix):
                lines.setdefault(parts[len(prefix)].replace("_", "-"), number)
            continue
        key = _KEY.match(line) if inside else None
        if key is not None:
            lines.setdefault(next(g for g in key.groups() if g).replace("_", "-"), number)
    return lines


def parse_settings(
    table: Mapping[str, Any], base: Path, source: str, outcome: str = "using the default",
    lines: Mapping[str, int] | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """Validate one layer of settings (a `[tool.fabric-lsp]` table or the caller's overrides).

    Keys use the file's spelling (`max-file-size`); `max_file_size` is accepted too. A value of None
    means "not set". Relative paths are taken relative to `base`. Returns the Config fields this layer
    sets and one problem line per bad key (that key is left unset, so the layer below applies).
    """
    fields: dict[str, Any] = {}
    problems: list[str] = []

    def problem(key: str, text: str, this_outcome: str = outcome) -> str:
        if lines is None:  # the caller's overrides (editor settings): not a file's mistake
            return _problem(source, key, text, this_outcome)
        line = lines.get(key.replace("_", "-")) or lines.get("")
        return _error(f"{source}:{line}" if line else source, key, text)

    for raw_key, value in table.items():
        key = str(raw_key).replace("_", "-")
        if key not in _KEYS:
            guess = did_you_mean(key, KNOWN_KEYS, '"')
            problems.append(problem(str(raw_key), "unknown key" + (guess or f" (known keys: {', '.join(KNOWN_KEYS)})")))
            continue
        if value is None:
            continue
        name, factory = _KEYS[key]
        try:
            converted = factory(base, source)(value)
        except _KeptInPart as part:
            if lines is None and not part.value:  # an override with nothing good: the layer below applies
                problems.append(problem(key, str(part)))
                continue
            problems.append(problem(key, str(part), "the others apply"))
            converted = part.value
        except _Bad as bad:
            problems.append(problem(key, str(bad)))
            continue
        if isinstance(converted, _Partial):
            problems.extend(converted.notices)
            converted = converted.value
        fields[name] = converted
    left_out, keys = _bound_globs(fields)
    if left_out:
        problems.append(f"fabric-lsp: notice: {source}: more globs than a settings file may hold "
                        f"({MAX_GLOBS_PER_FILE} globs, {MAX_GLOB_CHARACTERS_PER_FILE} characters in all); "
                        f"the last {left_out} are ignored ({', '.join(keys)})")
    return fields, problems


_GLOB_FIELDS = {"exclude": "exclude", "extend_exclude": "extend-exclude", "include": "include",
                "extend_include": "extend-include", "per_file_ignores": "per-file-ignores"}


def _bound_globs(fields: dict[str, Any]) -> tuple[int, list[str]]:
    """The volume of globs of one settings file (globs.GlobBudget), counted in the file's order: the
    globs past the bound are dropped from `fields`. Returns how many, and from which keys."""
    budget = GlobBudget()
    keys = []
    for name in [name for name in fields if name in _GLOB_FIELDS]:
        if name == "per_file_ignores":
            kept = tuple(entry for entry in fields[name] if budget.take(entry[0]))
        else:
            kept = tuple(pattern for pattern in fields[name] if budget.take(pattern))
        if len(kept) < len(fields[name]):
            keys.append(_GLOB_FIELDS[name])
        fields[name] = kept
    return budget.left_out, keys


# ---------------------------------------------------------------------------------------------
# Finding and reading the settings file


def config_file_in(directory: Path, notices: list[str] | None = None) -> Path | None:
    """The settings file of one folder: `.fabric-lsp.toml`, else `fabric-lsp.toml`, else a
    pyproject.toml with a `[tool.fabric-lsp]` table (ruff's order for its own files). A file
    another user owns is passed over (upward.owned_by_user), with a line in `notices`."""
    for name in CONFIG_FILE_NAMES[:-1]:
        candidate = directory / name
        if candidate.is_file() and _owned(candidate, notices):
            return candidate
    candidate = directory / "pyproject.toml"
    if candidate.is_file() and _has_table(candidate) and _owned(candidate, notices):
        return candidate
    return None


def _owned(path: Path, notices: list[str] | None) -> bool:
    if owned_by_user(str(path)):
        return True
    if notices is not None:
        notices.append(f"fabric-lsp: notice: {path}: ignored: owned by another user (uid {owner_of(str(path))}); "
                       "a settings file counts only when you or root own it (--config PATH uses it all the same)")
    return False


def find_config_file(start: Path, notices: list[str] | None = None) -> Path | None:
    """The settings file of `start` (a file or a folder): the closest folder at or above it that
    has one (config_file_in), up to the repository root or the home folder (upward.is_boundary).
    The command line (per file) and the language server both use it."""
    start = Path(os.path.abspath(start))
    directory = start if start.is_dir() else start.parent
    home = home_folder()
    for candidate_dir in (directory, *directory.parents):
        found = config_file_in(candidate_dir, notices)
        if found is not None:
            return found
        if is_boundary(str(candidate_dir), home):
            return None
    return None


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above `start` that has a `[tool.fabric-lsp]` table, within
    the same bounds as find_config_file.

    Like ruff, a pyproject.toml without our table does not stop the search, so a sub-package's
    pyproject does not hide the repository's settings. One that cannot be parsed but mentions the
    table is returned, so that its problem is reported.
    """
    start = Path(os.path.abspath(start))
    directory = start if start.is_dir() else start.parent
    home = home_folder()
    for candidate_dir in (directory, *directory.parents):
        candidate = candidate_dir / "pyproject.toml"
        if candidate.is_file() and _has_table(candidate) and owned_by_user(str(candidate)):
            return candidate
        if is_boundary(str(candidate_dir), home):
            return None
    return None


def _near_miss(tool: Mapping[str, Any]) -> str | None:
    """A `[tool.X]` table that is ours misspelt (`fabric_lsp`, `fabriclsp`, `Fabric-LSP`), or None."""
    for name in tool:
        if isinstance(name, str) and name != SECTION and re.sub(r"[-_.\s]", "", name.lower()) == "fabriclsp":
            return name
    return None


def _has_table(path: Path) -> bool:
    try:
        data = read_bytes(path, MAX_SETTINGS_BYTES)
    except FileRefused:
        return True  # a regular file we refuse to read (too large): read_table says why
    except OSError:
        return False
    if _toml is not None:
        try:
            tool = _toml.loads(data.decode("utf-8")).get("tool")
            # A misspelt table counts too: read_table reports it (ruff: unknown field).
            return isinstance(tool, Mapping) and (SECTION in tool or _near_miss(tool) is not None)
        except (_toml.TOMLDecodeError, UnicodeDecodeError):
            pass
    # Unparsable (or no parser): claim it if it seems to speak about us, so the problem is reported.
    return re.search(rb"tool\s*\.\s*[\"']?fabric[-_]?lsp|^\s*fabric-lsp\s*=", data, re.MULTILINE | re.IGNORECASE) is not None


def read_table(path: Path) -> tuple[Mapping[str, Any] | None, list[str]]:
    """The `[tool.fabric-lsp]` table of a pyproject.toml (or, for another .toml file such as a
    dedicated `fabric-lsp.toml`, the whole file when it has no such table)."""
    table, problems, _ = read_settings(path)
    return table, problems


def read_settings(path: Path) -> tuple[Mapping[str, Any] | None, list[str], dict[str, int]]:
    """read_table, and the line of each key (key_lines). A file that cannot be read or parsed, or a
    misspelt `[tool.fabric_lsp]`, is a config error (CONFIG_ERROR) with its line."""
    source = str(path)
    if _toml is None:
        return None, [_error(source, None, "reading TOML needs Python 3.11+ or the tomli package")], {}
    try:
        # O_NONBLOCK, regular files only, at most MAX_SETTINGS_BYTES: a link to /dev/zero or a FIFO
        # gives this error, not a hang.
        text = read_bytes(path, MAX_SETTINGS_BYTES).decode("utf-8")
    except OSError as error:
        return None, [_error(source, None, f"cannot read: {file_reason(error)}")], {}
    except UnicodeDecodeError as error:
        return None, [_error(source, None, f"not UTF-8: {error}")], {}
    try:
        document = _toml.loads(text)
    except _toml.TOMLDecodeError as error:
        line = re.search(r"at line (\d+)", str(error))
        return None, [_error(f"{source}:{line.group(1)}" if line else source, None, f"invalid TOML: {error}")], {}
    in_pyproject = path.name == "pyproject.toml"
    tool = document.get("tool")
    if isinstance(tool, Mapping) and SECTION in tool:
        lines = key_lines(text, True)
        table = tool[SECTION]
        if not isinstance(table, Mapping):
            return None, [_error(f"{source}:{lines.get('', 1)}", f"tool.{SECTION}",
                                 f"expected a table, got {_describe(table)}")], {}
        return table, [], lines
    if isinstance(tool, Mapping) and _near_miss(tool) is not None:
        name = _near_miss(tool)
        where = next((n for n, line in enumerate(text.splitlines(), 1) if name in line and "[" in line), None)
        return None, [_error(f"{source}:{where}" if where else source, f"[tool.{name}]",
                             f'unknown table (did you mean "[tool.{SECTION}]"?); its settings are not used')], {}
    if in_pyproject:
        return {}, [], {}
    return document, [], key_lines(text, False)


def load_config(
    start: Path,
    overrides: Mapping[str, Any] | None = None,
    *,
    config_file: Path | None = None,
    overrides_source: str = "settings",
    trust_workspace: bool = False,
    user=None,
    no_file: bool = False,
) -> tuple[Config, list[str]]:
    """Defaults <- the settings file of `start` (find_config_file; or `config_file` when given;
    none with `no_file`) <- `overrides` (same keys; None values are "not set").

    Relative paths in the file are relative to the file's directory; in `overrides` relative to
    `start` (a directory, or a file whose directory is used). Rule selection is layered as in
    ruff: an override's `select` replaces the selection, its `extend-select` adds to it, its
    `ignore` adds to the ignored codes. `user`: the (UserConfig, problems) already loaded.
    Returns the Config and the problem lines to show the user (bad values fall back to the
    default; loading never raises).
    """
    start = Path(os.path.abspath(start))
    start_dir = start if start.is_dir() else start.parent
    problems: list[str] = []
    fields: dict[str, Any] = {}
    path = config_file if config_file is not None else (None if no_file else find_config_file(start, problems))
    if path is not None:
        path = Path(os.path.abspath(path))
        fields["root"] = str(path.parent)
        table, read_problems, lines = read_settings(path)
        problems += read_problems
        if table:
            file_fields, file_problems = parse_settings(table, path.parent, str(path), lines=lines)
            _extend(file_fields, file_fields)
            fields.update(file_fields)
            problems += file_problems
    if user is None:
        from fabric_lsp.settings.user_config import load_user_config

        user = load_user_config()
    user, user_problems = user
    problems += user_problems
    trusted = trust_workspace or user.trusts(fields.get("root") or start_dir)
    fields["trusted"] = trusted
    if "python" in fields and not trusted:
        # A repository must not name a program for us to run: its python is dropped.
        del fields["python"]
        problems.append(
            f"fabric-lsp: notice: {path}: python: ignored: a repository cannot choose a program to run; "
            "set it in the user config or pass --trust-workspace"
        )
    if "python" not in fields and user.python:
        fields["python"] = user.python
    if fields.get("extend_records") and path is not None:
        fields["extend_records"] = _consented_records(fields["extend_records"], path, user, problems)
    if overrides:
        # A bad override leaves the file's value (or the default) in force.
        override_fields, override_problems = parse_settings(
            overrides, start_dir, overrides_source, "not overriding"
        )
        _layer_selection(fields, override_fields)
        _extend(fields, override_fields)
        fields.update(override_fields)
        problems += override_problems
    return replace(Config(), **fields), problems


def _consented_records(folders: tuple[str, ...], path: Path, user, problems: list[str]) -> tuple[str, ...]:
    """The record folders a settings file may name: inside its own folder, or with the user
    config's consent (user_config.UserConfig.allows_records); the others dropped with a notice."""
    kept = []
    for folder in folders:
        if user.allows_records(folder, str(path.parent)):
            kept.append(folder)
        else:
            problems.append(f"fabric-lsp: notice: {path}: extend-records: {folder!r} ignored: it is outside the "
                            f"settings file's folder; allow it in the user config (record-paths)")
    return tuple(kept)


def _extend(below: dict[str, Any], layer: dict[str, Any]) -> None:
    """A layer's `extend-select` / `extend-exclude` added to what the layers below (or the same
    layer's `select` / `exclude`) say; the layer's fields then hold the result."""
    if "extend_select" in layer:
        layer["select"] = layer.get("select", below.get("select", frozenset(ALL_CODES))) | layer.pop("extend_select")
    if "extend_exclude" in layer:
        layer["exclude"] = tuple(dict.fromkeys(layer.get("exclude", below.get("exclude", ())) + layer.pop("extend_exclude")))


def _layer_selection(below: dict[str, Any], layer: dict[str, Any]) -> None:
    """ruff's rule selection across layers (its `as_rule_table`): a later layer's `select`
    replaces the selection made below (ignores included), `extend-select` adds, `ignore` removes;
    so the result is one set of selected codes, and the ignored codes are those left out."""
    if not {"select", "extend_select", "ignore"} & set(layer):
        return
    selected = set(below.get("select", frozenset(ALL_CODES))) - set(below.get("ignore", ()))
    if "select" in layer:
        selected = set(layer.pop("select"))
    selected |= layer.pop("extend_select", frozenset())
    ignored = layer.pop("ignore", frozenset())
    selected -= ignored
    layer["select"] = frozenset(selected)
    layer["ignore"] = frozenset((set(below.get("ignore", ())) | ignored) - selected)


def apply_settings(config: Config, fields: Mapping[str, Any]) -> Config:
    """`config` with one layer of validated fields (parse_settings) on top: each replaces the
    value below, except `extend-select` / `extend-exclude`, which add to it (the editor's layer)."""
    fields = dict(fields)
    _extend({"select": config.select, "exclude": config.exclude}, fields)
    return replace(config, **fields)


# ---------------------------------------------------------------------------------------------
# The configuration of each file of a run


class ConfigResolver:
    """The Config of each file of one `check` run, as ruff resolves its settings: the closest
    settings file above the file (find_config_file), with the command line's `overrides` on top;
    with `config_file` (`--config`), that one file for every file. Each settings file is read
    once; its problems are collected once (`take_problems`)."""

    def __init__(self, overrides: Mapping[str, Any] | None = None, *, config_file: Path | None = None,
                 overrides_source: str = "command line", trust_workspace: bool = False,
                 fallback_root: str | None = None, only: Config | None = None, isolated: bool = False) -> None:
        from fabric_lsp.settings.user_config import UserConfig, load_user_config

        self._only = only  # one Config for every file, given by the caller
        # `check --isolated` (ruff's): no settings file and no user config, the defaults and the command line only.
        self.isolated = isolated
        self.overrides = dict(overrides or {})
        self.config_file = Path(os.path.abspath(config_file)) if config_file is not None else None
        self.overrides_source = overrides_source
        self.trust_workspace = trust_workspace
        self.fallback_root = fallback_root
        self._user = (UserConfig(), []) if isolated else (load_user_config() if only is None else None)
        self._files: dict[str, Path | None] = {}  # folder -> its settings file
        self._home = home_folder()
        self._configs: dict[tuple, Config] = {}  # settings file (or none, and trusted) -> Config
        self._by_directory: dict[str, Config] = {}
        self._problems: dict[str, None] = {}
        self._taken = 0

    @classmethod
    def fixed(cls, config: Config) -> "ConfigResolver":
        """One Config for every file (callers that built it themselves)."""
        resolver = cls(fallback_root=config.fallback_root, only=config)
        resolver._configs[()] = config
        return resolver

    def _settings_file(self, directory: str) -> Path | None:
        if self.isolated:
            return None
        known = self._files.get(directory, False)
        if known is not False:
            return known
        skipped: list[str] = []
        found = config_file_in(Path(directory), skipped)
        self._problems.update(dict.fromkeys(skipped))
        if found is None and not is_boundary(directory, self._home):
            parent = os.path.dirname(directory)
            found = self._settings_file(parent) if parent != directory else None
        self._files[directory] = found
        return found

    def for_directory(self, directory: str) -> Config:
        """The Config of the files inside `directory`."""
        if self._only is not None:
            return self._only
        directory = os.path.abspath(directory)
        known = self._by_directory.get(directory)
        if known is not None:
            return known
        path = self.config_file or self._settings_file(directory)
        # With no settings file, whether the folder is trusted depends on the folder itself.
        key = (str(path),) if path is not None else (None, self.trust_workspace or self._user[0].trusts(directory))
        config = self._configs.get(key)
        if config is None:
            config, problems = load_config(Path(directory), self.overrides, config_file=path, no_file=path is None,
                                           overrides_source=self.overrides_source,
                                           trust_workspace=self.trust_workspace, user=self._user)
            config = replace(config, fallback_root=self.fallback_root)
            self._problems.update(dict.fromkeys(problems))
            self._configs[key] = config
        self._by_directory[directory] = config
        return config

    def for_path(self, path: str) -> Config:
        """The Config of the file `path`."""
        return self.for_directory(os.path.dirname(os.path.abspath(path)))

    def selection_for(self, directory: str) -> Selection:
        return self.for_directory(directory).selection

    def project_root(self, path: str) -> str:
        config = self.for_path(path)
        return project_root_for(path, config.root, config.fallback_root)

    @property
    def configs(self) -> list[Config]:
        return list(self._configs.values())

    @property
    def max_file_size(self) -> int:
        """The largest `max-file-size` of the configurations used so far (what a fix may read)."""
        return max((config.max_file_size for config in self._configs.values()), default=DEFAULT_MAX_FILE_SIZE)

    def take_problems(self) -> list[str]:
        """The problem lines not taken yet, in the order they were found."""
        problems = list(self._problems)
        new, self._taken = problems[self._taken:], len(problems)
        return new
