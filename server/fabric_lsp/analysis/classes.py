"""Classes: where they are defined, their bases, methods, child modules and owned tensors.

A class is either a `ClassInfo` (Python source we can read: the checked file, other project
files, site-packages) or a `LibraryClass` (torch / lightning / torchmetrics, answered from the
import statement and the generated torch tables, identically whether or not they are installed).
`None` means unknown; callers decide what unknown means for their rule.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from typing import Iterator, Union

from fabric_lsp.analysis.imports import FABRIC_CLASS_NAMES, ImportTable, normalize_torch_name
from fabric_lsp.analysis.source import SourceFile
from fabric_lsp.analysis.torch_facts import library_module_facts
from fabric_lsp.analysis.workspace import Workspace

MAX_DEPTH = 8
FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]

# Parts of a path that mark a library we answer for from tables instead of reading its source.
_LIBRARY_PATH_PARTS = (
    os.sep + "torch" + os.sep,
    os.sep + "lightning" + os.sep,
    os.sep + "lightning_fabric" + os.sep,
    os.sep + "pytorch_lightning" + os.sep,
    os.sep + "torchmetrics" + os.sep,
)


@dataclass(frozen=True)
class LibraryClass:
    qualified: str

    @property
    def name(self) -> str:
        return self.qualified.rsplit(".", 1)[-1]

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
    _bases: list | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def path(self) -> str:
        return self.source.path

    def methods(self) -> dict[str, FunctionNode]:
        found: dict[str, FunctionNode] = {}
        for statement in self.node.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found[statement.name] = statement
        return found

    def class_attributes(self) -> dict[str, ast.expr]:
        """Class-level assignments, e.g. `reset_parameters = _init_weights`."""
        found: dict[str, ast.expr] = {}
        for statement in self.node.body:
            if isinstance(statement, ast.Assign):
                for target in statement.targets:
                    if isinstance(target, ast.Name):
                        found[target.id] = statement.value
            elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                if statement.value is not None:
                    found[statement.target.id] = statement.value
        return found

    def defines(self, name: str) -> bool:
        return name in self.methods() or name in self.class_attributes()


ClassRef = Union[ClassInfo, LibraryClass, None]


def decorator_kind(function: FunctionNode) -> str:
    """'staticmethod', 'classmethod', 'property' or 'method'."""
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name in ("staticmethod", "classmethod"):
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
    """Resolves class expressions to classes, with caches per workspace."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self._imports: dict[int, ImportTable] = {}

    def imports_of(self, source: SourceFile) -> ImportTable:
        key = id(source)
        table = self._imports.get(key)
        if table is None:
            table = self._imports[key] = ImportTable(source.tree)
        return table

    def resolve(self, source: SourceFile, expr: ast.AST) -> ClassRef:
        """The class an expression names (`Net`, `models.Net`, `nn.Linear`, `L.Fabric`)."""
        imports = self.imports_of(source)
        qualified = imports.qualify(expr)
        if imports.is_library(qualified):
            return LibraryClass(normalize_torch_name(qualified))
        if isinstance(expr, ast.Name):
            local = module_level_class(source, expr.id)
            if local is not None:
                return ClassInfo(source, local, imports)
        if not isinstance(expr, (ast.Name, ast.Attribute)):
            return None
        return self._class_from(self.workspace.goto(source, expr))

    def resolve_instance(self, source: SourceFile, name: ast.Name) -> ClassRef:
        """The class of the value a name holds, as jedi infers it (e.g. from a library factory)."""
        return self._class_from(
            d for d in self.workspace.infer(source, name) if d.kind in ("instance", "class")
        )

    def _class_from(self, definitions) -> ClassRef:
        for definition in definitions:
            if definition.kind not in ("class", "instance"):
                continue
            if any(part in definition.path for part in _LIBRARY_PATH_PARTS) and definition.full_name:
                return LibraryClass(normalize_torch_name(definition.full_name))
            target = self.workspace.source(definition.path)
            if target is None or target.tree is None:
                continue
            # By name first: an unsaved editor buffer (overlay) may have moved it from jedi's line.
            name = (definition.full_name or "").rsplit(".", 1)[-1]
            node = module_level_class(target, name) if name else None
            node = node or _class_at_line(target.tree, definition.line)
            if node is not None:
                return ClassInfo(target, node, self.imports_of(target))
        return None

    def resolve_function(self, source: SourceFile, expr: ast.AST) -> tuple[SourceFile, FunctionNode] | None:
        """The definition of a function named by expr, in this file or (through jedi) another one."""
        if isinstance(expr, ast.Name):
            local = module_level_function(source, expr.id)
            if local is not None:
                return source, local
        if not isinstance(expr, (ast.Name, ast.Attribute)) or self.imports_of(source).is_library(
            self.imports_of(source).qualify(expr)
        ):
            return None
        for definition in self.workspace.goto(source, expr):
            if definition.kind != "function":
                continue
            target = self.workspace.source(definition.path)
            if target is None or target.tree is None:
                continue
            name = (definition.full_name or "").rsplit(".", 1)[-1]
            function = module_level_function(target, name) if name else None
            if function is not None:
                return target, function
        return None

    def bases(self, cls: ClassInfo) -> list[ClassRef]:
        if cls._bases is None:
            cls._bases = []  # cycle guard while resolving
            cls._bases = [self.resolve(cls.source, base) for base in cls.node.bases]
        return cls._bases

    def mro(self, cls: ClassRef) -> Iterator[ClassRef]:
        """Depth-first over the class and its bases (good enough for single inheritance and mixins)."""
        seen: set[int] = set()

        def walk(ref: ClassRef, depth: int) -> Iterator[ClassRef]:
            if depth > MAX_DEPTH:
                yield None
                return
            if isinstance(ref, ClassInfo):
                key = id(ref.node)
                if key in seen:
                    return
                seen.add(key)
                yield ref
                for base in self.bases(ref):
                    yield from walk(base, depth + 1)
            else:
                yield ref

        yield from walk(cls, 0)

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
                if ref.is_torch_nn or ref.is_metric or ref.qualified.startswith(
                    ("lightning.pytorch.core.module", "lightning.LightningModule", "lightning.pytorch.LightningModule")
                ):
                    return True
                if not ref.qualified.startswith(("torch.", "lightning", "pytorch_lightning", "torchmetrics")):
                    unknown = True
            elif isinstance(ref, ClassInfo) and not ref.node.bases:
                continue
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
                facts = library_module_facts(ref.qualified)
                if facts is not None and name in facts.attributes:
                    return ref, None
                if ref.qualified == "torch.nn.Module":
                    continue
            else:
                return None, None
        return None, None

    def has_reset_parameters(self, cls: ClassRef) -> bool | None:
        """Is `reset_parameters` available on instances (own, inherited, or an alias)? None: unknown."""
        for ref in self.mro(cls):
            if ref is None:
                return None
            if isinstance(ref, ClassInfo):
                if ref.defines("reset_parameters"):
                    return True
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
