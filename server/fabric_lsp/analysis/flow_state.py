"""What the value-flow interpreter (flow.py) and its semantics (semantics/) share: the bounds, a
scope's frame, a call site, the events the rules read, and how values are ordered and described."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from fabric_lsp.analysis import ir
from fabric_lsp.analysis.values import (
    Bound,
    Choice,
    Class,
    ConfigNode,
    Const,
    const,
    Container,
    FabricValue,
    Function,
    Instance,
    JUST_UNKNOWN,
    Lib,
    Module,
    NOTHING,
    Output,
    Partial,
    Special,
    Super,
    Tuple,
    Unknown,
    Wrapped,
    WrappedMethod,
)


MAX_SET = 64  # values in one set; past it, the set keeps the first ones (in a fixed order) and UNKNOWN
MAX_CONSTANTS = 8
MAX_MRO = 40
MAX_LOOP_PASSES = 3
# Models wrapped on one frame's way that carry their order (analysis/order.py); past it a further setup's
# model is not carried (counted, so the same on every run): for it the old rule holds (a mark made anywhere
# counts as made before a call). Carrying every setup made a file of 8k setups cost 18x one of 1k.
MAX_ORDERED_WRAPS = 64
MAX_CALL_VALUES = 32  # callees tried at one call site
MAX_PARTIAL_DEPTH = 4
# `fabric.setup()` call sites one program may hold: each carries tables and events, so this bounds a
# document's memory (a hostile file of setups under the 4 MiB ceiling would take GBs); real programs
# hold tens. Counted, so the same file stops at the same point on every run.
MAX_SETUP_SITES = 10_000

ANY_KEY = "<any>"
_NONE = frozenset({const(None)})
_NONE_CONST = const(None)
MADE = frozenset({const(True)})  # ("makes_output", scope): the scope runs a wrapped model (or calls one that does)
_TRUE = frozenset({const(True)})
# Decorators known to leave the decorated function called as it is written.
TRANSPARENT_DECORATORS = frozenset((
    "staticmethod", "classmethod", "property", "setter", "getter", "deleter", "cached_property", "abstractmethod",
    "wraps", "no_grad", "inference_mode", "enable_grad", "lru_cache", "cache", "override", "overload", "final",
    "contextmanager", "asynccontextmanager", "rank_zero_only", "total_ordering", "singledispatch", "deprecated",
    "dataclass", "jit", "script", "ignore", "unused",
))


class MetaTag(tuple):
    """How an instance came to be on the meta device: (kind, context node, creation node, path,
    Fabric values of an init_module context). For init_module, `empty_init` is read after the
    analysis from the arguments recorded for the context's call (`Solver.empty_init`)."""

    __slots__ = ()

    kind = property(lambda self: self[0])  # "meta_device" | "default_device" | "init_module"
    context = property(lambda self: self[1])  # the `with` statement, or the set_default_device call
    creation = property(lambda self: self[2])  # the constructor (or factory) call
    path = property(lambda self: self[3])
    fabrics = property(lambda self: self[4])
    init_call = property(lambda self: self[5])  # the init_module(...) call
    variant = property(lambda self: self[6])  # the case of a split scope the context was entered in


@dataclass
class Event:
    kind: str  # "wcall" | "mark" | "materialize" | "setup"
    node: ast.AST  # the call
    path: str
    scope: ir.Scope
    statement: ast.AST | None
    data: dict
    variant: object = None  # the cases the event was seen in: ((node, value), ...) (see the module doc)
    # The run-time choices the event's branch is taken under in its scope ("when run with `--sample`"):
    # empty on the default run's way (semantics/run_choices.py).
    when: tuple = ()


