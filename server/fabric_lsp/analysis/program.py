"""One program: the files of a project that take part (see project.py), translated (ir.py) and
solved (flow.py), plus the library files they reach, read but not interpreted.

`build_program` is what the engine calls. Files are read from the editor's unsaved buffers first,
then from disk; each file's text, imports and translation are kept between builds while its
content is the same (by identity for buffers, by size/mtime/ctime/inode on disk), so a rebuild
after an edit re-reads and re-translates only what changed.
"""

from __future__ import annotations

import ast
import logging
import os
import re
import threading
from dataclasses import dataclass, field

from fabric_lsp.analysis import ir
from fabric_lsp.analysis.constants import module_constants
from fabric_lsp.analysis.flow import Solver
from fabric_lsp.analysis.imports import normalize_torch_name
from fabric_lsp.analysis.incremental import parse_text
from fabric_lsp.analysis.libraries import models as library_models
from fabric_lsp.analysis.project import (
    MAX_PROGRAM_FILES,
    OPAQUE_ROOTS,
    ModuleLocation,
    Resolver,
    ScannedImport,
    is_origin,
    names_fabric_class,
    scan_imports,
    sys_path_literals,
    config_imports,
)
from fabric_lsp.analysis.source import SourceFile, parse_file
from fabric_lsp.sources.files import disk_identity
from fabric_lsp.analysis.values import Class, Function, Lib, Module
from fabric_lsp.findings import Position
from fabric_lsp.sources.notebook import is_notebook_path, layout_of
from fabric_lsp.sources.walk import SKIP_DIRS, exclude_matcher, read_source

log = logging.getLogger("fabric_lsp.analysis")

MAX_EXTERNAL_HOPS = 12  # re-exports followed through library packages



@dataclass
class FileEntry:
    path: str
    identity: object  # what says the text is unchanged
    text: str
    origin: bool
    imports: list[ScannedImport]
    inserted: tuple[str, ...] = ()  # sys.path literals (project.sys_path_literals)


_files_lock = threading.Lock()
_file_entries: dict[str, FileEntry] = {}




def file_entry(path: str, overlays: dict[str, str], max_size: int, root: str | None = None) -> FileEntry | None:
    """Text, origin flag and imports of a project file (None when unreadable or too large)."""
    text = overlays.get(path)
    identity = ("buffer", id(text)) if text is not None else ("disk", disk_identity(path))
    with _files_lock:
        known = _file_entries.get(path)
        if known is not None and (known.identity == identity or (text is not None and known.text == text)):
            return known
    if text is None:
        decoded, _ = read_source(path, max_size)
        if decoded is None:
            return None
        text = decoded.text
    configured = config_imports(path, text, root)
    # A script whose configuration's `_target_` is Fabric makes one (`fabric = instantiate(cfg.fabric)`).
    entry = FileEntry(path, identity, text, is_origin(text) or names_fabric_class(configured),
                      scan_imports(text) + configured, sys_path_literals(text))
    with _files_lock:
        _file_entries[path] = entry
    return entry


def forget_files() -> None:
    with _files_lock:
        _file_entries.clear()


