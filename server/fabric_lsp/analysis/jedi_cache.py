"""jedi's answers kept across edits of a file (and, with a store, across runs), invalidated by
what they depend on. Only `workspace.py` uses this module; it never imports jedi itself.

An answer is asked at a position of one text; after an edit the same question sits at another
position of another text. It is reused when nothing it can depend on changed:

- the question is `goto` on a name, or on a dotted name whose root is bound by an import
  (`models.Net`): following bindings and imports, never inferring values through function bodies;
- the top-level statement holding it has the same text, and the position inside it is the same
  (local bindings, parameters, the class around a method);
- the module's bindings are the same: every top-level statement, with a function's or class's body
  left out (its header kept) unless it declares `global`/`nonlocal`;
- every project file jedi read to answer is unchanged (size and mtime, or the text of an unsaved
  buffer), and so are the folders it looked in when an import could not be found.

Definitions inside the file itself are stored relative to their top-level statement, so an answer
survives lines being inserted above. Libraries (site-packages, the standard library, jedi's stubs)
are not stamped file by file: a persistent store is keyed by the interpreter and its site-packages.
"""

from __future__ import annotations

import ast
import bisect
import contextlib
import hashlib
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from fabric_lsp.analysis.incremental import _regions
from fabric_lsp.analysis.source import SourceFile

MAX_ANSWERS = 4000  # least recently used out: answers of texts typed over do not pile up
_DECLARES_GLOBAL = re.compile(r"\b(?:global|nonlocal)\b")
_AFTER_COLON = re.compile(r":(?:[ \t]*(?:#[^\r\n]*)?(?:\r\n|\r|\n))*[ \t]*\Z")


def digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


@dataclass(frozen=True)
class StoredDefinition:
    """A Definition as kept: `region` set means a line relative to that region of the asking file."""

    path: str | None  # None: in the asking file
    region: str | None  # digest of the region's text, for definitions in the asking file
    line: int
    column: int
    kind: str
    full_name: str | None