class _Frame:
    __slots__ = ("scope", "env", "marked", "meta", "default_meta", "cells", "statement", "self_values", "expecting",
                 "variant", "decider", "written", "fresh", "in_loop", "constructed", "guards", "excluded",
                 "none_when")

    def __init__(self, scope: ir.Scope) -> None:
        self.scope = scope
        self.env: dict[str, frozenset] = {}
        # What happened on the way here, in this scope and in the calls it made: Marked(wrapped, name)
        # for each mark, and each Wrapped whose setup ran (so a call before a setup or a mark is told
        # from one after it; analysis._method_calls carries it into the functions called).
        self.marked: frozenset = frozenset()
        self.meta: MetaTag | None = None  # innermost meta-device context (a `with`)
        self.default_meta: MetaTag | None = None  # torch.set_default_device("meta")
        self.cells: dict[str, frozenset] = {}
        self.statement: ast.AST | None = None
        self.self_values: frozenset = NOTHING
        self.expecting = False  # inside `with pytest.raises(...)`: the code expects an error here
        self.variant = None  # ((node, value), ...): the cases this run follows (a split's flag, a loop's key)
        self.decider = None  # the scope's _Decider, when the run follows one of its cases
        # What this run has just written into objects only it holds (Solver._write_through): reads
        # that follow see that value, not every value the object's table ever held. Keys:
        # ("site", container site, key) and ("path", variable, (attribute, ...)).
        self.written: dict = {}
        self.fresh: frozenset = frozenset()  # ("site", site) / ("var", name): made here, outside loops
        self.in_loop = False
        self.constructed: ast.AST | None = None  # the last constructor call of a project class
        self.guards: tuple = ()  # the run-time choices this branch is taken under (semantics/run_choices.py)
        # In the program's Fabric-less mode (`if self.fabric is None:`, PythonBranches.fabric_absent_arm): which
        # wrapped models reach this branch cannot be told, so what happens to them here is not recorded.
        self.excluded = False
        # Local names bound to `X if <run-time choice> else None`: the choice that makes them not None
        # (semantics/run_choices.py), so `if scaler is not None:` is a branch on that choice.
        self.none_when: dict = {}

    def fork(self) -> "_Frame":
        other = _Frame.__new__(_Frame)
        other.scope = self.scope
        other.env = dict(self.env)
        other.marked = self.marked
        other.meta = self.meta
        other.default_meta = self.default_meta
        other.cells = self.cells
        other.statement = self.statement
        other.self_values = self.self_values
        other.expecting = self.expecting
        other.variant = self.variant
        other.decider = self.decider
        other.written = dict(self.written) if self.written else {}
        other.fresh = self.fresh
        other.in_loop = self.in_loop
        other.constructed = None
        other.guards = self.guards
        other.excluded = self.excluded
        other.none_when = self.none_when
        return other

    def merge(self, other: "_Frame") -> bool:
        """Join `other` (a branch) into this frame; whether a name or the marks gained a value (a
        loop's fixed point). Forks share their sets: a name neither path wrote is left as it is."""
        grew = False
        env = self.env
        for name, values in other.env.items():
            mine = env.get(name)
            if mine is None:
                env[name] = values
                grew = True
            elif values is not mine and not values <= mine:
                env[name] = mine | values
                grew = True
        if not other.marked <= self.marked:
            self.marked = self.marked | other.marked
            grew = True
        if self.default_meta is None:
            self.default_meta = other.default_meta
        if self.written or other.written:  # after a branch: what both paths wrote, joined
            self.written = {key: values | other.written[key] for key, values in self.written.items() if key in other.written}
        self.fresh = self.fresh & other.fresh
        return grew


class ProgramView:
    """What the solver asks of the program: implemented by analysis.program.Program."""

    def module_scope(self, path: str) -> ir.Scope | None: ...
    def resolve_import(self, dotted: str, from_path: str, level: int): ...  # Module | Lib | None
    def submodule(self, module: Module, name: str): ...  # Module | None
    def external_attribute(self, module: Module, name: str) -> frozenset: ...
    def external_class_info(self, cls: Class): ...
    def external_bases(self, cls: Class) -> list[frozenset]: ...
    def class_binding(self, mro: tuple, name: str) -> tuple: ...  # (owner | None, a library class's values)
    def external_classmethod_returns_cls(self, function: Function) -> bool: ...
    def class_scope(self, cls: Class) -> ir.Scope | None: ...
    def is_entry(self, scope: ir.Scope) -> bool: ...
    def segment(self, path: str, node: ast.AST) -> str: ...


def class_key(scope: ir.Scope) -> Class:
    return Class(scope.path, scope.qualname, scope.ordinal)


class _Call:
    __slots__ = ("node", "func_expr", "args", "kwargs", "frame", "depth", "receivers", "arg_exprs")

    def __init__(self, node, func_expr, args, kwargs, frame, depth: int = 0) -> None:
        self.node = node
        self.func_expr = func_expr
        self.receivers = None  # for `obj.m(...)` as written: the values of `obj`
        self.arg_exprs = ()  # the positional arguments as written (IR), when the call is written
        self.args = args  # [(starred, values)]
        self.kwargs = kwargs  # [(name | None, values)]
        self.frame = frame
        self.depth = depth  # calls made to carry this one out (partials, launch)

    def positional(self, index: int) -> frozenset:
        if index < len(self.args):
            starred, values = self.args[index]
            if not starred:
                return values
            return JUST_UNKNOWN
        if any(starred for starred, _ in self.args[:index]):
            return JUST_UNKNOWN
        return NOTHING

    def keyword(self, name: str) -> frozenset:
        found = NOTHING
        for key, values in self.kwargs:
            if key == name:
                found = found | values
        return found


_EXPECTED_KINDS = frozenset(("wcall", "mark", "materialize", "meta_build", "backward", "setup_again",
                             "setup_dataloaders", "no_backward_sync", "setup_optimizers", "fabric_use", "launch"))


def _may_be_none(value) -> bool:
    return value == _NONE_CONST or isinstance(value, Unknown)


def _last_name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _keyword_names(site) -> list[str]:
    if isinstance(site, ast.Call):
        return [k.arg for k in site.keywords if k.arg]
    return []


