"""Fabric objects, their strategies, the modules they wrap, and what the code does with those.

Scopes are the module body and every function body. Within a scope, events are replayed in
source order so that "a call before `mark_forward_method` is a finding, one after it is not".
Names wrapped at module level stay wrapped inside functions (scripts define helpers that use
the global model); `self.<attr>` wrapped in one method is wrapped in every method of the class.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace

from fabric_lsp.analysis.classes import (
    ClassInfo,
    ClassRef,
    ClassResolver,
    FunctionNode,
    LibraryClass,
    decorator_kind,
    module_level_function,
)
from fabric_lsp.analysis.nodes import statement_children, walk
from fabric_lsp.analysis.source import SourceFile
from fabric_lsp.analysis.torch_facts import strategy_wraps
from fabric_lsp.findings import Span

WRAPPING = "wrapping"
SINGLE = "single"
UNKNOWN = "unknown"

_SETUP_METHODS = ("setup", "setup_module")
# nn.Module methods that return the module itself: `Net().eval()` is still a Net.
_RETURNS_SELF = ("eval", "train", "to", "cuda", "cpu", "float", "half", "double", "bfloat16", "requires_grad_", "apply", "to_empty", "share_memory")
_MATERIALIZING_STRATEGIES = ("fsdp", "model_parallel", "FSDPStrategy", "ModelParallelStrategy")


@dataclass(frozen=True)
class Strategy:
    kind: str  # WRAPPING | SINGLE | UNKNOWN
    description: str  # 'strategy="ddp"', 'devices=2', 'a strategy chosen at run time (strategy=args.strategy)'
    materializes: bool | None  # setup() materializes meta tensors (FSDP, ModelParallel); None: unknown


@dataclass(frozen=True)
class FabricObject:
    strategy: Strategy
    created_at: Span | None  # the Fabric(...) call, when visible


@dataclass(eq=False)
class WrappedModel:
    fabric: FabricObject
    setup_call: ast.Call
    setup_statement: ast.stmt
    target: ast.expr  # the name / attribute bound to the wrapper
    target_text: str
    model_class: ClassRef
    compiled: bool
    source: SourceFile
    marks: dict[str, set[int]] = field(default_factory=dict)  # method -> ids of scopes marking it
    marks_unknown: bool = False  # mark_forward_method(<non-literal>): we cannot tell which


@dataclass(frozen=True)
class MethodCallFact:
    """`wrapped.method(...)` on a Fabric-wrapped model."""

    wrapped: WrappedModel
    call: ast.Call
    attribute: ast.Attribute
    method: str
    marked_before: bool
    scope_id: int = 0


@dataclass(frozen=True)
class BoundMarkFact:
    """`wrapped.mark_forward_method(wrapped.method)`: a bound method instead of its name."""

    wrapped: WrappedModel
    argument: ast.Attribute
    method: str


@dataclass
class FabricFacts:
    method_calls: list[MethodCallFact] = field(default_factory=list)
    bound_marks: list[BoundMarkFact] = field(default_factory=list)
    wrapped: list[WrappedModel] = field(default_factory=list)


@dataclass(eq=False)
class Scope:
    """A module or function body; `function` is None for the module."""

    node: ast.AST
    function: FunctionNode | None
    cls: ast.ClassDef | None  # the class a method belongs to

    def statements(self) -> list[ast.stmt]:
        """Statements of this scope, nested blocks included, nested defs excluded (computed once:
        callers ask for every name they look up, which made long scripts quadratic)."""
        cached = self.__dict__.get("_statements")
        if cached is not None:
            return cached
        found: list[ast.stmt] = []
        pending = list(getattr(self.node, "body", []))
        while pending:
            statement = pending.pop()  # order does not matter (sorted below); pop(0) is quadratic
            found.append(statement)
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            for name in ("body", "orelse", "finalbody", "handlers", "cases"):
                for child in getattr(statement, name, []) or []:
                    if isinstance(child, ast.stmt):
                        pending.append(child)
                    elif hasattr(child, "body"):
                        pending.extend(child.body)
        found.sort(key=lambda node: (node.lineno, node.col_offset))
        self.__dict__["_statements"] = found
        return found

    def expressions(self) -> list[ast.AST]:
        """All expression nodes of this scope (not of nested defs), computed once per scope."""
        cached = self.__dict__.get("_expressions")
        if cached is not None:
            return cached
        nodes: list[ast.AST] = []
        for statement in self.statements():
            for child in ast.iter_child_nodes(statement):
                if isinstance(child, ast.stmt):
                    continue
                nodes.extend(walk(child))  # ast.walk's order, faster
        self.__dict__["_expressions"] = nodes
        return nodes


def scopes_of(tree: ast.Module) -> list[Scope]:
    scopes = [Scope(tree, None, None)]

    def visit(node: ast.AST, cls: ast.ClassDef | None, found: list[Scope]) -> None:
        # defs and classes are statements: only statement-holding children can contain them.
        for child in statement_children(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append(Scope(child, child, cls))
                visit(child, None, found)
            elif isinstance(child, ast.ClassDef):
                visit(child, child, found)
            else:
                visit(child, cls, found)

    # The scopes under each top-level statement are kept on it: after an edit the tree shares the
    # untouched statements with the previous one (analysis.incremental), and so their scopes, with
    # the statements/expressions/events those scopes computed, are not computed again.
    for statement in statement_children(tree):
        under = statement.__dict__.get("_fabric_lsp_scopes")
        if under is None:
            under = []
            visit(ast.Module(body=[statement], type_ignores=[]), None, under)
            statement.__dict__["_fabric_lsp_scopes"] = under
        scopes.extend(under)
    return scopes


def assignments(statement: ast.stmt) -> list[tuple[ast.expr, ast.expr]]:
    """(target, value) pairs of an assignment statement; tuple targets are paired element-wise."""
    if isinstance(statement, ast.Assign):
        targets, value = statement.targets, statement.value
    elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
        targets, value = [statement.target], statement.value
    else:
        return []
    pairs = []
    for target in targets:
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)):
            pairs.extend(zip(target.elts, value.elts))
        else:
            pairs.append((target, value))
    return pairs


def scope_assignments(scope: Scope) -> list[tuple[ast.stmt, ast.expr, ast.expr]]:
    """(statement, target, value) of every assignment of the scope, in order; kept with the scope."""
    found = scope.__dict__.get("_assignment_triples")
    if found is None:
        found = [(statement, target, value) for statement in scope.statements() for target, value in assignments(statement)]
        scope.__dict__["_assignment_triples"] = found
    return found


def target_key(target: ast.AST) -> str | None:
    """'model' for a name, 'self.model' for an attribute of a name."""
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
        return f"{target.value.id}.{target.attr}"
    return None


class FabricAnalyzer:
    def __init__(self, resolver: ClassResolver, source: SourceFile) -> None:
        self.resolver = resolver
        self.source = source
        self.imports = resolver.imports_of(source)
        self.scopes = scopes_of(source.tree) if source.tree is not None else []
        self._fabric_cache: dict[int, FabricObject | None] = {}
        self._class_attr_fabrics: dict[tuple[int, str], FabricObject] = {}
        self._returns_fabric: dict[str, FabricObject | None] = {}
        self._collect_class_attribute_fabrics()

    # -- Fabric objects -------------------------------------------------------------------------
    def strategy_of(self, call: ast.Call, scope: Scope | None = None) -> Strategy:
        keywords = {keyword.arg: keyword.value for keyword in call.keywords}
        if scope is not None:
            # `strategy = FSDPStrategy(...)` then `Fabric(strategy=strategy)`: follow simple local names.
            for name in ("strategy", "devices", "num_nodes", "accelerator"):
                value = keywords.get(name)
                if isinstance(value, ast.Name):
                    found = _last_assignment_statement(scope, value.id, _position(call))
                    if found is not None and isinstance(found[1], (ast.Constant, ast.Call, ast.List, ast.Tuple)):
                        keywords[name] = found[1]
        if None in keywords:  # Fabric(**config)
            return Strategy(UNKNOWN, "a configuration passed as **kwargs", None)
        strategy = keywords.get("strategy")
        devices = keywords.get("devices")
        nodes = keywords.get("num_nodes")
        accelerator = keywords.get("accelerator")

        def text(node: ast.AST) -> str:
            if isinstance(node, ast.Call):
                return f"{self.source.segment(node.func)}(...)"
            return self.source.segment(node)

        named: str | None = None
        if strategy is None:
            named = "auto"
        elif isinstance(strategy, ast.Constant) and isinstance(strategy.value, str):
            named = strategy.value
        elif isinstance(strategy, ast.Call):
            cls = self.resolver.resolve(self.source, strategy.func)
            if cls is not None and not isinstance(cls, ClassInfo):
                named = cls.name
            if named is None:
                return Strategy(UNKNOWN, f"strategy={text(strategy)}", None)
        else:
            return Strategy(UNKNOWN, f"a strategy chosen at run time (strategy={text(strategy)})", None)

        materializes = any(named.startswith(prefix) for prefix in _MATERIALIZING_STRATEGIES)
        description = f"strategy={text(strategy)}" if strategy is not None else ""
        if named != "auto":
            wraps = strategy_wraps(named)
            if wraps is True:
                return Strategy(WRAPPING, description, materializes)
            if wraps is False and named not in ("auto",):
                return Strategy(SINGLE, description, materializes)
            return Strategy(UNKNOWN, description or f"strategy {named!r}", None)

        count = self._device_count(devices, accelerator)
        node_count = _int_literal(nodes) if nodes is not None else 1
        if nodes is not None and node_count is None:
            return Strategy(UNKNOWN, f"num_nodes={text(nodes)} chosen at run time", None)
        if node_count and node_count > 1:
            return Strategy(WRAPPING, f"num_nodes={node_count}", False)
        if count is None:
            described = f"devices={text(devices)}" if devices is not None else "devices chosen by the machine (devices=\"auto\")"
            return Strategy(UNKNOWN, described, None)
        if count > 1:
            return Strategy(WRAPPING, f"devices={text(devices)}", False)
        described = ", ".join(f"{k}={text(v)}" for k, v in keywords.items() if k in ("accelerator", "devices", "strategy")) or "Fabric()"
        return Strategy(SINGLE, described, False)

    def _device_count(self, devices: ast.AST | None, accelerator: ast.AST | None) -> int | None:
        if devices is None or (isinstance(devices, ast.Constant) and devices.value in ("auto", -1, "-1")):
            if isinstance(accelerator, ast.Constant) and accelerator.value == "cpu":
                return 1  # CPU "auto" means one device
            return None
        if isinstance(devices, ast.Constant):
            value = devices.value
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            if isinstance(value, str):
                parts = [part for part in value.split(",") if part.strip()]
                if len(parts) > 1 or value.strip().endswith(","):
                    return len(parts)
                try:
                    return int(value)
                except ValueError:
                    return None
            return None
        if isinstance(devices, (ast.List, ast.Tuple)):
            return len(devices.elts)
        return None

    def fabric_of(self, expr: ast.AST, scope: Scope | None, before: tuple[int, int] | None = None, depth: int = 0) -> FabricObject | None:
        """The Fabric object an expression evaluates to, if it is one."""
        if depth > 6:
            return None
        if isinstance(expr, ast.Call):
            cls = self.resolver.resolve(self.source, expr.func)
            if cls is not None and self.resolver.is_fabric(cls):
                return FabricObject(self.strategy_of(expr, scope), self.source.span(expr))
            return self._returned_fabric(expr.func, depth)
        if isinstance(expr, ast.Name):
            if scope is not None and scope.function is not None:
                annotation = _annotation_of(scope.function, expr.id)
                if annotation is not None:
                    cls = self.resolver.resolve(self.source, _unquote(annotation))
                    if cls is not None and self.resolver.is_fabric(cls):
                        return FabricObject(
                            Strategy(UNKNOWN, f"a Fabric passed in as `{expr.id}`", None), None
                        )
                found = _last_assignment_statement(scope, expr.id, before)
                if found is not None:
                    return self.fabric_of(found[1], scope, _position(found[0]), depth + 1)
            module_scope = self.scopes[0] if self.scopes else None
            if module_scope is None:
                return None
            found = _last_assignment_statement(module_scope, expr.id, before if scope is module_scope else None)
            if found is not None:
                return self.fabric_of(found[1], module_scope, _position(found[0]), depth + 1)
            return None
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and scope is not None and scope.cls is not None:
            return self._class_attr_fabrics.get((id(scope.cls), expr.attr))
        return None

    def _returned_fabric(self, func: ast.expr, depth: int) -> FabricObject | None:
        """`make_fabric()`: the Fabric a factory function returns (this file or another one)."""
        key = self.source.segment(func)
        if key in self._returns_fabric:
            return self._returns_fabric[key]
        self._returns_fabric[key] = None
        found = self.resolver.resolve_function(self.source, func)
        if found is not None and depth < 4:
            source, function = found
            analyzer = self if source is self.source else FabricAnalyzer(self.resolver, source)
            self._returns_fabric[key] = analyzer._fabric_returned_by(function, depth)
        return self._returns_fabric[key]

    def _fabric_returned_by(self, function: FunctionNode, depth: int) -> FabricObject | None:
        scope = next((s for s in self.scopes if s.node is function), None)
        if scope is None:
            return None
        for node in ast.walk(function):
            if isinstance(node, ast.Return) and node.value is not None:
                found = self.fabric_of(node.value, scope, _position(node), depth + 1)
                if found is not None:
                    return found
        if function.returns is not None:
            cls = self.resolver.resolve(self.source, _unquote(function.returns))
            if cls is not None and self.resolver.is_fabric(cls):
                return FabricObject(Strategy(UNKNOWN, f"a Fabric returned by `{function.name}()`", None), None)
        return None

    def _collect_class_attribute_fabrics(self) -> None:
        for scope in self.scopes:
            if scope.cls is None or scope.function is None:
                continue
            for statement, target, value in scope_assignments(scope):
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                    found = self.fabric_of(value, scope, (statement.lineno, statement.col_offset))
                    if found is not None:
                        self._class_attr_fabrics[(id(scope.cls), target.attr)] = found

    def fabric_receiver(self, call: ast.Call, scope: Scope, methods: tuple[str, ...]) -> FabricObject | None:
        """For `<fabric>.method(...)`, the Fabric object; None when the receiver is not a Fabric."""
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in methods:
            return self.fabric_of(func.value, scope, (call.lineno, call.col_offset))
        return None

    # -- the model given to setup ---------------------------------------------------------------------
    def model_class(self, expr: ast.AST, scope: Scope, before: tuple[int, int], depth: int = 0) -> tuple[ClassRef, bool]:
        """(class of the module expression, whether it was torch.compile'd)."""
        if depth > 6:
            return None, False
        if isinstance(expr, ast.Call):
            qualified = self.imports.qualify(expr.func)
            if qualified == "torch.compile" and expr.args:
                cls, _ = self.model_class(expr.args[0], scope, before, depth + 1)
                return cls, True
            if isinstance(expr.func, ast.Attribute) and expr.func.attr in _RETURNS_SELF:
                return self.model_class(expr.func.value, scope, before, depth + 1)
            cls = self.resolver.resolve(self.source, expr.func)
            if cls is not None:
                return cls, False
            if isinstance(expr.func, ast.Name):
                function = module_level_function(self.source, expr.func.id)
                inner_scope = next((s for s in self.scopes if s.node is function), None)
                if function is not None and inner_scope is not None:
                    for node in ast.walk(function):
                        if isinstance(node, ast.Return) and node.value is not None:
                            return self.model_class(node.value, inner_scope, (node.lineno, node.col_offset), depth + 1)
            return None, False
        if isinstance(expr, ast.Name):
            found = _last_assignment_statement(scope, expr.id, before)
            if found is None and scope.function is not None:
                if _is_parameter(scope.function, expr.id):
                    from_callers = self._parameter_class_from_callers(scope, expr.id, depth)
                    if from_callers is not None:
                        return from_callers
                annotation = _annotation_of(scope.function, expr.id)
                if annotation is not None:
                    cls = self.resolver.resolve(self.source, _unquote(annotation))
                    if isinstance(cls, LibraryClass) and cls.qualified == "torch.nn.Module":
                        return None, False  # some module: the annotation does not say which
                    return cls, False
                if self.scopes and not _is_parameter(scope.function, expr.id):
                    found = _last_assignment_statement(self.scopes[0], expr.id, None)
                    if found is not None:
                        return self.model_class(found[1], self.scopes[0], _position(found[0]), depth + 1)
            if found is not None:
                cls, compiled = self.model_class(found[1], scope, _position(found[0]), depth + 1)
                if cls is None and isinstance(found[1], ast.Call):
                    # A factory we cannot follow (`AutoModel.from_pretrained(...)`): ask jedi.
                    target = next((t for t, _ in assignments(found[0]) if isinstance(t, ast.Name) and t.id == expr.id), None)
                    if target is not None:
                        cls = self.resolver.resolve_instance(self.source, target)
                return cls, compiled
            return None, False
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and scope.cls is not None:
            for other in self.scopes:
                if other.cls is not scope.cls:
                    continue
                for statement in other.statements():
                    for target, value in assignments(statement):
                        if target_key(target) == target_key(expr):
                            cls, compiled = self.model_class(value, other, _position(statement), depth + 1)
                            if cls is not None:
                                return cls, compiled
        return None, False

    def _parameter_class_from_callers(self, scope: Scope, name: str, depth: int) -> tuple[ClassRef, bool] | None:
        """The class every call site in this file passes for a parameter, when they all agree."""
        function = scope.function
        arguments = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
        is_method = scope.cls is not None and decorator_kind(function) != "staticmethod"
        if is_method and arguments:
            arguments = arguments[1:]
        index = arguments.index(name) if name in arguments else None
        found: set[int] = set()
        result: tuple[ClassRef, bool] | None = None
        for caller in self.scopes:
            for node in caller.expressions():
                if not isinstance(node, ast.Call) or not self._calls_function(node, caller, scope):
                    continue
                argument = next((k.value for k in node.keywords if k.arg == name), None)
                if argument is None and index is not None and index < len(node.args):
                    argument = node.args[index]
                if argument is None or isinstance(argument, ast.Starred):
                    return None
                cls, compiled = self.model_class(argument, caller, _position(node), depth + 1)
                if cls is None:
                    return None
                found.add(id(getattr(cls, "node", cls)))
                result = (cls, compiled)
        return result if len(found) == 1 else None

    def _calls_function(self, call: ast.Call, caller: Scope, callee: Scope) -> bool:
        function = callee.function
        if callee.cls is None:
            return isinstance(call.func, ast.Name) and call.func.id == function.name
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == function.name):
            return False
        receiver = call.func.value
        if isinstance(receiver, ast.Name) and receiver.id == "self":
            return caller.cls is callee.cls
        cls, _ = self.model_class(receiver, caller, _position(call), 5)
        return isinstance(cls, ClassInfo) and cls.node is callee.cls

    # -- replay ------------------------------------------------------------------------------------
    def analyze(self) -> FabricFacts:
        facts = FabricFacts()
        if not self.scopes:
            return facts
        module_wrapped: dict[str, WrappedModel] = {}
        class_wrapped: dict[tuple[int, str], WrappedModel] = {}
        # Pass 1: find every setup binding, so other scopes know what is wrapped.
        setting_up: set[int] = set()  # scopes holding a setup binding
        for scope in self.scopes:
            for statement, target, value in scope_assignments(scope):
                wrapped = self._wrapped_by(statement, target, value, scope)
                if wrapped is None:
                    continue
                setting_up.add(id(scope))
                facts.wrapped.append(wrapped)
                target = wrapped.target
                key = target_key(target)
                if scope.function is None and isinstance(target, ast.Name):
                    module_wrapped[key] = wrapped
                elif isinstance(target, ast.Attribute) and scope.cls is not None:
                    class_wrapped[(id(scope.cls), target.attr)] = wrapped
        # Pass 2: replay each scope in order; one that cannot see a wrapped model (see
        # _may_see_wrapped) would record nothing, so it is skipped.
        for scope in self.scopes:
            if id(scope) in setting_up or _may_see_wrapped(scope, module_wrapped, class_wrapped):
                self._replay(scope, facts, module_wrapped, class_wrapped)
        # Marks from other scopes (order unknown) still count: no alarm for what might be marked.
        resolved: list[MethodCallFact] = []
        for fact in facts.method_calls:
            marking_scopes = fact.wrapped.marks.get(fact.method, set())
            marked = fact.marked_before or bool(marking_scopes - {fact.scope_id}) or fact.wrapped.marks_unknown
            resolved.append(replace(fact, marked_before=marked))
        facts.method_calls = resolved
        return facts

    def _wrapped_by(self, statement: ast.stmt, target: ast.expr, value: ast.expr, scope: Scope) -> WrappedModel | None:
        call = value
        if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Call):
            call = value.value  # fabric.setup(model, opt)[0]
        if not isinstance(call, ast.Call):
            return None
        fabric = self.fabric_receiver(call, scope, _SETUP_METHODS)
        if fabric is None or not call.args:
            return None
        if isinstance(target, (ast.Tuple, ast.List)):
            # `model, optimizer = fabric.setup(model, optimizer)`: the module comes first.
            if not target.elts or isinstance(target.elts[0], ast.Starred):
                return None
            target = target.elts[0]
        if target_key(target) is None:
            return None
        model_class, compiled = self.model_class(call.args[0], scope, (statement.lineno, statement.col_offset))
        return WrappedModel(
            fabric=fabric,
            setup_call=call,
            setup_statement=statement,
            target=target,
            target_text=self.source.segment(target),
            model_class=model_class,
            compiled=compiled,
            source=self.source,
        )

    def _replay(self, scope: Scope, facts: FabricFacts, module_wrapped: dict, class_wrapped: dict) -> None:
        # Events: (position, order, kind, payload). Bindings take effect at the statement's end.
        events: list[tuple[tuple[int, int], int, str, object]] | None = scope.__dict__.get("_replay_events")
        if events is None:  # a function of the scope alone: kept with it (see scopes_of)
            events = []
            for statement in scope.statements():
                end = (statement.end_lineno or statement.lineno, statement.end_col_offset or 0)
                for target, value in assignments(statement):
                    events.append((end, 1, "bind", (statement, target, value)))
            for node in scope.expressions():
                if isinstance(node, ast.Call):
                    events.append(((node.lineno, node.col_offset), 0, "call", node))
            events.sort(key=lambda event: (event[0], event[1]))
            scope.__dict__["_replay_events"] = events

        local: dict[str, WrappedModel | None] = {}
        marked: dict[int, set[str]] = {}
        own_statements = set(scope.statements())

        def lookup(expr: ast.AST) -> WrappedModel | None:
            key = target_key(expr)
            if key is None:
                return None
            if key in local:
                return local[key]
            if isinstance(expr, ast.Name) and scope.function is not None:
                if _is_parameter(scope.function, expr.id) or _assigned_in(scope, expr.id):
                    return None
                return module_wrapped.get(key)
            if isinstance(expr, ast.Attribute) and scope.cls is not None and isinstance(expr.value, ast.Name) and expr.value.id == "self":
                wrapped = class_wrapped.get((id(scope.cls), expr.attr))
                if wrapped is not None and wrapped.setup_statement in own_statements:
                    return None  # set up later in this very method: not wrapped yet
                return wrapped
            return None

        for _, _, kind, payload in events:
            if kind == "bind":
                statement, target, value = payload
                elements = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
                for element in elements:
                    key = target_key(element)
                    if key is None:
                        continue
                    # A setup binds; any other assignment ends the wrapping.
                    local[key] = next(
                        (w for w in facts.wrapped if w.setup_statement is statement and w.target is element),
                        None,
                    )
                continue
            call = payload
            func = call.func
            if not isinstance(func, ast.Attribute):
                continue
            wrapped = lookup(func.value)
            if wrapped is None:
                continue
            if func.attr == "mark_forward_method":
                self._record_mark(call, wrapped, marked, facts, lookup, id(scope))
                continue
            facts.method_calls.append(
                MethodCallFact(wrapped, call, func, func.attr, func.attr in marked.get(id(wrapped), set()), id(scope))
            )

    def _record_mark(self, call: ast.Call, wrapped: WrappedModel, marked: dict, facts: FabricFacts, lookup, scope_id: int) -> None:
        argument = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "method"), None)
        names = marked.setdefault(id(wrapped), set())
        if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
            names.add(argument.value)
            wrapped.marks.setdefault(argument.value, set()).add(scope_id)
        elif isinstance(argument, ast.Attribute):
            # mark_forward_method(model.generate): on the wrapper itself this is FAB003.
            if lookup(argument.value) is wrapped:
                facts.bound_marks.append(BoundMarkFact(wrapped, argument, argument.attr))
            names.add(argument.attr)
            wrapped.marks.setdefault(argument.attr, set()).add(scope_id)
        else:
            literal_names = _loop_literals(self.source.tree, call, argument)
            if literal_names is not None:
                names.update(literal_names)
                for name in literal_names:
                    wrapped.marks.setdefault(name, set()).add(scope_id)
            else:
                wrapped.marks_unknown = True


