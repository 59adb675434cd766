"""What a module class does: which attributes are child modules, whether a method runs a module
(FAB001), which tensors a class owns directly and which children it builds (FAB002)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from fabric_lsp.analysis.classes import (
    MAX_DEPTH,
    ClassInfo,
    ClassRef,
    ClassResolver,
    FunctionNode,
    LibraryClass,
    decorator_kind,
    module_level_function,
)
from fabric_lsp.analysis.libraries import models as library_models
from fabric_lsp.analysis.nodes import walk
from fabric_lsp.analysis.source import SourceFile
from fabric_lsp.analysis.libraries.torch_facts import library_module_facts, nn_module_attributes

MODULE = "module"
NOT_MODULE = "not_module"
UNKNOWN = "unknown"

_CONTAINERS = ("torch.nn.ModuleList", "torch.nn.Sequential", "torch.nn.ModuleDict")
# Library callables that run a module passed to them as an argument.
_RUNS_ARGUMENT = ("checkpoint", "functional_call")


@dataclass(frozen=True)
class RunsModule:
    """Verdict on one method: does calling it run the forward of any module in the model's tree?"""

    runs: bool
    reason: str  # e.g. "calls `self.lm_head(...)`"
    certain: bool = True  # False when the verdict rests on a body we could not read


@dataclass(frozen=True)
class ChildModule:
    cls: ClassRef
    call: ast.Call  # the constructor call in the parent's source
    source: SourceFile
    attribute: str = ""  # where the parent keeps it: "attn", "blocks[...]"
    guards: tuple = ()  # ((test node, outcome), ...): the branches of `__init__` it is built in (see guards_of)


@dataclass(frozen=True)
class OwnedTensor:
    attribute: str
    kind: str  # "parameter" | "buffer"
    value: ast.expr | None  # the tensor expression (inside nn.Parameter(...) for parameters)
    statement: ast.stmt
    init_calls: tuple[ast.Call, ...] = ()  # later `nn.init.xxx_(self.attr, ...)` calls in __init__
    guards: tuple = ()  # the branches of `__init__` it is created in (see guards_of)


@dataclass(frozen=True)
class Parametrization:
    """`weight_norm(...)`, `spectral_norm(...)`, `register_parametrization(...)` from
    torch.nn.utils.parametrize(ations): the layer gets a ParametrizationList, which owns the original
    tensors and has no reset_parameters."""

    call: ast.Call
    attribute: str


@dataclass
class ModuleFacts:
    """Everything FAB002 needs about one class."""

    owned: list[OwnedTensor] = field(default_factory=list)
    children: list[ChildModule] = field(default_factory=list)
    parametrizations: list[Parametrization] = field(default_factory=list)


