"""Source -> facts. The only package that talks to jedi (through `workspace`)."""

from __future__ import annotations

import ast
import logging
from dataclasses import dataclass, field

from fabric_lsp.analysis.classes import ClassInfo, ClassResolver, LibraryClass, decorator_kind
from fabric_lsp.analysis.fabric import BoundMarkFact, FabricAnalyzer, MethodCallFact, WrappedModel
from fabric_lsp.analysis.imports import ImportTable
from fabric_lsp.analysis.meta import MetaAnalyzer, MetaModelFact
from fabric_lsp.analysis.modules import ModuleAnalyzer, RunsModule
from fabric_lsp.analysis.source import SourceFile
from fabric_lsp.analysis.torch_facts import wrapper_attributes
from fabric_lsp.analysis.workspace import Workspace
from fabric_lsp.findings import Span

log = logging.getLogger("fabric_lsp.analysis")

# Words without which a file cannot contain a finding: checked before parsing.
TRIGGER_WORDS = ("setup", "init_module", "meta", "mark_forward_method")


@dataclass(frozen=True)
class MethodInfo:
    """What `wrapped.<name>` is on the wrapped model's class."""

    kind: str  # wrapper | method | classmethod | staticmethod | property | attribute | missing | unknown
    class_name: str | None
    definition: Span | None
    runs: RunsModule | None  # for methods: does it run a module?


@dataclass
class FileFacts:
    source: SourceFile
    imports: ImportTable
    method_calls: list[tuple[MethodCallFact, MethodInfo]] = field(default_factory=list)
    bound_marks: list[tuple[BoundMarkFact, MethodInfo]] = field(default_factory=list)
    meta_models: list[MetaModelFact] = field(default_factory=list)


def may_have_findings(text: str) -> bool:
    return any(word in text for word in TRIGGER_WORDS)


def analyze(source: SourceFile, workspace: Workspace) -> FileFacts:
    resolver = ClassResolver(workspace)
    facts = FileFacts(source, resolver.imports_of(source))
    if source.tree is None:
        return facts
    modules = ModuleAnalyzer(resolver)
    fabric = FabricAnalyzer(resolver, source)
    fabric_facts = fabric.analyze()
    for call in fabric_facts.method_calls:
        facts.method_calls.append((call, method_info(resolver, modules, call.wrapped, call.method)))
    for mark in fabric_facts.bound_marks:
        facts.bound_marks.append((mark, method_info(resolver, modules, mark.wrapped, mark.method)))
    facts.meta_models = MetaAnalyzer(fabric, modules).analyze()
    return facts


def method_info(resolver: ClassResolver, modules: ModuleAnalyzer, wrapped: WrappedModel, name: str) -> MethodInfo:
    if name in wrapper_attributes():
        return MethodInfo("wrapper", None, None, None)
    cls = wrapped.model_class
    if cls is None:
        return MethodInfo("unknown", None, None, RunsModule(True, "the wrapped model's class is not known", certain=False))
    owner, definition = resolver.find_attribute(cls, name)
    class_name = cls.name
    if owner is None:
        return MethodInfo("missing", class_name, None, None)
    if isinstance(owner, LibraryClass) or definition is None:
        return MethodInfo("wrapper", class_name, None, None)  # nn.Module API, found on the wrapper too
    span = None
    if isinstance(owner, ClassInfo):
        span = owner.source.span_of_name_in(definition, name) if isinstance(
            definition, (ast.FunctionDef, ast.AsyncFunctionDef)
        ) else owner.source.span(definition)
    if not isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return MethodInfo("attribute", class_name, span, None)
    kind = decorator_kind(definition)
    runs = modules.runs_module(cls, name) if kind in ("method", "classmethod") else None
    return MethodInfo(kind, class_name, span, runs)
