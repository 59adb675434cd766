"""Whole-program value flow: where wrapped models, Fabric objects, model classes and meta-device
models go, across functions, classes and modules.

The program's scopes (`ir.Scope`: module bodies, class bodies, functions, methods, lambdas) are
interpreted over abstract values (`values.py`). Inside a scope the interpretation follows the
statements in order (so a call before `mark_forward_method` is told from one after it, and
`model = model.module` ends the wrapping); across scopes values meet in tables, each entry a set
that only grows:

    ("param", scope, name)       what callers pass (positional, keyword, defaults, *args/**kwargs)
    ("return", scope)            what a function returns
    ("global", path, name)       a module's names as its body leaves them (and `global` writes)
    ("closure", scope, name)     every value a local of `scope` takes, for the functions nested in it
    ("field", class, name)       `obj.name = v` on instances of `class` (`self.x` in any method)
    ("classattr", class, name)   names bound in a class body (methods, aliases, constants)
    ("bases", class)             a class statement's bases
    ("subclasses", class)        the program's classes whose MRO holds it (derived from "bases")
    ("element", site, key)       items of a list/dict display by literal key; ("elements", site): all
    ("setup_module", site)       what `fabric.setup(...)` at `site` was given; ("setup_fabric", site): by which Fabric
    ("default"|"annotation", scope, name)

A scope is interpreted again whenever an entry it read grows (a worklist, ordered by the scopes'
positions in the program). Sets only grow and the universe of values is finite, so this reaches
the least fixed point, which does not depend on the order of the work: the same program gives the
same tables on every run and under any load. The work is bounded by counting (interpretations per
program, values per set, nesting of tuples), never by time; a bound that is hit is reported by
`Solver.bound_hit` and the engine then reports nothing from flows for that program.

What the rules need is collected as events of each scope's last interpretation (calls of methods
on wrapped models, `mark_forward_method` calls, materializations), plus the tables.
"""

from __future__ import annotations

import ast
import heapq
import json
from dataclasses import dataclass
from typing import Callable, Iterable

from fabric_lsp.analysis import ir
from fabric_lsp.analysis.imports import FABRIC_CLASS_NAMES, normalize_torch_name
from fabric_lsp.analysis.libraries import models as library_models
from fabric_lsp.analysis.torch_facts import library_module_facts, nn_module_attributes, wrapper_attributes
from fabric_lsp.analysis.torch_tables import tables
from fabric_lsp.analysis.values import (
    JUST_UNKNOWN,
    LAUNCH_MACHINE,
    LAUNCH_NONE,
    LAUNCH_SCRIPT,
    LAUNCH_SPAWN,
    Unknown,
    NOTHING,
    SINGLE,
    UNKNOWN,
    UNKNOWN_STRATEGY,
    WRAPPING,
    Bound,
    Class,
    Const,
    Container,
    FabricValue,
    Output,
    Function,
    Instance,
    Lib,
    Marked,
    Module,
    Partial,
    Special,
    Strategy,
    StrategyObject,
    Super,
    Tuple,
    Wrapped,
    WrappedMethod,
    const,
)

MAX_SET = 64  # values in one set; past it, the set keeps the first ones (in a fixed order) and UNKNOWN
MAX_CONSTANTS = 8
MAX_MRO = 40
STEPS_PER_SCOPE = 60  # interpretations allowed per scope of the program, on average
MIN_STEPS = 1000
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
_RETURNS_SELF = frozenset(
    ("eval", "train", "to", "cuda", "cpu", "float", "half", "double", "bfloat16", "requires_grad_", "apply",
     "to_empty", "share_memory", "type", "xpu")
)
_UNWRAPPING_ATTRIBUTES = frozenset(("module", "_original_module", "_forward_module"))
_REINIT_METHODS = frozenset(("reset_parameters", "apply", "load_state_dict"))
_REINIT_OR_LOAD = _REINIT_METHODS | {"load", "load_raw"}
_MATERIALIZING = ("fsdp", "model_parallel", "FSDPStrategy", "ModelParallelStrategy")
# What a tensor computed from a wrapped model's output gives without the autograd graph (the backward
# hook cannot fire through it): these attributes end an Output.
_OUTPUT_DETACHING = frozenset((
    "detach", "detach_", "item", "tolist", "numpy", "data", "shape", "size", "dim", "numel", "dtype", "device",
    "argmax", "argmin", "requires_grad", "grad", "grad_fn", "is_leaf", "ndim",
))
# torch functions whose result holds no gradient of their tensor arguments.
_NO_GRAD_FUNCTIONS = frozenset(("argmax", "argmin", "argsort", "isnan", "isinf", "isfinite", "equal", "eq", "ne",
                                "numel", "is_tensor", "no_grad", "inference_mode", "zeros_like", "ones_like",
                                "empty_like", "randn_like", "rand_like", "full_like"))
# Precision values (as Fabric's `precision=` spells them, aliases included) whose plugin overrides
# backward (MixedPrecision) and those whose plugin does not (Precision, HalfPrecision, DoublePrecision,
# TransformerEnginePrecision): lightning/fabric/connector.py _check_and_init_precision.
_HOOKING_PRECISIONS = frozenset(("16-mixed", "bf16-mixed", "16", "bf16", 16))
_PLAIN_PRECISIONS = frozenset(("32-true", "bf16-true", "16-true", "64-true", "32", "64", 32, 64,
                               "transformer-engine", "transformer-engine-float16"))