class ModuleAnalyzer:
    def __init__(self, resolver: ClassResolver) -> None:
        self.resolver = resolver
        self.flow = None  # the solved value flow (flow.Solver), for attributes set from arguments
        self._attribute_kinds: dict[int, dict[str, str]] = {}
        self._attribute_classes: dict[int, dict[str, ClassRef]] = {}
        self._method_aliases: dict[int, dict[str, str]] = {}
        self._runs: dict[tuple[int, str], RunsModule] = {}

    # -- kinds of values -------------------------------------------------------------------------
    def value_kind(self, source: SourceFile, expr: ast.AST, function: FunctionNode | None = None) -> tuple[str, ClassRef]:
        """Is this expression a module? (MODULE/NOT_MODULE/UNKNOWN, its class when known)."""
        imports = self.resolver.imports_of(source)
        if isinstance(expr, ast.Call):
            qualified = imports.qualify(expr.func)
            if qualified in ("torch.compile",) and expr.args:
                return self.value_kind(source, expr.args[0], function)
            cls = self.resolver.resolve(source, expr.func)
            if isinstance(cls, LibraryClass) and library_models.is_library_name(cls.qualified) and not cls.in_tables:
                return UNKNOWN, None  # a library factory: the value flow knows what it returned (_field_kind)
            if cls is not None:
                is_module = self.resolver.is_module(cls)
                if is_module is True:
                    return MODULE, cls
                if is_module is False:
                    return NOT_MODULE, cls
                return UNKNOWN, cls
            if qualified and imports.is_library(qualified):
                # A library function (torch.randn, F.relu, ...) returns tensors, not modules.
                return NOT_MODULE, None
            return UNKNOWN, None
        if isinstance(expr, (ast.Constant, ast.Lambda, ast.JoinedStr, ast.BinOp, ast.Compare, ast.BoolOp)):
            return NOT_MODULE, None
        if isinstance(expr, (ast.Dict, ast.Set)) and not any(
            isinstance(v, ast.Call) for v in ast.walk(expr)
        ):
            return NOT_MODULE, None
        if isinstance(expr, (ast.Name, ast.Attribute)):
            qualified = imports.qualify(expr)
            if qualified and imports.is_library(qualified):
                return NOT_MODULE, None  # e.g. `F.gelu`, `torch.tanh` stored as an activation
            if isinstance(expr, ast.Name):
                if module_level_function(source, expr.id) is not None:
                    return NOT_MODULE, None
                if function is not None:
                    annotation = _parameter_annotation(function, expr.id)
                    if annotation is not None:
                        cls = self.resolver.resolve(source, annotation)
                        is_module = self.resolver.is_module(cls)
                        if is_module is True:
                            return MODULE, cls
                        if is_module is False:
                            return NOT_MODULE, cls
        return UNKNOWN, None

    def attribute_kinds(self, cls: ClassInfo) -> tuple[dict[str, str], dict[str, ClassRef]]:
        """`self.X = ...` assignments in the class and its readable bases: X -> kind, X -> class."""
        key = id(cls.node)
        if key in self._attribute_kinds:
            return self._attribute_kinds[key], self._attribute_classes[key]
        kinds: dict[str, str] = {}
        classes: dict[str, ClassRef] = {}
        self._attribute_kinds[key] = kinds
        self._attribute_classes[key] = classes
        for ref in reversed(list(self.resolver.mro(cls))):
            if not isinstance(ref, ClassInfo):
                continue
            for method in ref.methods().values():
                for node in ast.walk(method):
                    if isinstance(node, ast.Assign):
                        targets, value = node.targets, node.value
                    elif isinstance(node, ast.AnnAssign) and node.value is not None:
                        targets, value = [node.target], node.value
                    else:
                        if isinstance(node, ast.Call) and _is_self_call(node, ("add_module", "register_module")):
                            if len(node.args) >= 2 and isinstance(node.args[0], ast.Constant):
                                name = str(node.args[0].value)
                                kinds[name], classes[name] = self.value_kind(ref.source, node.args[1], method)
                        continue
                    for target in targets:
                        name = _self_attribute(target)
                        if name is None:
                            continue
                        aliased = _self_attribute(value)
                        if aliased is not None and aliased in ref.methods():
                            # `self.decode = self._greedy`: instances hold a bound method.
                            self._method_aliases.setdefault(key, {})[name] = aliased
                            continue
                        kind, value_cls = self.value_kind(ref.source, value, method)
                        previous = kinds.get(name)
                        # One module assignment anywhere makes it a module; conflicting evidence -> unknown.
                        if previous is None or previous == kind:
                            kinds[name] = kind
                        elif MODULE in (previous, kind):
                            kinds[name] = MODULE
                        else:
                            kinds[name] = UNKNOWN
                        if value_cls is not None:
                            classes[name] = value_cls
        return kinds, classes

    # -- FAB001: does a method run a module? -------------------------------------------------------
    def runs_module(self, cls: ClassRef, name: str, depth: int = 0) -> RunsModule:
        if cls is None:
            return RunsModule(True, "its class could not be resolved", certain=False)
        owner, definition = self.resolver.find_attribute(cls, name)
        if owner is None:
            return RunsModule(True, f"`{name}` could not be found", certain=False)
        if isinstance(owner, LibraryClass) and owner.in_tables:
            return library_runs(owner, name)
        if isinstance(owner, LibraryClass) or definition is None:
            # torch.nn.Module's own methods never run a forward from outside (parameters(), to(), ...).
            return RunsModule(False, f"`{name}` is defined by {owner.name if owner else 'a library'}")
        if not isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if isinstance(definition, ast.Name) and isinstance(owner, ClassInfo) and definition.id in owner.methods():
                return self.runs_module(owner, definition.id, depth + 1)  # `decode = _greedy`
            return RunsModule(True, f"`{name}` is an alias whose body was not followed", certain=False)
        # An inherited method's `self.m(...)` is the receiver's `m` (a template method whose step only the
        # subclass implements): the verdict is per receiver class when it is not the defining one.
        receiver = cls if isinstance(cls, ClassInfo) and cls is not owner else None
        key = (id(definition), name, id(receiver.node) if receiver is not None else None)
        if key in self._runs:
            return self._runs[key]
        if depth > MAX_DEPTH:
            return RunsModule(True, "call chain too deep to follow", certain=False)
        self._runs[key] = RunsModule(False, "recursive call")  # cycle guard
        verdict = self._body_runs_module(owner, definition, depth, receiver)
        self._runs[key] = verdict
        return verdict

    def runs_module_called_with(self, cls: ClassRef, name: str, arguments) -> RunsModule | None:
        """The verdict for one call site when the arguments it passes decide branches of the method's body
        (`sample(n)` draws from the prior; `sample(n, evidence=x)` runs the encoder): the body's calls
        on the way those arguments take, with the others' defaults. None when the arguments decide
        nothing (the method's one verdict holds). `arguments`: (positional values, keyword values) as
        sets of `Known` values, None for one that cannot be seen."""
        if not isinstance(cls, ClassInfo):
            return None
        owner, definition = self.resolver.find_attribute(cls, name)
        if not isinstance(owner, ClassInfo) or not isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                or decorator_kind(definition) not in ("method",):
            return None
        bindings = _bind_arguments(definition, arguments)
        if bindings is None or not _decides_something(definition, bindings):
            return None
        receiver = cls if cls is not owner else None
        return self._body_runs_module(owner, definition, 0, receiver, calls=_reachable_calls(definition, bindings))

    def runs_bound_function(self, cls: ClassRef, function: FunctionNode, source: SourceFile | None) -> RunsModule:
        """A function of a module bound to an instance of `cls` at run time (`types.MethodType(f, obj)`,
        `f.__get__(obj)`): its body, run with its first parameter = the instance."""
        if not isinstance(cls, ClassInfo):
            return RunsModule(True, "its class could not be resolved", certain=False)
        key = (id(function), "", id(cls.node))
        if key not in self._runs:
            self._runs[key] = RunsModule(False, "recursive call")  # cycle guard
            self._runs[key] = self._body_runs_module(cls, function, 0, None, source)
        return self._runs[key]

    def _body_runs_module(self, cls: ClassInfo, function: FunctionNode, depth: int,
                          receiver: ClassInfo | None = None, source: SourceFile | None = None,
                          calls: list[ast.Call] | None = None) -> RunsModule:
        kinds, classes = self.attribute_kinds(cls)
        self_name = function.args.args[0].arg if function.args.args else "self"
        if decorator_kind(function) == "classmethod":
            self_name = ""  # `cls(...)` builds a new object; it runs nothing of this model
        local_modules = _local_module_names(function, self_name, kinds)
        for node in _calls_in_order(function) if calls is None else calls:
            func = node.func
            # self(...)
            if isinstance(func, ast.Name) and func.id == self_name:
                return RunsModule(True, f"calls `{self_name}(...)`")
            if isinstance(func, ast.Name) and func.id in local_modules:
                return RunsModule(True, f"calls `{func.id}(...)`, a child module")
            # self.layers[0](...)
            if isinstance(func, ast.Subscript) and _self_attribute(func.value, self_name) is not None:
                attribute = _self_attribute(func.value, self_name)
                kind = self._kind(cls, attribute, kinds)
                if kind == MODULE:
                    return RunsModule(True, f"calls `{self_name}.{attribute}[...](...)`")
                if kind == UNKNOWN:
                    return RunsModule(True, f"calls `{self_name}.{attribute}[...](...)`, which may hold modules", certain=False)
            attribute = _self_attribute(func, self_name)
            if attribute is not None:
                alias = self._method_aliases.get(id(cls.node), {}).get(attribute)
                if alias is not None:
                    inner = self.runs_module(cls, alias, depth + 1)
                    if inner.runs:
                        return RunsModule(True, f"calls `self.{attribute}(...)` (bound to `self.{alias}`), which {inner.reason}", inner.certain)
                    continue
                verdict = self._self_attribute_call(cls, attribute, kinds, depth, receiver)
                if verdict is not None:
                    return verdict
                continue
            # self.child.method(...)
            if isinstance(func, ast.Attribute):
                child = _self_attribute(func.value, self_name)
                if child is not None and self._kind(cls, child, kinds) == MODULE:
                    child_cls = classes.get(child) or self._field_class(cls, child)
                    if func.attr == "forward":
                        # No __call__, no hook on the child itself; its own children still run.
                        verdict = self._forward_runs_children(child_cls, depth)
                        if verdict is not None and verdict.runs:
                            return RunsModule(True, f"calls `{self_name}.{child}.forward(...)`, which {verdict.reason}", verdict.certain)
                        continue
                    if func.attr in nn_module_attributes():
                        continue
                    if isinstance(child_cls, ClassInfo) or (isinstance(child_cls, LibraryClass) and child_cls.in_tables):
                        inner = self.runs_module(child_cls, func.attr, depth + 1)
                        if inner.runs:
                            return RunsModule(True, f"calls `{self_name}.{child}.{func.attr}(...)`, which {inner.reason}", inner.certain)
                    elif child_cls is None:
                        several = self._several_field_classes(cls, child, func.attr, depth)
                        if several is not None:
                            return RunsModule(True, f"calls `{self_name}.{child}.{func.attr}(...)`, which {several.reason}",
                                              several.certain)
                        return RunsModule(True, f"calls `{self_name}.{child}.{func.attr}(...)` on a child module", certain=False)
                    continue
                # super().method(...)
                if isinstance(func.value, ast.Call) and isinstance(func.value.func, ast.Name) and func.value.func.id == "super":
                    for base in self.resolver.bases(cls):
                        inner = self.runs_module(base, func.attr, depth + 1) if base is not None else None
                        if inner is not None and inner.runs and isinstance(base, ClassInfo):
                            return RunsModule(True, f"calls `super().{func.attr}(...)`, which {inner.reason}", inner.certain)
                    continue
            # checkpoint(self.block, x)
            qualified = self.resolver.imports_of(source or cls.source).qualify(func) or ""
            if qualified.rsplit(".", 1)[-1] in _RUNS_ARGUMENT:
                for argument in node.args:
                    child = _self_attribute(argument, self_name)
                    if child is not None and kinds.get(child) == MODULE:
                        return RunsModule(True, f"runs `{self_name}.{child}` through `{qualified}`")
        return RunsModule(False, "runs no module")

    def _self_attribute_call(self, cls: ClassInfo, attribute: str, kinds: dict[str, str], depth: int,
                             receiver: ClassInfo | None = None) -> RunsModule | None:
        """`self.attribute(...)`: a method (followed), a child module, or something else. A method is
        looked up on the receiver's class first (it may override or implement the defining class's)."""
        owner, definition = None, None
        if receiver is not None:
            owner, definition = self.resolver.find_attribute(receiver, attribute)
            if not isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
                owner, definition = None, None
        if owner is None:
            owner, definition = self.resolver.find_attribute(cls, attribute)
        if isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if decorator_kind(definition) == "property":
                return None
            inner = self.runs_module(owner, attribute, depth + 1)
            if inner.runs:
                return RunsModule(True, f"calls `self.{attribute}(...)`, which {inner.reason}", inner.certain)
            return None
        if isinstance(owner, LibraryClass) and owner.in_tables:
            inner = library_runs(owner, attribute)  # `self.generate(...)` in a subclass of a library model
            return RunsModule(True, f"calls `self.{attribute}(...)`, which {inner.reason}", inner.certain) if inner.runs else None
        if isinstance(owner, LibraryClass):
            return None  # nn.Module API such as self.parameters()
        if isinstance(definition, ast.Name) and isinstance(owner, ClassInfo) and definition.id in owner.methods():
            inner = self.runs_module(owner, definition.id, depth + 1)  # `decode = _greedy` in the class body
            if inner.runs:
                return RunsModule(True, f"calls `self.{attribute}(...)`, which {inner.reason}", inner.certain)
            return None
        kind = self._kind(cls, attribute, kinds)
        if kind == MODULE:
            return RunsModule(True, f"calls `self.{attribute}(...)`, a child module")
        if kind == UNKNOWN:
            return RunsModule(True, f"calls `self.{attribute}(...)`, which may be a child module", certain=False)
        return None

    def _several_field_classes(self, cls: ClassInfo, attribute: str, method: str, depth: int) -> RunsModule | None:
        """`self.lm.generate(...)` where `self.lm` may be an instance of several known classes (a model
        of `AutoModel if ... else AutoModelForCausalLM`): it runs a module when it does on every class
        that has the method (one that lacks it fails with AttributeError either way); None when a class
        is unknown or a verdict is not certain."""
        from fabric_lsp.analysis.values import Instance, const

        values = {value for value in self._field_values(cls, attribute) if value != const(None)}  # None.m(): not ours
        if not values or not all(isinstance(value, Instance) for value in values):
            return None
        found = None
        for value in sorted({value.cls for value in values}, key=repr):
            ref = self.resolver.ref_of(value)
            if ref is None:
                return None
            if isinstance(ref, LibraryClass) and ref.in_tables and library_models.lacks(ref.qualified, method):
                continue  # AttributeError on this class, not this rule's error
            owner, _ = self.resolver.find_attribute(ref, method)
            if owner is None and isinstance(ref, ClassInfo):
                continue
            inner = self.runs_module(ref, method, depth + 1)
            if not inner.runs or not inner.certain:
                return None
            found = found or inner
        return found

    def _forward_runs_children(self, child_cls: ClassRef, depth: int) -> RunsModule | None:
        if isinstance(child_cls, ClassInfo):
            return self.runs_module(child_cls, "forward", depth + 1)
        if isinstance(child_cls, LibraryClass) and child_cls.in_tables:
            if all(library_models.unresettable(each) is not None for each in library_models.candidates(child_cls.qualified)):
                # a model the tables built (a tree of submodules): its forward runs them
                return RunsModule(True, f"runs the submodules of the `{child_cls.name}`")
            return None
        if isinstance(child_cls, LibraryClass):
            facts = library_module_facts(child_cls.qualified)
            if facts is not None and facts.table is not None and facts.table.container:
                return RunsModule(True, f"runs the children of the `{child_cls.name}`")
            if facts is not None:
                return RunsModule(False, f"`{child_cls.name}.forward` runs no submodule")
        return None

    def _kind(self, cls: ClassInfo, attribute: str, kinds: dict[str, str]) -> str | None:
        """The attribute's kind from the class's own assignments; for one set from an argument
        (`self.backbone = backbone`), from what the value flow says reaches it."""
        kind = kinds.get(attribute)
        if kind == UNKNOWN or (kind is None and self.flow is not None):
            from_flow = self._field_kind(cls, attribute)
            if from_flow is not None:
                return from_flow
        return kind

    def _field_values(self, cls: ClassInfo, attribute: str) -> frozenset:
        if self.flow is None or getattr(cls, "key", None) is None:
            return frozenset()
        found = set()
        for sub in self.flow._subclasses(cls.key) if not cls.key.external else [cls.key]:
            found.update(self.flow.peek(("field", sub, attribute)))
        return frozenset(found)

    def _field_kind(self, cls: ClassInfo, attribute: str) -> str | None:
        from fabric_lsp.analysis.values import Const, Instance

        values = self._field_values(cls, attribute)
        if not values:
            return None
        kinds = set()
        for value in values:
            if isinstance(value, Instance):
                is_module = self.resolver.is_module(self.resolver.ref_of(value.cls))
                kinds.add(MODULE if is_module else NOT_MODULE if is_module is False else UNKNOWN)
            elif isinstance(value, Const):
                if value.value is not None:  # `self.head = None` first, a module later: still a module
                    kinds.add(NOT_MODULE)
            else:
                kinds.add(UNKNOWN)
        if kinds == {MODULE}:
            return MODULE
        if kinds == {NOT_MODULE}:
            return NOT_MODULE
        return UNKNOWN if kinds else None

    def _field_class(self, cls: ClassInfo, attribute: str) -> ClassRef:
        from fabric_lsp.analysis.values import Instance

        classes = {v.cls for v in self._field_values(cls, attribute) if isinstance(v, Instance)}
        return self.resolver.ref_of(next(iter(classes))) if len(classes) == 1 else None

    # -- FAB002: owned tensors and children -----------------------------------------------------------
    def module_facts(self, cls: ClassInfo) -> ModuleFacts:
        """Tensors the class owns directly and the child modules it builds, from the `__init__`s that
        run for one instance: the class's own and those its `super().__init__(...)` /
        `Base.__init__(self, ...)` calls reach (`nn.Module.__init__(self)` reaches none of the
        project's), an attribute assigned again later holding only its last value. Where the chain
        cannot be read (no such call, one of another shape, several bases), every `__init__` along
        the readable bases, as if all ran."""
        facts = ModuleFacts()
        mro = list(self.resolver.mro(cls))
        writes: dict[int, list[_Write]] = {}
        for position, ref in enumerate(mro):
            if not isinstance(ref, ClassInfo):
                continue
            init = ref.methods().get("__init__")
            if init is None:
                continue
            writes[position] = []
            self._collect_init(ref, init, facts, writes[position])
        if not writes:
            return facts
        dropped = _InitChain(self.resolver, mro, writes).dropped()
        if dropped is None:
            return facts
        return ModuleFacts(
            [item for index, item in enumerate(facts.owned) if ("owned", index) not in dropped],
            [item for index, item in enumerate(facts.children) if ("children", index) not in dropped],
            [item for index, item in enumerate(facts.parametrizations) if ("parametrizations", index) not in dropped],
        )

    # -- FAB009: no parameter that requires a gradient ------------------------------------------------------
    def without_trainable_parameters(self, cls: ClassRef, depth: int = 0) -> str | None:
        """Why an instance of `cls` has no parameter that requires a gradient ("`Stats` owns only buffers"),
        or None when it may have one (or cannot be read): every attribute its methods bind must be known, the
        tensors it owns must be buffers or `nn.Parameter(..., requires_grad=False)`, its child modules must have
        none, and its bases must be the project's or `nn.Module`."""
        if depth > 8 or cls is None:
            return None
        if isinstance(cls, LibraryClass):
            return f"`{cls.qualified.rsplit('.', 1)[-1]}` has no parameter" if cls.qualified in _PARAMETER_FREE else None
        if not isinstance(cls, ClassInfo):
            return None
        reaches_module = False
        for ref in self.resolver.mro(cls):
            if ref is None or isinstance(ref, LibraryClass) and ref.qualified not in _MODULE_BASES:
                return None
            reaches_module = reaches_module or isinstance(ref, LibraryClass)
        if not reaches_module:
            return None  # the bases were not all followed (a chain deeper than the analysis reads)
        for ref in self.resolver.mro(cls):
            if isinstance(ref, ClassInfo) and _creates_parameters_outside_init(ref):
                return None
        kinds, classes = self.attribute_kinds(cls)
        if any(kind == UNKNOWN for kind in kinds.values()):
            return None
        facts = self.module_facts(cls)
        constant = 0
        for owned in facts.owned:
            if owned.kind == "parameter":
                if not _frozen_parameter(owned.statement):
                    return None
                constant += 1
        for child in facts.children:
            if self.without_trainable_parameters(child.cls, depth + 1) is None:
                return None
        built = {child.attribute for child in facts.children}
        for attribute, kind in kinds.items():
            if kind == MODULE and attribute not in built:
                if self.without_trainable_parameters(classes.get(attribute), depth + 1) is None:
                    return None
        buffers = any(owned.kind == "buffer" for owned in facts.owned)
        what = ("only parameters with `requires_grad=False`" + (" and buffers" if buffers else "")) if constant \
            else "only buffers" if buffers else "no parameter"
        return f"`{cls.name}` holds {what}"

    def taken(self, guards: tuple) -> bool:
        """Can the branches these guards name all be taken with the values the program gives their
        tests (a flag whose default is off, never set: not)? Without the value flow: yes."""
        if self.flow is None:
            return True
        return all(self.flow.branch_taken(test, outcome) for test, outcome in guards)

    def chosen_at_run_time(self, guards: tuple) -> bool:
        """Is one of the branches these guards name decided by a value the program does not state (a
        flag from the command line, a config read at run time)? Without the value flow: no (as `taken`)."""
        return self.flow is not None and any(self.flow.test_chosen_at_run_time(test) for test, _ in guards)

    def choices(self, guards: tuple, source: SourceFile) -> tuple[str, ...]:
        """Those guards, as "`test` is true" (`source`: where the tests are written)."""
        if self.flow is None:
            return ()
        return tuple(f"`{source.segment(test)}` is {'true' if outcome else 'false'}" for test, outcome in guards
                     if self.flow.test_chosen_at_run_time(test))

    def _collect_init(self, cls: ClassInfo, init: FunctionNode, facts: ModuleFacts, writes: list[_Write]) -> None:
        """What one `__init__` builds, added to `facts`; each statement that stores into `self`, with
        the items it added (by list and index), appended to `writes` in source order."""
        imports = self.resolver.imports_of(cls.source)
        self_name = init.args.args[0].arg if init.args.args else "self"
        guards = guards_of(init)
        statements = [node for node in ast.walk(init) if isinstance(node, ast.stmt)]
        statements.sort(key=lambda node: (node.lineno, node.col_offset))
        for statement in statements:
            before = (len(facts.owned), len(facts.children), len(facts.parametrizations))
            self._collect_statement(cls, statement, imports, self_name, guards, facts)
            written = _written_attribute(statement, self_name)
            items = tuple(
                (name, index)
                for name, start, items in (("owned", before[0], facts.owned), ("children", before[1], facts.children),
                                           ("parametrizations", before[2], facts.parametrizations))
                for index in range(start, len(items))
            )
            if written is not None or items:
                writes.append(_Write(statement, written or "", items, guards.get(id(statement), ())))
        self._collect_init_calls(init, imports, self_name, facts)

    def _collect_statement(self, cls: ClassInfo, statement: ast.stmt, imports, self_name: str, guards: dict,
                       facts: ModuleFacts) -> None:
        if isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            value = statement.value
            if value is None:
                return
            for target in targets:
                attribute = _self_attribute(target, self_name)
                if attribute is None:
                    continue
                tensor = _parameter_value(imports, value)
                if tensor is not _NOT_A_PARAMETER:
                    facts.owned.append(OwnedTensor(attribute, "parameter", tensor, statement,
                                                   guards=guards.get(id(value), ())))
                else:
                    self._collect_children(cls, value, facts, attribute, guards)
        elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            call = statement.value
            if _is_self_call(call, ("register_buffer",), self_name) and len(call.args) >= 2:
                name = _constant_str(call.args[0])
                value = call.args[1]
                if name and not (isinstance(value, ast.Constant) and value.value is None):
                    facts.owned.append(OwnedTensor(name, "buffer", value, statement, guards=guards.get(id(call), ())))
            elif _is_self_call(call, ("register_parameter",), self_name) and len(call.args) >= 2:
                name = _constant_str(call.args[0])
                value = call.args[1]
                if name and not (isinstance(value, ast.Constant) and value.value is None):
                    tensor = _parameter_value(imports, value)
                    facts.owned.append(
                        OwnedTensor(name, "parameter", None if tensor is _NOT_A_PARAMETER else tensor, statement,
                                    guards=guards.get(id(call), ()))
                    )
            elif _is_self_call(call, ("add_module", "register_module"), self_name) and len(call.args) >= 2:
                self._collect_children(cls, call.args[1], facts, _constant_str(call.args[0]) or "", guards)
            elif (imports.qualify(call.func) or "").startswith(_PARAMETRIZATIONS) and call.args:
                facts.parametrizations.append(Parametrization(call, _self_attribute(call.args[0], self_name) or ""))

    def _collect_init_calls(self, init: FunctionNode, imports, self_name: str, facts: ModuleFacts) -> None:
        # nn.init.xxx_(self.attr, ...) after the assignment re-initialises the same tensor.
        owned_names = {tensor.attribute: index for index, tensor in enumerate(facts.owned)}
        for call in _calls_in_order(init):
            qualified = imports.qualify(call.func) or ""
            if qualified.startswith("torch.nn.init.") and call.args:
                attribute = _self_attribute(call.args[0], self_name)
                if attribute in owned_names:
                    index = owned_names[attribute]
                    tensor = facts.owned[index]
                    facts.owned[index] = OwnedTensor(
                        tensor.attribute, tensor.kind, tensor.value, tensor.statement, tensor.init_calls + (call,),
                        tensor.guards,
                    )

    def _collect_children(self, cls: ClassInfo, value: ast.expr, facts: ModuleFacts, attribute: str = "",
                          guards: dict | None = None) -> None:
        """Module constructor calls in a value: direct, or inside ModuleList/Sequential/ModuleDict."""
        imports = self.resolver.imports_of(cls.source)
        for index, call in enumerate(_constructor_calls(value)):
            qualified = imports.qualify(call.func) or ""
            if qualified.startswith(_PARAMETRIZATIONS):
                facts.parametrizations.append(Parametrization(call, attribute))
                continue
            child = self.resolver.resolve(cls.source, call.func)
            if isinstance(child, LibraryClass) and library_models.is_library_name(child.qualified) and not child.in_tables:
                # a library factory (`timm.create_model("vit_...")`): the class the value flow says it made
                made = self._field_class(cls, attribute) if attribute and index == 0 else None
                child = made if isinstance(made, LibraryClass) and made.in_tables else None
            if child is None:
                continue
            if isinstance(child, LibraryClass) and child.qualified in _CONTAINERS:
                continue  # its elements are separate calls, visited by _constructor_calls
            if self.resolver.is_module(child):
                facts.children.append(ChildModule(child, call, cls.source, attribute if index == 0 else f"{attribute}[...]",
                                                  (guards or {}).get(id(call), ())))

    def library_owns_tensors(self, cls: LibraryClass, call: ast.Call | None) -> bool:
        facts = library_module_facts(cls.qualified)
        return facts is not None and facts.owns_tensors(call)