@dataclass
class Program:
    root: str
    resolver: Resolver
    sources: dict[str, SourceFile]  # project files taking part, by path
    scopes: list[ir.Scope]
    module_scopes: dict[str, ir.Scope]
    checked: tuple[str, ...]  # the files the program was built for
    referenced: frozenset[str]  # every name used in the program's files (loads and attributes)
    assigned_attributes: frozenset[str]  # every `x.<name> = ...` and setattr(x, "<name>") name
    notices: list[str] = field(default_factory=list)
    solver: Solver | None = None
    jedi: object = None  # workspace.Workspace, for library names (see _external_lookup)
    _jedi_asked: set = field(default_factory=set)
    _external: dict[str, SourceFile | None] = field(default_factory=dict)
    _external_read: dict[str, tuple | None] = field(default_factory=dict)  # path -> disk_identity before reading
    _external_static: dict = field(default_factory=dict)
    _library_modules: dict = field(default_factory=dict)  # path -> dotted name in a library with tables
    _class_bindings: dict = field(default_factory=dict)
    _external_class_nodes: dict = field(default_factory=dict)

    # -- ProgramView ------------------------------------------------------------------------------
    def module_scope(self, path: str) -> ir.Scope | None:
        return self.module_scopes.get(path)

    # -- classes (questions the solver records with their answers: see flow.Solver._ask) --------------
    @property
    def class_scopes(self) -> dict:
        known = self.__dict__.get("_class_scopes")
        if known is None:
            from fabric_lsp.analysis.flow_state import class_key

            known = {class_key(scope): scope for scope in self.scopes if scope.kind == ir.CLASS}
            self.__dict__["_class_scopes"] = known
        return known

    def class_keys(self) -> tuple:
        return tuple(self.class_scopes)

    def class_binding(self, mro: tuple, name: str) -> tuple:
        """(the first class of `mro` whose statements bind `name`, the values a library class binds
        it to); (None, {}) if none. Static for the program's files: one question per lookup, kept."""
        key = (mro, name)
        known = self._class_bindings.get(key)
        if known is None:
            known = self._class_bindings[key] = self._first_binding(mro, name)
        return known

    def _first_binding(self, mro: tuple, name: str) -> tuple:
        from fabric_lsp.analysis.semantics.python_classes import library_defines

        for ref in mro:
            if isinstance(ref, Class):
                if ref.external:
                    values = self.external_attribute(ref, name)
                    if values:
                        return ref, values
                elif self.class_binds(ref, name):
                    return ref, frozenset()
            elif isinstance(ref, Lib) and library_defines(ref.qualified, name):
                return ref, frozenset()
        return None, frozenset()

    def class_binds(self, cls: Class, name: str) -> bool:
        scope = self.class_scopes.get(cls)
        return scope is not None and name in scope.assigned

    def class_has_bases(self, cls: Class) -> bool:
        scope = self.class_scopes.get(cls)
        return scope is not None and bool(getattr(scope.node, "bases", None))

    def dataclass_fields(self, cls: Class) -> tuple[str, ...] | None:
        """The fields of a `@dataclass` class (annotated names of its body, in order); None otherwise."""
        scope = self.class_scopes.get(cls)
        if scope is None or "dataclass" not in scope.decorator_names:
            return None
        return tuple(
            statement.target.id for statement in scope.node.body
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
            and not statement.target.id.startswith("__")
        )

    def module_binds(self, path: str, name: str) -> bool:
        scope = self.module_scopes.get(path)
        return scope is not None and name in scope.assigned

    def module_exports(self, path: str) -> tuple[str, ...] | None:
        """What `from <module> import *` binds (its public names; `__all__` is not read)."""
        scope = self.module_scopes.get(path)
        if scope is None:
            return None
        return tuple(sorted(name for name in scope.assigned if not name.startswith("_")))

    def resolve_import(self, dotted: str, from_path: str, level: int):
        if level == 0:
            top = dotted.split(".")[0]
            if top in OPAQUE_ROOTS:
                return Lib(normalize_torch_name(dotted))
            if library_models.is_library_name(dotted):
                # The library tables answer its names (libraries/models.py); what they do not
                # know is read from the one module that defines it (library_fallback), never jedi.
                return Lib(dotted)
        location = self.resolver.resolve(dotted, from_path, level)
        return self._module_value(location)

    def _module_value(self, location: ModuleLocation | None):
        if location is None:
            return None
        if not location.external and location.path not in self.module_scopes and location.path.endswith(".py"):
            # A project file outside the program (not reachable): what it binds is not followed.
            return Module(location.path, external=True)
        return Module(location.path, external=location.external)

    def submodule(self, module: Module, name: str):
        location = ModuleLocation(module.path, module.external, is_package=True)
        if module.path.endswith(".py") and not module.path.endswith("__init__.py"):
            return None
        return self._module_value(self.resolver.submodule(location, name))

    def segment(self, path: str, node: ast.AST) -> str:
        source = self.sources.get(path) or self._external.get(path)
        return source.segment(node) if source is not None else ""

    def is_entry(self, scope: ir.Scope) -> bool:
        """A function (or class) nothing in the program names: called from outside (a CLI, a
        framework). Functions that reach code the analysis does not follow are found by the
        value flow (flow.Solver: "escaped")."""
        # `__init__` runs when its class is called, whether or not anything names `__init__` itself; it is
        # called from outside when its class is never named in the program (a trainer class built by a
        # framework, hydra's `_target_`, a registry keyed by strings): its parameters then take what their
        # annotations say.
        if scope.class_scope is not None and scope.name in ("__init__", "__post_init__", "__call__"):
            return scope.class_scope.name not in self.referenced
        return scope.name not in self.referenced

    def attribute_assigned(self, name: str) -> bool:
        return name in self.assigned_attributes or "*" in self.assigned_attributes

    def module_constant(self, path: str, name: str, depth: int = 0) -> tuple | None:
        """(value,) when `name` is a constant of the project module `path` (analysis/constants.py)
        that no module of the program rebinds (`config.devices = 2` anywhere, `setattr` with a name
        that cannot be read); followed through `from module import name`. None otherwise."""
        source = self.sources.get(path)
        if source is None or source.tree is None or depth > 4 or self.attribute_assigned(name):
            return None
        known = self.__dict__.setdefault("_module_constants", {})
        found = known.get(path)
        if found is None:
            found = known[path] = module_constants(source.tree)
        constants, imported = found
        if name in constants:
            return (constants[name],)
        if name in imported:
            module, level, original = imported[name]
            target = self.resolve_import(module or "", path, level)
            if isinstance(target, Module) and not target.external:
                return self.module_constant(target.path, original, depth + 1)
        return None

    # -- files outside the program (libraries, unreachable project files) ------------------------------
    def external_source(self, path: str) -> SourceFile | None:
        if path in self.sources:
            return self.sources[path]
        if path not in self._external:
            self._external_read[path] = disk_identity(path)
            source = parse_file(path) if path.endswith(".py") else None
            self._external[path] = source if source is not None and source.tree is not None else None
        return self._external[path]

    def config_file(self, script_path: str, text: str, kind: str) -> str | None:
        """The configuration file a program opens by a literal path (`open("configs/train.yaml")`, or an
        option's default): looked for from the script's folder, then from the project root; only a file
        inside the project is read. The absolute path, or None."""
        if not text or len(text) > 1000 or "\x00" in text:
            return None
        for base in (os.path.dirname(script_path), self.root):
            candidate = os.path.normpath(os.path.join(base, os.path.expanduser(text) if text.startswith("~") else text))
            if os.path.isfile(candidate) and (candidate + os.sep).startswith(self.root.rstrip(os.sep) + os.sep):
                return candidate
        return None

    def config_document(self, key: tuple):
        """A configuration read as data (analysis/config_files.py: the safe loader, bounded, inside the
        project only), once per program: ("file", kind, path), ("text", kind, text, path, line) or ("hydra",
        config folder, config name). The files it read are noted for the findings cache. None: nothing read."""
        known = self.__dict__.setdefault("_config_documents", {})
        if key in known:
            return known[key]
        from fabric_lsp.analysis import config_files  # PyYAML is imported only by programs that load configs

        document = None
        try:
            if key[0] == "file":
                document = config_files.load_data_file(key[2], self.root, kind=key[1])
            elif key[0] == "text":
                document = config_files.load_text(key[2], key[1], key[3], key[4])
            elif key[0] == "hydra":
                document = config_files.compose_hydra(key[1], key[2] or None, self.root)
        except (OSError, ValueError, RecursionError, MemoryError):
            document = None
        if document is not None and key[0] != "text":
            self.note_outside_reads((path, disk_identity(path)) for path in document.files)
            if document.problem:
                self.notices.append(f"{self.root}: {document.problem} (its values are unknown to the analysis)")
        known[key] = document
        return document

    def note_outside_reads(self, stamps) -> None:
        """Files read as text for an answer that are not program sources (the launch documents)."""
        for path, identity in stamps:
            self._external_read.setdefault(path, identity)

    def outside_reads(self) -> dict[str, tuple | None]:
        """What the program's answer read outside the project's files, each with its disk_identity
        from before it was read: the library modules read as text (installed, editable, inserted into
        sys.path by a literal), and the folders listed to resolve imports outside the project. The
        findings cache checks them (cache.py), so an edit there is never answered from the cache."""
        found = {folder: identity for folder, identity in self.resolver.listed.items()
                 if not self.resolver.in_project(os.path.join(folder, "_"))}
        found.update(self._external_read)
        return found

    def external_attribute(self, owner, name: str) -> frozenset:
        """What a module-level name of an external module, or a class-body name of an external class,
        is, read from the statements that bind it (defs, classes, imports, simple aliases)."""
        key = (owner, name)
        if key in self._external_static:
            return self._external_static[key]
        self._external_static[key] = frozenset()  # cycle guard
        found = self._external_lookup(owner, name, 0)
        self._external_static[key] = found
        return found

    def _external_lookup(self, owner, name: str, hops: int) -> frozenset:
        if hops > MAX_EXTERNAL_HOPS:
            return frozenset()
        if isinstance(owner, Module):
            source = self.external_source(owner.path) if owner.path.endswith(".py") else None
            value = None
            if source is not None:
                value = self._binding_in(_module_bindings(source.tree), name, source, owner.path, None, hops)
            if value:
                return value
            sub = self.submodule(Module(owner.path, True), name)
            if sub is not None:
                return frozenset({sub})
            # jedi only for what may be a class (CapWords, by convention): what the rules need of a
            # library is its classes (a library function's body is not followed anyway), and
            # `np.zeros` should not cost a jedi question.
            if source is not None and name[:1].isupper() and not self._jedi_finds_nothing(owner.path, name, hops):
                return self.ask_jedi(owner.path, name)
            return frozenset()
        if isinstance(owner, Class):
            node = self.external_class_node(owner)
            if node is None:
                return frozenset()
            source = self.external_source(owner.path)
            return self._binding_in(_class_bindings(node), name, source, owner.path, owner, hops) or frozenset()
        return frozenset()

    def _binding_in(self, bindings: dict[str, list], name: str, source: SourceFile, path: str, cls: Class | None,
                    hops: int):
        """What the statements of a body (`bindings`: _module_bindings, _class_bindings) bind `name`
        to: the last binding we can read (a def, a class, an import, `Name = OtherName`); None when
        none of them is one."""
        found = None
        for statement in bindings.get(name, ()):
            candidate = None
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == name:
                qualname = f"{cls.qualname}.{name}" if cls is not None else name
                candidate = frozenset({Function((path, qualname, statement), external=True)})
            elif isinstance(statement, ast.ClassDef) and statement.name == name:
                qualname = f"{cls.qualname}.{name}" if cls is not None else name
                candidate = frozenset({self._library_class_value(path, qualname)
                                       or Class(path, qualname, statement.lineno, external=True)})
            elif isinstance(statement, ast.ImportFrom) and cls is None:
                for alias in statement.names:
                    if (alias.asname or alias.name) == name and alias.name != "*":
                        base = self._import_value(statement.module or "", path, statement.level)
                        if isinstance(base, Lib):
                            candidate = frozenset({Lib(base.qualified + "." + alias.name)})
                        elif isinstance(base, Module):
                            candidate = self._external_lookup(base, alias.name, hops + 1) or None
            elif isinstance(statement, ast.Import) and cls is None:
                for alias in statement.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    if bound == name:
                        value = self._import_value(alias.name if alias.asname else bound, path, 0)
                        candidate = frozenset({value}) if value is not None else None
            elif isinstance(statement, ast.Assign) and len(statement.targets) == 1:
                target = statement.targets[0]
                if isinstance(target, ast.Name) and target.id == name:
                    value = statement.value
                    if isinstance(value, ast.Name) and value.id != name:
                        candidate = self._binding_in(bindings, value.id, source, path, cls, hops + 1)
            if candidate:
                found = candidate
        return found

    def _jedi_finds_nothing(self, path: str, name: str, hops: int) -> bool:
        """Would jedi's goto for `name` of the library module `path` land only where _definition_value
        finds nothing? It does when every statement binding the name is an assignment (goto stops at
        the statement: `MARK_GEN = MarkGenerator()`) or imports it from an extension or stub-only
        module (goto ends in a .so or .pyi, which are not read), through re-exports. Then the answer
        is the same without asking, and a program whose library names are all of this kind never
        pays for starting jedi (~0.3 s)."""
        if hops > MAX_EXTERNAL_HOPS:
            return False
        source = self.external_source(path)
        if source is None:
            return False
        bindings = _module_bindings(source.tree)
        if STAR in bindings and not any(statement in source.tree.body for statement in bindings.get(name, ())):
            # jedi follows star imports, unless the module binds the name itself where it is always
            # reached (a top-level statement: its own names come first, jedi's finder.filter_name):
            # `from ._generator import Generator` in numpy.random, which also has `from .mtrand import *`
            return False
        bound = False
        for statement in bindings.get(name, ()):
            if isinstance(statement, ast.ImportFrom):
                for alias in statement.names:
                    if (alias.asname or alias.name) != name:
                        continue
                    bound = True
                    module, level = statement.module or "", statement.level
                    target = self.resolver.resolve(module, path, level) if level or module.split(".")[0] not in OPAQUE_ROOTS else None
                    if target is None:
                        if not self.resolver.compiled_module(module, path, level):
                            return False
                    elif not target.path.endswith(".py") or not self._jedi_finds_nothing(target.path, alias.name, hops + 1):
                        return False
            elif isinstance(statement, ast.Import):
                if any((alias.asname or alias.name.split(".")[0]) == name for alias in statement.names):
                    return False
            elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if statement.name == name:
                    return False
            elif isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                if any(isinstance(node, ast.Name) and node.id == name for target in targets for node in ast.walk(target)):
                    bound = True
        return bound

    def library_fallback(self, qualified: str) -> frozenset:
        """A name of a library with tables that the tables do not know: what the one module that
        defines it binds (read as text, never jedi: transformers' lazy `__init__` sent one jedi
        question through 4,500 star imports, 38 s). Its classes' bases that the tables know become
        their `Lib` values, so an undescribed model class inherits GenerationMixin.generate's verdict."""
        module, _, name = qualified.rpartition(".")
        if not module or not name:
            return frozenset()
        location = self.resolver.resolve(module, self.root, 0)
        if location is None or not location.path.endswith(".py"):
            return frozenset()
        return self.external_attribute(Module(location.path, True), name)

    def _library_dotted(self, path: str) -> str | None:
        """The dotted module name of a file of a library with tables, on the analysis interpreter's path."""
        known = self._library_modules.get(path, False)
        if known is not False:
            return known
        found = None
        for folder in self.resolver.library_path:
            if folder and path.startswith(folder.rstrip(os.sep) + os.sep) and path.endswith(".py"):
                parts = path[len(folder.rstrip(os.sep)) + 1:-3].split(os.sep)
                if parts[-1] == "__init__":
                    parts.pop()
                dotted = ".".join(parts)
                found = dotted if parts and library_models.is_library_name(dotted) else None
                break
        self._library_modules[path] = found
        return found

    def _library_class_value(self, path: str, qualname: str):
        """`Lib` for a class statement of a library with tables that the tables describe, else None."""
        dotted = self._library_dotted(path)
        if dotted is None:
            return None
        name = library_models.known(f"{dotted}.{qualname}")
        return Lib(name) if name is not None and library_models.is_class(name) else None

    def ask_jedi(self, path: str, name: str) -> frozenset:
        """A library module's name that its binding statements do not answer (a lazy loader, names
        made by code): jedi's answer, at most JEDI_QUESTIONS_PER_PROGRAM distinct questions per
        program (counted per program, so the answer never depends on what another program asked)."""
        if self.jedi is None or self.resolver.in_project(path) or self._library_dotted(path) is not None:
            return frozenset()
        from fabric_lsp.analysis.workspace import JEDI_QUESTIONS_PER_PROGRAM

        key = (path, name)
        if key not in self._jedi_asked:
            if len(self._jedi_asked) >= JEDI_QUESTIONS_PER_PROGRAM:
                if len(self._jedi_asked) == JEDI_QUESTIONS_PER_PROGRAM:
                    self._jedi_asked.add(None)
                    self.notices.append(f"{self.root}: more than {JEDI_QUESTIONS_PER_PROGRAM} library names needed "
                                        "jedi; the others stay unknown")
                return frozenset()
            self._jedi_asked.add(key)
        found = set()
        for definition in self.jedi.module_attribute(path, name, self.notices):
            value = self._definition_value(definition)
            if value is not None:
                found.add(value)
        return frozenset(found)

    def _definition_value(self, definition):
        path = definition.path
        if definition.kind == "module":
            return Module(path, external=not self.resolver.in_project(path))
        source = self.external_source(path)
        if source is None:
            return None
        node, qualname = _definition_at(source.tree, definition.line)
        if node is None:
            return None
        if definition.kind == "class" and isinstance(node, ast.ClassDef):
            return Class(path, qualname, node.lineno, external=True)
        if definition.kind == "function" and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return Function((path, qualname, node), external=True)
        return None

    def _import_value(self, dotted: str, from_path: str, level: int):
        if level == 0 and dotted.split(".")[0] in OPAQUE_ROOTS:
            return Lib(normalize_torch_name(dotted))
        if level == 0 and library_models.is_library_name(dotted):
            return Lib(dotted)
        location = self.resolver.resolve(dotted, from_path, level)
        if location is None:
            return None
        return Module(location.path, external=True)

    def external_class_node(self, cls: Class) -> ast.ClassDef | None:
        if cls in self._external_class_nodes:
            return self._external_class_nodes[cls]
        source = self.external_source(cls.path)
        node = None
        if source is not None:
            body = source.tree.body
            for part in cls.qualname.split("."):
                node = next((s for s in body if isinstance(s, ast.ClassDef) and s.name == part), None)
                if node is None:
                    break
                body = node.body
        self._external_class_nodes[cls] = node  # asked for each name looked up on the class
        return node

    def external_bases(self, cls: Class) -> list[frozenset]:
        node = self.external_class_node(cls)
        if node is None:
            return []
        source = self.external_source(cls.path)
        found = []
        for base in node.bases:
            found.append(self._static_value(base, source, cls.path))
        return found

    def _static_value(self, expr: ast.AST, source: SourceFile, path: str) -> frozenset:
        if isinstance(expr, ast.Name):
            return self.external_attribute(Module(path, True), expr.id)
        if isinstance(expr, ast.Attribute):
            found = set()
            for value in self._static_value(expr.value, source, path):
                if isinstance(value, Lib):
                    found.add(Lib(normalize_torch_name(value.qualified + "." + expr.attr)))
                elif isinstance(value, (Module, Class)):
                    found.update(self.external_attribute(value, expr.attr))
            return frozenset(found)
        return frozenset()

    def external_classmethod_returns_cls(self, function: Function) -> bool:
        path, _, node = function.scope
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        decorated = any(getattr(d, "id", getattr(d, "attr", "")) == "classmethod" for d in node.decorator_list)
        if not decorated or not node.args.args:
            return False
        first = node.args.args[0].arg
        for inner in ast.walk(node):
            if isinstance(inner, ast.Return) and isinstance(inner.value, ast.Call):
                func = inner.value.func
                if isinstance(func, ast.Name) and func.id == first:
                    return True
        return False

    def class_scope(self, cls: Class) -> ir.Scope | None:
        return self.solver.classes.get(cls) if self.solver is not None else None

    def source_of(self, path: str) -> SourceFile | None:
        return self.sources.get(path) or self.external_source(path)


