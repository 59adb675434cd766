"""Modules created on the meta device and then materialized (the two halves FAB002 needs), and the
classes in their module tree that own tensors without `reset_parameters`."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from fabric_lsp.analysis.classes import ClassInfo, ClassRef, ClassResolver, LibraryClass
from fabric_lsp.analysis.fabric import FabricAnalyzer, FabricObject, Scope, assignments, target_key
from fabric_lsp.analysis.imports import normalize_torch_name
from fabric_lsp.analysis.modules import ModuleAnalyzer, OwnedTensor, _constructor_calls
from fabric_lsp.analysis.source import SourceFile
from fabric_lsp.analysis.torch_facts import library_module_facts

META_DEVICE = "meta_device"
INIT_MODULE = "init_module"
_MATERIALIZE_FUNCTIONS = ("_materialize_meta_tensors", "_materialize_distributed_module")
_MAX_TREE_DEPTH = 12


@dataclass(frozen=True)
class MetaContext:
    statement: ast.With
    item: ast.expr  # `torch.device("meta")` / `fabric.init_module(empty_init=True)`
    kind: str  # META_DEVICE | INIT_MODULE
    fabric: FabricObject | None


@dataclass(frozen=True)
class Materialization:
    call: ast.Call | None  # None when implied by init_module under FSDP/ModelParallel
    description: str  # "`_materialize_meta_tensors(model, ...)`", "`fabric.setup(model)` under strategy=\"fsdp\""
    certain: bool  # False when it depends on a strategy chosen at run time


@dataclass(frozen=True)
class Offender:
    cls: ClassRef  # ClassInfo or LibraryClass
    name: str
    source: SourceFile  # where the offender's constructor call is
    call: ast.Call  # the offender's constructor call (in its parent's __init__ or the meta context)
    owned: tuple[OwnedTensor, ...]  # for ClassInfo offenders: what reset_parameters must re-create


@dataclass
class MetaModelFact:
    context: MetaContext
    creation: ast.Call  # the constructor call inside the meta-device context
    scope: Scope
    materialization: Materialization
    offenders: list[Offender] = field(default_factory=list)


class MetaAnalyzer:
    def __init__(self, fabric: FabricAnalyzer, modules: ModuleAnalyzer) -> None:
        self.fabric = fabric
        self.modules = modules
        self.resolver: ClassResolver = modules.resolver
        self.source = fabric.source
        self.imports = fabric.imports

    def patched_classes(self) -> set[str]:
        """Classes given a reset_parameters by assignment in this file, e.g. Lightning's demo's
        `nn.MultiheadAttention.reset_parameters = nn.MultiheadAttention._reset_parameters`."""
        patched: set[str] = set()
        for scope in self.fabric.scopes:
            for statement in scope.statements():
                for target, _ in assignments(statement):
                    if isinstance(target, ast.Attribute) and target.attr == "reset_parameters":
                        qualified = self.imports.qualify(target.value)
                        patched.add(normalize_torch_name(qualified) if qualified else self.source.segment(target.value))
        return patched

    def analyze(self) -> list[MetaModelFact]:
        facts: list[MetaModelFact] = []
        patched = self.patched_classes()
        for scope in self.fabric.scopes:
            for statement in scope.statements():
                if not isinstance(statement, (ast.With, ast.AsyncWith)):
                    continue
                context = self._meta_context(statement, scope)
                if context is None:
                    continue
                for call, binding in self._creations(statement):
                    cls = self.resolver.resolve(self.source, call.func)
                    if cls is None or self.resolver.is_module(cls) is not True:
                        continue
                    materialization = self._materialization(context, scope, statement, binding)
                    if materialization is None:
                        continue
                    fact = MetaModelFact(context, call, scope, materialization)
                    fact.offenders = [
                        offender
                        for offender in self.offenders(cls, call, self.source)
                        if getattr(offender.cls, "qualified", offender.name) not in patched
                    ]
                    if fact.offenders:
                        facts.append(fact)
        return facts

    # -- the first half: created on the meta device ----------------------------------------------
    def _meta_context(self, statement: ast.With, scope: Scope) -> MetaContext | None:
        for item in statement.items:
            expr = item.context_expr
            if not isinstance(expr, ast.Call):
                continue
            qualified = self.imports.qualify(expr.func)
            if qualified == "torch.device":
                device = expr.args[0] if expr.args else next((k.value for k in expr.keywords if k.arg == "type"), None)
                if isinstance(device, ast.Constant) and device.value == "meta":
                    return MetaContext(statement, expr, META_DEVICE, None)
            fabric = self.fabric.fabric_receiver(expr, scope, ("init_module",))
            if fabric is not None:
                empty_init = next((k.value for k in expr.keywords if k.arg == "empty_init"), None)
                if isinstance(empty_init, ast.Constant) and empty_init.value is True:
                    return MetaContext(statement, expr, INIT_MODULE, fabric)
        return None

    def _creations(self, statement: ast.With) -> list[tuple[ast.Call, str | None]]:
        """Constructor calls in the with body: (call, the name/attribute it is bound to or 'return')."""
        found: list[tuple[ast.Call, str | None]] = []
        for inner in statement.body:
            for node in ast.walk(inner):
                if isinstance(node, (ast.Assign, ast.AnnAssign)):
                    for target, value in assignments(node):
                        if isinstance(value, ast.Call):
                            found.append((value, target_key(target)))
                elif isinstance(node, ast.Return) and isinstance(node.value, ast.Call):
                    found.append((node.value, "return"))
        return found

    # -- the second half: materialized -------------------------------------------------------------
    def _materialization(self, context: MetaContext, scope: Scope, statement: ast.With, binding: str | None) -> Materialization | None:
        if context.kind == INIT_MODULE:
            strategy = context.fabric.strategy if context.fabric else None
            if strategy is None or strategy.materializes is False:
                return None  # DDP / single device / DeepSpeed: init_module only skips initializers
            return Materialization(
                None,
                f"Fabric's setup under {strategy.description or 'this strategy'}",
                strategy.materializes is True,
            )
        if binding is None:
            return None
        if binding == "return":
            return self._materialized_by_callers(scope)
        return self._materialized_in(scope, binding, after=(statement.end_lineno or statement.lineno, 0))

    def _materialized_in(self, scope: Scope, binding: str, after: tuple[int, int] | None) -> Materialization | None:
        aliases = {binding}
        for statement in scope.statements():
            if after is not None and (statement.lineno, statement.col_offset) < after:
                continue
            for target, value in assignments(statement):
                key = target_key(value) if isinstance(value, (ast.Name, ast.Attribute)) else None
                if key in aliases and target_key(target):
                    aliases.add(target_key(target))
            if isinstance(statement, ast.Return) and target_key(statement.value or ast.Constant(None)) in aliases:
                by_callers = self._materialized_by_callers(scope)
                if by_callers is not None:
                    return by_callers
        for node in scope.expressions():
            if not isinstance(node, ast.Call) or (after is not None and (node.lineno, node.col_offset) < after):
                continue
            first = node.args[0] if node.args else None
            if first is None or target_key(first) not in aliases:
                continue
            qualified = self.imports.qualify(node.func) or ""
            if qualified.rsplit(".", 1)[-1] in _MATERIALIZE_FUNCTIONS:
                return Materialization(node, f"`{self.source.segment(node.func)}(...)`", True)
            fabric = self.fabric.fabric_receiver(node, scope, ("setup", "setup_module"))
            if fabric is not None and fabric.strategy.materializes is not False:
                return Materialization(
                    node,
                    f"`{self.source.segment(node.func)}(...)` under {fabric.strategy.description}",
                    fabric.strategy.materializes is True,
                )
        return None

    def _materialized_by_callers(self, scope: Scope) -> Materialization | None:
        """The model is returned: look for `m = <this function>(...)` followed by materialization."""
        if scope.function is None:
            return None
        name = scope.function.name
        for other in self.fabric.scopes:
            if other is scope:
                continue
            for statement in other.statements():
                for target, value in assignments(statement):
                    if (
                        isinstance(value, ast.Call)
                        and isinstance(value.func, ast.Name)
                        and value.func.id == name
                        and target_key(target)
                    ):
                        found = self._materialized_in(other, target_key(target), (statement.lineno, statement.col_offset))
                        if found is not None:
                            return found
        return None

    # -- the module tree ------------------------------------------------------------------------------
    def offenders(self, cls: ClassRef, call: ast.Call, source: SourceFile, depth: int = 0, seen: set | None = None) -> list[Offender]:
        """Classes in the tree built by `call` that own tensors but lack reset_parameters."""
        seen = set() if seen is None else seen
        if cls is None or depth > _MAX_TREE_DEPTH:
            return []
        found: list[Offender] = []
        if isinstance(cls, LibraryClass):
            if cls.qualified in ("torch.nn.ModuleList", "torch.nn.Sequential", "torch.nn.ModuleDict"):
                for inner in _constructor_calls(call)[1:]:
                    inner_cls = self.resolver.resolve(source, inner.func)
                    if inner_cls is not None and self.resolver.is_module(inner_cls):
                        found.extend(self.offenders(inner_cls, inner, source, depth + 1, seen))
                return found
            facts = library_module_facts(cls.qualified)
            if facts is not None and not facts.has_reset_parameters and self.modules.library_owns_tensors(cls, call):
                found.append(Offender(cls, cls.name, source, call, ()))
            if facts is not None and facts.table is not None:
                for name in facts.table.unresettable_descendants:
                    found.append(Offender(LibraryClass(f"torch.nn.{name}"), name, source, call, ()))
            return found
        key = id(cls.node)
        if key in seen:
            return []
        seen.add(key)
        module_facts = self.modules.module_facts(cls)
        owns = bool(module_facts.owned) or self._library_base_owns(cls)
        if owns and self.resolver.has_reset_parameters(cls) is False:
            found.append(Offender(cls, cls.name, source, call, tuple(module_facts.owned)))
        for child in module_facts.children:
            found.extend(self.offenders(child.cls, child.call, child.source, depth + 1, seen))
        seen.discard(key)  # the same class elsewhere in the tree is reported once by the caller
        return found

    def _library_base_owns(self, cls: ClassInfo) -> bool:
        for ref in self.resolver.mro(cls):
            if isinstance(ref, LibraryClass):
                facts = library_module_facts(ref.qualified)
                if facts is not None and facts.always_owns_tensors:
                    return True
        return False
