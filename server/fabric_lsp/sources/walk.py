"""Which files to check and how to read them.

A directory walk applies, in each folder, the settings of that folder's configuration (`Selection`:
`include`, `exclude`/`extend-exclude`, `notebooks`, `respect-gitignore`), as ruff does with its
hierarchy of settings files; git's ignore rules are read from the files (`GitIgnore`), git is
never run.

Reading never raises: a file that cannot be checked (unreadable, binary, undecodable, too large)
yields a `Notice` the caller prints as `fabric-lsp: notice: <path>: <reason>`, and the run goes on.
"""

from __future__ import annotations

import codecs
import functools
import hashlib
import io
import os
import stat
import threading
import tokenize
from dataclasses import dataclass
from typing import Callable, Iterable

from fabric_lsp.sources.globs import GlobError, GlobSet, compile_glob

# Directory names never descended into (hidden directories are skipped too).
SKIP_DIRS = frozenset(
    {".venv", "venv", "site-packages", "node_modules", "build", "dist", "__pycache__"}
)
PYTHON_SUFFIXES = (".py",)
NOTEBOOK_SUFFIXES = (".ipynb",)
DEFAULT_INCLUDE = ("*.py", "*.ipynb")  # ruff's default, less what this tool does not read (.pyi, pyproject.toml)


@dataclass(frozen=True)
class Selection:
    """What decides which files a walk picks up under one configuration (config.Config.selection)."""

    exclude: tuple[str, ...] = ()  # globs, relative to `root`
    root: str | None = None  # the settings file's folder (None: the current directory)
    include: tuple[str, ...] = DEFAULT_INCLUDE
    notebooks: bool = True
    respect_gitignore: bool = True


@dataclass(frozen=True)
class Notice:
    path: str
    reason: str

    def __str__(self) -> str:
        return f"fabric-lsp: notice: {self.path}: {self.reason}"

    def format(self, cwd: str | None = None) -> str:
        """The stderr line, the path relative to `cwd` when below it."""
        return f"fabric-lsp: notice: {display_path(self.path, cwd)}: {self.reason}"


@dataclass(frozen=True)
class DecodedFile:
    path: str  # absolute, as given (symlinks not resolved)
    text: str  # decoded, line endings untouched
    encoding: str  # codec to write it back with ("utf-8-sig" keeps a BOM)
    digest: str = ""  # SHA-256 of the bytes read (a fix is written only over these same bytes)
    # A Jupyter notebook (fabric_lsp.sources.notebook.NotebookFile): `text` is then its code cells joined,
    # the unit the analysis reads; fixes are written back into the cells of the JSON.
    notebook: object | None = None


# ---------------------------------------------------------------------------------------------
# Discovery


class ExcludeMatcher:
    """The configured `exclude` globs, relative to the config root (or the current directory):
    compiled once (exclude_matcher shares one per globs and root), each path's verdict kept."""

    def __init__(self, patterns: Iterable[str], root: str | None) -> None:
        self.root = os.path.abspath(root or os.getcwd())
        self._globs = glob_set(tuple(patterns))
        self._verdicts: dict[tuple[str, bool], bool] = {}

    def excluded(self, path: str, is_dir: bool) -> bool:
        if not self._globs:
            return False
        relative = os.path.relpath(os.path.abspath(path), self.root)
        if relative.startswith(".." + os.sep) or relative == "..":
            return False  # outside the root: the globs do not speak about it
        key = (relative, is_dir)
        known = self._verdicts.get(key)
        if known is None:
            if len(self._verdicts) >= MAX_KEPT_VERDICTS:
                self._verdicts.clear()
            known = self._verdicts[key] = self._globs.matches_any(relative.replace(os.sep, "/"), is_dir)
        return known


# Verdicts kept per matcher (the server asks again for the same paths at every keystroke).
MAX_KEPT_VERDICTS = 65536


@functools.lru_cache(maxsize=64)
def glob_set(patterns: tuple[str, ...]) -> GlobSet:
    """The globs compiled together, once per list (a bad glob is left out: it was reported, once,
    when the settings were read)."""
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(compile_glob(pattern))
        except GlobError:
            continue
    return GlobSet(compiled)