_FSDP_CLASSES = frozenset((
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
))
_BUILTINS = frozenset((
    "super", "getattr", "setattr", "hasattr", "dict", "list", "tuple", "set", "iter", "next", "enumerate", "zip",
    "reversed", "sorted", "isinstance", "len", "print", "range", "map", "filter", "type", "vars", "callable",
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


class _Frame:
    __slots__ = ("scope", "env", "marked", "meta", "default_meta", "cells", "statement", "self_values", "expecting",
                 "variant", "decider", "written", "fresh", "in_loop", "constructed")

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


_READ, _WRITE, _ASK = "read", "write", "ask"


def _merged(old: frozenset | None, values: frozenset, saturated: bool, without_constants: bool):
    """(the entry after writing `values`, or None when it does not change; whether the entry is
    now saturated; whether it now keeps no constants). A pure function, so that a replay can
    predict a write exactly (Solver._still_valid)."""
    # A set that outgrew a bound keeps the bound's form for good: filtering what arrives, rather
    # than the union, is what keeps it from changing back and forth.
    became_saturated = became_without = False
    if old is not None and values <= old:
        return None, False, False  # nothing new (the common case, on every re-run)
    if saturated:
        values = frozenset(v for v in values if isinstance(v, _FOLLOWED))
    elif without_constants:
        values = frozenset(v for v in values if not isinstance(v, Const))
    new = values if old is None else old | values
    if old is not None and len(new) == len(old):
        return None, False, False
    if (not without_constants and len(new) > MAX_CONSTANTS and any(type(v) is Const for v in values)
            and sum(type(v) is Const for v in new) > MAX_CONSTANTS):
        became_without = True
        new = frozenset(v for v in new if not isinstance(v, Const)) | JUST_UNKNOWN
    if len(new) > MAX_SET and not saturated:
        became_saturated = True
        new = _saturated(new)
    if old is not None and new == old:
        return None, became_saturated, became_without
    return new, became_saturated, became_without


# Bounds on one set. More than MAX_CONSTANTS constants: the constants become UNKNOWN (the rules read
# constants only where a handful of literals is chosen between: strategies, registry keys, method
# names). More than MAX_SET values (a decorator that receives every function of a module, a registry
# of hundreds of classes): only what the rules follow is kept, with UNKNOWN. Either way the set keeps
# that form from then on, so it never changes back and forth and the fixed point is still reached.
_FOLLOWED = (Wrapped, WrappedMethod, FabricValue, Marked)


def _saturated(values: frozenset) -> frozenset:
    return frozenset(v for v in values if isinstance(v, _FOLLOWED)) | JUST_UNKNOWN


def class_key(scope: ir.Scope) -> Class:
    return Class(scope.path, scope.qualname, scope.ordinal)


class Solver:
    def __init__(self, program: ProgramView, scopes: list[ir.Scope], previous: dict | None = None,
                 record: bool = True) -> None:
        self.program = program
        self.scopes = scopes
        # Record each run's reads, writes and questions for the next solve to replay (the server);
        # a solve nobody replays (`check`) skips the bookkeeping and its memory.
        self.record = record
        # Runs of an earlier solve of this program, by scope: replayed when what they read is unchanged.
        self.previous: dict = previous or {}
        self.logs: dict = {}  # this solve's runs, by scope (for the next solve)
        self._log: list | None = None
        self._run_counts: dict = {}
        self.replayed = 0
        self.order = {id(scope): index for index, scope in enumerate(scopes)}
        self.tables: dict[tuple, frozenset] = {}
        self.readers: dict[tuple, set[int]] = {}
        self.events: dict[int, list[Event]] = {}
        self.current: ir.Scope | None = None
        self._queue: list[int] = []  # this sweep's scopes, by position
        self._next: list[int] = []  # the next sweep's
        self._position = -1  # the scope running
        self._queued: set[int] = set()
        self.steps = 0
        self.max_steps = STEPS_PER_SCOPE * max(1, len(scopes)) + MIN_STEPS
        self.bound_hit: str | None = None
        self._setup_sites: set = set()
        self.classes: dict[Class, ir.Scope] = {}
        for scope in scopes:
            if scope.kind == ir.CLASS:
                self.classes[class_key(scope)] = scope
        self._class_order = {key: index for index, key in enumerate(self.classes)}
        self._external_mros: dict[Class, tuple] = {}
        self._saturated: set[tuple] = set()
        self._sort_keys: dict = {}
        self._without_constants: set[tuple] = set()
        self._events: list[Event] = []
        self._made: set = set()  # this run's marks and setups, its callees' included (the "made" table)
        self._strategies: dict[int, Strategy] = {}
        self._split_files: dict[str, bool] = {}
        self._unroll_bodies: dict[int, tuple] = {}  # id(loop body IR) -> (worth unrolling, the body, kept alive)

    # -- tables --------------------------------------------------------------------------------
    def read(self, key: tuple) -> frozenset:
        current = self.current
        if current is not None:
            readers = self.readers.get(key)
            if readers is None:
                self.readers[key] = {self.order[id(current)]}
            else:
                readers.add(self.order[id(current)])
        found = self.tables.get(key, NOTHING)
        if self._log is not None:
            self._log.append((_READ, key, found))
        return found

    def _ask(self, question: str, *args):
        """A question to the program (what a module binds, where an import leads, ...): recorded in
        the run's log with its answer, so that a replay can check the answer is still the same."""
        answer = getattr(self.program, question)(*args)
        if self._log is not None:
            self._log.append((_ASK, question, args, answer))
        return answer

    def peek(self, key: tuple) -> frozenset:
        """A table entry, without depending on it (after the solve)."""
        return self.tables.get(key, NOTHING)

    def write(self, key: tuple, values: frozenset) -> None:
        if not values:
            return
        if self._log is not None:
            self._log.append((_WRITE, key, values))
        old = self.tables.get(key)
        if old is not None and values <= old:
            return  # nothing new: the common case on every re-run (as _merged would say)
        new, saturated, without_constants = _merged(old, values, key in self._saturated, key in self._without_constants)
        if saturated:
            self._saturated.add(key)
        if without_constants:
            self._without_constants.add(key)
        if new is None:
            return
        self.tables[key] = new
        for reader in self.readers.get(key, ()):
            self._enqueue(reader)
        if key[0] == "bases":
            self._hierarchy_changed(key[1])

    def ordered(self, values: Iterable) -> list:
        """Values in an order that is the same in every process (sets iterate by hash)."""
        keys = self._sort_keys
        found = []
        for value in values:
            key = keys.get(value)
            if key is None:
                key = keys[value] = _sort_key(value)
            found.append((key, value))
        found.sort(key=lambda item: item[0])
        return [value for _, value in found]

    def _enqueue(self, index: int) -> None:
        if index not in self._queued:
            self._queued.add(index)
            # In sweeps over the program's order: a scope before the one running waits for the next
            # sweep, so that it runs once after all the writers of this sweep, not once per writer.
            heapq.heappush(self._next if index <= self._position else self._queue, index)

    # -- the fixed point -------------------------------------------------------------------------
    def solve(self) -> None:
        for index in range(len(self.scopes)):
            self._enqueue(index)
        while self._queue or self._next:
            if not self._queue:
                self._queue, self._next = self._next, self._queue
            index = heapq.heappop(self._queue)
            self._position = index
            self._queued.discard(index)
            self.steps += 1
            if self.steps > self.max_steps:
                self.bound_hit = (
                    f"the value-flow analysis stopped after {self.max_steps} steps (counted, not timed); "
                    "findings that depend on values passed between functions are left out"
                )
                break
            self._run(self.scopes[index])
            if self.bound_hit:
                break
        self.current = None

    def _run(self, scope: ir.Scope) -> None:
        self.current = scope
        count = self._run_counts.get(scope, 0)
        self._run_counts[scope] = count + 1
        if self._replay(scope, count):
            return
        self._log = [] if self.record else None
        self._events = []
        try:
            self._interpret(scope)
        finally:
            log, self._log = self._log, None
        if self.record:
            self.logs.setdefault(scope, []).append((log, self._events))

    def _replay(self, scope: ir.Scope, count: int) -> bool:
        """Apply a recorded run of this scope instead of interpreting it, when every read it made
        would see the same value now (the run's own writes included, in order) and every question it
        asked gets the same answer: the interpretation is a function of exactly those, so the result
        is the one a new interpretation would give, at a fraction of the cost."""
        runs = self.previous.get(scope)
        if not runs:
            return False
        order = [count] if count < len(runs) else []
        order += [index for index in range(len(runs) - 1, -1, -1) if index != count]
        for index in order:
            log, events = runs[index]
            if self._still_valid(log):
                self._log = None
                for op in log:
                    if op[0] is _READ:
                        self.read(op[1])
                    elif op[0] is _WRITE:
                        self.write(op[1], op[2])
                self.events[self.order[id(scope)]] = list(events)
                self.logs.setdefault(scope, []).append((log, events))
                self.replayed += 1
                return True
        return False

    def _still_valid(self, log: list) -> bool:
        tables, saturated, without_constants = self.tables, self._saturated, self._without_constants
        overlay: dict = {}
        flags: dict = {}
        for op in log:
            kind = op[0]
            if kind is _READ:
                key = op[1]
                current = overlay[key] if key in overlay else tables.get(key, NOTHING)
                if current is not op[2] and current != op[2]:
                    return False
            elif kind is _WRITE:
                key, values = op[1], op[2]
                old = overlay[key] if key in overlay else tables.get(key)
                was_saturated, was_without = flags.get(key, (key in saturated, key in without_constants))
                new, now_saturated, now_without = _merged(old, values, was_saturated, was_without)
                if now_saturated or now_without:
                    flags[key] = (was_saturated or now_saturated, was_without or now_without)
                if new is not None:
                    overlay[key] = new
            else:
                answer = getattr(self.program, op[1])(*op[2])
                if answer != op[3]:
                    return False
        return True

    def _interpret(self, scope: ir.Scope) -> None:
        self._made = set()
        decider = _decider(scope) if scope.kind in (ir.FUNCTION, ir.MODULE) and self._may_split(scope.path) else None
        if decider is not None and self._static(decider.expression, _Frame(scope)) is not _NO:
            decider = None  # decided by constants of the program: nothing to split
        for outcome in ((True, False) if decider is not None else (None,)):
            frame = _Frame(scope)
            if decider is not None:
                frame.decider, frame.variant = decider, ((decider.node, outcome),)
            self._interpret_case(scope, frame)
        if self._made and scope.kind in (ir.FUNCTION, ir.LAMBDA):
            # What a call of it may have marked or wrapped when it returns (in any order inside it).
            self.write(("made", scope), frozenset(self._made))
        self.events[self.order[id(scope)]] = self._events

    def _may_unroll(self, body) -> bool:
        """Is a loop over a literal display worth following key by key: does its body (IR) name
        `mark_forward_method`, `getattr`/`setattr` or a Fabric setup? A table of 200 configurations
        built in loops is not: followed once per element it cost a third more of the whole solve."""
        known = self._unroll_bodies.get(id(body))
        if known is None:
            known = self._unroll_bodies[id(body)] = (_names_unroll_reason(body), body)
        return known[0]

    def _may_split(self, path: str) -> bool:
        """Does the file name anything a split could keep apart (a Fabric, a strategy, the meta
        device)? Files that do not are never split (the text is fixed while the program is)."""
        known = self._split_files.get(path)
        if known is None:
            source = getattr(self.program, "sources", {}).get(path)
            text = source.text if source is not None else ""
            known = self._split_files[path] = any(token in text for token in _SPLIT_TOKENS)
        return known

    def _interpret_case(self, scope: ir.Scope, frame: _Frame) -> None:
        if scope.kind in (ir.FUNCTION, ir.LAMBDA):
            self._bind_parameters(frame)
        self._exec(scope.body, frame)
        if scope.kind in (ir.FUNCTION, ir.LAMBDA) and scope.kind == ir.FUNCTION:
            self.write(("return", scope), _NONE)  # falling off the end (kept simple: always possible)
        if scope.kind == ir.MODULE:
            for name, values in frame.env.items():
                self.write(("global", scope.path, name), values)
        elif scope.kind == ir.CLASS:
            key = class_key(scope)
            for name, values in frame.env.items():
                self.write(("classattr", key, name), values)
        for name, values in frame.cells.items():
            self.write(("closure", scope, name), values)

    def all_events(self) -> list[Event]:
        found: list[Event] = []
        for index in sorted(self.events):
            found.extend(self.events[index])
        return found

    # -- parameters ------------------------------------------------------------------------------
    def _bind_parameters(self, frame: _Frame) -> None:
        scope = frame.scope
        entry = self._ask("is_entry", scope) or bool(self.read(("escaped", scope)))
        method = scope.class_scope is not None and scope.kind == ir.FUNCTION
        kind = scope.method_kind if method else None
        for index, param in enumerate(scope.params):
            values = self.read(("param", scope, param.name))
            if index == 0 and method and kind in ("method", "property"):
                selves = self._self_values(scope.class_scope)
                values = values | selves
                frame.self_values = values
            elif index == 0 and method and kind == "classmethod":
                values = values | frozenset(self._subclasses(class_key(scope.class_scope)))
                frame.self_values = values
            else:
                if entry or UNKNOWN in values:
                    values = values | self._annotation_values(scope, param.name, param.annotation_node,
                                                              f"the parameter `{param.name}`")
                if entry:
                    values = values | self.read(("default", scope, param.name)) | JUST_UNKNOWN
            if param.kind == "varargs" and not values:
                values = JUST_UNKNOWN
            frame.env[param.name] = values
            if param.name in scope.cellvars:
                frame.cells[param.name] = frame.cells.get(param.name, NOTHING) | values

    def _annotation_values(self, scope: ir.Scope, name: str, node, what: str) -> frozenset:
        """What the annotation of a parameter (or of the return, name "return") of `scope` declares."""
        return self._declared(self.read(("annotation", scope, name)), scope.path, node, what,
                              f"a Fabric passed in as `{name}`" if name != "return" else f"a Fabric returned by `{scope.name}`")

    def _declared(self, annotated: frozenset, path: str, node, what: str, fabric_origin: str | None = None) -> frozenset:
        """Instances of the classes an annotation names, marked as known only from it (Instance.declared);
        Fabric objects of unknown origin for a Fabric class."""
        found = set()
        for value in annotated:
            if isinstance(value, Lib) and value.qualified in FABRIC_CLASS_NAMES:
                found.add(FabricValue(None, None, None, fabric_origin or f"a Fabric declared as {what}"))
            elif isinstance(value, Class):
                if self.is_fabric_class(value):
                    found.add(FabricValue(None, None, value, fabric_origin or f"a Fabric declared as {what}"))
                else:
                    found.add(Instance(value, declared=(path, node, what) if node is not None else None))
            elif isinstance(value, Lib) and normalize_torch_name(value.qualified).startswith(("torch.nn.", "torchmetrics.")):
                found.add(Instance(Lib(normalize_torch_name(value.qualified)), declared=(path, node, what)))
            elif isinstance(value, Lib) and library_models.is_library_name(value.qualified) \
                    and library_models.is_class(value.qualified):
                found.add(Instance(value, declared=(path, node, what)))
        return frozenset(found)

    def _e_annotated(self, expr, frame) -> frozenset:
        """`x: T = value`: where the value is unknown, an instance of T (Instance.declared says so)."""
        _, value_expr, annotation, node, target = expr
        values = self.ev(value_expr, frame)
        if UNKNOWN not in values:
            return values
        declared = self._declared(self.ev(annotation, frame), frame.scope.path, node, f"`{target}`")
        return (values - JUST_UNKNOWN) | declared if declared else values

    def _s_declare(self, statement, frame: _Frame) -> None:
        """`actor: PPOActor` in a class body: the declared type of the attribute on its instances."""
        if frame.scope.kind != ir.CLASS:
            return
        _, name, annotation, node = statement
        key = class_key(frame.scope)
        self.write(("declared", key, name), self._declared(self.ev(annotation, frame), frame.scope.path, node,
                                                           f"`{key.qualname}.{name}`"))

    def _self_values(self, class_scope: ir.Scope) -> frozenset:
        """`self` in a method of a class: instances of it and of its subclasses (Fabric subclasses:
        the Fabric objects made from it, which callers pass as receivers)."""
        key = class_key(class_scope)
        if self.is_fabric_class(key):
            if self._ask("is_entry", class_scope):
                return frozenset({FabricValue(None, None, key, f"a `{key.qualname}` made elsewhere")})
            return NOTHING
        return frozenset(Instance(sub) for sub in self._subclasses(key))

    def _subclasses(self, key: Class) -> list[Class]:
        """The program's classes whose MRO holds `key` (itself first, then in program order)."""
        members = self.read(("subclasses", key))
        return [key] + sorted((c for c in members if c != key), key=self._class_order.__getitem__)

    def _hierarchy_changed(self, changed: Class) -> None:
        """Keep ("mro", X) and ("subclasses", A) in step with a class statement's new bases: the
        MROs of the class and of its subclasses are computed again here, once per change, and only
        the scopes that read an entry that changed run again. Computed by each reader instead, a
        method's `self` (instances of every subclass) read every class's bases, so each of a test
        suite's hundreds of local class statements re-ran every method of the program, and each
        attribute lookup re-read the bases along its MRO. Not logged: a replayed class statement
        derives them again from its bases write."""
        current, log = self.current, self._log
        self.current = self._log = None
        try:
            affected = [changed, *sorted(self.tables.get(("subclasses", changed), ()), key=self._class_order.__getitem__)]
            for cls in dict.fromkeys(affected):
                mro = self._compute_mro(cls)
                key = ("mro", cls)
                if self.tables.get(key) != mro:
                    self.tables[key] = mro  # a tuple (the order matters), never merged
                    for reader in self.readers.get(key, ()):
                        self._enqueue(reader)
                for ancestor in mro:
                    if not isinstance(ancestor, Class):
                        continue
                    key = ("subclasses", ancestor)
                    old = self.tables.get(key, NOTHING)
                    if cls not in old:
                        self.tables[key] = old | {cls}
                        for reader in self.readers.get(key, ()):
                            self._enqueue(reader)
        finally:
            self.current, self._log = current, log

    # -- classes -------------------------------------------------------------------------------------
    def mro(self, cls) -> tuple:
        """Depth-first, left to right, without repeats (C3 only differs on diamonds). A program
        class's MRO is one table entry (see _hierarchy_changed); a library class's is static."""
        if not isinstance(cls, Class):
            return (cls,)
        if cls.external:
            known = self._external_mros.get(cls)
            if known is None:
                current, log = self.current, self._log
                self.current = self._log = None
                try:
                    known = self._external_mros[cls] = self._compute_mro(cls)
                finally:
                    self.current, self._log = current, log
            return known
        return self.read(("mro", cls)) or (cls,)

    def _compute_mro(self, cls: Class) -> tuple:
        order: list = []
        seen: set = set()
        pending = [cls]
        while pending and len(order) < MAX_MRO:
            item = pending.pop(0)
            if item in seen:
                continue
            seen.add(item)
            order.append(item)
            if isinstance(item, Class):
                bases = self._bases(item)
                pending[0:0] = [b for b in bases if b not in seen]
        return tuple(order)

    def direct_bases(self, cls: Class) -> list:
        """The bases of a class statement as classes (after the solve)."""
        current, self.current = self.current, None
        try:
            return self._bases(cls)
        finally:
            self.current = current

    def _bases(self, cls: Class) -> list:
        if cls.external:
            found = []
            for values in self._ask("external_bases", cls):
                found.extend(sorted((v for v in values if isinstance(v, (Class, Lib))), key=_sort_key))
            return found
        entry = self.read(("bases", cls))
        found = []
        for value in sorted(entry, key=_sort_key):
            if isinstance(value, Tuple):
                for element in value.elements:
                    found.extend(sorted((v for v in element if isinstance(v, (Class, Lib))), key=_sort_key))
        return found

    def is_fabric_class(self, cls) -> bool:
        return any(isinstance(ref, Lib) and ref.qualified in FABRIC_CLASS_NAMES for ref in self.mro(cls))

    def lookup_class_attribute(self, cls: Class, name: str) -> tuple[Class | Lib | None, frozenset]:
        """(the class in the MRO that binds `name` in its body, the values bound); (None, {}) if none.
        Which class binds the name is read from the class statements, so it never changes as values grow."""
        owner, values = self._ask("class_binding", self.mro(cls), name)
        if isinstance(owner, Class) and not owner.external:
            return owner, self.read(("classattr", owner, name))
        return owner, values

    def _mro_complete(self, cls: Class) -> bool:
        """Are all bases along the MRO known (written by their class statements, each resolved)?"""
        for ref in self.mro(cls):
            if isinstance(ref, Class) and not ref.external:
                entry = self.read(("bases", ref))
                if self._ask("class_has_bases", ref):
                    if not entry or any(not element for value in entry if isinstance(value, Tuple) for element in value.elements):
                        return False
        return True

    # -- statements ------------------------------------------------------------------------------------
    def _exec(self, statements: list, frame: _Frame) -> None:
        for statement in statements:
            handler = _STATEMENTS.get(statement[0])
            if handler is not None:
                handler(self, statement, frame)

    def _s_assign(self, statement, frame: _Frame) -> None:
        frame.statement = statement[3]
        frame.constructed = None
        value = statement[2]
        values = self.ev(value, frame)
        # `cfg = TrainConfig()` here, outside loops: an object only this run holds (until it is passed on)
        made_here = value[0] == "call" and frame.constructed is value[4] and not frame.in_loop
        for target in statement[1]:
            self.assign(target, values, frame)
            if target[0] == "name" and made_here:
                frame.fresh = frame.fresh | {("var", target[1])}

    def _s_aug(self, statement, frame: _Frame) -> None:
        values = self.ev(statement[2], frame)
        target = statement[1]
        if target[0] == "name":
            current = self._lookup(target[1], frame)
            self.assign(target, current | values, frame)

    def _s_expr(self, statement, frame: _Frame) -> None:
        self.ev(statement[1], frame)

    def _s_return(self, statement, frame: _Frame) -> None:
        frame.statement = statement[2]
        values = self.ev(statement[1], frame) if statement[1] is not None else frozenset({const(None)})
        scope = frame.scope
        if UNKNOWN in values and scope.returns is not None:
            declared = self._annotation_values(scope, "return", scope.returns_node, f"what `{scope.name}` returns")
            if declared:
                values = (values - JUST_UNKNOWN) | declared
        if frame.scope.kind in (ir.FUNCTION, ir.LAMBDA):
            self.write(("return", frame.scope), values)

    def _s_if(self, statement, frame: _Frame) -> None:
        taken = self._decide(statement[1], statement[4], frame)
        if taken is not None:  # a constant of the program, or the case this run follows
            self._exec(statement[2] if taken else statement[3], frame)
            return
        other = frame.fork()
        self._narrow(statement[1], frame, True)
        self._narrow(statement[1], other, False)
        self._exec(statement[2], frame)
        self._exec(statement[3], other)
        frame.merge(other)

    def _narrow(self, test: tuple, frame: _Frame, holds: bool) -> None:
        """What a branch's condition says about a local name: `isinstance(x, C)` (C classes of the
        project), `x is None`, `x is not None`, through `not` and `and`/`or`. Values the condition
        rules out do not enter the branch (a helper `if isinstance(m, Wrapper): return m` returns
        no bound method). Only the certain is dropped: an unknown value or class keeps everything."""
        kind = test[0]
        if kind == "not":
            self._narrow(test[1], frame, not holds)
        elif kind == "boolop":
            if (test[1] == "and") == holds:  # `a and b` holds, `a or b` fails: each part does
                for part in test[2]:
                    self._narrow(part, frame, holds)
        elif kind == "compare" and len(test[2]) == 1 and test[2][0][1] == ("const", None):
            op = test[2][0][0]
            if op in ("Is", "IsNot"):
                self._narrow_local(test[1], frame, lambda v: _may_be_none(v) if (op == "Is") == holds
                                   else v != _NONE_CONST)
        elif kind == "call" and holds and test[1] == ("name", "isinstance") and len(test[2]) == 2 and not test[3]:
            classes = self._isinstance_classes(self.ev(test[2][1], frame))
            if classes:
                self._narrow_local(test[2][0], frame, lambda v: self._may_be_instance(v, classes))

    def _narrow_local(self, target: tuple, frame: _Frame, keep: Callable[[object], bool]) -> None:
        scope = frame.scope
        if target[0] != "name" or scope.kind not in (ir.FUNCTION, ir.LAMBDA):
            return
        name = target[1]
        values = frame.env.get(name)
        if values is None or name in scope.declared_global or name in scope.declared_nonlocal:
            return
        kept = frozenset(v for v in values if keep(v))
        if kept != values:
            frame.env[name] = kept

    def _isinstance_classes(self, values: frozenset) -> frozenset | None:
        """The project classes `isinstance`'s second argument names (a class or a tuple of them);
        None when any of it is something else (a library class, an unknown)."""
        classes = set()
        for value in values:
            parts = [v for element in value.elements for v in element] if isinstance(value, Tuple) else [value]
            for part in parts:
                if not isinstance(part, Class) or part.external:
                    return None
                classes.add(part)
        return frozenset(classes) or None

    def _may_be_instance(self, value, classes: frozenset) -> bool:
        if isinstance(value, Instance):
            cls = value.cls
            if not isinstance(cls, Class) or cls.external or not self._mro_complete(cls):
                return True
            return any(base in classes for base in self.mro(cls))
        # Never an instance of a project class: constants, functions, bound methods, classes,
        # modules, containers. Anything else (unknown, a wrapped model, a library value) is kept.
        return not isinstance(value, (Const, Function, Bound, WrappedMethod, Class, Module, Container, Tuple))

    def _s_match(self, statement, frame: _Frame) -> None:
        self.ev(statement[1], frame)
        start = frame.fork()
        for body in statement[2]:
            branch = start.fork()
            self._exec(body, branch)
            frame.merge(branch)

    def _loop(self, frame: _Frame, body_once: Callable[[_Frame], None], orelse: list) -> None:
        state = frame
        for _ in range(MAX_LOOP_PASSES):
            branch = state.fork()
            branch.in_loop = True
            body_once(branch)
            if not state.merge(branch):
                break
        self._exec(orelse, state)

    def _s_for(self, statement, frame: _Frame) -> None:
        iterable = self.ev(statement[2], frame)
        target, body = statement[1], statement[3]
        iterations = self._literal_iterations(iterable) if self._may_unroll(body) else None
        if iterations is not None:  # `for name, model in {"actor": a, "critic": c}.items():` one key at a time
            outer, in_loop = frame.variant, frame.in_loop
            frame.in_loop = True
            for case, values in iterations:
                frame.variant = (outer or ()) + (case,)
                self.assign(target, values, frame)
                self._exec(body, frame)
            frame.variant, frame.in_loop = outer, in_loop
            self._exec(statement[4], frame)
            return
        iterated = self.iter_values(iterable)

        def once(branch: _Frame) -> None:
            self.assign(target, iterated, branch)
            self._exec(body, branch)

        self._loop(frame, once, statement[4])

    def _s_while(self, statement, frame: _Frame) -> None:
        test, body = statement[1], statement[2]

        def once(branch: _Frame) -> None:
            self.ev(test, branch)
            self._exec(body, branch)

        self.ev(test, frame)
        self._loop(frame, once, statement[3])

    def _s_with(self, statement, frame: _Frame) -> None:
        node = statement[3]
        frame.statement = node
        outer_meta = frame.meta
        outer_expecting = frame.expecting
        if any(_expects_error(item.context_expr) for item in getattr(node, "items", ())):
            frame.expecting = True
        for context_expr, target in statement[1]:
            values = self.ev(context_expr, frame)
            tag = self._meta_context(values, node, frame)
            if tag is not None:
                frame.meta = tag
            if target is not None:
                self.assign(target, JUST_UNKNOWN, frame)
        self._exec(statement[2], frame)
        frame.meta = outer_meta
        frame.expecting = outer_expecting

    def _meta_context(self, values: frozenset, node: ast.AST, frame: _Frame) -> MetaTag | None:
        fabrics = set()
        init_call = None
        meta_device = False
        for value in values:
            if isinstance(value, Special):
                if value.kind == "meta_device":
                    meta_device = True
                elif value.kind == "init_module":
                    fabrics.add(value.receiver)
                    init_call = value.extra
        path = frame.scope.path
        if meta_device:
            return MetaTag(("meta_device", node, None, path, frozenset(), None, frame.variant))
        if fabrics:
            return MetaTag(("init_module", node, None, path, frozenset(fabrics), init_call, frame.variant))
        return None

    def _s_try(self, statement, frame: _Frame) -> None:
        start = frame.fork()
        self._exec(statement[1], frame)
        for name, body in statement[2]:
            branch = start.fork()
            branch.merge(frame)
            if name:
                branch.env[name] = JUST_UNKNOWN
            self._exec(body, branch)
            frame.merge(branch)
        self._exec(statement[3], frame)
        self._exec(statement[4], frame)

    def _s_def(self, statement, frame: _Frame) -> None:
        _, name, child, decorators, node = statement
        frame.statement = node
        function = frozenset({Function(child)})
        for decorator, decorator_node in zip(decorators, node.decorator_list):
            values = self.ev(decorator, frame)
            if _last_name(decorator_node) in TRANSPARENT_DECORATORS:
                continue
            # The decorator gets the function: a project decorator is followed (it may call it or
            # keep it); anything else (a registry, a CLI framework) may call it with anything.
            call = _Call(decorator_node, decorator, [(False, function)], [], frame)
            for value in self.ordered(values):
                if isinstance(value, Function) and not value.external:
                    self.call_value(value, call)
                else:
                    self._escape(function)
        self._define(child, frame)
        if any(_last_name(d) in ("setter", "deleter") for d in node.decorator_list):
            # `@x.setter def x(...)`: the property keeps its getter too
            function = function | self._lookup(name, frame)
        self.assign(("name", name), function, frame)

    def _escape(self, values: frozenset) -> None:
        """Functions reaching code the analysis does not follow (a library call, an unknown object):
        they may be called from there with anything, so their parameters take what annotations say."""
        for value in values:
            if isinstance(value, Function) and not value.external:
                self.write(("escaped", value.scope), _TRUE)
            elif isinstance(value, Bound) and not value.function.external:
                self.write(("escaped", value.function.scope), _TRUE)

    def _define(self, child: ir.Scope, frame: _Frame) -> None:
        for param in child.params:
            if param.default is not None:
                self.write(("default", child, param.name), self.ev(param.default, frame))
            if param.annotation is not None:
                self.write(("annotation", child, param.name), self.ev(param.annotation, frame))
        if child.returns is not None:
            self.write(("annotation", child, "return"), self.ev(child.returns, frame))

    def _s_class(self, statement, frame: _Frame) -> None:
        _, name, child, bases, keywords, decorators, node = statement
        frame.statement = node
        base_values = tuple(self.ev(base, frame) for base in bases)
        for _, value in keywords:
            self.ev(value, frame)
        key = class_key(child)
        for decorator, decorator_node in zip(decorators, node.decorator_list):
            values = self.ev(decorator, frame)
            if _last_name(decorator_node) in TRANSPARENT_DECORATORS:
                continue
            # A project decorator gets the class (`@register("lm")` puts it into a registry); the
            # name stays bound to the class itself, which is what class decorators return.
            call = _Call(decorator_node, decorator, [(False, frozenset({key}))], [], frame)
            for value in self.ordered(values):
                if isinstance(value, Function) and not value.external:
                    self.call_value(value, call)
        self.write(("bases", key), frozenset({Tuple(base_values)}))
        self.assign(("name", name), frozenset({key}), frame)

    def _s_import(self, statement, frame: _Frame) -> None:
        path = frame.scope.path
        for dotted, asname in statement[1]:
            if asname:
                value = self._ask("resolve_import", dotted, path, 0)
                self.assign(("name", asname), frozenset({value}) if value is not None else JUST_UNKNOWN, frame)
            else:
                top = dotted.split(".")[0]
                value = self._ask("resolve_import", top, path, 0)
                self.assign(("name", top), frozenset({value}) if value is not None else JUST_UNKNOWN, frame)

    def _s_from(self, statement, frame: _Frame) -> None:
        _, module, level, names, node = statement
        path = frame.scope.path
        base = self._ask("resolve_import", module or "", path, level)
        for name, asname in names:
            if name == "*":
                if isinstance(base, Module) and not base.external:
                    for exported in self._ask("module_exports", base.path) or ():
                        # Joined with what the name held: a module's names may not be known yet (a
                        # cycle of star imports, a module importing itself), and "not known yet" must
                        # not erase a binding the fixed point would then never see again.
                        values = self.read(("global", base.path, exported))
                        self.assign(("name", exported), self._lookup(exported, frame) | values, frame)
                continue
            if base is None:
                values = JUST_UNKNOWN
            else:
                values = self.attribute(frozenset({base}), name, None, frame)
            self.assign(("name", asname or name), values, frame)

    def _s_global(self, statement, frame: _Frame) -> None:
        return None

    # -- patterns ----------------------------------------------------------------------------------------
    def assign(self, pattern: tuple, values: frozenset, frame: _Frame) -> None:
        kind = pattern[0]
        if kind == "name":
            name = pattern[1]
            scope = frame.scope
            if frame.written or frame.fresh:
                self._rebound(name, frame)
            if scope.kind == ir.MODULE:
                frame.env[name] = values
            elif name in scope.declared_global:
                frame.env[name] = values
                self.write(("global", scope.path, name), values)
            elif name in scope.declared_nonlocal:
                frame.env[name] = values
                owner = self._enclosing_owner(scope, name)
                if owner is not None:
                    self.write(("closure", owner, name), values)
            else:
                frame.env[name] = values
                if name in scope.cellvars:
                    frame.cells[name] = frame.cells.get(name, NOTHING) | values
        elif kind == "attr":
            objects = self.ev(pattern[1], frame)
            self.store_attribute(objects, pattern[2], values)
            chain = _chain(pattern[1])
            if chain is not None:
                self._write_through(frame, ("path", chain[0], chain[1] + (pattern[2],)), values,
                                    ("var", chain[0]) in frame.fresh and len(objects) == 1)
        elif kind == "sub":
            objects = self.ev(pattern[1], frame)
            keys = self.ev(pattern[2], frame)
            for obj in objects:
                if isinstance(obj, Container):
                    self._store_element(obj, keys, values)
                    if len(keys) == 1 and isinstance(next(iter(keys)), Const):
                        self._write_through(frame, ("site", obj.site, next(iter(keys))), values,
                                            len(objects) == 1 and ("site", obj.site) in frame.fresh)
                    else:
                        self._forget(frame, lambda key, site=obj.site: key[0] == "site" and key[1] is site)
        elif kind == "tuple":
            self._destructure(pattern[1], values, frame)
        elif kind == "star":
            self.assign(pattern[1], JUST_UNKNOWN, frame)

    def _destructure(self, patterns: tuple, values: frozenset, frame: _Frame) -> None:
        count = len(patterns)
        parts: list[set] = [set() for _ in range(count)]
        star = next((i for i, p in enumerate(patterns) if p[0] == "star"), None)
        if len(values) > 1 and const(None) in values:
            # Unpacking None raises TypeError: no value flows from it (a factory's return values hold
            # None for falling off its end, which would make every target of `a, b = build()` unknown).
            values = values - _NONE
        for value in values:
            if isinstance(value, Container):
                elements = self.read(("elements", value.site))
                anywhere = self.read(("element", value.site, ANY_KEY))
                for index in range(count):
                    if star is not None and index >= star:
                        parts[index].update(elements)  # after a starred target: positions unknown
                        continue
                    item = self.read(("element", value.site, const(index)))
                    parts[index].update(item | anywhere if item else elements)
            else:
                for part in parts:
                    if isinstance(value, Output):
                        part.add(value)  # `logits, loss = model(x)`
                    part.add(UNKNOWN)
        for pattern, part in zip(patterns, parts):
            if pattern[0] == "star":
                self.assign(pattern[1], JUST_UNKNOWN, frame)
            else:
                self.assign(pattern, frozenset(part), frame)

    # -- what this run just wrote -------------------------------------------------------------------------
    # A config the program rewrites before it builds Fabric (`cfg.devices = 1`, `config["strategy"] =
    # "auto"`) holds the new value from there on, while the tables hold every value it ever had. For
    # objects only this run holds (made here, outside loops, not passed on), the run keeps what it
    # wrote last and reads that. It is the same on every interpretation of the run (a function of its
    # statements and of the tables it reads), so the fixed point is unchanged in kind.
    def _write_through(self, frame: _Frame, key: tuple, values: frozenset, strong: bool) -> None:
        if key[0] == "path":  # `cfg.fabric = x` replaces what `cfg.fabric.devices` was
            variable, attributes = key[1], key[2]
            self._forget(frame, lambda other: other[0] == "path" and other[1] == variable
                         and other[2][:len(attributes)] == attributes and other != key)
        if strong:
            frame.written[key] = values
        elif key in frame.written:
            frame.written[key] = frame.written[key] | values

    @staticmethod
    def _forget(frame: _Frame, matches) -> None:
        if frame.written:
            for key in [key for key in frame.written if matches(key)]:
                del frame.written[key]

    def _rebound(self, name: str, frame: _Frame) -> None:
        if ("var", name) in frame.fresh:
            frame.fresh = frame.fresh - {("var", name)}
        if frame.written:
            self._forget(frame, lambda key: key[0] == "path" and key[1] == name)

    def _passed_on(self, frame: _Frame, callees: frozenset, args, kwargs, receivers) -> None:
        """Objects given to code that may change them are no longer only this run's: forget what
        was written into them (at module level anything a function reaches may be a global).
        Library calls that change nothing, and the calls whose effects are modelled (Special), keep them."""
        project = False
        for callee in callees:
            if isinstance(callee, Special):
                continue
            if isinstance(callee, Lib):
                if callee.qualified.startswith(_PURE_LIBRARY) or callee.qualified in FABRIC_CLASS_NAMES:
                    continue
            else:
                project = True
            break
        else:
            return
        if frame.scope.kind == ir.MODULE and project:
            frame.written.clear()
            frame.fresh = frozenset()
            return
        given = set()
        for _, each in args:
            given.update(each)
        for _, each in kwargs:
            given.update(each)
        if receivers is not None:
            given.update(receivers)
        sites = {value.site for value in given if isinstance(value, Container)}
        names = {name for kind, name in ((k[0], k[1]) for k in frame.fresh) if kind == "var"
                 and frame.env.get(name, NOTHING) & given}
        if not sites and not names:
            return
        self._forget(frame, lambda key: key[0] == "site" and key[1] in sites or key[0] == "path" and key[1] in names)
        frame.fresh = frozenset(k for k in frame.fresh if not (k[0] == "site" and k[1] in sites or k[0] == "var" and k[1] in names))

    def _enclosing_owner(self, scope: ir.Scope, name: str) -> ir.Scope | None:
        enclosing = scope.parent
        while enclosing is not None and enclosing.kind in (ir.FUNCTION, ir.LAMBDA):
            if name in enclosing.assigned:
                return enclosing
            enclosing = enclosing.parent
        return None

    def store_attribute(self, objects: frozenset, name: str, values: frozenset) -> None:
        for obj in objects:
            if isinstance(obj, Instance) and isinstance(obj.cls, Class):
                if self._property_setter(obj, name, values):
                    continue
                self.write(("field", obj.cls, name), self._with_declared(obj.cls, name, values))
            elif isinstance(obj, FabricValue) and obj.cls is not None:
                self.write(("field", obj.cls, name), values)
            elif isinstance(obj, Wrapped):
                for inner in self.read(("setup_module", _site_key(obj.site, obj.variant))):
                    if isinstance(inner, Instance) and isinstance(inner.cls, Class):
                        self.write(("field", inner.cls, name), values)
            elif isinstance(obj, Module) and not obj.external:
                self.write(("global", obj.path, name), values)
            elif isinstance(obj, Class) and not obj.external:
                self.write(("classattr", obj, name), values)

    def _with_declared(self, cls: Class, name: str, values: frozenset) -> frozenset:
        """An unknown value stored in an attribute that a class body along the MRO declares (`actor:
        PPOActor`): an instance of the declared class."""
        if UNKNOWN not in values:
            return values
        for ref in self.mro(cls):
            if isinstance(ref, Class) and not ref.external:
                declared = self.read(("declared", ref, name))
                if declared:
                    return (values - JUST_UNKNOWN) | declared
        return values

    def _property_setter(self, obj: Instance, name: str, values: frozenset) -> bool:
        """`obj.name = values` where the class binds `name` to a property with a setter: the setter
        runs with the values (it stores them where the getter reads them). False when there is none."""
        owner, bound = self.lookup_class_attribute(obj.cls, name)
        if not isinstance(owner, Class) or owner.external:
            return False
        setters = [value for value in bound if isinstance(value, Function) and not value.external
                   and "setter" in value.scope.decorator_names and len(value.scope.params) >= 2]
        for setter in setters:
            self._call_function(setter.scope, [(False, frozenset({obj})), (False, values)], [], None, None)
        return bool(setters)

    def _store_element(self, container: Container, keys: frozenset, values: frozenset) -> None:
        for key in keys:
            if isinstance(key, Const):
                self.write(("element", container.site, key), values)
                self.write(("keys", container.site), frozenset({key}))
            else:
                self.write(("element", container.site, ANY_KEY), values)
        self.write(("elements", container.site), values)

    # -- names ------------------------------------------------------------------------------------------
    def _lookup(self, name: str, frame: _Frame) -> frozenset:
        scope = frame.scope
        kind = scope.kind
        if kind == ir.MODULE:
            found = frame.env.get(name)
            if found is not None:
                return found
            if name in scope.assigned:
                return NOTHING  # bound further down (or on another path): not yet here
            return self._global(scope.path, name)
        if kind == ir.CLASS:
            found = frame.env.get(name)
            if found is not None:
                return found
            return self._free(scope.parent, name, scope.path)
        if name in scope.declared_global:
            return self._global(scope.path, name)
        if name in scope.assigned and name not in scope.declared_nonlocal:
            return frame.env.get(name, NOTHING)
        return self._free(scope.parent, name, scope.path)

    def _free(self, enclosing: ir.Scope | None, name: str, path: str) -> frozenset:
        while enclosing is not None and enclosing.kind in (ir.FUNCTION, ir.LAMBDA):
            if name in enclosing.assigned and name not in enclosing.declared_global:
                return self.read(("closure", enclosing, name))
            enclosing = enclosing.parent
        return self._global(path, name)

    def _global(self, path: str, name: str) -> frozenset:
        found = self.read(("global", path, name))
        if found:
            return found
        if self._ask("module_binds", path, name):
            return NOTHING
        if name in _BUILTINS:
            return frozenset({Lib("builtins." + name)})
        return JUST_UNKNOWN

    # -- expressions --------------------------------------------------------------------------------------
    def ev(self, expr: tuple, frame: _Frame) -> frozenset:
        handler = _EXPRESSIONS[expr[0]]
        return handler(self, expr, frame)

    def _e_const(self, expr, frame) -> frozenset:
        return frozenset({const(expr[1])})

    def _e_name(self, expr, frame) -> frozenset:
        return self._lookup(expr[1], frame)

    def _e_attr(self, expr, frame) -> frozenset:
        objects = self.ev(expr[1], frame)
        if frame.written:
            chain = _chain(expr)
            if chain is not None:
                written = frame.written.get(("path", chain[0], chain[1]))
                if written is not None:
                    return written
        return self.attribute(objects, expr[2], expr[3], frame)

    def _e_sub(self, expr, frame) -> frozenset:
        objects = self.ev(expr[1], frame)
        keys = self.ev(expr[2], frame)
        if frame.written and len(objects) == 1 and len(keys) == 1:
            (obj,), (key,) = objects, keys
            if isinstance(obj, Container) and isinstance(key, Const):
                written = frame.written.get(("site", obj.site, key))
                if written is not None:
                    return written
        return self.subscript(objects, keys)

    def _e_tuple(self, expr, frame) -> frozenset:
        # A tuple display is a container of its own (keyed by its node): values never embed sets,
        # so they keep their identity while what they hold grows.
        return self._sequence(expr[1], expr[2], frame)

    def _e_list(self, expr, frame) -> frozenset:
        return self._sequence(expr[1], expr[2], frame)

    def _sequence(self, elements, site, frame) -> frozenset:
        container = Container(site, frame.scope.path)
        starred = False
        for index, element in enumerate(elements):
            if element[0] == "star":
                values = self.iter_values(self.ev(element[1], frame))
                self.write(("element", site, ANY_KEY), values)
                self.write(("elements", site), values)
                starred = True
                continue
            values = self.ev(element, frame)
            self.write(("element", site, const(index) if not starred else ANY_KEY), values)
            self.write(("elements", site), values)
        return frozenset({container})

    def _e_dict(self, expr, frame) -> frozenset:
        site = expr[2]
        container = Container(site, frame.scope.path)
        if not frame.in_loop:
            frame.fresh = frame.fresh | {("site", site)}
        for key_expr, value_expr in expr[1]:
            values = self.ev(value_expr, frame)
            if key_expr is None:  # {**other}
                for other in values:
                    if isinstance(other, Container):
                        self.write(("element", site, ANY_KEY), self.read(("elements", other.site)))
                        self.write(("elements", site), self.read(("elements", other.site)))
                continue
            keys = self.ev(key_expr, frame)
            self._store_element(container, keys, values)
        return frozenset({container})

    def _e_ifexp(self, expr, frame) -> frozenset:
        _, test, body, orelse, node = expr
        taken = self._decide(test, node, frame)
        found = NOTHING
        if taken is not False:
            found = found | self.ev(body, frame)
        if taken is not True:
            found = found | self.ev(orelse, frame)
        return found

    def _e_boolop(self, expr, frame) -> frozenset:
        """`a or b`, `a and b`: every operand may be the result, except an operand whose constants
        pass evaluation on (a falsy constant before `or`, a truthy one before `and`); a program
        constant that decides the result ends it (`DEBUG and x` with DEBUG = False is False)."""
        _, op, operands, _node = expr
        passing = op == "and"  # the truth value that moves evaluation to the next operand
        found = NOTHING
        last = len(operands) - 1
        for index, operand in enumerate(operands):
            static = self._static(operand, frame)
            values = self.ev(operand, frame)
            if index == last:
                return found | values
            if static is not _NO:
                if bool(static) != passing:
                    return found | values
                continue
            found = found | frozenset(v for v in values if not (isinstance(v, Const) and _truth(v) == passing))
        return found

    def _e_compare(self, expr, frame) -> frozenset:
        _, left, pairs, _node = expr
        operands = [self.ev(left, frame)] + [self.ev(right, frame) for _, right in pairs]
        return _fold(operands, lambda values: _compare_chain(values, [op for op, _ in pairs]))

    def _e_not(self, expr, frame) -> frozenset:
        return _fold([self.ev(expr[1], frame)], lambda values: not values[0])

    def _e_unary(self, expr, frame) -> frozenset:
        op = expr[1]
        values = self.ev(expr[2], frame)
        outputs = frozenset(v for v in values if isinstance(v, Output))  # `-log_likelihood`
        found = _fold([values], lambda values: _unary(op, values[0]))
        return found | outputs | JUST_UNKNOWN if outputs else found

    # -- decided branches ------------------------------------------------------------------------------
    def _decide(self, test, node, frame: _Frame) -> bool | None:
        """Evaluate a branch's test; the branch taken when it is decided: by constants of the program
        (module constants, literals: the same on every run of the program), or by the case of the
        scope's split this run follows. None: both branches."""
        values = self.ev(test, frame)
        if frame.scope.name == "__init__":  # what the values say, read after the solve (Solver.branch_taken)
            constants = frozenset(v for v in values if isinstance(v, Const))
            if constants:
                self.write(("test", node), constants if len(constants) == len(values) else constants | JUST_UNKNOWN)
        static = self._static(test, frame)
        if static is not _NO:
            return bool(static)
        decider = frame.decider
        if decider is not None:
            core, polarity = _strip_not(test)
            if _condition_key(core) == decider.key:
                found = self.ev(core, frame) if core is not test else values
                kept = frozenset(v for v in found if isinstance(v, Const))
                if kept:
                    self.write(("cond", decider.node), kept if len(kept) == len(found) else kept | JUST_UNKNOWN)
                elif found:
                    self.write(("cond", decider.node), JUST_UNKNOWN)
                return _case_value(frame.variant, decider.node) == polarity
        return None

    def _static(self, expr, frame: _Frame):
        """The value of an expression made of literals and module constants (names bound once, to a
        literal, and never rebound anywhere in the program: `program.module_constant`), or _NO."""
        kind = expr[0]
        if kind == "const":
            return expr[1]
        if kind == "name":
            path = self._global_path(expr[1], frame)
            if path is None:
                return _NO
            found = self._ask("module_constant", path, expr[1])
            return found[0] if found is not None else _NO
        if kind == "not":
            inner = self._static(expr[1], frame)
            return _NO if inner is _NO else (not inner)
        if kind == "unary":
            inner = self._static(expr[2], frame)
            return _NO if inner is _NO else _unary(expr[1], inner)
        if kind == "compare":
            values = [self._static(expr[1], frame)] + [self._static(right, frame) for _, right in expr[2]]
            if any(v is _NO for v in values):
                return _NO
            return _compare_chain(values, [op for op, _ in expr[2]])
        if kind == "boolop":
            passing = expr[1] == "and"
            operands = expr[2]
            for operand in operands[:-1]:
                value = self._static(operand, frame)
                if value is _NO:
                    return _NO
                if bool(value) != passing:
                    return value
            return self._static(operands[-1], frame)
        if kind == "ifexp":
            test = self._static(expr[1], frame)
            if test is _NO:
                return _NO
            return self._static(expr[2] if test else expr[3], frame)
        return _NO

    def _global_path(self, name: str, frame: _Frame) -> str | None:
        """The module whose global `name` a read in this frame means (None: a local or a closure)."""
        scope = frame.scope
        if scope.kind == ir.MODULE:
            return scope.path
        if scope.kind == ir.CLASS:
            if name in frame.env:
                return None
        elif name in scope.declared_global:
            return scope.path
        elif name in scope.assigned:
            return None
        enclosing = scope.parent
        while enclosing is not None and enclosing.kind in (ir.FUNCTION, ir.LAMBDA):
            if name in enclosing.assigned and name not in enclosing.declared_global:
                return None
            enclosing = enclosing.parent
        return scope.path

    def branch_taken(self, node, outcome: bool) -> bool:
        """After the solve: may the test at `node` (in an `__init__`) be `outcome`? False only when
        every value the program gives it is a constant of the other truth value (a flag whose default
        is off)."""
        values = self.peek(("test", node))
        return not values or UNKNOWN in values or any(_truth(v) == outcome for v in values)

    def feasible(self, variant) -> bool:
        """After the solve: can the program's values take this case of a split? (A case whose
        condition only ever holds constants of the other truth value is a branch never taken.)"""
        for node, outcome in variant or ():
            if not isinstance(outcome, bool):
                continue  # an iteration over literal keys: each of them runs
            values = self.peek(("cond", node))
            if values and UNKNOWN not in values and not any(_truth(v) == outcome for v in values):
                return False
        return True

    def _when(self, variant, path: str | None) -> str:
        """"when `args.distributed` is true": the flag of a case chosen at run time, for messages."""
        parts = []
        for node, outcome in variant or ():
            if isinstance(outcome, bool) and self.feasible(((node, not outcome),)) and path is not None:
                core = node
                while isinstance(core, ast.UnaryOp) and isinstance(core.op, ast.Not):
                    core = core.operand  # the case's outcome is the value of the flag itself
                parts.append(f"`{self.program.segment(path, core)}` is {'true' if outcome else 'false'}")
        return ("when " + " and ".join(parts)) if parts else ""

    def chosen_at_run_time(self, variant) -> bool:
        """After the solve: is one of these cases chosen at run time (the program's values can take
        the other outcome of its flag too)?"""
        return any(isinstance(outcome, bool) and self.feasible(((node, not outcome),)) for node, outcome in variant or ())

    def _e_walrus(self, expr, frame) -> frozenset:
        values = self.ev(expr[2], frame)
        self.assign(("name", expr[1]), values, frame)
        return values

    def _e_lambda(self, expr, frame) -> frozenset:
        child = expr[1]
        self._define(child, frame)
        return frozenset({Function(child)})

    def _e_fstr(self, expr, frame) -> frozenset:
        """The strings an f-string can make from the constants its parts hold (`f"{stage}_fast"` with
        `stage` from a literal tuple); unknown past MAX_CONSTANTS of them or for a part that is not a
        string or an integer constant."""
        texts = {""}
        unknown = False
        for part in expr[1]:
            values = self.ev(part, frame)
            pieces = set()
            for value in values:
                if isinstance(value, Const) and value.kind in ("str", "int"):
                    pieces.add(str(value.value))
                else:
                    unknown = True
            if unknown or not pieces:
                unknown = True
                continue
            texts = {text + piece for text in texts for piece in pieces}
            if len(texts) > MAX_CONSTANTS:
                unknown = True
        if unknown:
            return JUST_UNKNOWN
        return frozenset(const(text) for text in texts)

    def _e_arith(self, expr, frame) -> frozenset:
        """`a + b`, `-a`: unknown, carrying the wrapped model's outputs among the operands."""
        found = set()
        for inner in expr[1]:
            found.update(self._outputs_in(inner, frame))
        return frozenset(found) | JUST_UNKNOWN

    def _outputs_in(self, expr, frame) -> set:
        """The wrapped model's outputs an operand holds. Names, attributes and items of them are read
        without asking for what else they are (each read is a dependency that can make the solver run a
        scope again: arithmetic is everywhere, outputs rarely); calls and the rest are evaluated as before."""
        kind = expr[0]
        if kind == "const":
            return set()
        if kind == "name":
            return {v for v in self._lookup(expr[1], frame) if isinstance(v, Output)}
        if kind == "attr":
            base = self._outputs_in(expr[1], frame)
            return base if expr[2] not in _OUTPUT_DETACHING else set()
        if kind == "sub":
            if expr[2][0] not in ("const", "name"):
                self.ev(expr[2], frame)  # an index with calls in it
            return self._outputs_in(expr[1], frame)
        if kind == "unary":
            return self._outputs_in(expr[2], frame)
        if kind == "arith":
            found = set()
            for inner in expr[1]:
                found.update(self._outputs_in(inner, frame))
            return found
        return {v for v in self.ev(expr, frame) if isinstance(v, Output)}

    def _e_unknown(self, expr, frame) -> frozenset:
        for inner in expr[1]:
            self.ev(inner, frame)
        return JUST_UNKNOWN

    def _e_comp(self, expr, frame) -> frozenset:
        _, kind, element, generators, node = expr
        if kind == "dict" and len(generators) == 1:
            target, iterable, conditions = generators[0]
            iterated = self.ev(iterable, frame)
            iterations = self._literal_iterations(iterated) if self._may_unroll(element) else None
            if iterations is not None:  # `{name: fabric.setup(m) for name, m in models.items()}`: key by key
                container = Container(node, frame.scope.path)
                for case, values in iterations:
                    inner = frame.fork()
                    inner.variant = (frame.variant or ()) + (case,)
                    self.assign(target, values, inner)
                    for condition in conditions:
                        self.ev(condition, inner)
                    self._store_element(container, self.ev(element[1][0], inner), self.ev(element[1][1], inner))
                    frame.marked = frame.marked | inner.marked
                return frozenset({container})
        inner = frame.fork()
        for target, iterable, conditions in generators:
            self.assign(target, self.iter_values(self.ev(iterable, inner)), inner)
            for condition in conditions:
                self.ev(condition, inner)
        container = Container(node, frame.scope.path)
        if kind == "dict":  # element: ("tuple", (key, value))
            keys = self.ev(element[1][0], inner)
            self._store_element(container, keys, self.ev(element[1][1], inner))
        else:
            values = self.ev(element, inner)
            self.write(("element", node, ANY_KEY), values)
            self.write(("elements", node), values)
        frame.marked = frame.marked | inner.marked
        return frozenset({container})

    def _e_call(self, expr, frame) -> frozenset:
        _, func_expr, arg_exprs, kwarg_exprs, node = expr
        receivers = None
        if func_expr[0] == "attr":  # `obj.m(...)`: what `obj` may be is kept for the wcall event
            receivers = self.ev(func_expr[1], frame)
            callees = self.attribute(receivers, func_expr[2], func_expr[3], frame)
        else:
            callees = self.ev(func_expr, frame)
        args: list[tuple[bool, frozenset]] = []
        for arg in arg_exprs:
            if arg[0] == "star":
                args.append((True, self.ev(arg[1], frame)))
            else:
                args.append((False, self.ev(arg, frame)))
        kwargs: list[tuple[str | None, frozenset]] = [(name, self.ev(value, frame)) for name, value in kwarg_exprs]
        call = _Call(node, func_expr, args, kwargs, frame)
        call.receivers = receivers
        call.arg_exprs = arg_exprs
        if receivers is not None and func_expr[2] in _REINIT_OR_LOAD:
            self._reinit_event(func_expr[2], call)
        if frame.written or frame.fresh:
            self._passed_on(frame, callees, args, kwargs, receivers)
        if any(_opaque(callee) for callee in callees):
            for _, values in args:
                self._escape(values)
            for _, values in kwargs:
                self._escape(values)
        if len(callees) == 1:
            for callee in callees:
                return self.call_value(callee, call)
        result = NOTHING
        for index, callee in enumerate(self._grouped_callees(callees)):
            if index >= MAX_CALL_VALUES:
                result = result | JUST_UNKNOWN
                break
            if isinstance(callee, _Receivers):
                result = result | self._tagged(self._call_function(
                    callee.function.scope, [(False, callee.receivers)] + call.args, call.kwargs, call.node, call.frame
                ), call)
            else:
                result = result | self.call_value(callee, call)
        return result

    def _reinit_event(self, method: str, call: "_Call") -> None:
        """Calls that give a model's weights values after Fabric's setup: `model.reset_parameters()`,
        `model.apply(init_fn)`, `model.load_state_dict(...)`, `fabric.load(path, {"model": model})`,
        `fabric.load_raw(path, model)`. What ModelParallel leaves uninitialised is then overwritten
        (FAB002 reads these events after the solve)."""
        if method in _REINIT_METHODS:
            values = frozenset(v for v in call.receivers if isinstance(v, (Wrapped, Instance)))
        elif method in ("load", "load_raw") and any(isinstance(v, FabricValue) for v in call.receivers):
            values = set()
            for given in (call.positional(1), call.keyword("state"), call.keyword("obj")):
                for value in given:
                    if isinstance(value, Container):
                        values.update(self.read(("elements", value.site)))
                    else:
                        values.add(value)
            values = frozenset(v for v in values if isinstance(v, (Wrapped, Instance)))
        else:
            return
        if values:
            self._event("reinit", call, values=values, method=method)

    def _grouped_callees(self, callees: frozenset) -> list:
        """The callees in a fixed order, a project method bound to several receivers called once
        with all of them as `self` (what the calls one by one would write and read, at once): in a
        base class with hundreds of subclasses, `self.helper()` is one call, not hundreds (nor the
        first MAX_CALL_VALUES of them and an unknown)."""
        ordered = self.ordered(callees)
        receivers: dict[Function, list] = {}
        for callee in ordered:
            if isinstance(callee, Bound) and not callee.function.external:
                receivers.setdefault(callee.function, []).append(callee.receiver)
        if all(len(found) == 1 for found in receivers.values()):
            return ordered
        grouped = []
        for callee in ordered:
            if isinstance(callee, Bound) and not callee.function.external:
                found = receivers.pop(callee.function, None)
                if found is None:
                    continue  # called with its first receiver's group
                grouped.append(_Receivers(callee.function, frozenset(found)) if len(found) > 1 else callee)
            else:
                grouped.append(callee)
        return grouped

    # -- attributes ------------------------------------------------------------------------------------
    def attribute(self, objects: frozenset, name: str, node: ast.AST | None, frame: _Frame | None) -> frozenset:
        found = set()
        for obj in objects:
            found.update(self.attribute_of(obj, name, frame))
        return frozenset(found)

    def attribute_of(self, obj, name: str, frame: _Frame | None) -> frozenset:
        if isinstance(obj, Lib):
            qualified = obj.qualified + "." + name
            if library_models.is_library_name(qualified) and library_models.known(qualified) is None \
                    and not library_models.is_class(obj.qualified):
                found = self._ask("library_fallback", qualified)  # a name the library tables do not know
                if found:
                    return found
            return frozenset({Lib(qualified)})
        if isinstance(obj, Module):
            if obj.external:
                return self._ask("external_attribute", obj, name) or JUST_UNKNOWN
            found = self.read(("global", obj.path, name))
            sub = self._ask("submodule", obj, name)
            if sub is not None:
                found = found | {sub}
            if not found and not self._ask("module_binds", obj.path, name):
                return JUST_UNKNOWN
            return found
        if isinstance(obj, Instance):
            return self._instance_attribute(obj, name)
        if isinstance(obj, Class):
            return self._class_attribute(obj, name)
        if isinstance(obj, Wrapped):
            return self._wrapped_attribute(obj, name)
        if isinstance(obj, FabricValue):
            return self._fabric_attribute(obj, name)
        if isinstance(obj, Container):
            return frozenset({Special("container_method", obj, name)})
        if isinstance(obj, Super):
            return self._super_attribute(obj, name)
        if isinstance(obj, Output):
            if name == "backward":
                return frozenset({Special("output_backward", obj), UNKNOWN})
            if name in _OUTPUT_DETACHING:
                return JUST_UNKNOWN
            return frozenset({obj, UNKNOWN})  # `out.logits`, `out.sum` (called: see call_value)
        return JUST_UNKNOWN

    def _bind_class_value(self, value, owner_cls, receiver) -> Iterable:
        """A value found in a class body, seen through an instance (receiver) or the class."""
        if isinstance(value, Special) and value.kind == "dataclass_field":
            return tuple(self.read(("field_default", value.extra)))  # dataclasses sets the default on the class
        if isinstance(value, Function) and not value.external:
            scope = value.scope
            kind = scope.method_kind if scope.class_scope is not None else "method"
            if kind == "staticmethod":
                return (value,)
            if kind == "classmethod":
                cls = receiver.cls if isinstance(receiver, Instance) else receiver
                if isinstance(receiver, FabricValue):
                    cls = receiver.cls
                return (Bound(value, cls),)
            if kind == "property":
                if "setter" in scope.decorator_names or "deleter" in scope.decorator_names:
                    return ()  # read through its getter; a store runs it (_property_setter)
                if isinstance(receiver, Class):
                    return (UNKNOWN,)
                return tuple(self._call_function(scope, [(False, frozenset({receiver}))], [], None, None))
            if isinstance(receiver, Class):
                return (value,)
            return (Bound(value, receiver),)
        if isinstance(value, Function) and value.external:
            if isinstance(receiver, Class) or isinstance(receiver, Instance):
                return (Bound(value, receiver if isinstance(receiver, Class) else receiver),)
        return (value,)

    def _instance_attribute(self, inst: Instance, name: str) -> frozenset:
        cls = inst.cls
        if isinstance(cls, Lib):
            return self._library_instance_attribute(inst, name)
        owner, values = self.lookup_class_attribute(cls, name)
        found = set(self.read(("field", cls, name)))
        if isinstance(owner, Class):
            for value in values:
                found.update(self._bind_class_value(value, owner, inst))
        elif isinstance(owner, Lib):
            found.update(self._library_instance_attribute(inst, name))
        elif not found and not self._ask("attribute_assigned", name) and self._mro_complete(cls):
            found.add(UNKNOWN)  # nothing in the program binds it: not something we can know
        return frozenset(found)

    def _library_instance_attribute(self, inst: Instance, name: str) -> frozenset:
        if name in _RETURNS_SELF:
            return frozenset({Special("returns_receiver", inst)})
        if isinstance(inst.cls, Lib) and library_models.is_class(inst.cls.qualified):
            kind = library_models.method_kind(inst.cls.qualified, name)
            if kind in ("method", "classmethod"):
                return frozenset({Special("lib_method", inst, name)})
        return frozenset({Special("lib_method", inst, name)}) if name in nn_module_attributes() else JUST_UNKNOWN

    def _class_attribute(self, cls: Class, name: str) -> frozenset:
        owner, values = self.lookup_class_attribute(cls, name)
        if isinstance(owner, Class):
            found = set()
            for value in values:
                found.update(self._bind_class_value(value, owner, cls))
            return frozenset(found)
        if isinstance(owner, Lib) and library_models.is_class(owner.qualified):
            # `MyVAE.from_pretrained(...)` on a subclass of a library model: the tables say what it returns
            return frozenset({Special("library_classmethod", cls, owner.qualified + "." + name)})
        return JUST_UNKNOWN

    def _super_attribute(self, sup: Super, name: str) -> frozenset:
        mro = self.mro(sup.receiver.cls if isinstance(sup.receiver, Instance) else (
            sup.receiver.cls if isinstance(sup.receiver, FabricValue) and sup.receiver.cls else sup.cls))
        if sup.cls in mro:
            mro = mro[mro.index(sup.cls) + 1:]
        for ref in mro:
            if isinstance(ref, Class):
                if ref.external:
                    values = self._ask("external_attribute", ref, name)
                    if values:
                        return frozenset(v for value in values for v in self._bind_class_value(value, ref, sup.receiver))
                    continue
                if self._ask("class_binds", ref, name):
                    values = self.read(("classattr", ref, name))
                    return frozenset(v for value in values for v in self._bind_class_value(value, ref, sup.receiver))
            elif isinstance(ref, Lib):
                receiver = sup.receiver
                if isinstance(receiver, FabricValue):
                    return self._fabric_attribute(receiver, name, library_only=True)
                if isinstance(receiver, Instance):
                    return self._library_instance_attribute(receiver, name)
                return JUST_UNKNOWN
        return JUST_UNKNOWN

    def _wrapped_attribute(self, wrapped: Wrapped, name: str) -> frozenset:
        if name in _UNWRAPPING_ATTRIBUTES:
            return self.read(("setup_module", _site_key(wrapped.site, wrapped.variant)))
        if name == "mark_forward_method":
            return frozenset({Special("mark", wrapped)})
        if name in ("forward", "__call__"):
            return frozenset({Special("wrapped_forward", wrapped)})
        if name in _RETURNS_SELF:
            return frozenset({Special("returns_receiver", wrapped)})
        if name in wrapper_attributes():
            return frozenset({Special("lib_method", wrapped, name)})
        found = {WrappedMethod(wrapped, name)}
        for inner in self.read(("setup_module", _site_key(wrapped.site, wrapped.variant))):
            if isinstance(inner, Instance) and isinstance(inner.cls, Class):
                found.update(self.read(("field", inner.cls, name)))
        return frozenset(found)

    def _fabric_attribute(self, fabric: FabricValue, name: str, library_only: bool = False) -> frozenset:
        if fabric.cls is not None and not library_only:
            owner, values = self.lookup_class_attribute(fabric.cls, name)
            found = set(self.read(("field", fabric.cls, name)))
            if isinstance(owner, Class):
                for value in values:
                    found.update(self._bind_class_value(value, owner, fabric))
                return frozenset(found)
            if found and owner is None:
                return frozenset(found)
        if name in ("setup", "setup_module", "init_module", "launch", "setup_optimizers", "setup_dataloaders",
                    "no_backward_sync", "call") or name in LAUNCH_CHECKED_METHODS:
            return frozenset({Special("fabric_method", fabric, name)})
        if name == "__init__" and library_only:
            return frozenset({Special("fabric_init", fabric)})  # super().__init__(...) in a subclass
        return JUST_UNKNOWN

    # -- subscripts and iteration ---------------------------------------------------------------------------
    def subscript(self, objects: frozenset, keys: frozenset) -> frozenset:
        found = set()
        for obj in objects:
            if isinstance(obj, Class) or (isinstance(obj, Lib) and _is_generic_class(obj.qualified)):
                # `Trainer[PPOConfig]`: a generic alias, which a class statement subclasses and a call
                # instantiates as the class itself (`class PPOTrainer(Trainer[PPOConfig])`).
                found.add(obj)
            elif isinstance(obj, Container):
                for key in keys:
                    if isinstance(key, Const):
                        found.update(self.read(("element", obj.site, key)))
                        found.update(self.read(("element", obj.site, ANY_KEY)))
                    else:
                        found.update(self.read(("elements", obj.site)))
            elif obj == _NONE_CONST:
                continue  # `None[k]` raises: nothing flows from it (every function may return None, see `_NONE`)
            else:
                if isinstance(obj, Output):
                    found.add(obj)  # `out[0]`, `out["loss"]`
                found.add(UNKNOWN)
        return frozenset(found)

    def _literal_iterations(self, values: frozenset) -> list[tuple] | None:
        """(the case, what it yields) for each iteration over a display with literal keys, in order: the items of
        `{"actor": a, "critic": c}.items()` as (key, value) pairs, the keys of such a dict, the
        elements of `("student", "teacher")`; None for anything else. A loop over them is followed
        one iteration at a time, so each key keeps its own value (what it writes is what the loop
        over all of them at once writes, key by key: the fixed point only grows)."""
        if len(values) != 1:
            return None
        (value,) = values
        items = isinstance(value, Special) and value.kind == "items" and isinstance(value.receiver, Container)
        container = value.receiver if items else value
        if not isinstance(container, Container):
            return None
        site = container.site
        if self.read(("element", site, ANY_KEY)):
            return None
        if _dict_site(site):
            keys = self.ordered(self.read(("keys", site)))
            if not keys or len(keys) > _MAX_UNROLLED or not all(isinstance(key, Const) for key in keys):
                return None
            if not items:
                return [((site, key), frozenset({key})) for key in keys]
            found = []
            for key in keys:
                pair = (site, "item", key)
                item = self.read(("element", site, key))
                self.write(("element", pair, const(0)), frozenset({key}))
                self.write(("element", pair, const(1)), item)
                self.write(("elements", pair), frozenset({key}) | item)
                found.append(((site, key), frozenset({Container(pair, container.path)})))
            return found
        if items or not isinstance(site, (ast.List, ast.Tuple)) or not site.elts or len(site.elts) > _MAX_UNROLLED \
                or any(isinstance(e, ast.Starred) for e in site.elts):
            return None
        found = [((site, const(index)), self.read(("element", site, const(index)))) for index in range(len(site.elts))]
        return found if all(values for _, values in found) else None

    def iter_values(self, values: frozenset) -> frozenset:
        found = set()
        for value in values:
            if isinstance(value, Container):
                found.update(self.read(("elements", value.site)))
            elif isinstance(value, Special) and value.kind in ("items", "enumerate", "zip"):
                found.add(self._pairs(value))
            else:
                if isinstance(value, Output):
                    found.add(value)
                found.add(UNKNOWN)
        return frozenset(found)

    def _pairs(self, special: Special) -> Container:
        """What iterating `d.items()`, `enumerate(x)`, `zip(a, b)` yields: one tuple per site, whose
        positions hold what the iterated containers hold."""
        site = (special.receiver, special.kind)
        pair = Container(site, special.extra)
        if special.kind == "items":
            parts = [JUST_UNKNOWN, self.read(("elements", special.receiver.site))]
        elif special.kind == "enumerate":
            parts = [JUST_UNKNOWN, self.iter_values(self.read(("iterable", special.receiver, 0)))]
        else:
            count = self.read(("arity", special.receiver))
            width = max((v.value for v in count if isinstance(v, Const)), default=0)
            parts = [self.iter_values(self.read(("iterable", special.receiver, index))) for index in range(width)]
        for index, values in enumerate(parts):
            self.write(("element", site, const(index)), values)
            self.write(("elements", site), values)
        return pair

    # -- calls --------------------------------------------------------------------------------------------------
    def call_value(self, callee, call: "_Call") -> frozenset:
        if isinstance(callee, Function):
            if callee.external:
                return JUST_UNKNOWN
            return self._tagged(self._call_function(callee.scope, call.args, call.kwargs, call.node, call.frame), call)
        if isinstance(callee, Bound):
            function = callee.function
            if function.external:
                if isinstance(callee.receiver, Class) and self._ask("external_classmethod_returns_cls", function):
                    return self._tagged(frozenset({Instance(callee.receiver)}), call)
                return JUST_UNKNOWN
            return self._tagged(self._call_function(
                function.scope, [(False, frozenset({callee.receiver}))] + call.args, call.kwargs, call.node, call.frame
            ), call)
        if isinstance(callee, Class):
            return self._construct(callee, call)
        if isinstance(callee, Lib):
            return self._library_call(callee.qualified, call)
        if isinstance(callee, WrappedMethod):
            self._event("wcall", call, wrapped=callee.wrapped, method=callee.name,
                        marked=Marked(callee.wrapped, callee.name) in call.frame.marked, func=call.func_expr,
                        receivers=call.receivers, before=call.frame.marked)
            return JUST_UNKNOWN
        if isinstance(callee, Special):
            return self._special_call(callee, call)
        if isinstance(callee, Wrapped):
            self._makes_output(call.frame)
            return frozenset({Output(callee), UNKNOWN})  # `wrapped(x)`: _FabricModule.forward
        if isinstance(callee, Output):
            return frozenset({callee, UNKNOWN})  # `out.sum()`, `out.float()`
        if isinstance(callee, Partial):
            if call.depth >= MAX_PARTIAL_DEPTH:  # partial(partial(...)) or a partial of itself
                return JUST_UNKNOWN
            site = callee.site
            width = max((v.value for v in self.read(("arity", site)) if isinstance(v, Const)), default=0)
            bound = [(False, self.read(("element", site, const(index)))) for index in range(width)]
            keywords = [(name, self.read(("partial_keyword", site, name))) for name in _keyword_names(site)]
            inner = _Call(call.node, call.func_expr, bound + call.args, keywords + call.kwargs, call.frame, call.depth + 1)
            result = NOTHING
            for function in self.ordered(self.read(("partial_function", site))):
                result = result | self.call_value(function, inner)
            return result
        if isinstance(callee, Instance) and isinstance(callee.cls, Class):
            owner, values = self.lookup_class_attribute(callee.cls, "__call__")
            if not isinstance(owner, Class):
                owner, values = self.lookup_class_attribute(callee.cls, "forward")
            if isinstance(owner, Class):
                result = NOTHING
                for value in values:
                    if isinstance(value, Function) and not value.external:
                        result = result | self._call_function(
                            value.scope, [(False, frozenset({callee}))] + call.args, call.kwargs, call.node, call.frame)
                return result
        if isinstance(callee, Instance) and isinstance(callee.cls, Lib):
            return self._derived_output(call)  # `criterion(out, y)` with `criterion = nn.CrossEntropyLoss()`
        return JUST_UNKNOWN

    def _derived_output(self, call: "_Call") -> frozenset:
        """What a library call computes from tensors: it carries the wrapped model's outputs among its
        arguments (also inside a list or tuple display: `torch.stack([a, b])`), else nothing known."""
        found = set()
        for values in [v for _, v in call.args] + [v for _, v in call.kwargs]:
            for value in values:
                if isinstance(value, Output):
                    found.add(value)
                elif isinstance(value, Container):
                    found.update(v for v in self.read(("elements", value.site)) if isinstance(v, Output))
        return frozenset(found) | JUST_UNKNOWN

    def _tagged(self, values: frozenset, call: "_Call") -> frozenset:
        """Instances a call returns while a meta-device context is active were made on the meta device."""
        meta = call.frame.meta or call.frame.default_meta
        if meta is None or not any(isinstance(v, Instance) and v.meta is None for v in values):
            return values
        tagged = frozenset(
            value._replace(meta=self._meta_for(meta, call)) if isinstance(value, Instance) and value.meta is None else value
            for value in values
        )
        self._event("meta_build", call, values=frozenset(v for v in tagged if isinstance(v, Instance) and v.meta is not None))
        return tagged

    def _meta_for(self, context: MetaTag, call: "_Call") -> MetaTag:
        return MetaTag((context[0], context[1], call.node, call.frame.scope.path, context[4], context[5], context[6]))

    def _call_function(self, scope: ir.Scope, args, kwargs, node, frame) -> frozenset:
        if node is not None and frame is not None:
            # The order of calls: what was marked and wrapped before this call (analysis._method_calls).
            self._event_at("enter", node, frame, callee=scope, before=frame.marked)
        else:
            self.write(("unordered", scope), _TRUE)  # a property read: where it happens is not recorded
        try:
            return self._bind_call(scope, args, kwargs, node, frame)
        finally:
            if frame is not None:
                made = frozenset(v for v in self.read(("made", scope)) if isinstance(v, (Marked, Wrapped)))
                if made:
                    self._carry(frame, made)

    def _carry(self, frame: _Frame, happened: frozenset) -> None:
        """Add marks and wrapped models to what happened on the frame's way (and to what this run made).
        New wrapped models that would take the frame past MAX_ORDERED_WRAPS are all left out (all, not
        some: which ones a set yields first is not fixed); the table ("order_bound",) says so (a table,
        so an incremental run that does not interpret this scope again still knows)."""
        new_wraps = frozenset(v for v in happened if isinstance(v, Wrapped)) - frame.marked
        if new_wraps and len(frame.marked) + len(new_wraps) > MAX_ORDERED_WRAPS:  # (counted only then)
            held = sum(1 for v in frame.marked if isinstance(v, Wrapped))
            if held + len(new_wraps) > MAX_ORDERED_WRAPS:
                self.write(("order_bound",), _TRUE)
                happened = frozenset(v for v in happened if not isinstance(v, Wrapped))
        if happened:
            frame.marked = frame.marked | happened
            self._made.update(happened)

    def _bind_call(self, scope: ir.Scope, args, kwargs, node, frame) -> frozenset:
        params = scope.params
        bound: dict[str, set] = {}
        positional = [p for p in params if p.kind == "positional"]
        varargs = next((p for p in params if p.kind == "varargs"), None)
        varkw = next((p for p in params if p.kind == "kwargs"), None)
        position = 0
        extra: list[frozenset] = []
        spread = False
        for starred, values in args:
            if starred:
                spread = True
                expanded = self._expand_star(values)
                if expanded is not None:
                    for element in expanded:
                        if position < len(positional):
                            bound.setdefault(positional[position].name, set()).update(element)
                            position += 1
                        else:
                            extra.append(element)
                    spread = False
                    continue
                for param in positional[position:]:
                    bound.setdefault(param.name, set()).update(self.iter_values(values))
                break
            if position < len(positional):
                bound.setdefault(positional[position].name, set()).update(values)
                position += 1
            else:
                extra.append(values)
        names = {p.name for p in params if p.kind in ("positional", "keyword")}
        extra_keywords: list[tuple[str, frozenset]] = []
        for name, values in kwargs:
            if name is None:
                expanded = self._expand_kwargs(values, frame)
                for key, item in expanded:
                    if key is None:
                        for param in params:
                            if param.kind in ("positional", "keyword") and param.name not in bound:
                                bound.setdefault(param.name, set()).update(item)
                    elif key in names:
                        bound.setdefault(key, set()).update(item)
                    else:
                        extra_keywords.append((key, item))
                continue
            if name in names:
                bound.setdefault(name, set()).update(values)
            else:
                extra_keywords.append((name, values))
        for param in params:
            if param.kind in ("positional", "keyword") and param.name not in bound and not spread:
                if param.default is not None:
                    bound[param.name] = set(self.read(("default", scope, param.name)))
                else:
                    bound[param.name] = {UNKNOWN}  # a missing argument: TypeError at run time
        if varargs is not None:
            site = (scope, "*args")
            for index, values in enumerate(extra):
                self.write(("element", site, const(index) if not spread else ANY_KEY), values)
                self.write(("elements", site), values)
            if spread:
                self.write(("elements", site), JUST_UNKNOWN)
            bound[varargs.name] = {Container(site, scope.path)}
        if varkw is not None:
            site = (scope, "**kwargs")
            container = Container(site, scope.path)
            for key, values in extra_keywords:
                self._store_element(container, frozenset({const(key)}), values)
            bound[varkw.name] = {container}
        passed = set()
        for name, values in bound.items():
            values = frozenset(values)
            self.write(("param", scope, name), values)
            for value in values:
                if isinstance(value, Wrapped):
                    passed.add(value.site)
        if passed and node is not None and frame is not None:
            self._event_at("pass", node, frame, callee=scope, sites=frozenset(passed))
        if scope.is_generator:
            return JUST_UNKNOWN
        result = self.read(("return", scope))
        if any(isinstance(v, Output) for v in result):
            result = self._outputs_for_this_call(scope, result, bound, frame)
        returned = {v.site for v in result if isinstance(v, Wrapped)}
        if returned and node is not None and frame is not None:
            self._event_at("returned", node, frame, callee=scope, sites=frozenset(returned))
        return result

    def _makes_output(self, frame: _Frame | None) -> None:
        if frame is not None and frame.scope.kind in (ir.FUNCTION, ir.LAMBDA):
            self.write(("makes_output", frame.scope), MADE)

    def _outputs_for_this_call(self, scope: ir.Scope, result: frozenset, bound: dict, frame) -> frozenset:
        """A function's return summary joins all its calls: a loss helper given the wrapped model's
        output in training and a plain tensor in a test returns an Output to both. The Output reaches
        this call only when the function (or one it calls) runs the wrapped model itself, or this
        call hands it an output (directly or in a container or tuple)."""
        if self.read(("makes_output", scope)):
            self._makes_output(frame)  # so the caller's callers get it too
            return result
        if any(self._carries_output(v) for vs in bound.values() for v in vs):
            return result  # handed back what this call gave (the caller's own callers decide again)
        return frozenset(v for v in result if not isinstance(v, Output))

    def output_reaches(self, scope: ir.Scope) -> bool:
        """After the solve: can an output of a wrapped model be in this scope on one of its own runs?
        Only when it (or a function it calls) runs the wrapped model, or its callers hand it one. (Its
        values alone cannot tell: a helper's summary joins every call.) Module code: always."""
        if scope.kind not in (ir.FUNCTION, ir.LAMBDA) or self.peek(("makes_output", scope)):
            return True
        return any(self._carries_output(v, peek=True) for param in scope.params
                   for v in self.peek(("param", scope, param.name)))

    def _carries_output(self, value, peek: bool = False) -> bool:
        if isinstance(value, Output):
            return True
        if isinstance(value, Container):
            elements = (self.peek if peek else self.read)(("elements", value.site))
            return any(isinstance(v, Output) for v in elements)
        if isinstance(value, Tuple):
            return any(isinstance(v, Output) for element in value.elements for v in element)
        return False

    def _expand_star(self, values: frozenset) -> list[frozenset] | None:
        """`f(*args)` with one container of known positions: its elements, in order."""
        if len(values) == 1:
            (value,) = values
            if isinstance(value, Container) and not self.read(("element", value.site, ANY_KEY)):
                found = []
                for index in range(64):
                    item = self.read(("element", value.site, const(index)))
                    if not item:
                        break
                    found.append(item)
                return found
        return None

    def _expand_kwargs(self, values: frozenset, frame: _Frame | None = None) -> list[tuple[str | None, frozenset]]:
        """`f(**kwargs)`: (keyword, values) for the literal keys of dict-like containers; None for the rest.
        What this run just wrote into a dict it holds alone is what that key holds (`_write_through`)."""
        found: list = []
        written = frame.written if frame is not None and len(values) == 1 else {}
        for value in sorted(values, key=_sort_key):
            if isinstance(value, Container):
                for key in sorted(self.read(("keys", value.site)), key=_sort_key):
                    if isinstance(key, Const) and key.kind == "str":
                        item = written.get(("site", value.site, key)) if written else None
                        found.append((key.value, item if item is not None else self.read(("element", value.site, key))))
                anywhere = self.read(("element", value.site, ANY_KEY))
                if anywhere:
                    found.append((None, anywhere))
            else:
                found.append((None, JUST_UNKNOWN))
        return found

    def _construct(self, cls: Class, call: "_Call") -> frozenset:
        mro = self.mro(cls)
        frame = call.frame
        if self.is_fabric_class(cls):
            made = FabricValue(call.node, frame.scope.path, cls, variant=frame.variant)
            self._record_fabric_arguments(call)
            receiver = made
        else:
            meta = frame.meta or frame.default_meta
            made = Instance(cls, self._meta_for(meta, call) if meta is not None else None)
            receiver = made
            if meta is not None:
                self._event("meta_build", call, values=frozenset({made}))
        frame.constructed = call.node
        init = None
        for ref in mro:
            if isinstance(ref, Class) and not ref.external:
                if self._ask("class_binds", ref, "__init__"):
                    init = [v for v in self.read(("classattr", ref, "__init__")) if isinstance(v, Function)]
                    break
                fields = self._ask("dataclass_fields", ref)
                if fields is not None:
                    self._dataclass_fields(ref, fields, call)
                    break
            elif isinstance(ref, Lib):
                break
        for function in init or ():
            if not function.external:
                self._call_function(function.scope, [(False, frozenset({receiver}))] + call.args, call.kwargs, call.node, frame)
        return frozenset({made})

    def _dataclass_fields(self, cls: Class, fields: tuple[str, ...], call: "_Call") -> None:
        """A dataclass built by `call`: its fields get the arguments, the rest their defaults (a config
        built without overrides holds its defaults: known values). `**overrides` gives the fields it
        names by literal keys; what it may hold otherwise may be in any field not named."""
        given: set[str] = set()
        anywhere = NOTHING  # values that may land in any field not named (`*args`, `**unknown`)
        for index, (starred, values) in enumerate(call.args):
            if starred:
                anywhere = anywhere | self.iter_values(values) | JUST_UNKNOWN
                break
            if index >= len(fields):
                break
            self.write(("field", cls, fields[index]), self._with_declared(cls, fields[index], values))
            given.add(fields[index])
        for name, values in call.kwargs:
            if name is None:
                for key, item in self._expand_kwargs(values, call.frame):
                    if key is None:
                        anywhere = anywhere | item
                    elif key in fields:
                        self.write(("field", cls, key), item)
                        given.add(key)
                continue
            if name in fields:
                self.write(("field", cls, name), self._with_declared(cls, name, values))
                given.add(name)
        for name in fields:
            if name not in given:
                self.write(("field", cls, name), self._field_default(cls, name, call) | anywhere)

    def _field_default(self, cls: Class, name: str, call: "_Call") -> frozenset:
        """What a dataclass field holds when its constructor is not given it: the class body's value,
        or what `field(default=...)` / `field(default_factory=...)` makes (the factory is called)."""
        found = set()
        for value in self.read(("classattr", cls, name)):
            if isinstance(value, Special) and value.kind == "dataclass_field":
                found.update(self.read(("field_default", value.extra)))
                factory_call = _Call(call.node, None, [], [], call.frame, call.depth + 1)
                for factory in self.ordered(self.read(("field_factory", value.extra))):
                    if call.depth < MAX_PARTIAL_DEPTH:
                        found.update(self.call_value(factory, factory_call))
            else:
                found.add(value)
        return frozenset(found)

    # -- library semantics -----------------------------------------------------------------------------------
    def _library_call(self, qualified: str, call: "_Call") -> frozenset:
        name = normalize_torch_name(qualified)
        frame = call.frame
        if name in FABRIC_CLASS_NAMES:
            self._record_fabric_arguments(call)
            return frozenset({FabricValue(call.node, frame.scope.path, variant=frame.variant)})
        if name == "torch.compile":
            return frozenset(_compiled(value) for value in call.positional(0))
        if name == "dataclasses.field":  # its default (or factory) is the field's value: _field_default
            self.write(("field_default", call.node), call.keyword("default"))
            self.write(("field_factory", call.node), call.keyword("default_factory"))
            return frozenset({Special("dataclass_field", None, call.node)})
        if name in ("dataclasses.asdict", "builtins.vars"):
            return self._fields_as_dict(call.positional(0), call)
        if name in ("copy.deepcopy", "copy.copy"):
            return call.positional(0)  # the same values (what is written into the copy joins them)
        if name == "functools.partial":
            site = call.node
            self.write(("partial_function", site), call.positional(0))
            arguments = [values for starred, values in call.args[1:] if not starred]
            self.write(("arity", site), frozenset({const(len(arguments))}))
            for index, values in enumerate(arguments):
                self.write(("element", site, const(index)), values)
            for name_, values in call.kwargs:
                if name_ is not None:
                    self.write(("partial_keyword", site, name_), values)
            return frozenset({Partial(site, frame.scope.path)})
        if name == "torch.device":
            kinds = call.positional(0) | call.keyword("type")
            if const("meta") in kinds:
                return frozenset({Special("meta_device")})
            return JUST_UNKNOWN
        if name == "torch.set_default_device":
            kinds = call.positional(0) | call.keyword("device")
            if const("meta") in kinds or any(isinstance(v, Special) and v.kind == "meta_device" for v in kinds):
                frame.default_meta = MetaTag(("default_device", call.node, None, frame.scope.path, frozenset(), None,
                                              frame.variant))
            elif kinds and UNKNOWN not in kinds:
                frame.default_meta = None
            return frozenset({const(None)})
        if tables().is_materialize_function(name) or name.rsplit(".", 1)[-1] in (
            "_materialize_meta_tensors", "_materialize_distributed_module"
        ):
            self._event("materialize", call, values=call.positional(0), how=name.rsplit(".", 1)[-1])
            return frozenset({const(None)})
        if name in _FSDP_CLASSES or name.endswith(".FullyShardedDataParallel"):
            self._event("materialize", call, values=call.positional(0) | call.keyword("module"), how="fsdp")
            return JUST_UNKNOWN
        if name.startswith("lightning") and name.rsplit(".", 1)[-1] == "_unwrap_objects":
            found = set()
            for value in call.positional(0):
                if isinstance(value, Wrapped):
                    found.update(self.read(("setup_module", _site_key(value.site, value.variant))))
                else:
                    found.add(value)
            return frozenset(found)  # nothing yet is nothing, not unknown (see _record_fabric_arguments)
        short = name.rsplit(".", 1)[-1]
        if name.startswith("lightning") and tables().strategy(short) is not None and short[:1].isupper():
            return frozenset({StrategyObject(short)})
        if name.startswith("torch.nn.") and short[:1].isupper():
            meta = frame.meta or frame.default_meta
            made = Instance(Lib(name), self._meta_for(meta, call) if meta is not None else None)
            if meta is not None:
                self._event("meta_build", call, values=frozenset({made}))
            return frozenset({made})
        if name.startswith("torchmetrics") and short[:1].isupper():
            return frozenset({Instance(Lib(name))})
        if library_models.is_library_name(name):
            return self._library_results(library_models.result_classes(name, self._library_arguments(call)), call)
        if name.startswith("builtins."):
            return self._builtin_call(short, call)
        if name.startswith("torch.") and short not in _NO_GRAD_FUNCTIONS:
            return self._derived_output(call)  # `F.cross_entropy(out, y)`, `torch.stack([...])`
        return JUST_UNKNOWN

    def _fields_as_dict(self, objects: frozenset, call: "_Call") -> frozenset:
        """`dataclasses.asdict(obj)`, `vars(obj)`: a dict of the fields of the project instances given
        (a dict keyed by each field name); anything else gives an unknown dict."""
        site = call.node
        container = Container(site, call.frame.scope.path)
        chain = _chain(call.arg_exprs[0]) if call.arg_exprs and call.arg_exprs[0][0] != "star" else None
        written = call.frame.written if chain is not None and len(objects) == 1 else {}
        for value in objects:
            if value == const(None):
                continue  # asdict(None) raises: nothing flows from it (a factory's falling off its end)
            cls = value.cls if isinstance(value, Instance) else None
            if not isinstance(cls, Class) or cls.external:
                self.write(("element", site, ANY_KEY), JUST_UNKNOWN)
                self.write(("elements", site), JUST_UNKNOWN)
                continue
            for ref in self.mro(cls):
                if not isinstance(ref, Class) or ref.external:
                    continue
                fields = self._ask("dataclass_fields", ref)
                if fields is None:
                    continue
                for field_name in fields:
                    # `cfg.devices = 1` just before `asdict(cfg)`: the field is what was written last
                    item = written.get(("path", chain[0], chain[1] + (field_name,))) if written else None
                    if item is None:
                        item = self.read(("field", cls, field_name))
                    self._store_element(container, frozenset({const(field_name)}), item)
                break
            else:
                self.write(("element", site, ANY_KEY), JUST_UNKNOWN)
                self.write(("elements", site), JUST_UNKNOWN)
        return frozenset({container})

    def _library_results(self, classes, call: "_Call") -> frozenset:
        """Instances of the library classes (or families) a library call returns; a tuple of them for
        {index: classes}; unknown for None. Built under a meta-device context, they are meta models."""
        if classes is None:
            return JUST_UNKNOWN
        frame = call.frame
        meta = frame.meta or frame.default_meta

        def made(names) -> frozenset:
            found = set()
            for name in names:
                module = library_models.is_module(name)
                if not library_models.is_class(name):  # a config: its literal keywords may choose a factory's result
                    found.add(Instance(Lib(name), keywords=self._literal_keywords(call)))
                    continue
                instance = Instance(Lib(name), self._meta_for(meta, call) if meta is not None else None)
                if meta is not None and module:
                    self._event("meta_build", call, values=frozenset({instance}))
                found.add(instance)
            return frozenset(found)

        if isinstance(classes, dict):  # a tuple: a container whose elements are known by position
            site = call.node
            everything = NOTHING
            for index, names in sorted(classes.items()):
                values = made(names)
                self.write(("element", site, const(index)), values)
                everything = everything | values
            self.write(("elements", site), everything | JUST_UNKNOWN)
            return frozenset({Container(site, frame.scope.path)})
        return made(classes)

    @staticmethod
    def _literal_keywords(call: "_Call") -> tuple:
        found = []
        for name, values in call.kwargs:
            if name is not None and len(values) == 1:
                value = next(iter(values))
                if isinstance(value, Const) and value.kind == "str":
                    found.append((name, value.value))
        return tuple(sorted(found))

    def _library_arguments(self, call: "_Call") -> "library_models.CallArguments":
        """What a library factory may ask of its call's arguments (libraries/models.py)."""

        def values(position, keyword) -> frozenset:
            found = call.keyword(keyword) if keyword else NOTHING
            if position is not None and position < len(call.args) and not any(starred for starred, _ in call.args[:position + 1]):
                found = found | call.positional(position)
            return found

        def literal(position, keyword):
            found = values(position, keyword)
            if len(found) == 1:
                value = next(iter(found))
                if isinstance(value, Const) and value.kind == "str":
                    return value.value
            return None

        def attribute_literal(position, keyword, attribute):
            found = values(position, keyword)
            literals = set()
            for value in found:
                if not isinstance(value, Instance) or not isinstance(value.cls, Lib):
                    return None
                literals.add(dict(value.keywords).get(attribute))
            return literals.pop() if len(literals) == 1 else None

        def class_of(position, keyword):
            found = values(position, keyword)
            if len(found) == 1:
                value = next(iter(found))
                if isinstance(value, Instance) and isinstance(value.cls, Lib):
                    return value.cls.qualified
            return None

        def keyword(name):
            if any(key is None for key, _ in call.kwargs):
                return None  # **kwargs may hold it
            found = call.keyword(name)
            if not found:
                return "absent"
            if all(isinstance(v, Const) and v.value in (False, None) for v in found):
                return "false"
            if any(isinstance(v, Const) and v.value in (False, None) for v in found) or UNKNOWN in found:
                return None
            return "set"

        return library_models.CallArguments(literal, class_of, keyword, attribute_literal)

    def _builtin_call(self, name: str, call: "_Call") -> frozenset:
        frame = call.frame
        if name == "super":
            scope = frame.scope
            while scope is not None and scope.class_scope is None and scope.kind == ir.LAMBDA:
                scope = scope.parent
            if scope is None or scope.class_scope is None:
                return JUST_UNKNOWN
            cls = class_key(scope.class_scope)
            receivers = call.positional(1) if len(call.args) >= 2 else frame.self_values
            return frozenset(Super(cls, receiver) for receiver in receivers)
        if name == "getattr":
            names = call.positional(1)
            found = set()
            for attribute in names:
                if isinstance(attribute, Const) and attribute.kind == "str":
                    found.update(self.attribute(call.positional(0), attribute.value, None, frame))
                else:
                    found.add(UNKNOWN)
            if len(call.args) >= 3:
                found.update(call.positional(2))
            return frozenset(found)
        if name == "setattr":
            for attribute in call.positional(1):
                if isinstance(attribute, Const) and attribute.kind == "str":
                    self.store_attribute(call.positional(0), attribute.value, call.positional(2))
            return frozenset({const(None)})
        if name == "dict":
            site = call.node
            container = Container(site, frame.scope.path)
            for key, values in call.kwargs:
                if key is not None:
                    self._store_element(container, frozenset({const(key)}), values)
            for values in (call.positional(0),) if call.args else ():
                for value in values:
                    if isinstance(value, Container):
                        self.write(("element", site, ANY_KEY), self.read(("elements", value.site)))
                        self.write(("elements", site), self.read(("elements", value.site)))
            return frozenset({container})
        if name in ("list", "tuple", "set", "sorted", "reversed", "iter", "filter"):
            site = call.node
            values = self.iter_values(call.positional(0 if name != "filter" else 1)) if call.args else NOTHING
            self.write(("element", site, ANY_KEY), values)
            self.write(("elements", site), values)
            return frozenset({Container(site, frame.scope.path)})
        if name == "type" and len(call.args) == 1 and not call.kwargs:
            # `type(model.module)`: the class of an instance (so `type(m).generate` is the plain function);
            # of anything else (the Fabric wrapper, a value we cannot see) unknown.
            return frozenset(value.cls if isinstance(value, Instance) else UNKNOWN for value in call.positional(0))
        if name == "next":
            return self.iter_values(call.positional(0))
        if name == "enumerate":
            self.write(("iterable", call.node, 0), call.positional(0))
            return frozenset({Special("enumerate", call.node, frame.scope.path)})
        if name == "zip":
            plain = [values for starred, values in call.args if not starred]
            self.write(("arity", call.node), frozenset({const(len(plain))}))
            for index, values in enumerate(plain):
                self.write(("iterable", call.node, index), values)
            return frozenset({Special("zip", call.node, frame.scope.path)})
        return JUST_UNKNOWN

    def _special_call(self, special: Special, call: "_Call") -> frozenset:
        kind = special.kind
        if kind == "fabric_method":
            return self._fabric_call(special.receiver, special.extra, call)
        if kind == "fabric_init":
            # A Fabric subclass's own __init__ hands Fabric its arguments: those decide the strategy.
            self._record_fabric_arguments(call)
            if special.receiver.site is not None:
                self.write(("fabric_init", _site_key(special.receiver.site, special.receiver.variant)),
                           frozenset({Special("init_call", call.frame.variant, call.node)}))
            return _NONE
        if kind == "mark":
            self._mark(special.receiver, call)
            return frozenset({const(None)})
        if kind == "returns_receiver":
            return frozenset({special.receiver})
        if kind == "library_classmethod":
            owner = special.extra.rpartition(".")[0]
            classes = library_models.result_classes(special.extra, self._library_arguments(call))
            if classes == [library_models.known(owner)]:  # the receiver's class (cls)
                return self._tagged(frozenset({Instance(special.receiver)}), call)
            return self._library_results(classes, call)
        if kind == "container_method":
            return self._container_call(special.receiver, special.extra, call)
        if kind == "wrapped_forward":
            self._makes_output(call.frame)
            return frozenset({Output(special.receiver), UNKNOWN})
        if kind == "output_backward":
            self._event("backward", call, output=special.receiver, fabrics=self._fabric_names(call.frame))
            return frozenset({const(None)})
        return JUST_UNKNOWN

    @staticmethod
    def _local_argument(call: "_Call", keyword: str) -> bool:
        """Is the first argument (or `keyword=`) a name whose value here follows the statements in order: a
        local variable or parameter of a function, or a name at module level (not an attribute, whose
        values are read without order, nor a global read from inside a function)?"""
        node = call.node
        if not isinstance(node, ast.Call):
            return False
        argument = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == keyword), None)
        if not isinstance(argument, ast.Name):
            return False
        scope = call.frame.scope
        if scope.kind == ir.MODULE:
            return True
        return argument.id in scope.assigned and argument.id not in scope.declared_global \
            and argument.id not in scope.declared_nonlocal

    def _fabric_names(self, frame: _Frame) -> tuple:
        """The expressions naming a Fabric object where `loss.backward()` is called, for the fix
        `fabric.backward(loss)`: ((text, values), ...), a local or global name or `self.<attribute>`
        whose values are all Fabric objects."""
        found = []
        names = sorted(set(frame.env) | {"fabric"})
        for name in names:
            values = self._lookup(name, frame) if name in frame.env or name == "fabric" else NOTHING
            if values and all(isinstance(v, FabricValue) for v in values):
                found.append((name, values))
        if frame.self_values:
            for attribute in ("fabric", "_fabric"):
                values = self.attribute(frame.self_values, attribute, None, frame)
                if values and all(isinstance(v, FabricValue) for v in values):
                    found.append((f"self.{attribute}", values))
        return tuple(found)

    def _fabric_call(self, fabric: FabricValue, method: str, call: "_Call") -> frozenset:
        frame = call.frame
        if method in LAUNCH_CHECKED_METHODS:
            self._event("fabric_use", call, fabric=fabric, method=method)
        if method == "launch":
            node = call.node if isinstance(call.node, ast.Call) else None
            argument = None
            if node is not None:
                argument = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "function"), None)
            self._event("launch", call, fabric=fabric, functions=call.positional(0) | call.keyword("function"),
                        argument=argument)
        if method in ("setup", "setup_module"):
            site = call.node
            self._setup_sites.add(site)
            if len(self._setup_sites) > MAX_SETUP_SITES and not self.bound_hit:
                self.bound_hit = (
                    f"the value-flow analysis stopped at more than {MAX_SETUP_SITES} fabric.setup() calls "
                    "(counted, a memory bound); findings that depend on values passed between functions are left out"
                )
            modules = call.positional(0) | call.keyword("module")
            if not call.args and not call.keyword("module"):
                modules = JUST_UNKNOWN
            # A model already set up is refused ("A model should be passed only once to the setup
            # method"): a wrapper that reaches here (`agent.actor = fabric.setup_module(agent.actor)`
            # read without order) is no path of a program that runs.
            if any(isinstance(value, Wrapped) for value in modules):
                self._event("setup_again", call, values=modules, fabric=fabric, method=method,
                            local=self._local_argument(call, "module"))
            modules = frozenset(value for value in modules if not isinstance(value, Wrapped))
            self.write(("setup_module", site), modules)
            self.write(("setup_fabric", site), frozenset({fabric}))
            if frame.variant:  # kept per case too: Wrapped values of a case read their own
                self.write(("setup_module", (site, frame.variant)), modules)
                self.write(("setup_fabric", (site, frame.variant)), frozenset({fabric}))
            self._event("setup", call, values=modules, fabric=fabric)
            wrapped = Wrapped(site, frame.scope.path, frame.variant)
            self._carry(frame, frozenset({wrapped}))
            if method == "setup_module":
                return frozenset({wrapped})
            optimizers = [values for starred, values in call.args[1:]]
            open_ = any(starred for starred, _ in call.args[1:])
            extra = len([k for k, _ in call.kwargs if k == "scheduler"])
            if not optimizers and not open_ and not extra:
                return frozenset({wrapped})
            site = (site, "returned")  # (model, *optimizers[, scheduler])
            self.write(("element", site, const(0)), frozenset({wrapped}))
            for index in range(1, len(optimizers) + extra + 1):
                self.write(("element", site, const(index) if not open_ else ANY_KEY), JUST_UNKNOWN)
            self.write(("elements", site), frozenset({wrapped, UNKNOWN}))
            return frozenset({Container(site, frame.scope.path)})
        if method == "setup_dataloaders":
            node = call.node
            nodes = node.args if isinstance(node, ast.Call) else []
            for (starred, values), argument in zip(call.args, nodes):
                if not starred:
                    self._event("setup_dataloaders", call, values=values, argument=argument, fabric=fabric)
            return JUST_UNKNOWN
        if method == "no_backward_sync":
            values = call.positional(0) | call.keyword("module")
            self._event("no_backward_sync", call, values=values, fabric=fabric)
            return JUST_UNKNOWN
        if method == "setup_optimizers":
            self._event("setup_optimizers", call, fabric=fabric)
            return JUST_UNKNOWN
        if method == "init_module":
            key = ("init_kw", _site_key(call.node, frame.variant))
            self.write(key, call.keyword("empty_init") or frozenset({const(None)}))
            if call.args:
                self.write(key, call.positional(0))
            return frozenset({Special("init_module", fabric, call.node)})
        if method == "call":
            return self._callback_call(fabric, call)
        if method == "launch":
            functions = call.positional(0) | call.keyword("function")
            if not functions:
                return JUST_UNKNOWN
            if call.depth >= MAX_PARTIAL_DEPTH:
                return JUST_UNKNOWN
            inner = _Call(call.node, call.func_expr, [(False, frozenset({fabric}))] + call.args[1:], call.kwargs, frame,
                          call.depth + 1)
            result = NOTHING
            for function in self.ordered(functions):
                result = result | self.call_value(function, inner)
            return result
        return JUST_UNKNOWN

    def _callback_call(self, fabric: FabricValue, call: "_Call") -> frozenset:
        """`fabric.call("on_epoch_end", model=model)`: every callback given as `Fabric(callbacks=...)` that
        has a method of that name gets the other arguments (keywords its signature does not take are left
        out, as Lightning does; _bind_call drops them unless it has **kwargs)."""
        hooks = [v.value for v in call.positional(0) | call.keyword("hook_name") if isinstance(v, Const) and v.kind == "str"]
        if not hooks or fabric.site is None or call.depth >= MAX_PARTIAL_DEPTH:
            return _NONE
        callbacks = set()
        for node in [fabric.site] + [v.extra for v in self.ordered(self.read(("fabric_init", fabric.site)))]:
            given = self.read(("fabric_kw", node, "callbacks"))
            for spread in self.read(("fabric_kw", node, "**")):
                if isinstance(spread, Container):
                    given = given | self.read(("element", spread.site, const("callbacks")))
            for value in given:
                callbacks.update(self.iter_values(frozenset({value})) if isinstance(value, Container) else (value,))
        inner = _Call(call.node, call.func_expr, call.args[1:], [(k, v) for k, v in call.kwargs if k != "hook_name"],
                      call.frame, call.depth + 1)
        for callback in self.ordered(v for v in callbacks if isinstance(v, Instance) and isinstance(v.cls, Class)):
            for hook in hooks:
                for method in self.ordered(self.attribute(frozenset({callback}), hook, None, call.frame)):
                    if isinstance(method, (Bound, Function)) and not (isinstance(method, Bound) and method.function.external):
                        self.call_value(method, inner)
        return _NONE

    def _container_call(self, container: Container, method: str, call: "_Call") -> frozenset:
        site = container.site
        if method in ("append", "add", "insert"):
            values = call.positional(1 if method == "insert" else 0)
            self.write(("element", site, ANY_KEY), values)
            self.write(("elements", site), values)
            return frozenset({const(None)})
        if method == "extend":
            values = self.iter_values(call.positional(0))
            self.write(("element", site, ANY_KEY), values)
            self.write(("elements", site), values)
            return frozenset({const(None)})
        if method == "update":
            frame = call.frame
            fresh = ("site", site) in frame.fresh
            for name, values in call.kwargs:
                if name is not None:
                    self._store_element(container, frozenset({const(name)}), values)
                    self._write_through(frame, ("site", site, const(name)), values, fresh)
                else:
                    self._forget(frame, lambda key: key[0] == "site" and key[1] is site)
            for value in call.positional(0):
                if isinstance(value, Container):
                    self.write(("element", site, ANY_KEY), self.read(("elements", value.site)))
                    self.write(("elements", site), self.read(("elements", value.site)))
                self._forget(frame, lambda key: key[0] == "site" and key[1] is site)
            return frozenset({const(None)})
        if method in ("pop", "clear", "popitem"):
            self._forget(call.frame, lambda key: key[0] == "site" and key[1] is site)
        if method in ("get", "pop", "setdefault"):
            keys = call.positional(0)
            found = set(self.subscript(frozenset({container}), keys))
            if method == "setdefault" and len(call.args) > 1:
                self._store_element(container, keys, call.positional(1))
            if len(call.args) > 1:
                found.update(call.positional(1))
            return frozenset(found)
        if method == "items":
            return frozenset({Special("items", container, container.path)})
        if method in ("values", "copy"):
            return frozenset({container})
        return JUST_UNKNOWN

    def _mark(self, wrapped: Wrapped, call: "_Call") -> None:
        frame = call.frame
        arguments = call.positional(0) | call.keyword("method")
        names = set()
        unknown = False
        for value in arguments:
            if isinstance(value, Const) and value.kind == "str":
                names.add(value.value)
            elif isinstance(value, WrappedMethod):
                names.add(value.name)
            elif isinstance(value, Bound) and not value.function.external:
                names.add(value.function.scope.name)
            elif isinstance(value, Function) and not value.external:
                names.add(value.scope.name)
            else:
                unknown = True
        argument_node = None
        node = call.node
        if isinstance(node, ast.Call):
            argument_node = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "method"), None)
        self._event("mark", call, wrapped=wrapped, arguments=arguments, names=frozenset(names), unknown=unknown,
                    argument=argument_node)
        marks = frozenset(Marked(wrapped, name) for name in names)
        frame.marked = frame.marked | marks
        self._made.update(marks)

    # -- strategies ---------------------------------------------------------------------------------------------
    def _record_fabric_arguments(self, call: "_Call") -> None:
        site = call.node
        self.write(("fabric_call", site), frozenset({Special("fabric_call", None, call.frame.scope.path)}))
        key = _site_key(site, call.frame.variant)
        for name, values in call.kwargs:
            # No value yet is not an unknown value: written as unknown, a run that comes before the
            # caller's would leave it for good. A keyword with no value at the end is unknown
            # (_strategy_from).
            if name is not None:
                self.write(("fabric_kw", key, name), values)
                continue
            # `Fabric(**config)`: the literal keys of the dicts it may be, as they are at this call
            # (what the function wrote into its own dict last); what cannot be told by key is "**".
            if any(isinstance(value, Container) for value in values):
                self.write(("fabric_spread", key), frozenset({const(None)}))  # a dict seen (maybe empty)
            for spread, item in self._expand_kwargs(values, call.frame):
                if spread is None:
                    self.write(("fabric_kw", key, "**"), item)
                else:
                    self.write(("fabric_kw", key, spread), item)
                    self.write(("fabric_spread", key), frozenset({const(spread)}))

    def strategy(self, fabric: FabricValue) -> Strategy:
        """The strategy of a Fabric object, from the arguments its constructor got (after the solve);
        for a subclass whose __init__ calls `super().__init__(...)`, from the arguments of that call."""
        if fabric.site is None:
            return Strategy(UNKNOWN_STRATEGY, fabric.origin or "a Fabric passed in", None)
        cached = self._strategies.get((id(fabric.site), fabric.variant))
        if cached is None:
            inits = self.ordered(self.peek(("fabric_init", _site_key(fabric.site, fabric.variant))))
            if not inits:
                cached = self._strategy_from(fabric.site, fabric.path, fabric.variant)
            else:
                cached = _combined([self._strategy_from(v.extra, fabric.path, v.receiver) for v in inits])
            when = self._when(fabric.variant, fabric.path)
            if when:
                cached = cached._replace(when=when)
            self._strategies[(id(fabric.site), fabric.variant)] = cached
        return cached

    def _constructor_keywords(self, node: ast.AST, path: str, variant=None) -> tuple[dict, dict] | None:
        """(keyword -> values, keyword -> its source text) of a Fabric constructor call (after the
        solve); None for `Fabric(**config)` whose keys cannot all be seen."""
        keywords: dict[str, frozenset] = {}
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                name = keyword.arg if keyword.arg is not None else "**"
                keywords[name] = self.peek(("fabric_kw", _site_key(node, variant), name)) or JUST_UNKNOWN
        if "**" in keywords:
            # `Fabric(**config)`: the literal keys of the dicts it may be (_record_fabric_arguments);
            # anything else, or nothing seen at all, is unknown.
            keywords.pop("**")
            key = _site_key(node, variant)
            spread = self.peek(("fabric_spread", key))
            if self.peek(("fabric_kw", key, "**")) or not spread:
                return None
            for name in self.ordered(spread):
                if isinstance(name.value, str):
                    keywords[name.value] = keywords.get(name.value, NOTHING) | self.peek(("fabric_kw", key, name.value))
        texts = {}
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg:
                    texts[keyword.arg] = self.program.segment(path, keyword.value)
        return keywords, texts

    def backward_hook(self, fabric: FabricValue) -> tuple[bool | None, str]:
        """Does `_FabricModule.forward` register a backward hook that raises on `loss.backward()` under
        this Fabric (its strategy or precision plugin overrides backward: mixed precision, FSDP,
        DeepSpeed)? True / False / None (not visible), and the setting that decides, for a message."""
        if fabric.site is None:
            return None, fabric.origin or "a Fabric passed in"
        inits = [(v.extra, v.receiver) for v in self.ordered(self.peek(("fabric_init", _site_key(fabric.site, fabric.variant))))] \
            or [(fabric.site, fabric.variant)]
        verdicts = [self._backward_hook_from(node, fabric.path, variant) for node, variant in inits]
        kinds = {verdict for verdict, _ in verdicts}
        if len(kinds) == 1:
            return verdicts[0]
        return None, " or ".join(text for _, text in verdicts)

    def _backward_hook_from(self, node: ast.AST, path: str, variant=None) -> tuple[bool | None, str]:
        found = self._constructor_keywords(node, path, variant)
        if found is None:
            return None, "a configuration passed as **kwargs"
        keywords, texts = found
        strategies = keywords.get("strategy", frozenset({const("auto")})) or JUST_UNKNOWN
        verdicts = set()
        for value in strategies:
            named = value.value if isinstance(value, Const) and value.kind == "str" else (
                value.name if isinstance(value, StrategyObject) else None)
            if named is None:
                verdicts.add(None)
                continue
            lowered = named.lower()
            if lowered.startswith(("fsdp", "deepspeed")):
                verdicts.add(True)  # FSDPPrecision / DeepSpeedPrecision override backward, whatever the precision
            elif lowered.startswith("xla"):
                verdicts.add(False)  # XLAPrecision does not
            else:
                verdicts.add("precision")
        strategy_text = f"strategy={texts['strategy']}" if "strategy" in texts else "strategy"
        if verdicts == {True}:
            return True, strategy_text
        if verdicts == {False}:
            return False, strategy_text
        if None in verdicts or True in verdicts or False in verdicts:
            return None, f"a strategy chosen at run time ({strategy_text})"
        if "plugins" in keywords:
            return None, f"plugins={texts.get('plugins', '...')}"  # a precision plugin may be among them
        precisions = keywords.get("precision")
        if precisions is None:
            return False, "the default precision (\"32-true\")"
        literal = [v.value for v in precisions if isinstance(v, Const)] if len(precisions) == 1 else []
        shown = texts.get("precision") or (json.dumps(literal[0]) if literal else "...")  # from a **config dict
        precision_text = f"precision={shown}"
        answers = set()
        for value in precisions:
            raw = value.value if isinstance(value, Const) and value.kind in ("str", "int") else object()
            answers.add(True if raw in _HOOKING_PRECISIONS else False if raw in _PLAIN_PRECISIONS else None)
        if answers == {True}:
            return True, precision_text
        if answers == {False}:
            return False, precision_text
        return None, f"a precision chosen at run time ({precision_text})"

    def strategy_names(self, fabric: FabricValue) -> frozenset | None:
        """The strategy names a Fabric is given (`"deepspeed_stage_2"`, `"DeepSpeedStrategy"`; `"auto"`
        when none), after the solve; None when one of them cannot be read."""
        if fabric.site is None:
            return None
        inits = [(v.extra, v.receiver) for v in self.ordered(self.peek(("fabric_init", _site_key(fabric.site, fabric.variant))))] \
            or [(fabric.site, fabric.variant)]
        names = set()
        for node, variant in inits:
            found = self._constructor_keywords(node, fabric.path, variant)
            if found is None:
                return None
            for value in found[0].get("strategy", frozenset({const("auto")})) or JUST_UNKNOWN:
                if isinstance(value, Const) and value.kind == "str":
                    names.add(value.value)
                elif isinstance(value, StrategyObject):
                    names.add(value.name)
                else:
                    return None
        return frozenset(names)

    def _strategy_from(self, node: ast.AST, path: str, variant=None) -> Strategy:
        found = self._constructor_keywords(node, path, variant)
        if found is None:
            return Strategy(UNKNOWN_STRATEGY, "a configuration passed as **kwargs", None)
        keywords, texts = found
        strategy_values = keywords.get("strategy", frozenset({const("auto")})) or JUST_UNKNOWN
        alternatives: list[Strategy] = []
        for value in sorted(strategy_values, key=_sort_key):
            alternatives.append(self._one_strategy(value, keywords, texts, node))
        if len(alternatives) == 1:
            return alternatives[0]
        kinds = {a.kind for a in alternatives}
        materializes = {a.materializes for a in alternatives}
        merged_materializes = materializes.pop() if len(materializes) == 1 else None
        how = _merged_how(alternatives)
        launch = _merged_launch(alternatives)
        shown = texts.get("strategy") or " or ".join(
            json.dumps(v.value) if isinstance(v, Const) else "..." for v in sorted(strategy_values, key=_sort_key))
        described = f"strategy={shown}"
        if kinds == {WRAPPING}:
            return Strategy(WRAPPING, described, merged_materializes, how, launch=launch)
        if kinds == {SINGLE}:
            return Strategy(SINGLE, described, merged_materializes, how, launch=launch)
        return Strategy(UNKNOWN_STRATEGY, f"a strategy chosen at run time ({described})", merged_materializes, how,
                        launch=launch)

    def empty_init(self, init_call: ast.AST | None, variant=None):
        """True, False or "maybe": what `init_module(empty_init=...)` was given (after the solve)."""
        values = self.peek(("init_kw", _site_key(init_call, variant))) if init_call is not None else NOTHING
        if not values or values <= {const(False), const(None)}:
            return False
        if values == {const(True)}:
            return True
        return "maybe"

    def _one_strategy(self, value, keywords: dict, texts: dict, node) -> Strategy:
        strategy_text = texts.get("strategy")
        if strategy_text is None and isinstance(value, Const) and value.value != "auto":
            strategy_text = json.dumps(value.value)  # from a **config dict: shown as a literal
        described = f"strategy={strategy_text}" if strategy_text else ""
        named = None
        if isinstance(value, Const) and value.kind == "str":
            named = value.value
        elif isinstance(value, StrategyObject):
            named = value.name
        else:
            return Strategy(UNKNOWN_STRATEGY, f"a strategy chosen at run time (strategy={strategy_text or '...'})", None)
        if described and named not in strategy_text:  # `strategy=strategy`: say which one it is here
            described += f" ({json.dumps(named) if isinstance(value, Const) else named})"
        elif described and isinstance(value, Const) and strategy_text != json.dumps(named) \
                and strategy_text.replace("'", '"') != json.dumps(named):
            described = f"strategy={json.dumps(named)}"  # one value of `"ddp" if args.distributed else "auto"`
        materializes = any(named.startswith(prefix) for prefix in _MATERIALIZING)
        how = ("model_parallel" if named.startswith(("model_parallel", "ModelParallel")) else "fsdp") if materializes else None
        if named != "auto":
            wraps = tables().strategy_wraps(named)
            launch = _launch_of(named, keywords.get("accelerator"))
            if wraps is True:
                return Strategy(WRAPPING, described, materializes, how, launch=launch)
            if wraps is False:
                return Strategy(SINGLE, described, materializes, how, launch=launch)
            return Strategy(UNKNOWN_STRATEGY, described or f"strategy {named!r}", None)
        devices = keywords.get("devices")
        accelerator = keywords.get("accelerator")
        nodes = keywords.get("num_nodes")
        node_counts = {_int_of(v) for v in nodes} if nodes else {1}
        if None in node_counts:
            return Strategy(UNKNOWN_STRATEGY, f"num_nodes={texts.get('num_nodes', '...')} chosen at run time", None)
        if max(node_counts) > 1:
            if min(node_counts) > 1:
                return Strategy(WRAPPING, f"num_nodes={texts.get('num_nodes')}", False, launch=LAUNCH_SCRIPT)
            return Strategy(UNKNOWN_STRATEGY, f"num_nodes={texts.get('num_nodes')}", False)
        counts = self._device_counts(devices, accelerator, node, texts)
        if counts is None or None in counts:
            described = f"devices={texts['devices']}" if "devices" in texts else "devices chosen by the machine (devices=\"auto\")"
            return Strategy(UNKNOWN_STRATEGY, described, None, launch=None if "devices" in texts else LAUNCH_MACHINE)
        if min(counts) > 1:
            return Strategy(WRAPPING, f"devices={texts.get('devices')}", False, launch=LAUNCH_SCRIPT)
        if max(counts) > 1:
            return Strategy(UNKNOWN_STRATEGY, f"devices={texts.get('devices')} chosen at run time", False)
        shown = ", ".join(f"{k}={_shown(k, texts, keywords)}" for k in ("accelerator", "devices", "strategy")
                          if _shown(k, texts, keywords)) or "Fabric()"
        return Strategy(SINGLE, shown, False, launch=LAUNCH_NONE)

    def _device_counts(self, devices, accelerator, node, texts) -> set | None:
        cpu = accelerator is not None and accelerator == frozenset({const("cpu")})
        if devices is None:
            return {1} if cpu else None
        literal = None
        if isinstance(node, ast.Call):
            literal = next((k.value for k in node.keywords if k.arg == "devices"), None)
        if isinstance(literal, (ast.List, ast.Tuple)):
            return {len(literal.elts)}
        counts = set()
        for value in devices:
            if isinstance(value, Const):
                raw = value.value
                if raw in ("auto", -1, "-1"):
                    counts.add(1 if cpu else None)
                elif isinstance(raw, bool):
                    counts.add(None)
                elif isinstance(raw, int):
                    counts.add(raw)
                elif isinstance(raw, str):
                    parts = [part for part in raw.split(",") if part.strip()]
                    if len(parts) > 1 or raw.strip().endswith(","):
                        counts.add(len(parts))
                    else:
                        try:
                            counts.add(int(raw))
                        except ValueError:
                            counts.add(None)
                else:
                    counts.add(None)
            else:
                counts.add(None)
        return counts or None

    # -- events ----------------------------------------------------------------------------------------------------
    def _event(self, kind: str, call: "_Call", **data) -> None:
        self._event_at(kind, call.node, call.frame, **data)

    def _event_at(self, kind: str, node, frame: _Frame, **data) -> None:
        if frame.expecting and kind in _EXPECTED_KINDS:
            return  # `with pytest.raises(...)`: the error is what the test wants
        self._events.append(Event(kind, node, frame.scope.path, frame.scope, frame.statement, data, frame.variant))