def library_runs(cls: LibraryClass, name: str) -> RunsModule:
    """FAB001's verdict for a method of a library model, from the library tables; unknown (not
    certain) when they did not decide it."""
    verdict = library_models.method_verdict(cls.qualified, name)
    if verdict.runs is None:
        return RunsModule(True, verdict.reason, certain=False)
    return RunsModule(verdict.runs, verdict.reason)


@dataclass(frozen=True)
class _Write:
    """A statement of an `__init__` that stores into `self` (or adds FAB002 items)."""

    statement: ast.stmt
    attribute: str  # the one attribute it binds ("" when none or several: it replaces nothing)
    items: tuple  # (list name, index) of what it added to the ModuleFacts
    guards: tuple  # the branches it runs in (guards_of)


class _InitChain:
    """Which `__init__`s run for one instance of a class, and which of what they build the instance
    still holds at the end: an attribute assigned again replaces the module or tensor it held (what
    nn.Module.__setattr__ does), unless the earlier one may still be reachable another way.

    Followed: `super().__init__(...)`, `super(Cls, self).__init__(...)` and `Base.__init__(self, ...)`
    on classes with one base each along the MRO (the MRO here is depth-first: C3 differs only with
    several bases). A library class's `__init__` (`nn.Module.__init__(self)`) runs none of the
    project's `__init__`s after it. Anything else (no such call, another shape, `__init__` named
    otherwise) leaves the question open: dropped() is None."""

    def __init__(self, resolver: ClassResolver, mro: list, writes: dict[int, list[_Write]]) -> None:
        self.resolver = resolver
        self.mro = mro
        self.writes = writes
        self.positions = {id(ref.node): index for index, ref in enumerate(mro) if isinstance(ref, ClassInfo)}

    def dropped(self) -> set | None:
        """(list name, index) of the items no instance holds, or None when the chain is not known."""
        for ref in self.mro:
            if isinstance(ref, ClassInfo) and (len(ref.node.bases) > 1 or ref.node.keywords
                                              or "__init__" in ref.class_attributes()):
                return None
        start = self._next_init(0)
        if start is None:
            return set()
        if start < 0:
            return None
        ran: list[tuple[_Write, tuple]] = []
        visited: set[int] = set()
        if not self._run(start, (), ran, visited, 0):
            return None
        dropped = {item for position, writes in self.writes.items() if position not in visited
                   for write in writes for item in write.items}
        aliased = set()
        for position in visited:
            aliased |= _whole_attribute_reads(self.mro[position].methods()["__init__"])
        held: dict[str, list[tuple[_Write, frozenset]]] = {}
        for write, guards in ran:
            if not write.attribute or write.attribute in aliased:
                continue
            conditions = frozenset((id(test), outcome) for test, outcome in guards)
            earlier = held.setdefault(write.attribute, [])
            for previous in [entry for entry in earlier if conditions <= entry[1]]:
                earlier.remove(previous)  # wherever the earlier assignment ran, this one ran after it
                dropped.update(previous[0].items)
            earlier.append((write, conditions))
        return dropped

    def _next_init(self, position: int) -> int | None:
        """The first class from `position` on whose `__init__` is the project's: its position; None
        when none is left; -1 when a class that may run one of them comes first (unknown, library)."""
        for index in range(position, len(self.mro)):
            ref = self.mro[index]
            if isinstance(ref, ClassInfo):
                if index in self.writes:
                    return index
                continue
            return -1 if any(later in self.writes for later in range(index, len(self.mro))) else None
        return None

    def _run(self, position: int, guards: tuple, ran: list, visited: set, depth: int) -> bool:
        """Run the `__init__` of the class at `position` (its writes into `ran`, in order, with the
        branches that lead to them); False when a call it makes to a base's `__init__` is not known."""
        if position in visited:
            return True
        if depth > len(self.mro):
            return False
        visited.add(position)
        ref = self.mro[position]
        init = ref.methods()["__init__"]
        calls = _base_init_calls(init)
        if calls is None:
            return False
        own_guards = guards_of(init)
        events = [(w.statement.lineno, w.statement.col_offset, 0, w) for w in self.writes[position]]
        events += [(c.lineno, c.col_offset, 1, c) for c in calls]
        if not calls and self._next_init(position + 1) is not None:
            return False  # no call to a base's __init__ that we read, yet one the bases define
        for _, _, kind, event in sorted(events, key=lambda e: e[:3]):
            if kind == 0:
                ran.append((event, guards + event.guards))
                continue
            target = self._target(ref, init, event)
            if target is None:
                return False
            if target == -2:
                continue  # a library class's __init__: no project __init__ after it
            if not self._run(target, guards + own_guards.get(id(event), ()), ran, visited, depth + 1):
                return False
        return True

    def _target(self, ref: ClassInfo, init: FunctionNode, call: ast.Call) -> int | None:
        """The position of the `__init__` a base-init call runs; -2 for a library class's `__init__`
        after which no project `__init__` is left; None when not known."""
        self_name = init.args.args[0].arg if init.args.args else ""
        func = call.func
        receiver = func.value
        if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and receiver.func.id == "super":
            if not receiver.args:
                after = self.positions.get(id(ref.node))
            elif len(receiver.args) == 2 and isinstance(receiver.args[1], ast.Name) and receiver.args[1].id == self_name:
                named = self.resolver.resolve(ref.source, receiver.args[0])
                after = self.positions.get(id(named.node)) if isinstance(named, ClassInfo) else None
            else:
                return None
            return None if after is None else self._init_from(after + 1)
        if not (call.args and isinstance(call.args[0], ast.Name) and call.args[0].id == self_name):
            return None
        named = self.resolver.resolve(ref.source, receiver)
        if isinstance(named, LibraryClass):
            return -2  # `nn.Module.__init__(self)`: with one base each, no project class follows a library one
        if not isinstance(named, ClassInfo) or id(named.node) not in self.positions:
            return None
        return self._init_from(self.positions[id(named.node)])

    def _init_from(self, position: int) -> int | None:
        """What a call reaching the `__init__`s from `position` on runs, as _target says it."""
        found = self._next_init(position)
        return -2 if found is None else (None if found < 0 else found)