def _not_parsed(path: str, text: str, source: SourceFile, resolver: Resolver) -> str:
    """Why a file is not analysed: its syntax error, or (report/syntax.py says the same, and reports
    no invalid-syntax entry) that its target is newer than any syntax fabric-lsp knows."""
    from fabric_lsp.analysis.compat import target_version

    if source.syntax_error and source.syntax_error.startswith(("SyntaxError", "IndentationError", "TabError")):
        target = target_version(path, lambda: resolver.library_path)
        if not target.judged:
            return target.unknown_syntax()
    return _in_cells(path, text, source.syntax_error)


def _in_cells(path: str, text: str, message: str) -> str:
    """A syntax error's "line N" of a notebook's joined cells as "cell C, line L"."""
    layout = layout_of(text) if is_notebook_path(path) else None
    if layout is None:
        return message

    def cell_line(match: re.Match) -> str:
        found = layout.to_cell(Position(int(match.group(1)) - 1, 0))
        return f"cell {found[0].number}, line {found[1].line + 1}" if found else match.group(0)

    return re.sub(r"line (\d+)", cell_line, message)


# The project index reads at most this many files and folders of a project (a fixed order: the same
# ones each time); past either, the rest is left out with one notice. The server re-reads the
# folders' modification times at every edit, so the folders are bounded as well as the files.
MAX_WALKED_FILES = 20000
MAX_WALKED_FOLDERS = 20000
_walks_lock = threading.Lock()
_walks: dict[tuple, tuple[list[str], list[tuple[str, int]], str | None]] = {}