class _Receivers(tuple):
    """A project method and every receiver it is bound to at one call (Solver._grouped_callees)."""

    __slots__ = ()

    def __new__(cls, function: Function, receivers: frozenset) -> "_Receivers":
        return tuple.__new__(cls, (function, receivers))

    function = property(lambda self: self[0])
    receivers = property(lambda self: self[1])


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


_FABRIC_API = frozenset((
    "setup", "setup_module", "setup_optimizers", "setup_dataloaders", "init_module", "init_tensor", "launch",
    "backward", "clip_gradients", "autocast", "to_device", "print", "barrier", "broadcast", "gather", "all_gather",
    "all_reduce", "save", "load", "load_raw", "no_backward_sync", "sharded_model", "rank_zero_first", "log",
    "log_dict", "call", "seed_everything", "strategy", "accelerator", "device", "global_rank", "local_rank",
    "node_rank", "world_size", "is_global_zero", "loggers", "logger", "_strategy", "_connector", "_precision",
    "run", "_run_impl", "_wrap_and_launch", "_prepare_run_method",
))


def library_defines(qualified: str, name: str) -> bool:
    """Does a library base class define `name` (so the MRO search stops there)?"""
    if library_models.is_library_name(qualified) and library_models.is_class(qualified):
        return library_models.defines(qualified, name) or name.startswith("__")
    if qualified in FABRIC_CLASS_NAMES:
        return name in _FABRIC_API or name.startswith("__")
    if qualified.startswith("torch.nn.") or qualified.startswith("torchmetrics"):
        facts = library_module_facts(normalize_torch_name(qualified))
        attributes = facts.attributes if facts is not None else nn_module_attributes()
        return name in attributes or name.startswith("__")
    return name.startswith("__") or qualified.startswith("builtins.")


