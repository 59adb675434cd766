"""`from package.module import Name` answered without jedi, when the answer cannot be in doubt.

Most questions the analysis asks jedi are "which class is this imported name": a model built from
`from proj.models.gpt import GPT`. jedi answers them by building an inference state and parsing the
importing file with parso (milliseconds each, the bulk of a `check` run). When all of the following
hold, the answer is the one jedi gives, found by looking at the file system and the module's tree:

- the name is bound once in the importing file, by a module-level absolute `from M import X`,
  the file has no `from ... import *` and does not touch `sys.path`;
- exactly one folder of jedi's search path (the project root, the interpreter's sys.path, the
  folders between the file and the project root: what jedi uses) holds anything named like M's
  first part, and it is a project folder, not a library, not a name jedi has stubs for, not a
  built-in module; every further part is a plain `.py` module or a package with `__init__.py`
  (no stub, no extension module beside it; no `__path__` games in the package);
- the module binds X exactly once, by a top-level `class` or `def`, and has no `import *`.

Anything else (a relative import, a re-export, a name assigned twice, a stub...) goes to jedi.
"""

from __future__ import annotations

import ast
import os
import sys
from typing import Callable

from fabric_lsp.analysis.jedi_cache import jedi_folder
from fabric_lsp.analysis.nodes import walk
from fabric_lsp.analysis.source import SourceFile

_EXTENSION_SUFFIXES = (".so", ".pyd", ".pyi")
_listings: dict[str, tuple[int, frozenset[str]]] = {}


def _listing(folder: str) -> frozenset[str] | None:
    """Entry names of a folder (cached while its mtime is unchanged); None when not a folder."""
    try:
        mtime = os.stat(folder).st_mtime_ns
    except OSError:
        return frozenset()
    cached = _listings.get(folder)
    if cached is not None and cached[0] == mtime:
        return cached[1]
    if not os.path.isdir(folder):
        return None  # a zip or an egg on sys.path: its content is not visible here
    try:
        names = frozenset(os.listdir(folder))
    except OSError:
        return None
    _listings[folder] = (mtime, names)
    return names


def _holds(names: frozenset[str], part: str) -> list[str]:
    """Entries that would import as `part`: the package folder, the module, stubs, extensions."""
    return [n for n in names if n == part or (n.startswith(part + ".") and n[len(part):].startswith((".py", ".so", ".pyd", ".pyi", ".cpython", ".abi3")))]


_stub_names: frozenset[str] | None = None


def _jedi_stub_names() -> frozenset[str]:
    """Top-level names jedi has typeshed (or django) stubs for: jedi answers those from stubs."""
    global _stub_names
    if _stub_names is None:
        found: set[str] = {"django", "gi"}
        try:
            typeshed = os.path.join(jedi_folder(), "third_party", "typeshed")
            for name in os.listdir(os.path.join(typeshed, "stdlib")):
                found.add(name.split(".")[0])
            stubs = os.path.join(typeshed, "stubs")
            for distribution in os.listdir(stubs):
                for name in os.listdir(os.path.join(stubs, distribution)):
                    found.add(name.split(".")[0])
        except (ImportError, OSError, TypeError):
            return frozenset({"*"})  # cannot tell: never answer
        _stub_names = frozenset(found)
    return _stub_names


def search_path(root: str, sys_path: tuple[str, ...], script: str) -> list[str]:
    """jedi's sys.path for inferring in `script` (jedi.api.project.Project._get_sys_path with
    smart_sys_path and add_init_paths, as used for goto): the project root, the given sys.path,
    and the folders between the script and the root."""
    folders = [root, *sys_path]
    parents = []
    parent = os.path.dirname(script)
    while parent != root and (parent + os.sep).startswith(root + os.sep):
        parents.append(parent)
        parent = os.path.dirname(parent)
    folders += reversed(parents)
    return list(dict.fromkeys(os.path.abspath(f) for f in folders))


def _bindings(tree: ast.Module) -> dict[str, int] | None:
    """How many times each name is bound anywhere in the module; None if a star import binds unknowns."""
    counts: dict[str, int] = {}

    def add(name: str | None) -> None:
        if name:
            counts[name] = counts.get(name, 0) + 1

    for node in walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            add(node.name)
        elif isinstance(node, ast.arg):
            add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    return None
                add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                add(name)
        elif isinstance(node, ast.ExceptHandler):
            add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)):
            add(node.name)
        elif isinstance(node, ast.MatchMapping):
            add(node.rest)
    return counts