@functools.lru_cache(maxsize=64)
def _shared_exclude_matcher(patterns: tuple[str, ...], root: str) -> ExcludeMatcher:
    return ExcludeMatcher(patterns, root)


def exclude_matcher(patterns: Iterable[str], root: str | None) -> ExcludeMatcher:
    """The ExcludeMatcher of these globs and root, made once and shared (with its verdicts)."""
    return _shared_exclude_matcher(tuple(patterns), os.path.abspath(root or os.getcwd()))


class IncludeMatcher:
    """Which files a directory walk picks up: the `include` globs (ruff's `include`; `*.py` and
    `*.ipynb` by default), without notebooks when `notebooks = false`."""

    def __init__(self, patterns: Iterable[str], root: str | None, notebooks: bool = True) -> None:
        self.root = os.path.abspath(root or os.getcwd())
        self.notebooks = notebooks
        self._suffixes: list[str] = []  # `*.py`-style globs, matched by name without a glob
        others = []
        for pattern in patterns:
            if pattern.startswith("*.") and not any(c in pattern[2:] for c in "*?[/"):
                self._suffixes.append(pattern[1:])
            else:
                others.append(pattern)
        self._globs = glob_set(tuple(others))
        self._suffix_tuple = tuple(self._suffixes)

    def included(self, path: str, name: str) -> bool:
        if not self.notebooks and name.endswith(NOTEBOOK_SUFFIXES):
            return False
        if name.endswith(self._suffix_tuple):
            return True
        if not self._globs:
            return False
        relative = os.path.relpath(os.path.abspath(path), self.root)
        if relative.startswith(".." + os.sep):
            relative = name
        return self._globs.matches_any(relative.replace(os.sep, "/"), False)


def discover(paths: Iterable[str], exclude: Iterable[str] = (), root: str | None = None,
             include: Iterable[str] = DEFAULT_INCLUDE, notebooks: bool = True, *,
             selection_for: Callable[[str], Selection] | None = None, force_exclude: bool = False,
             respect_gitignore: bool = True) -> tuple[list[str], list[Notice]]:
    """Files to check under `paths` (the `include` globs: Python files and notebooks), sorted,
    without duplicates.

    `selection_for(folder)`: the Selection of the configuration that applies inside `folder` (ruff's
    hierarchy of settings); without it, one Selection made of `exclude`, `root`, `include`,
    `notebooks` and `respect_gitignore` for every folder.

    Explicit file arguments are always included (a notebook only while notebooks are on), unless
    `force_exclude`: then they, and explicit folders, are left out when the walk would leave them
    out (an excluded or git-ignored path, or one inside an excluded, git-ignored, hidden or skipped
    folder below the configuration's root). Directories are walked recursively, skipping SKIP_DIRS,
    hidden directories, the `exclude` globs and (with `respect-gitignore`) what git ignores. A
    symbolic link to a folder met in the walk is not followed, where it leads inside or outside
    the tree (as ruff: `rootfs -> /` must not make the walk read the machine, nor apply other
    projects' settings); a folder named in `paths` is walked even when it is a link (the user chose
    it), and a link to a file is checked as the file it names. A walk reads at most
    MAX_WALK_FOLDERS folders and picks up at most MAX_WALK_FILES files, in a fixed order; past
    either bound the rest is left out, with one notice. A path that does not exist raises
    FileNotFoundError.
    """
    if selection_for is None:
        fixed = Selection(tuple(exclude), root, tuple(include), notebooks, respect_gitignore)
        selection_for = lambda directory: fixed  # noqa: E731
    rules = _Rules(selection_for)
    found: dict[str, str] = {}  # real path -> path as reached (first wins)
    notices: list[Notice] = []
    budget = _WalkBudget()

    def add(path: str) -> None:
        try:
            real = os.path.realpath(path)
        except OSError:  # pragma: no cover - realpath does not raise on Linux
            real = path
        found.setdefault(real, os.path.abspath(path))

    for argument in paths:
        if not os.path.lexists(argument):
            raise FileNotFoundError(argument)
        absolute = os.path.abspath(argument)
        is_dir = os.path.isdir(argument)
        if force_exclude and rules.excluded_argument(absolute, is_dir):
            continue
        if is_dir:
            _walk(absolute, rules, add, notices, budget)
        elif not rules.selection(os.path.dirname(absolute)).notebooks and argument.endswith(NOTEBOOK_SUFFIXES):
            notices.append(Notice(absolute, "a notebook, and notebooks are off (notebooks = false); skipped"))
        else:
            add(argument)  # even if excluded, non-.py, or a broken link: reading will tell
    if rules.gitignore is not None:
        notices.extend(Notice(path, reason) for path, reason in rules.gitignore.take_notices())
    return sorted(set(found.values())), notices