_EXPECTED_KINDS = frozenset(("wcall", "mark", "materialize", "meta_build", "backward", "setup_again",
                             "setup_dataloaders", "no_backward_sync", "setup_optimizers", "fabric_use", "launch"))
# Fabric methods that call `Fabric._validate_launched()` first (Lightning 2.6.6, lightning/fabric/fabric.py).
LAUNCH_CHECKED_METHODS = frozenset((
    "setup", "setup_module", "setup_optimizers", "setup_dataloaders", "init_module", "barrier", "broadcast",
    "all_gather", "all_reduce", "sharded_model",
))
_EXPECTING_CALLS = frozenset(("raises", "warns", "assertRaises", "assertRaisesRegex", "assertWarns", "assertWarnsRegex"))




def _may_be_none(value) -> bool:
    return value == _NONE_CONST or isinstance(value, Unknown)


def _expects_error(expr: ast.AST) -> bool:
    """`pytest.raises(...)`, `pytest.warns(...)`, `self.assertRaises(...)` as a context manager."""
    if not isinstance(expr, ast.Call):
        return False
    func = expr.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name in _EXPECTING_CALLS


def _last_name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


_MODELED_LIBRARY = ("functools.partial", "builtins.")


def _opaque(callee) -> bool:
    """Is this a callee whose body the analysis does not follow (what it does with functions it gets
    is unknown)? Library calls with modelled semantics, project functions and classes are not."""
    if isinstance(callee, Unknown):
        return True
    if isinstance(callee, Function) and callee.external:
        return True
    if isinstance(callee, Bound) and callee.function.external:
        return True
    if isinstance(callee, Lib):
        return not callee.qualified.startswith(_MODELED_LIBRARY) and callee.qualified not in FABRIC_CLASS_NAMES
    if isinstance(callee, Special):
        return callee.kind == "lib_method"
    return False