def _base_init_calls(init: FunctionNode) -> list[ast.Call] | None:
    """The calls `X.__init__(...)` in an `__init__`, in source order; None when `__init__` is named
    in another way (`init = super().__init__`, `getattr(self, "__init__")`): what runs is then not
    read. Found once per function."""
    cached = init.__dict__.get("_fabric_lsp_base_init_calls", False)
    if cached is not False:
        return cached
    called = {id(node.func) for node in walk(init) if isinstance(node, ast.Call)}
    found: list[ast.Call] | None = []
    for node in walk(init):
        if isinstance(node, ast.Attribute) and node.attr == "__init__" and id(node) not in called \
                or isinstance(node, ast.Constant) and node.value == "__init__":
            found = None
            break
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__init__":
            found.append(node)
    if found is not None:
        found.sort(key=lambda node: (node.lineno, node.col_offset))
    init.__dict__["_fabric_lsp_base_init_calls"] = found
    return found


def _whole_attribute_reads(init: FunctionNode) -> set[str]:
    """Attributes of `self` an `__init__` reads as whole objects (`self.other = self.head`,
    `nn.Sequential(self.head)`): the module they hold may stay reachable after they are assigned
    again. Reading through them (`self.head.weight`, `self.head(x)`) keeps nothing."""
    cached = init.__dict__.get("_fabric_lsp_whole_reads")
    if cached is not None:
        return cached
    self_name = init.args.args[0].arg if init.args.args else ""
    found: set[str] = set()
    for node in walk(init):
        for child in ast.iter_child_nodes(node):
            if (isinstance(child, ast.Attribute) and isinstance(child.ctx, ast.Load) and isinstance(child.value, ast.Name)
                    and child.value.id == self_name):
                if isinstance(node, ast.Attribute) and node.value is child:
                    continue
                if isinstance(node, ast.Call) and node.func is child:
                    continue
                found.add(child.attr)
    init.__dict__["_fabric_lsp_whole_reads"] = found = frozenset(found)
    return found