def project_paths(root: str, exclude, checked) -> list[str]:
    """The project's Python files (the folders `check` would walk) and the checked files."""
    files, _ = project_walk(root, exclude)
    known_files = set(files)
    return files + [path for path in checked if path not in known_files and not known_files.add(path)]


def project_walk(root: str, exclude) -> tuple[list[str], str | None]:
    """The project's Python files, and the notice of a bound hit (else None). The walk is kept while
    no folder of it changed (a file added, removed or renamed changes its folder)."""
    key = (root, tuple(exclude))
    with _walks_lock:
        known = _walks.get(key)
    if known is not None and all(_mtime(folder) == mtime for folder, mtime in known[1]):
        return known[0], known[2]
    files, folders, notice = _walk_python_files(root, exclude)
    with _walks_lock:
        _walks[key] = (files, folders, notice)
        while len(_walks) > 16:
            _walks.pop(next(iter(_walks)))
    return files, notice


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def _walk_python_files(root: str, exclude) -> tuple[list[str], list[tuple[str, int]], str | None]:
    """Like walk.discover for one folder (the same folders skipped; links to folders not followed,
    so the index stays inside the project), without resolving every file's real path, and with the
    folders seen and their modification times."""
    matcher = exclude_matcher(exclude, root)
    files: list[str] = []
    folders: list[tuple[str, int]] = []
    seen: set[tuple[int, int]] = set()
    pending = [root]
    while pending:
        if len(files) >= MAX_WALKED_FILES or len(folders) >= MAX_WALKED_FOLDERS:
            notice = (f"{root}: the project index stops at {MAX_WALKED_FOLDERS:,} folders or {MAX_WALKED_FILES:,} "
                      f"Python files; the files it did not reach are not analysed with the others")
            return sorted(files), folders, notice
        folder = pending.pop()
        try:
            info = os.stat(folder)
            identity = (info.st_dev, info.st_ino)
            if identity in seen:
                continue
            seen.add(identity)
            folders.append((folder, info.st_mtime_ns))
            with os.scandir(folder) as scanned:
                children = sorted(scanned, key=lambda entry: entry.name)
        except OSError:
            continue
        below = []
        for entry in children:
            name = entry.name
            try:
                is_dir = entry.is_dir()
            except OSError:
                continue
            if is_dir:
                if (not entry.is_symlink() and not name.startswith(".") and name not in SKIP_DIRS
                        and not matcher.excluded(entry.path, True)):
                    below.append(entry.path)
            elif name.endswith(".py") and not matcher.excluded(entry.path, False):
                files.append(entry.path)
        pending.extend(reversed(below))
    return sorted(files), folders, None