def _keyword_names(site) -> list[str]:
    if isinstance(site, ast.Call):
        return [k.arg for k in site.keywords if k.arg]
    return []


def _combined(strategies: list[Strategy]) -> Strategy:
    if len(strategies) == 1:
        return strategies[0]
    kinds = {s.kind for s in strategies}
    materializes = {s.materializes for s in strategies}
    merged = materializes.pop() if len(materializes) == 1 else None
    how = _merged_how(strategies)
    description = " or ".join(dict.fromkeys(s.description for s in strategies))
    launch = _merged_launch(strategies)
    if len(kinds) == 1:
        return Strategy(kinds.pop(), description, merged, how, launch=launch)
    return Strategy(UNKNOWN_STRATEGY, f"a strategy chosen at run time ({description})", merged, how, launch=launch)


def _merged_launch(strategies: list[Strategy]):
    """The launch need shared by every alternative; None (unknown) when they differ."""
    launches = {s.launch for s in strategies}
    return launches.pop() if len(launches) == 1 else None


# Strategies that need `launch()` (Fabric._validate_launched refuses all but these two classes), and the
# registry keys whose launcher spawns or forks processes (_MultiProcessingLauncher, _XLALauncher): their
# `launch()` needs the function to run in the new processes.
_NO_LAUNCH_CLASSES = frozenset(("SingleDeviceStrategy", "SingleDeviceXLAStrategy", "SingleTPUStrategy"))
_SPAWNING_KEYS = frozenset(("ddp_spawn", "ddp_fork", "ddp_notebook", "xla", "xla_fsdp"))