def _cached_bindings(source: SourceFile) -> dict[str, int] | None:
    key = "_import_paths_bindings"
    if key not in source.__dict__:
        source.__dict__[key] = _bindings(source.tree) if source.tree is not None else None
    return source.__dict__[key]


def _module_file(module: str, folders: list[str], library_dirs: tuple[str, ...], root: str) -> str | None:
    parts = module.split(".")
    if not all(part.isidentifier() for part in parts):
        return None
    first = parts[0]
    if first in sys.builtin_module_names or first in _jedi_stub_names() or "*" in _jedi_stub_names():
        return None
    holders = []
    for folder in folders:
        names = _listing(folder)
        if names is None:
            return None  # an opaque sys.path entry could hold it
        found = _holds(names, first)
        if found:
            holders.append((folder, found))
    if len(holders) != 1:
        return None
    folder, found = holders[0]
    if (folder + os.sep).startswith(library_dirs) or not (folder + os.sep).startswith(root + os.sep) and folder != root:
        return None  # libraries are answered from tables or by jedi, never here
    current = folder
    for index, part in enumerate(parts):
        names = _listing(current) if index else frozenset(found)
        entries = _holds(names or frozenset(), part)
        last = index == len(parts) - 1
        if last and entries == [part + ".py"]:
            return os.path.join(current, part + ".py")
        if entries != [part]:
            return None  # a stub, an extension module, a module and a package of one name, nothing
        package = os.path.join(current, part)
        init = os.path.join(package, "__init__.py")
        if not os.path.isfile(init) or _extends_path(init):
            return None
        if last:
            return None  # `from package import X`: X may be a submodule or a re-export: jedi decides
        current = package
    return None


def _extends_path(init: str) -> bool:
    try:
        with open(init, "rb") as handle:
            return b"__path__" in handle.read()
    except OSError:
        return True


def resolve(
    source: SourceFile, node: ast.AST, root: str, sys_path: tuple[str, ...], library_dirs: tuple[str, ...],
    read: Callable[[str], SourceFile | None], make,
) -> tuple | None:
    """(definitions jedi's goto(follow_imports=True) would give for the Name `node`, the files and
    folders that answer depends on), or None when this module cannot be sure (see the module doc).
    `read(path)` parses another module; `make(path, line, column, kind, full_name)` builds a Definition."""
    if not isinstance(node, ast.Name) or source.tree is None or "sys.path" in source.text:
        return None
    bindings = _cached_bindings(source)
    if bindings is None or bindings.get(node.id) != 1:
        return None
    statement = next(
        (
            s for s in source.tree.body
            if isinstance(s, ast.ImportFrom) and s.level == 0 and s.module
            and any((a.asname or a.name) == node.id for a in s.names)
        ),
        None,
    )
    if statement is None or node.lineno <= (statement.end_lineno or statement.lineno):
        return None  # at module level before the import, jedi finds nothing: let it say so
    imported = next(a.name for a in statement.names if (a.asname or a.name) == node.id)
    root = os.path.abspath(root)
    folders = search_path(root, sys_path, source.path)
    path = _module_file(statement.module, folders, library_dirs, root)
    if path is None or _buildout(source.path, root):
        return None
    module = read(path)
    if module is None or module.tree is None:
        return None
    module_bindings = _cached_bindings(module)
    if module_bindings is None or module_bindings.get(imported) != 1:
        return None
    definition = next(
        (
            s for s in module.tree.body
            if isinstance(s, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == imported
        ),
        None,
    )
    if definition is None:
        return None
    span = module.span_of_name_in(definition, imported)
    kind = "class" if isinstance(definition, ast.ClassDef) else "function"
    found = (make(path, span.start.line + 1, span.start.character, kind, f"{statement.module}.{imported}"),)
    # A new module of the same name anywhere on the path, or an edit of the packages, changes it.
    packages = []
    folder = os.path.dirname(path)
    while (folder + os.sep).startswith(root + os.sep) and folder not in folders:
        packages += [folder, os.path.join(folder, "__init__.py")]
        folder = os.path.dirname(folder)
    return found, (path, *folders, *packages)


def _buildout(script: str, root: str) -> bool:
    """jedi adds buildout paths when a buildout.cfg sits above the script: let jedi handle those."""
    parent = os.path.dirname(script)
    while True:
        if os.path.exists(os.path.join(parent, "buildout.cfg")):
            return True
        up = os.path.dirname(parent)
        if up == parent:
            return False
        parent = up