def force_excluded(path: str, is_dir: bool, selection_for: Callable[[str], Selection]) -> bool:
    """Whether --force-exclude leaves out `path` (named on the command line, or given as the
    name of standard input), as `discover` does."""
    return _Rules(selection_for).excluded_argument(os.path.abspath(path), is_dir)


class _Rules:
    """The matchers of each folder's Selection, made once per Selection, and git's rules."""

    def __init__(self, selection_for: Callable[[str], Selection]) -> None:
        self.selection = selection_for
        self._matchers: dict[Selection, tuple[ExcludeMatcher, IncludeMatcher]] = {}
        self.gitignore = None

    def matchers(self, directory: str) -> tuple[Selection, ExcludeMatcher, IncludeMatcher]:
        selection = self.selection(directory)
        made = self._matchers.get(selection)
        if made is None:
            made = self._matchers[selection] = (
                exclude_matcher(selection.exclude, selection.root),
                IncludeMatcher(selection.include, selection.root, selection.notebooks))
        return (selection, *made)

    def git(self):
        if self.gitignore is None:
            from fabric_lsp.sources.gitignore import GitIgnore

            self.gitignore = GitIgnore()
        return self.gitignore

    def excluded_argument(self, path: str, is_dir: bool) -> bool:
        """--force-exclude: whether the walk would leave out `path` (absolute), named on the command
        line. Its folders are looked at below the root of its configuration (or the current
        directory), as ruff stops at the project root."""
        directory = os.path.dirname(path)
        selection, exclude, _ = self.matchers(directory)
        base = os.path.abspath(selection.root or os.getcwd())
        if base == path or base.startswith(path.rstrip(os.sep) + os.sep):
            return False  # the root itself (`check --force-exclude .`) or a folder above it
        if exclude.excluded(path, is_dir):
            return True
        if selection.respect_gitignore and self.git().ignored_with_parents(path, is_dir):
            return True
        relative = os.path.relpath(directory, base)
        if relative == "." or relative == ".." or relative.startswith(".." + os.sep):
            return False
        current = base
        for part in relative.split(os.sep):
            parent, current = current, os.path.join(current, part)
            if part.startswith(".") or part in SKIP_DIRS or self.matchers(parent)[1].excluded(current, True):
                return True
        return False


# A walk (one `check` run) reads at most this many folders and picks up at most this many files: a
# repository of empty folders or files costs nothing to make but seconds per ten thousand to walk.
# Real trees are far below (torch as installed: 2,285 files in 624 folders).
MAX_WALK_FOLDERS = 100_000
MAX_WALK_FILES = 100_000


class _WalkBudget:
    """The folders and files of one run's walks, counted against the bounds; the notice is said once."""

    def __init__(self) -> None:
        self.folders = 0
        self.files = 0
        self.hit = False

    def exhausted(self, top: str, notices: list[Notice], what: str) -> bool:
        """Whether no more `what` ("folders" or "files") may be taken; says so once."""
        if (self.folders < MAX_WALK_FOLDERS) if what == "folders" else (self.files < MAX_WALK_FILES):
            return False
        if not self.hit:
            self.hit = True
            notices.append(Notice(top, f"the walk stops at {MAX_WALK_FOLDERS:,} folders or {MAX_WALK_FILES:,} "
                                       f"files; what it did not reach is not checked"))
        return True


