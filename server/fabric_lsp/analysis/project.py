"""The project as one program: its files, where its imports lead, and which files take part.

A project is the folder of the nearest `pyproject.toml`/`setup.py`/`setup.cfg`/`.git` (see
engine.project_root_for). Its Python files are found by walking it (the same rules as `check`:
hidden folders, virtual environments, `build`, `dist`, `node_modules` are skipped). Imports are
resolved the way Python would resolve them when the project's scripts run: the importing file's
own folder first (a script's folder is `sys.path[0]`), then the project root, its `src/`, the
package folders the project's `pyproject.toml`/`setup.cfg` declare, the folders between the file
and the root, and last the analysis interpreter's `sys.path` (libraries; read, never run).
Namespace packages (folders without `__init__.py`) work as in Python.

Which files take part: the wrapped model, the Fabric and the meta-device model all start in a file
that names Fabric (or FullyShardedDataParallel), so the program is those files, every project file
that imports one of them (directly or through others), and everything all of these import. A file
outside that set cannot be reached by the values the rules follow; it is not parsed at all.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field

from fabric_lsp.analysis.imports import FABRIC_CLASS_NAMES, LIBRARY_ROOTS
from fabric_lsp.sources.files import MAX_SETTINGS_BYTES, disk_identity, read_bytes, read_text
from fabric_lsp.sources.files import resolves_inside as _inside

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

# A file that can start a value the rules follow names one of these: a Fabric object comes from
# a Fabric class (constructed, subclassed or named in an annotation, all of which spell "Fabric" or
# "LightningLite": `L.Fabric`, `MyFabric`), a materialization from torch's FSDP class or Lightning's
# materialize functions. The lowercase package name (`lightning.fabric.utilities`) starts nothing:
# it made every module of Lightning itself a program of its own to solve.
ORIGIN_WORDS = ("Fabric", "LightningLite", "FullyShardedDataParallel", "_materialize_meta_tensors",
                "_materialize_distributed_module")

# Libraries whose names resolve from tables (never read), and the standard library (opaque), with
# typing_extensions: the backport of `typing`, whose names are typing constructs, never models (looking
# `Self` up there parsed its 3,000-line module: 30 ms of a file's first analysis).
OPAQUE_ROOTS = (frozenset(LIBRARY_ROOTS) | frozenset(getattr(sys, "stdlib_module_names", ()))
                | {"builtins", "functools", "typing_extensions"}
                # Configuration readers whose calls semantics/config_values.py answers (never read nor run).
                | {"yaml", "omegaconf", "hydra"})

# Modules resolve() does not read: extension modules and stub-only modules.
_COMPILED_SUFFIXES = (".so", ".pyd", ".pyi")

MAX_PROGRAM_FILES = 5000  # files of one program parsed and analysed; more: the rest is left out (notice)

# The import scan reads lines with str methods, not one regex over the file: the regex's
# parenthesised names (`\([^)]*\)`) searched to the end of the file from every `from a import (`
# without a `)` after it, and its adjacent optional runs (dots, blanks) backtracked on long lines.
_IMPORT_START = re.compile(r"^[ \t]*(import|from)[ \t]", re.M)  # one blank run, then a word: linear
_DOTTED = re.compile(r"[\w.]*")
_PARENTHESIS = re.compile(r"[()]")
_COMMENT = re.compile(r"#[^\n]*")
_NAMES_END = re.compile(r"[\n#;]")


_SYS_PATH_LITERAL = re.compile(r"""sys\.path\.(?:insert\(\s*-?\d+\s*,|append\()\s*(?:r|u)?(["'])([^"'\n]{1,300})\1\s*\)""")


def sys_path_literals(text: str) -> tuple[str, ...]:
    """Folders a script puts on sys.path: by a literal (`sys.path.insert(0, "src")`, relative to the folder
    the script is started from), or by a path computed from `__file__` (`os.path.join(os.path.dirname(__file__),
    "..")`, `Path(__file__).resolve().parents[2] / "lib"`), given relative to the script's folder."""
    if "sys.path" not in text:
        return ()
    found = [match.group(2) for match in _SYS_PATH_LITERAL.finditer(text)]
    if "__file__" in text and len(text) <= _MAX_PATH_SCAN:
        found.extend(_file_relative_paths(text))
    return tuple(dict.fromkeys(found))


_MAX_PATH_SCAN = 1 << 20  # bytes of a file parsed to read its sys.path additions (larger: literals only)
_PATH_FUNCTIONS = {"abspath", "realpath", "normpath", "expanduser", "str", "fspath", "resolve", "absolute",
                   "Path", "PurePath", "as_posix"}


def _file_relative_paths(text: str) -> list[str]:
    """The folders `sys.path.insert/append(...)` adds when its argument is computed from `__file__` by
    os.path and pathlib (names bound to such paths at the top of a function or module included), as
    paths relative to the file's folder. Read from the syntax; nothing is run."""
    import ast

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    names: dict[str, tuple] = {}
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = _path_value(node.value, names, 0)
            if value is not None:
                names[node.targets[0].id] = value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("insert", "append") and _is_sys_path(node.func.value) and node.args:
            value = _path_value(node.args[-1], names, 0)
            if value is not None and value[0] == "dir":
                found.append(value[1])
    return found


def _is_sys_path(node) -> bool:
    import ast

    return isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(node.value, ast.Name) \
        and node.value.id == "sys"


def _path_value(node, names: dict, depth: int):
    """("file", "") for `__file__`, ("dir", relative folder) for a folder relative to the file's, or None."""
    import ast

    if depth > 20:
        return None
    if isinstance(node, ast.Name):
        if node.id == "__file__":
            return ("file", "")
        return names.get(node.id)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return ("text", node.value)
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name in _PATH_FUNCTIONS:
            inner = node.args[0] if node.args else (func.value if isinstance(func, ast.Attribute) else None)
            if name in ("resolve", "absolute", "as_posix") and isinstance(func, ast.Attribute):
                inner = func.value
            return _path_value(inner, names, depth + 1) if inner is not None else None
        if name == "dirname" and len(node.args) == 1:
            return _parent(_path_value(node.args[0], names, depth + 1))
        if name == "join" and node.args:
            parts = [_path_value(a, names, depth + 1) for a in node.args]
            return _joined(parts)
        return None
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        return _parent(_path_value(node.value, names, depth + 1))
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "parents" \
            and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int) and 0 <= node.slice.value < 20:
        value = _path_value(node.value.value, names, depth + 1)
        for _ in range(node.slice.value + 1):
            value = _parent(value)
        return value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return _joined([_path_value(node.left, names, depth + 1), _path_value(node.right, names, depth + 1)])
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):  # `ROOT + "/lib"`
        left, right = _path_value(node.left, names, depth + 1), _path_value(node.right, names, depth + 1)
        if left is not None and left[0] == "dir" and right is not None and right[0] == "text" and right[1][:1] in "/\\":
            return _joined([left, ("text", right[1].lstrip("/\\"))])
        return None
    if isinstance(node, ast.JoinedStr) and len(node.values) == 2 and isinstance(node.values[0], ast.FormattedValue) \
            and isinstance(node.values[1], ast.Constant) and str(node.values[1].value)[:1] in "/\\":
        return _path_value(ast.BinOp(node.values[0].value, ast.Add(), node.values[1]), names, depth + 1)  # f"{ROOT}/lib"
    return None


def _parent(value):
    if value is None:
        return None
    if value[0] == "file":
        return ("dir", ".")
    if value[0] == "dir":
        return ("dir", os.path.normpath(os.path.join(value[1], "..")))
    return None


def _joined(parts):
    """`os.path.join(folder, "a", "b")`, `folder / "a"`: a folder relative to the file's, or None."""
    if not parts or any(p is None for p in parts) or parts[0][0] == "text" \
            or any(p[0] != "text" for p in parts[1:]):
        return None
    if parts[0][0] == "file":  # `os.path.join(__file__, "..")`: the file's folder
        joined = os.path.normpath(os.path.join("__file__", *(p[1] for p in parts[1:])))
        return None if joined.split(os.sep)[0] == "__file__" else ("dir", joined)
    return ("dir", os.path.normpath(os.path.join(parts[0][1], *(p[1] for p in parts[1:]))))


_CONFIG_PATH = re.compile(r"""config_path\s*=\s*[ru]?(["'])([^"'\n]{0,300})\1""")
_YAML_LITERAL = re.compile(r"""[ru]?(["'])([^"'\n]{1,300}\.ya?ml)\1""")
_TARGET = re.compile(r"""^[ \t-]*_target_\s*:\s*["']?([A-Za-z_][\w.]*)""", re.M)
_MAX_CONFIG_FILES = 200  # YAML files read for one script's `_target_` classes
_MAX_CONFIG_FOLDERS = 1000  # folders walked for them
_MAX_CONFIG_SCAN = 1 << 20  # bytes read of each


def config_imports(path: str, text: str, root: str | None = None) -> list:
    """What a script that instantiates configurations (`hydra.utils.instantiate(cfg.model)`) imports through
    their `_target_` strings: the modules named in the YAML files of its hydra config folder
    (`config_path=...`) and of the YAML paths it names, read as text (bounded). Without them the class a
    `_target_` builds would sit outside the script's program. Only folders and files inside the project
    (`root`; else the script's folder) are read, regular files only (a FIFO named `x.yaml` would block),
    at most _MAX_CONFIG_FILES files and _MAX_CONFIG_FOLDERS folders."""
    if "instantiate" not in text or ("config_path" not in text and ".yaml" not in text and ".yml" not in text):
        return []
    folder = os.path.dirname(os.path.abspath(path))
    real_root = os.path.realpath(root or folder)
    files: list[str] = []
    folders = 0
    for match in _CONFIG_PATH.finditer(text):
        base = os.path.normpath(os.path.join(folder, match.group(2)))
        if not _inside(base, real_root):
            continue
        for directory, subdirectories, names in os.walk(base):  # links to folders are not followed
            folders += 1
            subdirectories[:] = sorted(d for d in subdirectories if not d.startswith("."))
            if directory.count(os.sep) - base.count(os.sep) > 6 or folders >= _MAX_CONFIG_FOLDERS:
                subdirectories[:] = []
            files.extend(os.path.join(directory, n) for n in sorted(names) if n.endswith((".yaml", ".yml")))
            if len(files) >= _MAX_CONFIG_FILES or folders >= _MAX_CONFIG_FOLDERS:
                break
    for match in _YAML_LITERAL.finditer(text):
        files.append(os.path.normpath(os.path.join(folder, match.group(2))))
    found: dict[str, ScannedImport] = {}
    for file in files[:_MAX_CONFIG_FILES]:
        if not _inside(file, real_root):
            continue
        try:
            content = read_text(file, _MAX_CONFIG_SCAN, prefix=True)
        except OSError:  # unreadable, or not a regular file (FileRefused)
            continue
        for target in _TARGET.findall(content):
            module, _, name = target.rpartition(".")
            if module and name:
                found.setdefault(target, ScannedImport(module, 0, (name,)))
    return list(found.values())


def names_fabric_class(imported: list) -> bool:
    """Whether a configuration's `_target_` builds a Fabric (config_imports): the script then makes one."""
    return any(f"{item.module}.{name}" in FABRIC_CLASS_NAMES for item in imported for name in item.names)


@dataclass(frozen=True)
class ScannedImport:
    module: str  # dotted, may be "" for `from . import x`
    level: int
    names: tuple[str, ...]  # imported names of a from-import ("*" included); () for `import x`


def is_origin(text: str) -> bool:
    return any(word in text for word in ORIGIN_WORDS)


def scan_imports(text: str) -> list[ScannedImport]:
    """The imports of a file read from its text, without parsing it: enough to know which files a
    file may import (a line inside a string may count too; an extra file is harmless). Each line is
    read once, and the names in parentheses of `from x import (...)` are looked for only up to the
    next parenthesis, so the cost is linear in the text whatever it holds."""
    if "import" not in text:
        return []
    found: list[ScannedImport] = []
    resume = 0  # after the closing parenthesis of a name list: the lines inside it are not statements
    for line in _IMPORT_START.finditer(text):
        if line.start() < resume:
            continue
        end = text.find("\n", line.end())
        end = len(text) if end == -1 else end
        if line.group(1) == "import":
            _plain_import(text[line.end():end], found)
        else:
            resume = _from_import(text, line.end(), end, found) or resume
    return found


def _plain_import(rest: str, found: list[ScannedImport]) -> None:
    """`import a.b as c, d` (the text after `import` and a blank)."""
    stop = _NAMES_END.search(rest)
    for part in (rest[:stop.start()] if stop else rest).replace("\\", " ").split(","):
        dotted = part.strip().split(" as ")[0].strip()
        if dotted and all(piece.isidentifier() for piece in dotted.split(".")):
            found.append(ScannedImport(dotted, 0, ()))


def _skip_blanks(text: str, at: int, end: int) -> int:
    while at < end and text[at] in " \t":
        at += 1
    return at


def _from_import(text: str, at: int, end: int, found: list[ScannedImport]) -> int | None:
    """`from .a.b import x, y` or `from a import (x,\n y)` on the line [at, end) (`at` just after
    `from` and a blank). Returns where the next line starts when the names were in parentheses."""
    keyword_end = at - 1
    at = _skip_blanks(text, at, end)
    dots = at
    while at < end and text[at] == ".":
        at += 1
    level = at - dots
    blank = at
    at = _skip_blanks(text, at, end)
    module = _DOTTED.match(text, at, end).group()
    names_at = _keyword_import(text, at + len(module), end)
    # `from . import x`: no module, the word read as one is the keyword (blanks before it, as the
    # grammar of the scan always had it: one after the dots, or two after a bare `from`).
    if names_at is None and module == "import" and (at > blank if level else at - keyword_end >= 2):
        module, names_at = "", _keyword_import(text, at - 1, end)
    if names_at is None:
        return None
    if module and not all(piece.isidentifier() for piece in module.split(".")):
        return None
    next_line = None
    close = _closing_parenthesis(text, names_at) if text.startswith("(", names_at) else None
    if close is not None:  # `(a,\n b,  # b\n)`: the names up to the parenthesis, without comments
        names_text = _COMMENT.sub("", text[names_at:close + 1])
        line_end = text.find("\n", close)
        next_line = len(text) if line_end == -1 else line_end + 1
    else:  # the names up to the end of the line, a comment or a `;`
        stop = _NAMES_END.search(text, names_at, end)
        names_text = text[names_at:stop.start() if stop else end]
    names_text = names_text.strip().strip("()").replace("\\", " ")
    names = tuple(
        name.strip().split(" as ")[0].strip()
        for name in names_text.replace("\n", ",").split(",")
        if name.strip()
    )
    found.append(ScannedImport(module, level, tuple(n for n in names if n == "*" or n.isidentifier())))
    return next_line


def _closing_parenthesis(text: str, at: int) -> int | None:
    """Where the `(` at `at` of a name list closes; None when another `(` comes first (a name list
    holds none) or nothing closes it. Each search ends at the next parenthesis, so the searches of
    all a file's imports read it about once. (A parenthesis in a comment counts: an unclosed list
    ends there rather than taking in the imports after it.)"""
    found = _PARENTHESIS.search(text, at + 1)
    return found.start() if found is not None and found.group() == ")" else None


def _keyword_import(text: str, at: int, end: int) -> int | None:
    """Where the names start when blanks, `import` and blanks come at `at`; None otherwise."""
    keyword = _skip_blanks(text, at, end)
    if keyword == at or not text.startswith("import", keyword):
        return None
    names = keyword + 6
    if names >= end or text[names] not in " \t":
        return None
    return _skip_blanks(text, names, end)


def declared_package_roots(root: str) -> list[str]:
    """Folders the project's packaging metadata puts packages in (`src` layouts and the like)."""
    found: list[str] = []

    def add(relative: object) -> None:
        if isinstance(relative, str) and relative.strip() not in ("", "."):
            path = os.path.normpath(os.path.join(root, relative.strip()))
            if path.startswith(root + os.sep) and os.path.isdir(path) and path not in found:
                found.append(path)

    pyproject = os.path.join(root, "pyproject.toml")
    try:  # regular files only, bounded (fabric_lsp.sources.files): a link to /dev/zero or a FIFO is no metadata
        data = tomllib.loads(read_bytes(pyproject, MAX_SETTINGS_BYTES).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        data = {}
    tool = data.get("tool") if isinstance(data, dict) else None
    tool = tool if isinstance(tool, dict) else {}
    setuptools = tool.get("setuptools") if isinstance(tool.get("setuptools"), dict) else {}
    packages = setuptools.get("packages")
    if isinstance(packages, dict) and isinstance(packages.get("find"), dict):
        where = packages["find"].get("where")
        for item in where if isinstance(where, list) else [where]:
            add(item)
    package_dir = setuptools.get("package-dir")
    if isinstance(package_dir, dict):
        for value in package_dir.values():
            add(value)
    poetry = tool.get("poetry") if isinstance(tool.get("poetry"), dict) else {}
    for entry in poetry.get("packages", []) if isinstance(poetry.get("packages"), list) else []:
        if isinstance(entry, dict):
            add(entry.get("from"))
    hatch = tool.get("hatch") if isinstance(tool.get("hatch"), dict) else {}
    wheel = ((hatch.get("build") or {}).get("targets") or {}).get("wheel") if isinstance(hatch.get("build"), dict) else None
    if isinstance(wheel, dict) and isinstance(wheel.get("packages"), list):
        for item in wheel["packages"]:
            if isinstance(item, str):
                add(os.path.dirname(item.rstrip("/")))
    setup_cfg = os.path.join(root, "setup.cfg")
    try:
        text = read_text(setup_cfg, MAX_SETTINGS_BYTES)
    except OSError:
        text = ""
    # One blank run per place (`^\s*` spanned blank lines from every line start: quadratic).
    for match in re.finditer(r"^[ \t]*(?:package_dir[ \t]*=\s*=|where[ \t]*=)\s*(\S+)", text, re.M):
        add(match.group(1))
    if os.path.isdir(os.path.join(root, "src")):
        add("src")
    return found


@dataclass
class ModuleLocation:
    path: str  # a .py file (for a package: its __init__.py) or a namespace package folder
    external: bool  # outside the project: read for its classes, never interpreted
    is_package: bool = False


@dataclass
class Resolver:
    """Where `import a.b` leads from a given file. Answers are cached for the resolver's lifetime
    (one program build): the file system is read once per question."""

    root: str
    library_path_of: object  # () -> the analysis interpreter's sys.path, asked only when needed
    package_roots: list[str] = field(default_factory=list)
    inserted: dict = field(default_factory=dict)  # file -> folders it adds to sys.path by a literal
    _cache: dict = field(default_factory=dict)
    _listings: dict = field(default_factory=dict)
    listed: dict = field(default_factory=dict)  # folder -> disk_identity when it was listed

    def __post_init__(self) -> None:
        self.root = os.path.abspath(self.root)
        self.package_roots = declared_package_roots(self.root)
        self._library_path: tuple[str, ...] | None = None
        self._inside: dict[str, bool] = {}
        self._search: dict[tuple, list[str]] = {}

    @property
    def library_path(self) -> tuple[str, ...]:
        if self._library_path is None:
            found = self.library_path_of() if callable(self.library_path_of) else self.library_path_of
            self._library_path = tuple(found or ())
        return self._library_path

    def in_project(self, path: str) -> bool:
        folder = os.path.dirname(path)
        known = self._inside.get(folder)
        if known is None:
            if not (folder + os.sep).startswith(self.root + os.sep):
                known = False
            else:
                relative = folder[len(self.root) + 1:].split(os.sep) if folder != self.root else []
                known = not any(part in ("site-packages", "dist-packages") or part.startswith(".") for part in relative)
            self._inside[folder] = known
        return known

    def search_path(self, from_path: str, libraries: bool = True) -> list[str]:
        """Where an absolute import from `from_path` is looked for: the file's folder (a script's
        sys.path[0]), folders the file inserts into sys.path, the project root and its declared
        package folders, the folders between the file and the root and a `src/` in each of them,
        then the interpreter's sys.path."""
        key = (os.path.dirname(from_path), self.inserted.get(from_path, ()), libraries)
        known = self._search.get(key)
        if known is None:
            known = self._search[key] = self._search_path(from_path, libraries)
        return known

    def _search_path(self, from_path: str, libraries: bool) -> list[str]:
        folder = os.path.dirname(os.path.abspath(from_path))
        paths = [folder]
        for literal in self.inserted.get(from_path, ()):
            for base in (folder, self.root):
                candidate = os.path.normpath(os.path.join(base, literal))
                if os.path.isdir(candidate):
                    paths.append(candidate)
        if self.in_project(from_path) or folder == self.root:
            paths.append(self.root)
            paths.extend(self.package_roots)
            parent = folder
            chain = [folder]
            while (parent + os.sep).startswith(self.root + os.sep) and parent != self.root:
                parent = os.path.dirname(parent)
                chain.append(parent)
            paths.extend(chain[1:])
            for ancestor in chain:
                if "src" in self._names(ancestor):
                    candidate = os.path.join(ancestor, "src")
                    if os.path.isdir(candidate):
                        paths.append(candidate)
        if libraries:
            paths.extend(self.library_path)
        return list(dict.fromkeys(paths))

    def _names(self, folder: str) -> frozenset[str]:
        names = self._listings.get(folder)
        if names is None:
            self.listed[folder] = disk_identity(folder)  # before the listing: a change after it is seen
            try:
                names = frozenset(os.listdir(folder))
            except OSError:
                names = frozenset()
            self._listings[folder] = names
        return names

    def _find_in(self, folder: str, part: str) -> tuple[str | None, str | None]:
        """(regular module or package, namespace folder) named `part` in `folder`."""
        names = self._names(folder)
        if part in names:
            package = os.path.join(folder, part)
            if os.path.isdir(package):
                init = os.path.join(package, "__init__.py")
                if "__init__.py" in self._names(package):
                    return init, None
                module_file = part + ".py"
                if module_file in names:
                    return os.path.join(folder, module_file), None
                return None, package
        if part + ".py" in names:
            return os.path.join(folder, part + ".py"), None
        return None, None

    def resolve(self, dotted: str, from_path: str, level: int = 0) -> ModuleLocation | None:
        """The module `dotted` names, imported from `from_path` (relative when level > 0)."""
        key = (dotted, os.path.dirname(from_path) if level or from_path not in self.inserted else from_path, level)
        if key in self._cache:
            return self._cache[key]
        found = self._resolve(dotted, from_path, level)
        self._cache[key] = found
        return found

    def _resolve(self, dotted: str, from_path: str, level: int) -> ModuleLocation | None:
        parts = [part for part in dotted.split(".") if part]
        if level:
            base = os.path.dirname(os.path.abspath(from_path))
            for _ in range(level - 1):
                base = os.path.dirname(base)
            if not parts:
                init = os.path.join(base, "__init__.py")
                path = init if os.path.isfile(init) else base
                return ModuleLocation(path, not self.in_project(path), True)
            return self._descend([base], parts)
        if not parts or parts[0] in OPAQUE_ROOTS:
            return None
        # The project's own folders first; the interpreter's sys.path is read only when they do not
        # have the module (a file that imports nothing outside the project never asks for it).
        found = self._descend(self.search_path(from_path, libraries=False), parts)
        if found is not None and not found.external:
            return found
        return self._descend(self.search_path(from_path), parts)

    def _descend(self, folders: list[str], parts: list[str]) -> ModuleLocation | None:
        namespace: list[str] = []
        location: str | None = None
        for folder in folders:
            regular, portion = self._find_in(folder, parts[0])
            if regular is not None:
                location = regular
                break
            if portion is not None:
                namespace.append(portion)
        if location is None and not namespace:
            return None
        for part in parts[1:]:
            if location is not None:
                if not location.endswith("__init__.py"):
                    return None  # `a.b` where a is a plain module: an attribute, not a module
                candidates = [os.path.dirname(location)]
            else:
                candidates = namespace
            namespace = []
            location = None
            for folder in candidates:
                regular, portion = self._find_in(folder, part)
                if regular is not None:
                    location = regular
                    break
                if portion is not None:
                    namespace.append(portion)
            if location is None and not namespace:
                return None
        path = location if location is not None else namespace[0]
        is_package = location is None or location.endswith("__init__.py")
        return ModuleLocation(path, not self.in_project(path), is_package)

    def compiled_module(self, dotted: str, from_path: str, level: int = 0) -> bool:
        """Is `dotted` (not a .py module: resolve found nothing) an extension module or a stub-only
        module (`bit_generator.cpython-311-x86_64-linux-gnu.so`, `x.pyi`) beside where resolve looked?"""
        parts = [part for part in dotted.split(".") if part]
        if not parts:
            return False
        if level:
            base = os.path.dirname(os.path.abspath(from_path))
            for _ in range(level - 1):
                base = os.path.dirname(base)
            folders = [base]
        elif parts[0] in OPAQUE_ROOTS:
            return False
        else:
            folders = self.search_path(from_path)
        if len(parts) > 1:
            parent = self._descend(folders, parts[:-1]) if folders else None
            if parent is None or not parent.is_package:
                return False
            folders = [os.path.dirname(parent.path) if parent.path.endswith("__init__.py") else parent.path]
        prefix = parts[-1] + "."
        return any(
            name.startswith(prefix) and name.endswith(_COMPILED_SUFFIXES)
            for folder in folders for name in self._names(folder)
        )

    def resolve_in_project(self, dotted: str, from_path: str, level: int = 0) -> ModuleLocation | None:
        """Like resolve, but only among the project's folders (for the import graph between its files)."""
        if level:
            return self.resolve(dotted, from_path, level)
        parts = [part for part in dotted.split(".") if part]
        if not parts or parts[0] in OPAQUE_ROOTS:
            return None
        key = ("project", dotted, os.path.dirname(from_path) if from_path not in self.inserted else from_path)
        if key not in self._cache:
            self._cache[key] = self._descend(self.search_path(from_path, libraries=False), parts)
        return self._cache[key]

    def submodule(self, package: ModuleLocation, name: str) -> ModuleLocation | None:
        """`package.name` when it is a module of the package (a file or folder beside __init__.py)."""
        if not package.is_package:
            return None
        folder = os.path.dirname(package.path) if package.path.endswith("__init__.py") else package.path
        regular, portion = self._find_in(folder, name)
        if regular is None and portion is None:
            return None
        path = regular or portion
        return ModuleLocation(path, not self.in_project(path), regular is None or regular.endswith("__init__.py"))

    def imported_files(self, imports: list[ScannedImport], from_path: str) -> list[str]:
        """Project files an import list executes (modules, their packages' __init__.py, submodules)."""
        found: list[str] = []
        for item in imports:
            location = self.resolve_in_project(item.module, from_path, item.level)
            chain = []
            if location is not None:
                chain.append(location)
                for name in item.names:
                    if name != "*":
                        sub = self.submodule(location, name)
                        if sub is not None:
                            chain.append(sub)
            if item.level == 0 and item.module:
                parts = item.module.split(".")
                for end in range(1, len(parts)):
                    parent = self.resolve_in_project(".".join(parts[:end]), from_path, 0)
                    if parent is not None:
                        chain.append(parent)
            for entry in chain:
                if not entry.external and entry.path.endswith(".py"):
                    found.append(entry.path)
        return found

    def module_names(self, path: str) -> tuple[str, ...]:
        """The names other files use to import `path` (its stem, or its package folder's name)."""
        name = os.path.basename(path)
        if name == "__init__.py":
            return (os.path.basename(os.path.dirname(path)),)
        return (name[:-3],) if name.endswith(".py") else (name,)