def _launch_of(named: str, accelerator: frozenset | None):
    """What `strategy=<named>` (a registry key or a strategy class name) needs before setup."""
    facts = tables().strategy(named)
    if facts is None or facts.wraps_module is None:
        return None  # unknown, or a base class: a subclass decides
    if facts.name in _NO_LAUNCH_CLASSES:
        return LAUNCH_NONE
    if facts.name == "DataParallelStrategy":
        # "dp" on a CPU falls back to "ddp" (_Connector._check_strategy_and_fallback); on GPUs it is DP.
        if accelerator == frozenset({const("cpu")}):
            return LAUNCH_SCRIPT
        if accelerator is not None and accelerator <= {const("cuda"), const("gpu")}:
            return LAUNCH_NONE
        return LAUNCH_MACHINE
    return LAUNCH_SPAWN if named.lower() in _SPAWNING_KEYS else LAUNCH_SCRIPT


def _merged_how(strategies: list[Strategy]) -> object:
    """How the alternatives materialize, together: one way, or "mixed" when it depends on which runs."""
    hows = {s.how for s in strategies}
    materializes = {s.materializes for s in strategies}
    if len(hows) == 1 and len(materializes) == 1:
        return hows.pop()
    if hows == {None}:
        return None
    return "mixed"


def _is_generic_class(qualified: str) -> bool:
    """A library name that subscripts into a generic alias of a class (`Generic[T]`, `dict[str, int]`,
    `nn.ModuleList`), not into an element (`os.environ["X"]`)."""
    module, _, name = qualified.rpartition(".")
    return module in ("typing", "typing_extensions", "collections.abc", "builtins") or name[:1].isupper()