def _walk(top: str, rules: _Rules, add, notices: list[Notice], budget: _WalkBudget) -> None:
    # Iterative DFS in name order. Links to folders are not followed (see discover), so the walk
    # stays in the tree; `visited` still guards against a folder reached twice (a bind mount).
    def identity(path: str) -> tuple[int, int] | None:
        try:
            info = os.stat(path)
        except OSError:
            return None
        return (info.st_dev, info.st_ino)

    top_id = identity(top)
    if top_id is None:
        notices.append(Notice(top, "cannot read directory"))
        return
    visited = {top_id}
    stack = [top]
    while stack:
        if budget.exhausted(top, notices, "folders"):
            return
        directory = stack.pop()
        budget.folders += 1
        try:
            with os.scandir(directory) as entries:
                children = sorted(entries, key=lambda entry: entry.name)
        except OSError as error:
            notices.append(Notice(directory, f"cannot read directory: {error.strerror or error}"))
            continue
        selection, matcher, includes = rules.matchers(directory)
        git = rules.git() if selection.respect_gitignore else None
        subdirs = []
        for entry in children:
            path = entry.path
            try:
                is_dir = entry.is_dir()  # follows links
            except OSError:
                is_dir = False
            if is_dir:
                if entry.is_symlink():
                    continue  # a link to a folder: not followed (see discover)
                if entry.name.startswith(".") or entry.name in SKIP_DIRS or matcher.excluded(path, True):
                    continue
                if git is not None and git.ignored(path, True):
                    continue
                child_id = identity(path)
                if child_id is None or child_id in visited:
                    continue
                visited.add(child_id)
                subdirs.append(path)
                continue
            if not includes.included(path, entry.name) or matcher.excluded(path, False):
                continue
            if git is not None and git.ignored(path, False):
                continue
            if entry.is_symlink() and not os.path.exists(path):
                try:
                    os.stat(path)
                except OSError as error:
                    notices.append(Notice(path, _os_reason(error)))
                continue
            if budget.exhausted(top, notices, "files"):
                return
            budget.files += 1
            add(path)
        stack.extend(reversed(subdirs))


# ---------------------------------------------------------------------------------------------
# Reading


def _os_reason(error: OSError) -> str:
    if isinstance(error, PermissionError):
        return "cannot read: permission denied"
    if getattr(error, "errno", None) == 40:  # ELOOP
        return "cannot read: symbolic link loop"
    return f"cannot read: {error.strerror or error}"


# A notebook's outputs (plots, tables) make it large while its code stays small: `max-file-size`
# applies to its code cells, and the file itself may be this large (reading it is one JSON parse).
NOTEBOOK_MAX_BYTES = 32 * 1024 * 1024


def byte_limit(path: str, max_size: int) -> int:
    """How many bytes of `path` may be read: `max_size`, or NOTEBOOK_MAX_BYTES for a notebook."""
    return max(max_size, NOTEBOOK_MAX_BYTES) if path.endswith(NOTEBOOK_SUFFIXES) else max_size