def _chain(expr: tuple) -> tuple[str, tuple[str, ...]] | None:
    """`cfg.fabric.devices` as (variable, attributes): ("cfg", ("fabric", "devices")); None otherwise."""
    attributes: list[str] = []
    while expr[0] == "attr":
        attributes.append(expr[2])
        expr = expr[1]
    if expr[0] != "name":
        return None
    return expr[1], tuple(reversed(attributes))


def _dict_site(site) -> bool:
    """Is the container made at `site` a dict (iterating it yields its keys)?"""
    if isinstance(site, (ast.Dict, ast.DictComp)):
        return True
    if isinstance(site, ast.Call):
        return _last_name(site) in ("dict", "asdict", "vars")
    return isinstance(site, tuple) and "**kwargs" in site


def _site_key(site, variant):
    """Tables of a Fabric call (its arguments, `init_module`'s `empty_init`, what `setup` got) are kept
    per case (a split's flag, a loop's key)."""
    return site if not variant else (site, variant)


def _case_value(variant, node):
    for each, value in variant or ():
        if each is node:
            return value
    return None


def compatible(first, second) -> bool:
    """Can two sets of cases hold on one run? Two values of one flag or one loop's key exclude each other."""
    if not first or not second:
        return True
    for node, value in first:
        for other, other_value in second:
            if node is other and value != other_value:
                return False
    return True


def _int_of(value) -> int | None:
    if isinstance(value, Const) and value.kind == "int":
        return value.value
    return None


def _sort_key(value) -> tuple:
    """A total order on values that is the same in every process (no hashes, no ids)."""
    return (value[-1] if isinstance(value, tuple) and value and isinstance(value[-1], str) else "", _describe(value))


def _describe(value) -> str:
    """A text for a value that is the same in every process: no object ids, no hashes."""
    if isinstance(value, ast.AST):
        return f"<{type(value).__name__}@{getattr(value, 'lineno', 0)}:{getattr(value, 'col_offset', 0)}>"
    if isinstance(value, ir.Scope):
        return f"{value.path}:{value.qualname}:{value.line}"
    if isinstance(value, Const):
        return repr(value.value)
    if isinstance(value, ConfigNode) and value.document[0] == "text":  # its text is long: where it is written
        return repr((value.document[0], value.document[1]) + tuple(value.document[3:]) + (value.keys, value.known))
    if isinstance(value, (Class, Module, Lib, Choice, ConfigNode)):
        return repr(tuple(value))
    if isinstance(value, Function):
        scope = value.scope
        if isinstance(scope, tuple):  # external: (path, qualname, node)
            return f"{scope[0]}:{scope[1]}"
        return f"{scope.path}:{scope.qualname}:{scope.line}"
    if isinstance(value, Wrapped):
        return f"{value.path}:{_describe(value.site)}{_describe_variant(value.variant)}"
    if isinstance(value, (Container, Partial)):
        return f"{value.path}:{_describe(value.site)}"
    if isinstance(value, FabricValue):
        described = f"{value.path}:{_describe(value.site) if value.site is not None else value.origin}:{_describe(value.cls) if value.cls else ''}"
        return described + _describe_variant(value.variant)
    if isinstance(value, Instance):
        meta = value.meta
        where = f"{meta[0]}:{meta[3]}:{_describe(meta[2])}" if meta else ""
        if meta:
            where += _describe_variant(meta[6])
        declared = value.declared
        annotated = f":{declared[0]}:{_describe(declared[1])}:{declared[2]}" if declared else ""
        frozen = f":frozen@{_describe(value.frozen)}" if value.frozen is not None else ""
        return f"{_describe(value.cls)}:{where}:{value.compiled}{annotated}{frozen}"
    if isinstance(value, Bound):
        return f"{_describe(value.function)}@{_describe(value.receiver)}"
    if isinstance(value, WrappedMethod):
        return f"{_describe(value.wrapped)}.{value.name}"
    if isinstance(value, Output):
        return f"output:{_describe(value.wrapped)}"
    if isinstance(value, Tuple):
        return "(" + ",".join("|".join(sorted(_describe(v) for v in element)) for element in value.elements) + ")"
    if isinstance(value, Super):
        return f"super({_describe(value.cls)},{_describe(value.receiver)})"
    if isinstance(value, Special):
        receiver = _describe(value.receiver) if value.receiver is not None else ""
        return f"{value.kind}:{receiver}:{_describe(value.extra)}"[:300]
    if isinstance(value, frozenset):
        return "{" + ",".join(sorted(_describe(v) for v in value)) + "}"
    if isinstance(value, (tuple, list)):
        return "(" + ",".join(_describe(v) for v in value) + ")"
    if value is None or isinstance(value, (str, int, float, bool)):
        return repr(value)
    return type(value).__name__


def _describe_variant(variant) -> str:
    return "".join(f":{_describe(node)}={_describe(value)}" for node, value in variant or ())


sort_key = _sort_key
describe = _describe
site_key = _site_key