@dataclass
class Plan:
    """What a project's programs are, found from the files' text without parsing them: the files
    read, the import graph between them, and the groups of files that form one program each."""

    root: str
    resolver: Resolver
    entries: dict[str, FileEntry]
    imports_of: dict[str, list[str]]
    groups: list[list[str]]  # each a program's files, sorted
    group_of: dict[str, int]
    notices: tuple[str, ...] = ()  # about the whole project (the index's bound), said with each program

    @property
    def walked(self) -> tuple[str, ...]:
        return tuple(sorted(self.entries))

    def groups_of(self, paths) -> list[int]:
        return sorted({self.group_of[p] for p in paths if p in self.group_of})


def plan_project(root: str, checked: list[str], overlays: dict[str, str], library_path,
                 exclude=(), max_file_size: int = 2 * 1024 * 1024) -> Plan:
    """The programs of the project at `root`: one per group of files connected by imports (files
    that import nothing of each other's share no value, so each group is solved on its own and gives
    the same answer whatever else is checked with it). The files `checked` are considered even when
    the walk would skip them (an explicit argument, an excluded file open in the editor)."""
    root = os.path.abspath(root)
    resolver = Resolver(root, library_path)
    walked, walk_notice = project_walk(root, exclude)
    known = set(walked)
    paths = walked + [path for path in checked if path not in known and not known.add(path)]
    entries: dict[str, FileEntry] = {}
    for path in paths:
        entry = file_entry(path, overlays, max_file_size, root)
        if entry is not None:
            entries[path] = entry
            if entry.inserted:
                resolver.inserted[path] = entry.inserted
    # The import graph among project files, read from the import lines.
    imports_of: dict[str, list[str]] = {}
    importers: dict[str, set[str]] = {}
    for path in sorted(entries):
        targets = [t for t in resolver.imported_files(entries[path].imports, path) if t in entries and t != path]
        imports_of[path] = targets
        for target in targets:
            importers.setdefault(target, set()).add(path)
    members: set[str] = set()
    pending = sorted(p for p, e in entries.items() if e.origin)
    while pending:  # the origins and every file that imports one of them, transitively
        path = pending.pop()
        if path in members:
            continue
        members.add(path)
        pending.extend(sorted(importers.get(path, ())))
    pending = sorted(members)
    while pending:  # and everything those import
        path = pending.pop()
        for target in imports_of.get(path, ()):
            if target not in members:
                members.add(target)
                pending.append(target)
    # Groups of members connected by imports (either way).
    group_of: dict[str, int] = {}
    groups: list[list[str]] = []
    for start in sorted(members):
        if start in group_of:
            continue
        group_of[start] = len(groups)
        group = [start]
        index = 0
        while index < len(group):
            path = group[index]
            index += 1
            for other in sorted(set(imports_of.get(path, ())) | importers.get(path, set())):
                if other in members and other not in group_of:
                    group_of[other] = len(groups)
                    group.append(other)
        groups.append(sorted(group))
    return Plan(root, resolver, entries, imports_of, groups, group_of, (walk_notice,) if walk_notice else ())


