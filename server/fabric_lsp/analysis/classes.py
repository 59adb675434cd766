"""Classes: where they are defined, their bases, methods and class attributes.

A class is either a `ClassInfo` (Python source we can read: project files, libraries outside the
project) or a `LibraryClass` (torch / lightning / torchmetrics, answered from the import statement
and the generated torch tables, identically whether or not they are installed). `None` means
unknown; callers decide what unknown means for their rule (never a finding at warning or above).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Iterator, Union

from fabric_lsp.analysis.imports import FABRIC_CLASS_NAMES, ImportTable, normalize_torch_name
from fabric_lsp.analysis.libraries import models as library_models
from fabric_lsp.analysis.source import SourceFile
from fabric_lsp.analysis.libraries.torch_facts import library_module_facts
from fabric_lsp.analysis.values import Class, Lib, Module

MAX_DEPTH = 8
FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]

@dataclass(frozen=True)
class LibraryClass:
    qualified: str

    @property
    def name(self) -> str:
        if self.in_tables:
            return library_models.display_name(self.qualified)
        return self.qualified.rsplit(".", 1)[-1]

    @property
    def in_tables(self) -> bool:
        """A class (or family) of transformers, timm, ... described by the library tables."""
        return library_models.is_library_name(self.qualified) and library_models.is_class(self.qualified)

    @property
    def is_torch_nn(self) -> bool:
        return self.qualified.startswith("torch.nn.")

    @property
    def is_metric(self) -> bool:
        return self.qualified.startswith("torchmetrics.")

    @property
    def is_fabric(self) -> bool:
        return self.qualified in FABRIC_CLASS_NAMES


@dataclass(eq=False)
class ClassInfo:
    source: SourceFile
    node: ast.ClassDef
    imports: ImportTable
    key: object = None  # the flow analysis's Class value
    _bases: list | None = field(default=None, repr=False)
    # The class body's functions and assignments by name, indexed on first use: every attribute
    # lookup asks them, and rebuilding them per lookup made a class of n methods cost n^2.
    _methods: dict[str, FunctionNode] | None = field(default=None, repr=False)
    _attributes: dict[str, ast.expr] | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def path(self) -> str:
        return self.source.path

    def methods(self) -> dict[str, FunctionNode]:
        """The functions of the class body by name (the last of a name wins). Not to be changed."""
        if self._methods is None:
            found: dict[str, FunctionNode] = {}
            for statement in self.node.body:
                if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    found[statement.name] = statement
            self._methods = found
        return self._methods

    def class_attributes(self) -> dict[str, ast.expr]:
        """Class-level assignments, e.g. `reset_parameters = _init_weights`. Not to be changed."""
        if self._attributes is None:
            found: dict[str, ast.expr] = {}
            for statement in self.node.body:
                if isinstance(statement, ast.Assign):
                    for target in statement.targets:
                        if isinstance(target, ast.Name):
                            found[target.id] = statement.value
                elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                    if statement.value is not None:
                        found[statement.target.id] = statement.value
            self._attributes = found
        return self._attributes

    def defines(self, name: str) -> bool:
        return name in self.methods() or name in self.class_attributes()


ClassRef = Union[ClassInfo, LibraryClass, None]


def decorator_kind(function: FunctionNode) -> str:
    """'staticmethod', 'classmethod', 'property', 'singledispatchmethod' or 'method'."""
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name in ("staticmethod", "classmethod"):
            return name
        if name == "singledispatchmethod":
            # Looked up on an instance it gives a plain function (not a MethodType): Lightning's
            # wrapper neither tracks it nor lets it be marked.
            return name
        if name in ("property", "cached_property", "setter", "getter", "deleter"):
            return "property"
    return "method"


def _module_level_definitions(tree: ast.Module) -> tuple[dict[str, ast.ClassDef], dict[str, FunctionNode]]:
    """The last class and the last function of each name in the module body, indexed once per tree."""
    index = tree.__dict__.get("_module_level_definitions")
    if index is None:
        classes: dict[str, ast.ClassDef] = {}
        functions: dict[str, FunctionNode] = {}
        for statement in tree.body:
            if isinstance(statement, ast.ClassDef):
                classes[statement.name] = statement
            elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions[statement.name] = statement
        index = tree.__dict__["_module_level_definitions"] = (classes, functions)
    return index


def module_level_class(source: SourceFile, name: str) -> ast.ClassDef | None:
    if source.tree is None:
        return None
    return _module_level_definitions(source.tree)[0].get(name)


def module_level_function(source: SourceFile, name: str) -> FunctionNode | None:
    if source.tree is None:
        return None
    return _module_level_definitions(source.tree)[1].get(name)


class ClassResolver:
    """Answers class questions about a solved program (analysis.program): which class an expression
    names, the bases along a class's MRO, where an attribute is defined. Names are resolved the way
    the module binds them: the flow analysis's module-level values for project files, the binding
    statements for library files outside the program."""

    def __init__(self, program) -> None:
        self.program = program
        self.solver = program.solver
        self._imports: dict[int, ImportTable] = {}
        self._infos: dict = {}

    def imports_of(self, source: SourceFile) -> ImportTable:
        key = id(source)
        table = self._imports.get(key)
        if table is None:
            table = self._imports[key] = ImportTable(source.tree)
        return table

    # -- from flow values to classes ----------------------------------------------------------
    def class_info(self, key: Class) -> ClassInfo | None:
        if key in self._infos:
            return self._infos[key]
        info = None
        if key.external:
            node = self.program.external_class_node(key)
            source = self.program.external_source(key.path)
        else:
            scope = self.solver.classes.get(key)
            node = scope.node if scope is not None else None
            source = self.program.sources.get(key.path)
        if node is not None and source is not None:
            info = ClassInfo(source, node, self.imports_of(source), key=key)
        self._infos[key] = info
        return info

    def ref_of(self, value) -> ClassRef:
        if isinstance(value, Class):
            return self.class_info(value)
        if isinstance(value, Lib):
            return LibraryClass(normalize_torch_name(value.qualified))
        return None

    def values_of(self, source: SourceFile, expr: ast.AST) -> frozenset:
        """Module-level meaning of a name or dotted name in `source` (no function locals)."""
        if isinstance(expr, ast.Name):
            path = source.path
            if path in self.program.module_scopes:
                found = self.solver.peek(("global", path, expr.id))
                if found:
                    return found
                imports = self.imports_of(source)
                qualified = imports.qualify(expr)
                if qualified and imports.is_library(qualified):
                    return frozenset({Lib(qualified)})
                return frozenset()
            return self.program.external_attribute(Module(path, True), expr.id)
        if isinstance(expr, ast.Attribute):
            found = set()
            for value in self.values_of(source, expr.value):
                if isinstance(value, Lib):
                    found.add(Lib(value.qualified + "." + expr.attr))
                elif isinstance(value, Module):
                    if value.external:
                        found.update(self.program.external_attribute(value, expr.attr))
                    else:
                        found.update(self.solver.peek(("global", value.path, expr.attr)))
                        sub = self.program.submodule(value, expr.attr)
                        if sub is not None:
                            found.add(sub)
                elif isinstance(value, Class):
                    if value.external:
                        found.update(self.program.external_attribute(value, expr.attr))
                    else:
                        found.update(self.solver.peek(("classattr", value, expr.attr)))
            return frozenset(found)
        return frozenset()

    def resolve(self, source: SourceFile, expr: ast.AST) -> ClassRef:
        """The class an expression names (`Net`, `models.Net`, `nn.Linear`, `L.Fabric`); None when it
        names no class or one of several."""
        imports = self.imports_of(source)
        qualified = imports.qualify(expr)
        if imports.is_library(qualified):
            return LibraryClass(normalize_torch_name(qualified))
        classes = [v for v in self.values_of(source, expr) if isinstance(v, (Class, Lib))]
        if len(classes) != 1:
            return None
        return self.ref_of(classes[0])

    def bases(self, cls: ClassInfo) -> list[ClassRef]:
        if cls._bases is None:
            direct = self.solver.direct_bases(cls.key)
            cls._bases = [self.ref_of(value) for value in direct] if direct or not cls.node.bases else [None]
        return cls._bases

    def mro(self, cls: ClassRef) -> Iterator[ClassRef]:
        """The class and its bases in method resolution order; None where a base is unknown."""
        if not isinstance(cls, ClassInfo):
            yield cls
            return
        for value in self.solver.mro(cls.key):
            ref = self.ref_of(value)
            yield ref
            if isinstance(ref, ClassInfo) and ref.node.bases and not self.bases(ref):
                yield None
        if not self.solver._mro_complete(cls.key):
            yield None

    # -- kinds of class ------------------------------------------------------------------------
    def is_fabric(self, cls: ClassRef) -> bool:
        return any(isinstance(ref, LibraryClass) and ref.is_fabric for ref in self.mro(cls))

    def is_module(self, cls: ClassRef) -> bool | None:
        """True for nn.Module subclasses (torch.nn, torchmetrics, user classes); None when unknown."""
        if cls is None:
            return None
        unknown = False
        for ref in self.mro(cls):
            if ref is None:
                unknown = True
            elif isinstance(ref, LibraryClass):
                if ref.in_tables:
                    verdict = library_models.is_module(ref.qualified)
                    if verdict is not None:
                        return verdict
                    unknown = True
                    continue
                if ref.is_torch_nn or ref.is_metric or ref.qualified.startswith(
                    ("lightning.pytorch.core.module", "lightning.LightningModule", "lightning.pytorch.LightningModule")
                ):
                    return True
                if not ref.qualified.startswith(("torch.", "lightning", "pytorch_lightning", "torchmetrics")):
                    unknown = True
        return None if unknown else False

    def find_attribute(self, cls: ClassRef, name: str) -> tuple[ClassRef, ast.AST | None]:
        """Where `name` is defined along the bases: (class, def/assignment) or (library class, None)."""
        for ref in self.mro(cls):
            if isinstance(ref, ClassInfo):
                methods = ref.methods()
                if name in methods:
                    return ref, methods[name]
                attributes = ref.class_attributes()
                if name in attributes:
                    return ref, attributes[name]
            elif isinstance(ref, LibraryClass):
                if ref.in_tables:
                    # The tables hold the whole MRO (torch's classes too): found there or missing.
                    return (ref, None) if library_models.defines(ref.qualified, name) else (None, None)
                facts = library_module_facts(ref.qualified)
                if facts is not None and name in facts.attributes:
                    return ref, None
                if ref.qualified == "torch.nn.Module":
                    continue
            else:
                return None, None
        return None, None

    def has_reset_parameters(self, cls: ClassRef) -> bool | None:
        """Is `reset_parameters` available on instances (own, inherited, an alias, or possibly through
        a `__getattr__`)? None: unknown."""
        for ref in self.mro(cls):
            if ref is None:
                return None
            if isinstance(ref, ClassInfo):
                if ref.defines("reset_parameters"):
                    return True
                if ref.defines("__getattr__"):
                    return None  # hasattr may well succeed through it
            elif ref.in_tables:
                return library_models.has_reset_parameters(ref.qualified)
            else:
                facts = library_module_facts(ref.qualified)
                if facts is not None:
                    if facts.has_reset_parameters:
                        return True
                elif not ref.qualified.startswith("torch.nn."):
                    return None
        return False


def _class_at_line(tree: ast.Module, line: int) -> ast.ClassDef | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.lineno <= line <= (node.end_lineno or node.lineno):
            # The definition's line is the `class` line itself (decorators come before it).
            body_start = node.body[0].lineno if node.body else node.lineno
            if node.lineno <= line < body_start or node.lineno == line:
                return node
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.lineno == line:
            return node
    return None