def _compiled(value):
    if isinstance(value, Instance):
        return value._replace(compiled=True)
    return value


_NO = object()  # Solver._static: not a constant of the program
_MAX_FOLDED = 64  # combinations of operand values folded at one comparison


def _truth(value) -> bool | None:
    """The truth value of a constant (None for anything else: it may be either)."""
    if isinstance(value, Const):
        return bool(value.value)
    return None


def _fold(operands: list, compute) -> frozenset:
    """An operation on sets of values, value by value: constants give the constant computed (when the
    operation is defined on them), anything else is unknown. Empty stays empty (nothing yet)."""
    if any(not values for values in operands):
        return NOTHING
    for values in operands:  # an operand with no constant: every combination is unknown
        if not any(type(value) is Const for value in values):
            return JUST_UNKNOWN
    count = 1
    for values in operands:
        count *= len(values)
    if count > _MAX_FOLDED:
        return JUST_UNKNOWN
    found = set()
    combinations = [[]]
    for values in operands:
        combinations = [chosen + [value] for chosen in combinations for value in values]
    for chosen in combinations:
        if not all(isinstance(value, Const) for value in chosen):
            found.add(UNKNOWN)
            continue
        result = compute([value.value for value in chosen])
        found.add(UNKNOWN if result is _NO else const(result))
    return frozenset(found)


