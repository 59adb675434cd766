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
import hashlib
import os
from dataclasses import dataclass

from fabric_lsp.analysis.incremental import _regions
from fabric_lsp.analysis.source import SourceFile

MAX_ANSWERS = 20000


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
                and "global" not in region_text
                and "nonlocal" not in region_text
            ):
                first_body = statements[0].body[0]
                header_end = offsets[first_body.lineno - 1] + source.char_col(first_body.lineno, first_body.col_offset)
                bindings.append(text[start:header_end])
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
    try:
        import jedi

        found.append(os.path.dirname(os.path.abspath(jedi.__file__)) + os.sep)
    except ImportError:
        pass
    return tuple(found)


# ---------------------------------------------------------------------------------------------
# The cache


class Answers:
    """Stable-keyed answers of one workspace, checked against their dependencies on every use."""

    def __init__(self, root: str | None, overlays_of, library_dirs_of_workspace) -> None:
        self.root = root
        self._overlays_of = overlays_of  # () -> the workspace's current unsaved buffers
        self._library_dirs_of = library_dirs_of_workspace  # () -> library folders (needs jedi's project)
        self._entries: dict[tuple, tuple[tuple[StoredDefinition, ...], tuple[tuple[str, str], ...]]] = {}
        self.hits = self.misses = 0

    def get(self, key: tuple, source: SourceFile, make):
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
        else:
            self.hits += 1
        return found

    def put(self, key: tuple, definitions, source: SourceFile, script) -> None:
        stored = to_stored(definitions, source)
        if stored is None:
            return
        try:
            dependencies = dependencies_of(script, source, self.root, self._library_dirs_of(), Stamps(self._overlays_of()))
        except Exception:  # jedi internals changed: keep nothing we cannot check
            return
        if len(self._entries) >= MAX_ANSWERS:
            self._entries.clear()
        self._entries[key] = (stored, dependencies)


def import_names(source: SourceFile) -> dict[str, str]:
    names = source.__dict__.get("_jedi_import_names")
    if names is None:
        from fabric_lsp.analysis.imports import ImportTable

        names = source.__dict__["_jedi_import_names"] = ImportTable(source.tree).names
    return names