def build_programs(root: str, checked: list[str], overlays: dict[str, str], library_path,
                   exclude=(), max_file_size: int = 2 * 1024 * 1024) -> tuple[list[Program], tuple[str, ...]]:
    """The programs (see plan_project) that the files `checked` take part in, and the files read."""
    plan = plan_project(root, checked, overlays, library_path, exclude, max_file_size)
    programs = [program_of(plan, number, checked) for number in plan.groups_of(checked)]
    return programs, plan.walked


def program_of(plan: Plan, number: int, checked: list[str], jedi=None) -> Program:
    program = _program(plan.root, plan.resolver, plan.groups[number], plan.entries, plan.imports_of, checked)
    program.notices[:0] = plan.notices
    program.jedi = jedi
    return program


def _program(root: str, resolver: Resolver, group: list[str], entries: dict[str, FileEntry],
             imports_of: dict[str, list[str]], checked: list[str]) -> Program:
    notices: list[str] = []
    checked_set = set(checked)
    ordered = group
    if len(ordered) > MAX_PROGRAM_FILES:
        notices.append(f"{root}: {len(ordered)} files take part in one program; only the first {MAX_PROGRAM_FILES} are analysed")
        keep = set(ordered[:MAX_PROGRAM_FILES])
        keep.update(p for p in checked if p in group)
        ordered = sorted(keep)
    sources: dict[str, SourceFile] = {}
    module_scopes: dict[str, ir.Scope] = {}
    for path in ordered:
        entry = entries[path]
        # The checked files are parsed as the engine's own (analysis.incremental: in-place shifts).
        source = parse_text(path, entry.text, checked=path in checked_set)
        if source.tree is None:
            notices.append(f"{path}: not analysed: {_not_parsed(path, entry.text, source, resolver)}")
            continue
        if source.newer_syntax:
            notices.append(f"{path}: {source.newer_syntax}")
        scope = ir.translate(source)
        if scope is None:
            continue
        sources[path] = source
        module_scopes[path] = scope
    scopes = _ordered_scopes(module_scopes, imports_of)
    referenced, assigned_attributes = _names_used(module_scopes.values())
    return Program(root, resolver, sources, scopes, module_scopes, tuple(checked), referenced,
                   assigned_attributes, notices)