def _receivers(scope: Scope) -> set[str]:
    """target_key of every `<receiver>.<method>(...)` call in the scope; kept with the scope."""
    found = scope.__dict__.get("_call_receivers")
    if found is None:
        found = set()
        for node in scope.expressions():
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                key = target_key(node.func.value)
                if key is not None:
                    found.add(key)
        scope.__dict__["_call_receivers"] = found
    return found


def _may_see_wrapped(scope: Scope, module_wrapped: dict, class_wrapped: dict) -> bool:
    """Can `_replay` find a call on a wrapped model in a scope without a setup binding of its own?
    Only through a module-level wrapped name used in a function, or `self.<attr>` wrapped in the
    scope's class (its `lookup`); otherwise every receiver looks up to None."""
    if not module_wrapped and not class_wrapped:
        return False
    receivers = _receivers(scope)
    if scope.function is not None and any(key in receivers for key in module_wrapped):
        return True
    if scope.cls is not None:
        return any(cls_id == id(scope.cls) and f"self.{attr}" in receivers for cls_id, attr in class_wrapped)
    return False


def _int_literal(node: ast.AST | None) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    return None


def _annotation_of(function: FunctionNode, name: str) -> ast.expr | None:
    arguments = function.args
    for argument in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
        if argument.arg == name:
            return argument.annotation
    return None