class FileContext:
    """Per SourceFile: regions (top-level statements with the lines up to the next one), their
    digests, and the digest of the module's bindings."""

    def __init__(self, source: SourceFile) -> None:
        body = source.tree.body if source.tree is not None else []
        regions = _regions(body)
        offsets = source._line_offsets
        text = source.text
        self.firsts = [first for first, _ in regions]
        self.digests: list[str] = []
        bindings: list[str] = []
        for number, (first, index) in enumerate(regions):
            end_index = regions[number + 1][1] if number + 1 < len(regions) else len(body)
            end_line = regions[number + 1][0] if number + 1 < len(regions) else None
            start = offsets[first - 1]
            end = offsets[end_line - 1] if end_line is not None else len(text)
            region_text = text[start:end]
            self.digests.append(digest(region_text))
            statements = body[index:end_index]
            if (
                len(statements) == 1
                and isinstance(statements[0], (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and statements[0].body
                and not _DECLARES_GLOBAL.search(region_text)
            ):
                first_body = statements[0].body[0]
                header_end = offsets[first_body.lineno - 1] + source.char_col(first_body.lineno, first_body.col_offset)
                # The header without what follows its colon (a comment typed there binds nothing).
                bindings.append(_AFTER_COLON.sub(":", text[start:header_end]))
            else:
                bindings.append(region_text)
        self.bindings = digest("\0".join(bindings))
        counts: dict[str, int] = {}
        for value in self.digests:
            counts[value] = counts.get(value, 0) + 1
        self.first_of = {value: first for value, first in zip(self.digests, self.firsts) if counts[value] == 1}

    def region_at(self, line: int) -> int | None:
        index = bisect.bisect_right(self.firsts, line) - 1
        return index if index >= 0 else None


def file_context(source: SourceFile) -> FileContext:
    context = source.__dict__.get("_jedi_file_context")
    if context is None:
        context = source.__dict__["_jedi_file_context"] = FileContext(source)
    return context


def stable_key(question: str, source: SourceFile, node: ast.AST, line: int, column: int, import_names) -> tuple | None:
    """The key under which an answer can be reused across edits, or None (see the module doc)."""
    if question != "goto" or source.tree is None:
        return None
    chain = node
    while isinstance(chain, ast.Attribute):
        chain = chain.value
    if not isinstance(chain, ast.Name):
        return None
    if chain is not node and chain.id not in import_names:
        return None  # `self.x`, `cfg.model`: the root's value is inferred, maybe through other bodies
    context = file_context(source)
    region = context.region_at(line)
    if region is None:
        return None
    dotted = source.segment(node)
    return (question, source.path, dotted, context.digests[region], line - context.firsts[region], column, context.bindings)


def to_stored(definitions, source: SourceFile) -> tuple[StoredDefinition, ...] | None:
    context = file_context(source)
    stored = []
    for definition in definitions:
        if definition.path == source.path:
            region = context.region_at(definition.line)
            if region is None or context.digests[region] not in context.first_of:
                return None  # cannot be placed again after an edit
            stored.append(StoredDefinition(None, context.digests[region], definition.line - context.firsts[region],
                                           definition.column, definition.kind, definition.full_name))
        else:
            stored.append(StoredDefinition(definition.path, None, definition.line, definition.column,
                                           definition.kind, definition.full_name))
    return tuple(stored)


def from_stored(stored: tuple[StoredDefinition, ...], source: SourceFile, make) -> tuple | None:
    """Definitions for `source` (built with `make(path, line, column, kind, full_name)`), or None
    when a definition's statement in this file is not there any more."""
    context = file_context(source)
    found = []
    for item in stored:
        if item.path is None:
            first = context.first_of.get(item.region)
            if first is None:
                return None
            found.append(make(source.path, first + item.line, item.column, item.kind, item.full_name))
        else:
            found.append(make(item.path, item.line, item.column, item.kind, item.full_name))
    return tuple(found)


# ---------------------------------------------------------------------------------------------
# Dependencies


def loaded_module_files(script) -> tuple[list[str], bool]:
    """Files of the modules jedi loaded for `script`, and whether some import found nothing."""
    files: list[str] = []
    missing = False
    state = script._inference_state
    for values in list(state.module_cache._name_cache.values()):
        if not values:
            missing = True
            continue
        for value in values:
            try:
                path = value.py__file__()
            except Exception:
                path = None
            if path is not None:
                files.append(str(path))
    return files, missing


class Stamps:
    """How a set of files and folders looks now: (mtime, size) on disk, digest of unsaved buffers."""

    def __init__(self, overlays: dict[str, str]) -> None:
        self.overlays = overlays

    def stamp(self, path: str) -> str:
        text = self.overlays.get(path)
        if text is not None:
            return "text:" + digest(text)
        try:
            info = os.stat(path)
        except OSError:
            return "missing"
        return f"{info.st_mtime_ns}:{info.st_size}"

    def still_valid(self, dependencies: tuple[tuple[str, str], ...]) -> bool:
        return all(self.stamp(path) == stamp for path, stamp in dependencies)


def dependencies_of(script, source: SourceFile, root: str | None, library_dirs: tuple[str, ...], stamps: Stamps) -> tuple[tuple[str, str], ...]:
    """(path, stamp) of the project files and folders an answer may depend on."""
    files, missing = loaded_module_files(script)
    paths: set[str] = set()
    for path in files:
        path = os.path.abspath(path)
        if path == source.path or path.startswith(library_dirs):
            continue
        paths.add(path)
    if missing:
        # An import found nothing: creating that module later must be noticed. Its folder is one
        # of those jedi searches for project code: the file's own folder, the project root, and
        # the folders of the project modules it found.
        folders = {os.path.dirname(source.path)} | {os.path.dirname(p) for p in paths}
        if root:
            folders.add(root)
        paths |= folders
    return tuple(sorted((path, stamps.stamp(path)) for path in paths))


def library_dirs_of(sys_path: tuple[str, ...] | list[str], root: str | None) -> tuple[str, ...]:
    """Folders whose files are libraries: site-packages, the standard library, jedi's own stubs."""
    found = []
    for entry in sys_path:
        entry = os.path.abspath(entry)
        if root and (entry == root or entry.startswith(root + os.sep)):
            continue
        name = os.path.basename(entry)
        parent = os.path.basename(os.path.dirname(entry))
        if name in ("site-packages", "dist-packages") or name.startswith("python3") or parent.startswith("python3") and name == "lib-dynload":
            found.append(entry + os.sep)
    folder = jedi_folder()
    if folder:
        found.append(folder + os.sep)
    return tuple(found)


def jedi_folder() -> str | None:
    """jedi's package folder, found without importing it (an import costs a fifth of a second)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("jedi")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.abspath(list(spec.submodule_search_locations)[0])


# ---------------------------------------------------------------------------------------------
# The cache


class Answers:
    """Stable-keyed answers of one workspace, checked against their dependencies on every use, and
    optionally kept in a file across runs (`attach_store`)."""

    SAVE_INTERVAL = 5.0  # seconds between two writes of the store

    def __init__(self, root: str | None, overlays_of, library_dirs_of_workspace) -> None:
        self.root = root
        self._overlays_of = overlays_of  # () -> the workspace's current unsaved buffers
        self._library_dirs_of = library_dirs_of_workspace  # () -> library folders
        self._entries: dict[tuple, tuple[tuple[StoredDefinition, ...], tuple[tuple[str, str], ...]]] = {}
        self._precise_dependencies: dict[tuple, tuple[str, ...]] = {}
        self._store_opener = None  # () -> path of the store file, or None
        self._store: str | None = None
        self._loaded = False
        self._dirty = False
        self._saved_at = 0.0
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    # -- use ---------------------------------------------------------------------------------
    def get(self, key: tuple, source: SourceFile, make, precise_key: tuple | None = None):
        self._load()
        entry = self._entries.get(key)
        if entry is None:
            self.misses += 1
            return None
        stored, dependencies = entry
        if not Stamps(self._overlays_of()).still_valid(dependencies):
            del self._entries[key]
            self.misses += 1
            return None
        found = from_stored(stored, source, make)
        if found is None:
            self.misses += 1
            return None
        self.hits += 1
        self._entries[key] = self._entries.pop(key)  # most recently used last
        paths = tuple(path for path, _ in dependencies)
        note(paths)
        if precise_key is not None and recording():
            self._precise_dependencies[precise_key] = paths
        return found

    def computed(self, precise_key: tuple, stable_key: tuple | None, definitions, source: SourceFile, script) -> None:
        """jedi answered at precise_key (and stable_key when it has one): keep what it depended on."""
        dependencies = None
        if stable_key is not None or recording():
            try:
                dependencies = dependencies_of(script, source, self.root, self._library_dirs_of(), Stamps(self._overlays_of()))
            except Exception:  # jedi internals changed: keep nothing we cannot check
                dependencies = None
        if recording():
            paths = tuple(path for path, _ in dependencies) if dependencies is not None else (UNKNOWN,)
            note(paths)
            if len(self._precise_dependencies) >= MAX_ANSWERS:
                self._precise_dependencies.clear()
            self._precise_dependencies[precise_key] = paths
        if stable_key is None or dependencies is None:
            return
        stored = to_stored(definitions, source)
        if stored is None:
            return
        while len(self._entries) >= MAX_ANSWERS:
            del self._entries[next(iter(self._entries))]
        self._entries[stable_key] = (stored, dependencies)
        self._dirty = True

    def remember_dependencies(self, precise_key: tuple, paths) -> None:
        if not recording():
            return
        if len(self._precise_dependencies) >= MAX_ANSWERS:
            self._precise_dependencies.clear()
        self._precise_dependencies[precise_key] = tuple(paths)

    def reused(self, precise_key: tuple) -> None:
        """An answer of this very text was reused: its dependencies count for this analysis too."""
        if recording():
            note(self._precise_dependencies.get(precise_key, (UNKNOWN,)))

    # -- the store ---------------------------------------------------------------------------
    def attach_store(self, opener) -> None:
        """`opener()` gives the store's path (or None); called on first use, not before."""
        self._store_opener = opener

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        if self._store_opener is None:
            return
        try:
            self._store = self._store_opener()
        except Exception:  # no store: answers live for this process only
            self._store = None
        if self._store is None:
            return
        for key, stored, dependencies in _read_store(self._store):
            self._entries.setdefault(key, (stored, dependencies))

    def save_if_due(self, force: bool = False) -> None:
        if not self._dirty or self._store is None:
            return
        now = time.monotonic()
        if not force and now - self._saved_at < self.SAVE_INTERVAL:
            return
        with self._lock:
            self._saved_at = now
            self._dirty = False
            _write_store(self._store, self._entries)


def _read_store(path: str) -> list:
    from fabric_lsp.cache import read_json

    data = read_json(Path(path))
    found = []
    if not isinstance(data, dict) or data.get("schema") != 1 or not isinstance(data.get("answers"), list):
        return found
    for item in data["answers"]:
        try:
            key, stored, dependencies = item
            found.append((
                tuple(key),
                tuple(StoredDefinition(*definition) for definition in stored),
                tuple((str(path), str(stamp)) for path, stamp in dependencies),
            ))
        except (TypeError, ValueError):
            continue  # an entry of another shape: skipped
    return found


def _write_store(path: str, entries: dict) -> None:
    """Merged with what other processes wrote meanwhile, under a lock file."""
    from fabric_lsp.cache import write_json

    try:
        with open(path + ".lock", "a") as lock:
            try:
                import fcntl

                fcntl.flock(lock, fcntl.LOCK_EX)
            except (ImportError, OSError):
                pass
            merged = {key: (stored, dependencies) for key, stored, dependencies in _read_store(path)}
            merged.update(entries)
            answers = [
                [list(key), [[d.path, d.region, d.line, d.column, d.kind, d.full_name] for d in stored], [list(x) for x in deps]]
                for key, (stored, deps) in list(merged.items())[-MAX_ANSWERS:]
            ]
            write_json(Path(path), {"schema": 1, "answers": answers})
    except OSError:
        pass


# ---------------------------------------------------------------------------------------------
# What one analysis read (for the `check` cache)

UNKNOWN = "\0unknown"  # an answer whose dependencies are not known: the result must not be cached
_recording = threading.local()


@contextlib.contextmanager
def recording_dependencies():
    """Collect the files (and folders) the analyses in this block read; yields the set."""
    previous = getattr(_recording, "paths", None)
    paths: set[str] = set()
    _recording.paths = paths
    try:
        yield paths
    finally:
        _recording.paths = previous
        if previous is not None:
            previous |= paths


def recording() -> bool:
    return getattr(_recording, "paths", None) is not None


def note(paths) -> None:
    found = getattr(_recording, "paths", None)
    if found is not None:
        found.update(paths)


def import_names(source: SourceFile) -> dict[str, str]:
    names = source.__dict__.get("_jedi_import_names")
    if names is None:
        from fabric_lsp.analysis.imports import ImportTable

        names = source.__dict__["_jedi_import_names"] = ImportTable(source.tree).names
    return names