def read_source(path: str, max_size: int) -> tuple[DecodedFile | None, Notice | None]:
    """Read and decode a Python file (PEP 263 coding cookie, BOM, else UTF-8), or a notebook's code
    (its code cells at most `max_size` bytes, the file at most byte_limit)."""
    code_size, max_size = max_size, byte_limit(path, max_size)
    try:
        # O_NONBLOCK: opening a FIFO named *.py would otherwise wait forever for a writer.
        with os.fdopen(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                return None, Notice(path, "not a regular file")
            if info.st_size > max_size:
                return None, Notice(path, f"file is larger than max-file-size ({info.st_size} > {max_size} bytes)")
            data = handle.read(max_size + 1)
    except OSError as error:
        return None, Notice(path, _os_reason(error))
    if len(data) > max_size:  # grew, or a special file that reports size 0
        return None, Notice(path, f"file is larger than max-file-size (> {max_size} bytes)")
    if path.endswith(NOTEBOOK_SUFFIXES):
        return decode_notebook(path, data, code_size)
    return decode_source(path, data)


# Notebooks read in this process, by (path, SHA-256 of the bytes): a run reads a notebook for the
# check, for each forked worker, for the report and for fixes; its JSON is decoded (and its cells
# joined) once. Bounded by the JSON text kept, least recently used first out.
_read_notebooks: dict[tuple[str, str], object] = {}
_read_notebooks_lock = threading.Lock()
READ_NOTEBOOKS_MAX_CHARS = 2 * NOTEBOOK_MAX_BYTES


def _read_notebook(path: str, data: bytes, digest: str):
    from fabric_lsp.sources.notebook import read_notebook

    key = (path, digest)
    with _read_notebooks_lock:
        notebook = _read_notebooks.pop(key, None)
        if notebook is not None:
            _read_notebooks[key] = notebook  # most recently used last
            return notebook
    notebook = read_notebook(path, data)  # NotebookError: not kept, said again on the next read
    with _read_notebooks_lock:
        _read_notebooks[key] = notebook
        kept = sum(len(n.json_text) for n in _read_notebooks.values())
        while kept > READ_NOTEBOOKS_MAX_CHARS and len(_read_notebooks) > 1:
            kept -= len(_read_notebooks.pop(next(iter(_read_notebooks))).json_text)
    return notebook


def decode_notebook(path: str, data: bytes, max_code_size: int | None = None) -> tuple[DecodedFile | None, Notice | None]:
    """A notebook as its joined code cells (fabric_lsp.sources.notebook). Code cells larger than
    `max_code_size` bytes in all are refused before they are joined (joining parses each cell). A
    notebook that is read but cannot be fixed (a cell's `source` is a string) comes with a Notice too."""
    from fabric_lsp.sources.notebook import NotebookError

    digest = hashlib.sha256(data).hexdigest()
    try:
        notebook = _read_notebook(path, data, digest)
    except NotebookError as error:
        return None, Notice(path, str(error))
    if max_code_size is not None and (size := notebook.code_size) > max_code_size:
        return None, Notice(path, f"the notebook's code cells are larger than max-file-size ({size} > {max_code_size} bytes)")
    joined = notebook.joined()
    encoding = "utf-8-sig" if data.startswith(codecs.BOM_UTF8) else "utf-8"
    decoded = DecodedFile(path=path, text=joined.text, encoding=encoding, digest=digest, notebook=notebook)
    said = [notebook.warning] if notebook.warning else []
    # A cell the kernel would fail is an invalid-syntax entry (report/syntax.py); one indented as a
    # whole runs in IPython (dedented) but is left out of the analysis: said here.
    indented = [str(cell) for cell in joined.left_out if cell.dedented_parses]
    if indented:
        said.append("left out, as they do not parse on their own: " + "; ".join(indented))
    return decoded, (Notice(path, "; ".join(said)) if said else None)


def decode_source(path: str, data: bytes) -> tuple[DecodedFile | None, Notice | None]:
    if b"\0" in data:
        return None, Notice(path, "binary file (contains NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:  # undecodable first lines, unknown cookie, BOM with another cookie
        message = str(error.msg or error)
        if message.startswith("invalid or missing encoding declaration"):
            encoding = "utf-8"  # no usable cookie: the file is UTF-8 or nothing; say where it breaks
        else:
            return None, Notice(path, f"cannot decode: {message}")
    try:
        codecs.lookup(encoding)
        text = data.decode(encoding)
    except LookupError:
        return None, Notice(path, f"cannot decode: unknown encoding {encoding!r}")
    except UnicodeDecodeError as error:
        return None, Notice(
            path, f"cannot decode as {encoding}: invalid byte 0x{data[error.start]:02x} at offset {error.start}"
        )
    # detect_encoding names a BOM "utf-8-sig" and decoding drops it; writing back restores it.
    return DecodedFile(path=path, text=text, encoding=encoding, digest=hashlib.sha256(data).hexdigest()), None


def display_path(path: str, cwd: str | None = None) -> str:
    """Relative to the current directory when below it, else absolute."""
    cwd = os.path.abspath(cwd or os.getcwd())
    absolute = os.path.abspath(path)
    try:
        common = os.path.commonpath([cwd, absolute])
    except ValueError:  # different drives on Windows
        return absolute
    return os.path.relpath(absolute, cwd) if common == cwd else absolute