def _is_parameter(function: FunctionNode, name: str) -> bool:
    arguments = function.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    if arguments.vararg:
        every.append(arguments.vararg)
    if arguments.kwarg:
        every.append(arguments.kwarg)
    return any(argument.arg == name for argument in every)


def _assigned_in(scope: Scope, name: str) -> bool:
    for statement in scope.statements():
        for target, _ in assignments(statement):
            if isinstance(target, ast.Name) and target.id == name:
                return True
        if isinstance(statement, ast.Global) and name in statement.names:
            return False
    return False


def _unquote(annotation: ast.expr) -> ast.expr:
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            return ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return annotation
    return annotation


def _last_assignment(scope: Scope, name: str, before: tuple[int, int] | None) -> ast.expr | None:
    """The value last assigned to `name` by a statement starting before `before`."""
    found = _last_assignment_statement(scope, name, before)
    return found[1] if found else None


def _last_assignment_statement(scope: Scope, name: str, before: tuple[int, int] | None) -> tuple[ast.stmt, ast.expr] | None:
    # Indexed by name once per scope: a scan per lookup made long scripts quadratic.
    index = scope.__dict__.get("_assignments_by_name")
    if index is None:
        index = {}
        for statement in scope.statements():
            for target, value in assignments(statement):
                if isinstance(target, ast.Name):
                    index.setdefault(target.id, []).append((statement, value))
        scope.__dict__["_assignments_by_name"] = index
    found = None
    for statement, value in index.get(name, ()):
        if before is not None and (statement.lineno, statement.col_offset) >= before:
            break
        found = (statement, value)
    return found


def _position(node: ast.AST) -> tuple[int, int]:
    return (node.lineno, node.col_offset)


def _loop_literals(tree: ast.Module | None, call: ast.Call, argument: ast.AST | None) -> set[str] | None:
    """`for name in ("a", "b"): model.mark_forward_method(name)` -> {"a", "b"}."""
    if tree is None or not isinstance(argument, ast.Name):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name) and node.target.id == argument.id:
            if any(inner is call for inner in ast.walk(node)):
                if isinstance(node.iter, (ast.Tuple, ast.List, ast.Set)) and all(
                    isinstance(element, ast.Constant) and isinstance(element.value, str) for element in node.iter.elts
                ):
                    return {element.value for element in node.iter.elts}
    return None