def _module_bindings(tree: ast.Module) -> dict[str, list]:
    """The module-level statements (_module_level) that may bind each name, in order."""
    return _binding_index(tree, lambda: _module_level(tree.body))


def _class_bindings(node: ast.ClassDef) -> dict[str, list]:
    """The statements of a class body that may bind each name, in order."""
    return _binding_index(node, lambda: node.body)


STAR = "*"  # the key of a body's star imports in its binding index


def _binding_index(node: ast.AST, statements) -> dict[str, list]:
    """Name -> the statements of `statements()` that may bind it (defs, classes, imports, names
    assigned to; star imports under STAR), in order. Indexed once per module or class: reading the
    whole body for each name looked up made a library module of n definitions cost n^2 when a
    project imports each of them."""
    index = node.__dict__.get("_binding_index")
    if index is None:
        index = {}
        for statement in statements():
            for name in _names_bound_by(statement):
                found = index.setdefault(name, [])
                if not found or found[-1] is not statement:
                    found.append(statement)
        node.__dict__["_binding_index"] = index
    return index


def _names_bound_by(statement: ast.stmt) -> tuple[str, ...]:
    """Every name the statement may bind, as the readers of the index look at them (an assignment:
    every name in its targets, `x[A] = 1` included, as _jedi_finds_nothing reads it)."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return (statement.name,)
    if isinstance(statement, ast.ImportFrom):
        return tuple(STAR if alias.name == "*" else alias.asname or alias.name for alias in statement.names)
    if isinstance(statement, ast.Import):
        return tuple(alias.asname or alias.name.split(".")[0] for alias in statement.names)
    if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        return tuple(node.id for target in targets for node in ast.walk(target) if isinstance(node, ast.Name))
    return ()


def _module_level(body: list) -> list:
    """A module's top-level statements, with those of its top-level `if`/`try` blocks
    (`if TYPE_CHECKING:`, `try: import x except ImportError: x = None`) in the same order."""
    found = []
    for statement in body:
        if isinstance(statement, ast.If):
            found.extend(_module_level(statement.body))
            found.extend(_module_level(statement.orelse))
        elif isinstance(statement, ast.Try) or type(statement).__name__ == "TryStar":
            found.extend(_module_level(statement.body))
            for handler in statement.handlers:
                found.extend(_module_level(handler.body))
            found.extend(_module_level(statement.orelse))
            found.extend(_module_level(statement.finalbody))
        else:
            found.append(statement)
    return found


def _definition_at(tree: ast.Module, line: int) -> tuple[ast.AST | None, str]:
    """The class or function whose `class`/`def` line is `line`, and its qualified name."""
    pending = [(tree, "")]
    while pending:
        node, prefix = pending.pop()
        for child in getattr(node, "body", []):
            if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                if child.lineno == line:
                    return child, name
                if child.lineno < line <= (child.end_lineno or child.lineno):
                    pending.append((child, name + "."))
    return None, ""


def _ordered_scopes(module_scopes: dict[str, ir.Scope], imports_of: dict[str, list[str]]) -> list[ir.Scope]:
    """Module bodies first, imported modules before their importers (so that names and class bases
    usually exist before they are used), then class bodies, then functions, each in file order."""
    order: list[str] = []
    state: dict[str, int] = {}
    for start in sorted(module_scopes):
        stack = [(start, iter(sorted(imports_of.get(start, ()))))]
        if state.get(start):
            continue
        state[start] = 1
        while stack:
            path, children = stack[-1]
            advanced = False
            for child in children:
                if child in module_scopes and not state.get(child):
                    state[child] = 1
                    stack.append((child, iter(sorted(imports_of.get(child, ())))))
                    advanced = True
                    break
            if not advanced:
                stack.pop()
                state[path] = 2
                order.append(path)
    modules, classes, functions = [], [], []
    for path in order:
        for scope in ir.every_scope(module_scopes[path]):
            (modules if scope.kind == ir.MODULE else classes if scope.kind == ir.CLASS else functions).append(scope)
    return modules + classes + functions


def _names_used(module_scopes) -> tuple[frozenset[str], frozenset[str]]:
    """Every name the files read (names and attribute names) and every attribute name they assign
    (collected while translating, per top-level statement)."""
    referenced: set[str] = set()
    assigned: set[str] = set()
    for scope in module_scopes:
        referenced |= scope.names_used
        assigned |= scope.attributes_assigned
    return frozenset(referenced), frozenset(assigned)


def solve(program: Program, previous: dict | None = None, record: bool = True) -> Solver:
    """Solve the program; `previous`: the runs of an earlier solve of it (Solver.logs), replayed
    where nothing they read changed (the answer is the same as without them, found faster)."""
    solver = Solver(program, program.scopes, previous, record)
    program.solver = solver
    solver.solve()
    if solver.bound_hit:
        program.notices.append(f"{program.root}: {solver.bound_hit}")
    return solver