_SINGLETONS = (None, True, False)


def _compare(op: str, left, right):
    try:
        if op == "Eq":
            return left == right
        if op == "NotEq":
            return left != right
        if op in ("Is", "IsNot"):
            if left in _SINGLETONS and type(left) is not int or right in _SINGLETONS and type(right) is not int:
                same = left is right
                return same if op == "Is" else not same
            return _NO
        if op in ("In", "NotIn"):
            if isinstance(right, str) and isinstance(left, str):
                return (left in right) if op == "In" else (left not in right)
            return _NO
        if isinstance(left, (int, float)) and isinstance(right, (int, float)) or isinstance(left, str) and isinstance(right, str):
            return {"Lt": left < right, "LtE": left <= right, "Gt": left > right, "GtE": left >= right}.get(op, _NO)
    except Exception:  # noqa: BLE001 - a comparison the program would fail on: not a constant
        return _NO
    return _NO


def _compare_chain(values: list, ops: list):
    """`a < b < c` on constants: True, False, or _NO when one comparison is not defined on them."""
    result = True
    for op, left, right in zip(ops, values, values[1:]):
        step = _compare(op, left, right)
        if step is _NO:
            return _NO
        if not step:
            return False
    return result


def _unary(op: str, value):
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if op == "USub":
            return -value
        if op == "UAdd":
            return value
        if op == "Invert" and isinstance(value, int):
            return ~value
    if op == "Not":
        return not value
    return _NO


def _strip_not(test: tuple) -> tuple[tuple, bool]:
    """(the test without its leading `not`s, whether the branch is taken when that is true)."""
    polarity = True
    while test[0] == "not":
        test = test[1]
        polarity = not polarity
    return test, polarity


def _condition_key(expr: tuple):
    """A structural key for a test that reads the same value wherever it is written in one scope:
    a name, an attribute chain or a literal subscript of one (`args.model_parallel`, `cfg["fsdp"]`),
    or a comparison of these with literals; None for anything else (calls may differ each time)."""
    kind = expr[0]
    if kind == "name":
        return ("name", expr[1])
    if kind == "const":
        return ("const", type(expr[1]).__name__, expr[1])
    if kind == "attr":
        inner = _condition_key(expr[1])
        return None if inner is None or inner[0] == "const" else ("attr", inner, expr[2])
    if kind == "sub":
        inner, index = _condition_key(expr[1]), _condition_key(expr[2])
        if inner is None or inner[0] == "const" or index is None or index[0] != "const":
            return None
        return ("sub", inner, index)
    if kind == "compare":
        parts = [_condition_key(expr[1])] + [_condition_key(right) for _, right in expr[2]]
        if any(part is None for part in parts) or all(part[0] == "const" for part in parts):
            return None
        return ("compare", tuple(parts), tuple(op for op, _ in expr[2]))
    return None


def _condition_roots(key) -> set[str]:
    if key[0] == "name":
        return {key[1]}
    if key[0] in ("attr", "sub"):
        return _condition_roots(key[1])
    if key[0] == "compare":
        return set().union(*(_condition_roots(part) for part in key[1] if part[0] != "const"))
    return set()


# Calls and literals that make a branch matter to the rules: it builds a Fabric or a strategy,
# chooses a device, the meta device or `empty_init`, sets a model up or marks a method.
_RELEVANT_CALLS = frozenset((
    "init_module", "device", "set_default_device", "setup", "setup_module", "mark_forward_method", "compile",
    "_materialize_meta_tensors", "_materialize_distributed_module", "FullyShardedDataParallel",
))
_SPLIT_TOKENS = ("Fabric", "Lite", "Strategy", "strategy", "init_module", "meta", "set_default_device", "materialize")
_RELEVANT_KEYWORDS = frozenset(("strategy", "devices", "num_nodes", "empty_init", "accelerator"))
_RELEVANT_STRINGS = frozenset((
    "ddp", "ddp_spawn", "ddp_fork", "ddp_notebook", "fsdp", "deepspeed", "dp", "model_parallel", "xla", "xla_fsdp",
    "meta", "single_device", "auto", "cpu", "cuda", "gpu",
))


class _Decider(tuple):
    """The condition one scope's interpretation is split on: (structural key, its first test node,
    the condition as an expression)."""

    __slots__ = ()
    key = property(lambda self: self[0])
    node = property(lambda self: self[1])
    expression = property(lambda self: self[2])


def _decider(scope: ir.Scope):
    """The condition that decides the most branches of `scope` (two or more) of which one matters
    to the rules (`if use_model_parallel:` that chooses the strategy, then the meta device), or None. Read from
    the scope's own statements (not nested scopes), so it is the same on every run: the split is
    static and the interpretation stays monotone. A condition whose names are bound again after
    its first test, or inside a loop, is not one value and is not split on."""
    cached = scope.__dict__.get("_fabric_lsp_decider", False)
    if cached is not False:
        return cached
    tests: dict = {}  # key -> [count, first position, first node, relevant, expression]
    bindings: list[tuple[int, str, bool]] = []  # (position, root name, inside a loop)
    position = [0]

    def bind(pattern, in_loop: bool) -> None:
        kind = pattern[0]
        if kind == "name":
            bindings.append((position[0], pattern[1], in_loop))
        elif kind in ("attr", "sub"):
            root = pattern[1]
            while root[0] in ("attr", "sub"):
                root = root[1]
            if root[0] == "name":
                bindings.append((position[0], root[1], in_loop))
        elif kind in ("tuple",):
            for inner in pattern[1]:
                bind(inner, in_loop)
        elif kind == "star":
            bind(pattern[1], in_loop)

    def test(expr, node, branches, in_loop) -> None:
        core, _ = _strip_not(expr)
        key = _condition_key(core)
        if key is None or key[0] == "const" or any(name.startswith("__") for name in _condition_roots(key)):
            return  # `if __name__ == "__main__":` chooses nothing the rules read
        entry = tests.setdefault(key, [0, position[0], node, [], core])
        entry[0] += 1
        entry[3].extend(branches)  # whether one of them matters is read only for conditions tested twice

    def walk_expr(expr, in_loop) -> None:
        # Conditional expressions where a statement writes them (`x = a if c else b`, `return ...`)
        # or as an argument (`Fabric(strategy="ddp" if c else "auto")`): a shallow look, not a
        # walk of every expression (this runs for every scope of the program).
        position[0] += 1
        kind = expr[0]
        if kind == "ifexp":
            test(expr[1], expr[4], (expr[2], expr[3]), in_loop)
        elif kind == "walrus":
            bindings.append((position[0], expr[1], in_loop))
        elif kind == "call":
            for argument in expr[2]:
                if argument[0] == "ifexp":
                    test(argument[1], argument[4], (argument[2], argument[3]), in_loop)
            for _, argument in expr[3]:
                if argument[0] == "ifexp":
                    test(argument[1], argument[4], (argument[2], argument[3]), in_loop)

    def walk(statements, in_loop: bool) -> None:
        for statement in statements:
            position[0] += 1
            kind = statement[0]
            if kind == "assign":
                walk_expr(statement[2], in_loop)
                for target in statement[1]:
                    bind(target, in_loop)
            elif kind == "aug":
                walk_expr(statement[2], in_loop)
                bind(statement[1], in_loop)
            elif kind in ("expr", "return"):
                if statement[1] is not None:
                    walk_expr(statement[1], in_loop)
            elif kind == "if":
                walk_expr(statement[1], in_loop)
                test(statement[1], statement[4], (statement[2], statement[3]), in_loop)
                walk(statement[2], in_loop)
                walk(statement[3], in_loop)
            elif kind in ("for", "while"):
                walk_expr(statement[2] if kind == "for" else statement[1], in_loop)
                if kind == "for":
                    bind(statement[1], True)
                walk(statement[3] if kind == "for" else statement[2], True)
                walk(statement[4] if kind == "for" else statement[3], in_loop)
            elif kind == "with":
                for context, target in statement[1]:
                    walk_expr(context, in_loop)
                    if target is not None:
                        bind(target, in_loop)
                walk(statement[2], in_loop)
            elif kind == "try":
                walk(statement[1], in_loop)
                for name, body in statement[2]:
                    if name:
                        bindings.append((position[0], name, in_loop))
                    walk(body, in_loop)
                walk(statement[3], in_loop)
                walk(statement[4], in_loop)
            elif kind == "match":
                walk_expr(statement[1], in_loop)
                for body in statement[2]:
                    walk(body, in_loop)
            elif kind in ("def", "class"):
                bindings.append((position[0], statement[1], in_loop))
            elif kind == "import":
                for dotted, asname in statement[1]:
                    bindings.append((position[0], asname or dotted.split(".")[0], in_loop))
            elif kind == "from":
                for name, asname in statement[3]:
                    bindings.append((position[0], asname or name, in_loop))

    walk(scope.body, False)
    best = None
    for key, (count, first, node, branches, core) in tests.items():
        if count < 2:
            continue  # one branch alone keeps nothing apart: the cases only matter when it decides two
        roots = _condition_roots(key)
        if any(name in roots and (in_loop or where > first) for where, name, in_loop in bindings):
            continue
        if not any(_relevant(branch) for branch in branches):
            continue
        rank = (-count, first)
        if best is None or rank < best[0]:
            best = (rank, _Decider((key, node, core)))
    found = best[1] if best is not None else None
    scope.__dict__["_fabric_lsp_decider"] = found
    return found



def _relevant(branch) -> bool:
    """Does a branch (statements or an expression) build or choose something the rules read?"""
    pending = [branch]
    seen = 0
    while pending and seen < 5000:
        seen += 1
        item = pending.pop()
        if isinstance(item, ir.Scope) or isinstance(item, ast.AST) or not isinstance(item, (tuple, list)):
            continue
        if isinstance(item, tuple) and item and isinstance(item[0], str):
            kind = item[0]
            if kind == "call":
                func = item[1]
                name = func[2] if func[0] == "attr" else func[1] if func[0] == "name" else ""
                if isinstance(name, str) and (name in _RELEVANT_CALLS or name.endswith(("Strategy", "Fabric"))
                                              or name == "LightningLite"):
                    return True
                if any(keyword in _RELEVANT_KEYWORDS for keyword, _ in item[3]):
                    return True
            elif kind == "const" and isinstance(item[1], str):
                if item[1] in _RELEVANT_STRINGS or item[1].startswith(("ddp_", "fsdp_", "deepspeed_")):
                    return True
                continue
            elif kind in ("def", "class", "lambda"):
                continue
        pending.extend(item)
    return False


_MAX_UNROLLED = 16  # iterations of a loop over a literal display followed one by one
_UNROLL_ATTRIBUTES = frozenset(("mark_forward_method", "setup", "setup_module", "call"))
_UNROLL_NAMES = frozenset(("getattr", "setattr"))


def _names_unroll_reason(ir_node, depth: int = 0) -> bool:
    if depth > 200:
        return True
    if isinstance(ir_node, tuple):
        if len(ir_node) >= 3 and ir_node[0] == "attr" and ir_node[2] in _UNROLL_ATTRIBUTES:
            return True
        if len(ir_node) == 2 and ir_node[0] == "name" and ir_node[1] in _UNROLL_NAMES:
            return True
        return any(_names_unroll_reason(part, depth + 1) for part in ir_node if isinstance(part, (tuple, list)))
    if isinstance(ir_node, list):
        return any(_names_unroll_reason(part, depth + 1) for part in ir_node if isinstance(part, (tuple, list)))
    return False
# Library calls that change none of the objects they are given (Solver._passed_on).
_PURE_LIBRARY = ("dataclasses.asdict", "dataclasses.field", "copy.", "json.dumps", "builtins.print", "builtins.len",
                 "builtins.dict", "builtins.list", "builtins.tuple", "builtins.vars", "builtins.isinstance",
                 "builtins.getattr", "builtins.hasattr", "builtins.sorted", "builtins.str", "builtins.int")


def _shown(name: str, texts: dict, keywords: dict) -> str | None:
    """A Fabric argument as the code writes it, or as the literal it holds (from a `**config`)."""
    if name in texts:
        return texts[name]
    values = keywords.get(name)
    if values and len(values) == 1:
        (value,) = values
        if isinstance(value, Const):
            return json.dumps(value.value)
    return None


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
    if isinstance(value, (Class, Module, Lib)):
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
        return f"{_describe(value.cls)}:{where}:{value.compiled}{annotated}"
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


_STATEMENTS = {
    "assign": Solver._s_assign,
    "aug": Solver._s_aug,
    "expr": Solver._s_expr,
    "return": Solver._s_return,
    "if": Solver._s_if,
    "for": Solver._s_for,
    "while": Solver._s_while,
    "with": Solver._s_with,
    "try": Solver._s_try,
    "def": Solver._s_def,
    "class": Solver._s_class,
    "import": Solver._s_import,
    "from": Solver._s_from,
    "global": Solver._s_global,
    "nonlocal": Solver._s_global,
    "match": Solver._s_match,
    "declare": Solver._s_declare,
}

_EXPRESSIONS = {
    "const": Solver._e_const,
    "name": Solver._e_name,
    "attr": Solver._e_attr,
    "sub": Solver._e_sub,
    "call": Solver._e_call,
    "tuple": Solver._e_tuple,
    "list": Solver._e_list,
    "dict": Solver._e_dict,
    "ifexp": Solver._e_ifexp,
    "boolop": Solver._e_boolop,
    "compare": Solver._e_compare,
    "not": Solver._e_not,
    "unary": Solver._e_unary,
    "walrus": Solver._e_walrus,
    "lambda": Solver._e_lambda,
    "unknown": Solver._e_unknown,
    "fstr": Solver._e_fstr,
    "annotated": Solver._e_annotated,
    "comp": Solver._e_comp,
    "arith": Solver._e_arith,
}