def _written_attribute(statement: ast.stmt, self_name: str) -> str | None:
    """The one attribute of `self` a statement binds: `self.x = ...`, `self.register_buffer("x", ...)`,
    `add_module("x", ...)`; "" for several (`self.a = self.b = ...`); None for none."""
    if isinstance(statement, (ast.Assign, ast.AnnAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        if statement.value is None:
            return None
        names = [_self_attribute(target, self_name) for target in targets]
        if any(isinstance(target, (ast.Tuple, ast.List)) for target in targets):
            return ""
        names = [name for name in names if name is not None]
        return names[0] if len(names) == 1 and len(targets) == 1 else ("" if names else None)
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        call = statement.value
        if _is_self_call(call, ("register_buffer", "register_parameter", "add_module", "register_module"), self_name) \
                and call.args:
            return _constant_str(call.args[0]) or ""
    return None


_NOT_A_PARAMETER = object()
# New-style parametrizations (the old torch.nn.utils.weight_norm keeps plain parameters: fine).
_PARAMETRIZATIONS = (
    "torch.nn.utils.parametrizations.",
    "torch.nn.utils.parametrize.register_parametrization",
)


def _parameter_value(imports, value: ast.expr):
    """For `nn.Parameter(EXPR)` return EXPR (None when absent); otherwise _NOT_A_PARAMETER."""
    if isinstance(value, ast.Call):
        qualified = imports.qualify(value.func) or ""
        if qualified in ("torch.nn.Parameter", "torch.nn.parameter.Parameter"):
            if value.args:
                return value.args[0]
            for keyword in value.keywords:
                if keyword.arg == "data":
                    return keyword.value
            return None
    return _NOT_A_PARAMETER


def _constructor_calls(value: ast.AST) -> list[ast.Call]:
    """Calls in a value expression, outermost first, skipping arguments of non-container calls' args
    (e.g. `nn.Linear(d, d)` yields only itself; `nn.Sequential(A(), B())` yields all three)."""
    calls: list[ast.Call] = []
    pending: list[ast.AST] = [value]
    index = 0  # breadth-first by index: pop(0) is quadratic on huge literals
    while index < len(pending):
        node = pending[index]
        index += 1
        if isinstance(node, ast.Call):
            calls.append(node)
            pending.extend(node.args)
            pending.extend(keyword.value for keyword in node.keywords)
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            pending.extend(node.elts)
        elif isinstance(node, ast.Dict):
            pending.extend(v for v in node.values if v is not None)
        elif isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            pending.append(node.elt)
        elif isinstance(node, ast.DictComp):
            pending.append(node.value)
        elif isinstance(node, ast.Starred):
            pending.append(node.value)
        elif isinstance(node, ast.IfExp):  # `Linear(...) if cfg.x else Router(cfg)`: either may be built
            pending.extend((node.body, node.orelse))
        elif isinstance(node, ast.BoolOp):
            pending.extend(node.values)
    return calls


def guards_of(function: ast.AST) -> dict[int, tuple]:
    """id(node) -> ((test node, outcome), ...) for the nodes of a function that run only when
    branches are taken: the body/else of an `if`, the arms of a conditional expression. The value flow keeps what each test's values were
    (flow.Solver.branch_taken). Kept on the function node: one walk per function."""
    cached = function.__dict__.get("_fabric_lsp_guards")
    if cached is not None:
        return cached
    found: dict[int, tuple] = {}
    pending: list[tuple[ast.AST, tuple]] = [(child, ()) for child in ast.iter_child_nodes(function)]
    while pending:
        node, guards = pending.pop()
        if guards:
            found[id(node)] = guards
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, (ast.If, ast.IfExp)):
            pending.append((node.test, guards))
            body = node.body if isinstance(node.body, list) else [node.body]
            orelse = node.orelse if isinstance(node.orelse, list) else [node.orelse]
            pending.extend((child, guards + ((node.test, True),)) for child in body)
            pending.extend((child, guards + ((node.test, False),)) for child in orelse)
            continue
        pending.extend((child, guards) for child in ast.iter_child_nodes(node))
    function.__dict__["_fabric_lsp_guards"] = found
    return found


_MODULE_BASES = ("torch.nn.Module", "torch.nn.modules.module.Module")
# torch.nn classes that hold no parameter whatever their arguments (activations, dropout, pooling, reshaping).
_PARAMETER_FREE = frozenset("torch.nn." + name for name in (
    "ReLU", "ReLU6", "GELU", "SiLU", "Mish", "Tanh", "Sigmoid", "Hardtanh", "Hardswish", "Hardsigmoid", "LeakyReLU",
    "ELU", "SELU", "CELU", "Softplus", "Softsign", "Tanhshrink", "Softmax", "LogSoftmax", "Softmin", "Identity",
    "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "Flatten", "Unflatten", "MaxPool1d",
    "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "Upsample",
    "PixelShuffle", "PixelUnshuffle", "ZeroPad2d", "ReflectionPad2d", "ReplicationPad2d", "ConstantPad2d",
    "CosineSimilarity", "PairwiseDistance", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "KLDivLoss",
    # Losses: a `weight=`/`pos_weight=` tensor is a buffer, never a parameter (TripletMarginWithDistanceLoss is
    # not here: its distance_function may be a module that has some).
    "BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "NLLLoss", "PoissonNLLLoss", "GaussianNLLLoss", "CTCLoss",
    "MarginRankingLoss", "HingeEmbeddingLoss", "MultiLabelMarginLoss", "SoftMarginLoss", "MultiLabelSoftMarginLoss",
    "CosineEmbeddingLoss", "MultiMarginLoss", "TripletMarginLoss",
    "Threshold", "GLU", "LogSigmoid", "Softmax2d", "Hardshrink", "Softshrink", "FeatureAlphaDropout",
    "ChannelShuffle", "Fold", "Unfold", "LPPool1d", "LPPool2d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d",
    "ZeroPad1d", "ZeroPad3d", "ReflectionPad1d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad3d",
    "ConstantPad1d", "ConstantPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d",
))


def _frozen_parameter(statement: ast.stmt) -> bool:
    """Is the `nn.Parameter(...)` this statement makes given `requires_grad=False` (a literal)?"""
    for node in walk(statement):
        if isinstance(node, ast.Call) and (getattr(node.func, "attr", None) or getattr(node.func, "id", None)) == "Parameter":
            for keyword in node.keywords:
                if keyword.arg == "requires_grad":
                    return isinstance(keyword.value, ast.Constant) and keyword.value.value is False
            return len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and node.args[1].value is False
    return False


def _creates_parameters_outside_init(cls: ClassInfo) -> bool:
    """Does a method other than `__init__` make a parameter or add a module (`self.w = nn.Parameter(...)`,
    `register_parameter`, `add_module`)? Then what an instance holds is not read from `__init__` alone."""
    for name, method in cls.methods().items():
        if name == "__init__":
            continue
        for node in walk(method):
            if isinstance(node, ast.Call):
                called = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
                if called in ("Parameter", "register_parameter", "add_module", "register_module"):
                    return True
    return False


# -- one call site's arguments ------------------------------------------------------------------------------
class Known:
    """What a call site passes for one parameter, as far as the value flow tells: constants, and whether
    some value is an object that is not None (a module, a tensor the program made)."""

    OBJECT = "object"  # not None; its truth value unknown
    UNKNOWN = "unknown"


def _bind_arguments(function: FunctionNode, arguments) -> dict | None:
    """Parameter name -> set of possible values (constants, Known.OBJECT, Known.UNKNOWN) for one call of the
    method on an instance (self excluded); parameters not passed take their literal default. None when
    the call spreads `*args`/`**kwargs` or passes a parameter the signature does not take by that name."""
    if arguments is None:
        return None
    positional_values, keyword_values = arguments
    params = function.args.posonlyargs + function.args.args
    params = params[1:]  # self
    defaults = dict(zip([p.arg for p in params][len(params) - len(function.args.defaults):], function.args.defaults))
    defaults.update({p.arg: d for p, d in zip(function.args.kwonlyargs, function.args.kw_defaults) if d is not None})
    bound: dict[str, frozenset] = {}
    if len(positional_values) > len(params):
        return None
    for param, values in zip(params, positional_values):
        bound[param.arg] = values
    names = {p.arg for p in params} | {p.arg for p in function.args.kwonlyargs}
    for name, values in keyword_values:
        if name not in names:
            return None
        bound[name] = values
    for name in names:
        if name not in bound:
            default = defaults.get(name)
            if isinstance(default, ast.Constant):
                bound[name] = frozenset({_Literal(default.value)})
            else:
                bound[name] = frozenset({Known.UNKNOWN})
    return bound


class _Literal(tuple):
    """A constant value passed or defaulted (a tuple, so that True and 1 stay apart)."""

    __slots__ = ()

    def __new__(cls, value):
        return tuple.__new__(cls, (type(value).__name__, value))

    value = property(lambda self: self[1])


def literal(value) -> "_Literal":
    return _Literal(value)


def _decides_something(function: FunctionNode, bindings: dict) -> bool:
    tests = function.__dict__.get("_fabric_lsp_if_tests")
    if tests is None:  # read once per function: asked at every call site that passes arguments
        tests = function.__dict__["_fabric_lsp_if_tests"] = [node.test for node in walk(function)
                                                            if isinstance(node, (ast.If, ast.IfExp))]
    return any(_decide_test(test, bindings) is not None for test in tests)


def _decide_test(test: ast.AST, bindings: dict) -> bool | None:
    """The truth of a branch's test on the values a call passes (three-valued: None when it cannot be told)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _decide_test(test.operand, bindings)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        results = [_decide_test(value, bindings) for value in test.values]
        if isinstance(test.op, ast.And):
            return False if False in results else True if all(r is True for r in results) else None
        return True if True in results else False if all(r is False for r in results) else None
    if isinstance(test, ast.Name) and test.id in bindings:
        truths = {bool(v.value) if isinstance(v, _Literal) else None for v in bindings[test.id]}
        return truths.pop() if len(truths) == 1 and None not in truths else None
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name) \
            and test.left.id in bindings and isinstance(test.comparators[0], ast.Constant):
        op, right = test.ops[0], test.comparators[0].value
        results = set()
        for value in bindings[test.left.id]:
            if isinstance(op, (ast.Is, ast.IsNot)) and right is None:
                if value == Known.OBJECT:
                    same = False
                elif isinstance(value, _Literal):
                    same = value.value is None
                else:
                    return None
                results.add(same if isinstance(op, ast.Is) else not same)
            elif isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(value, _Literal):
                equal = value.value == right and isinstance(value.value, bool) == isinstance(right, bool)
                results.add(equal if isinstance(op, ast.Eq) else not equal)
            else:
                return None
        return results.pop() if len(results) == 1 else None
    return None


def _reachable_calls(function: FunctionNode, bindings: dict) -> list[ast.Call]:
    """The calls of the body on the way the call's arguments take: an `if` (or conditional expression) they
    decide keeps its taken arm, and a taken arm that returns or raises ends the body there."""
    calls: list[ast.Call] = []

    def collect(node: ast.AST) -> None:
        pending = [node]
        while pending:
            current = pending.pop()
            if isinstance(current, ast.IfExp):
                taken = _decide_test(current.test, bindings)
                if taken is not None:
                    pending.append(current.test)
                    pending.append(current.body if taken else current.orelse)
                    continue
            if isinstance(current, ast.Call):
                calls.append(current)
            pending.extend(ast.iter_child_nodes(current))

    def block(statements) -> bool:
        for statement in statements:
            if isinstance(statement, ast.If):
                collect(statement.test)
                taken = _decide_test(statement.test, bindings)
                if taken is None:
                    ends_body, ends_else = block(statement.body), block(statement.orelse)
                    if ends_body and ends_else:
                        return True
                elif block(statement.body if taken else statement.orelse):
                    return True
                continue
            if isinstance(statement, (ast.With, ast.AsyncWith)):
                for item in statement.items:
                    collect(item.context_expr)
                if block(statement.body):
                    return True
                continue
            collect(statement)
            if isinstance(statement, (ast.Return, ast.Raise)):
                return True
        return False

    block(function.body)
    calls.sort(key=lambda node: (node.lineno, node.col_offset))
    return calls


def _calls_in_order(function: ast.AST) -> list[ast.Call]:
    """The calls in a function, in source order; found once per function (asked per class and receiver)."""
    calls = function.__dict__.get("_fabric_lsp_calls_in_order")
    if calls is None:
        calls = [node for node in walk(function) if isinstance(node, ast.Call)]
        calls.sort(key=lambda node: (node.lineno, node.col_offset))
        function.__dict__["_fabric_lsp_calls_in_order"] = calls
    return calls


def _self_attribute(node: ast.AST, self_name: str = "self") -> str | None:
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == self_name
        and self_name
    ):
        return node.attr
    return None


def _is_self_call(call: ast.Call, names: tuple[str, ...], self_name: str = "self") -> bool:
    return (
        isinstance(call.func, ast.Attribute)
        and call.func.attr in names
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == self_name
    )


def _constant_str(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _parameter_annotation(function: FunctionNode, name: str) -> ast.expr | None:
    """The annotation of the parameter `name` (the first of that name). The parameters are indexed
    once per function: asked for each name a method assigns, a scan per question was quadratic."""
    index = function.__dict__.get("_parameter_annotations")
    if index is None:
        index = {}
        arguments = function.args
        for argument in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
            index.setdefault(argument.arg, argument.annotation)
        function.__dict__["_parameter_annotations"] = index
    return index.get(name)


def _local_module_names(function: FunctionNode, self_name: str, kinds: dict[str, str]) -> set[str]:
    """Local names bound to child modules: `for block in self.blocks`, `layer = self.layers[i]`."""
    names: set[str] = set()

    def refers_to_child(expr: ast.AST) -> bool:
        while isinstance(expr, (ast.Subscript, ast.Call)) and not isinstance(expr, ast.Call):
            expr = expr.value
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in (
            "children",
            "modules",
            "values",
        ):
            expr = expr.func.value
        attribute = _self_attribute(expr, self_name)
        return attribute is not None and kinds.get(attribute) == MODULE

    for node in ast.walk(function):
        if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name):
            iterable = node.iter
            if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.func.id in (
                "enumerate",
                "zip",
                "reversed",
            ):
                iterable = iterable.args[0] if iterable.args else iterable
            if refers_to_child(iterable):
                names.add(node.target.id)
        elif isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Tuple):
            if refers_to_child(node.iter.args[0] if isinstance(node.iter, ast.Call) and node.iter.args else node.iter):
                for element in node.target.elts:
                    if isinstance(element, ast.Name):
                        names.add(element.id)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if refers_to_child(node.value) or (
                _self_attribute(node.value, self_name) is not None
                and kinds.get(_self_attribute(node.value, self_name)) == MODULE
            ):
                names.add(node.targets[0].id)
    return names
