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

This module is the fixed point only: the tables, the worklist, the replay of recorded runs, and the
dispatch of each statement and expression kind of the IR (`_STATEMENTS`, `_EXPRESSIONS`). What each
construct means lives in `semantics/`, one module per kind of knowledge, each a mixin of `Solver`
(`flow_state.py` holds what they share: bounds, frames, call sites, events):

    semantics/python.py              statements: assignment, names and scopes, narrowing, loops, imports
    semantics/python_expressions.py  expressions, containers, subscripts, iteration
    semantics/python_classes.py      MROs, attributes of instances/classes/super(), construction
    semantics/python_calls.py        calls of project functions, builtins, partials, container methods
    semantics/python_branches.py     branches decided by the program's constants; split scopes
    semantics/torch.py               outputs and backward, meta devices, init, compile, wrapped models
    semantics/library_calls.py       calls of library names, from the generated tables (libraries/)
    semantics/fabric.py              Fabric(...)'s configuration, setup, mark_forward_method, launch

The interface between them: a statement or expression handler takes `(solver, node, frame)` and
returns values; a call goes through `call_value(callee, call)` (what a call returns), which asks
`_library_call`, `_special_call` -> `_fabric_call` / `_container_call`, `_builtin_call`; an
attribute read through `attribute_of(obj, name, frame)`, which asks `_fabric_attribute`,
`_wrapped_attribute`, `_library_instance_attribute`; what a call does to the objects it is given
through `_passed_on` and the events (`_event`). The semantics read and write the tables through
`read` / `write` and ask the program through `_ask`, so a run's log holds all it depended on
(`_hierarchy_changed`, which `write` calls, keeps the derived MRO and subclass entries itself).
"""

from __future__ import annotations

import contextlib
import heapq
from typing import Iterable

from fabric_lsp.analysis import ir
from fabric_lsp.analysis.flow_state import (
    _Call,
    _EXPECTED_KINDS,
    _Frame,
    _NONE,
    _sort_key,
    class_key,
    Event,
    MAX_CONSTANTS,
    MAX_SET,
    ProgramView,
)
from fabric_lsp.analysis.semantics.fabric import FabricSemantics
from fabric_lsp.analysis.semantics.library_calls import LibraryCalls
from fabric_lsp.analysis.semantics.python import PythonStatements
from fabric_lsp.analysis.semantics.python_branches import _decider, _NO, PythonBranches
from fabric_lsp.analysis.semantics.python_calls import PythonCalls
from fabric_lsp.analysis.semantics.python_classes import PythonClasses
from fabric_lsp.analysis.semantics.python_expressions import PythonExpressions
from fabric_lsp.analysis.semantics.config_values import ConfigValues
from fabric_lsp.analysis.semantics.run_choices import RunChoices
from fabric_lsp.analysis.semantics.torch import TorchSemantics
from fabric_lsp.analysis.values import (
    Class,
    Const,
    FabricValue,
    JUST_UNKNOWN,
    Marked,
    NOTHING,
    Strategy,
    Wrapped,
    WrappedMethod,
)

STEPS_PER_SCOPE = 60  # interpretations allowed per scope of the program, on average
MIN_STEPS = 1000


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


class Solver(
    PythonStatements,
    PythonExpressions,
    PythonClasses,
    PythonCalls,
    PythonBranches,
    RunChoices,
    ConfigValues,
    TorchSemantics,
    LibraryCalls,
    FabricSemantics,
):
    """The one fixed-point interpreter over the program's scopes; the mixins are its semantics."""

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
        # The tables and their readers in one dict, one lookup per read: key -> [the entry (None while
        # nothing is written), the positions of the scopes that read it (a set, or None)].
        self._cells: dict[tuple, list] = {}
        self.events: dict[int, list[Event]] = {}
        self.current: ir.Scope | None = None
        self._reader = -1  # the position of `current`, the scope whose reads are counted (-1: none)
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
        self._probe: list | None = None  # the (cell, entry) pairs read by the memoised computation running
        self._writes = 0  # write() calls so far (a memoised computation must make none)
        self._attributes: dict = {}  # (instance or class, name) -> memoised attribute lookup (_memoised)
        self._class_bindings: dict = {}
        self._opaque_callees: dict = {}  # callee set -> does one of them run code the analysis does not follow  # (class, name) -> (its MRO when asked, Program.class_binding's answer)
        self._saturated: set[tuple] = set()
        self._sort_keys: dict = {}
        self._without_constants: set[tuple] = set()
        self._events: list[Event] = []
        self._made: set = set()  # this run's marks and setups, its callees' included (the "made" table)
        self._strategies: dict[int, Strategy] = {}
        self._split_files: dict[str, bool] = {}
        self._const_sets: dict = {}  # Const -> {Const}: one set per literal value of the program
        self._unroll_bodies: dict[int, tuple] = {}  # id(loop body IR) -> (worth unrolling, the body, kept alive)
        self._test_parts: dict[int, list] = {}  # id(boolop IR) -> its operands' values, last evaluated
        self._last_test_values: frozenset = frozenset()  # the values of the test _decide evaluated last
        self._none_condition = None  # the choice that makes the conditional expression evaluated last not None
        self._frozen_values: set = set()  # the modules frozen in this solve (semantics/torch.py: calls may thaw them)

    # -- tables --------------------------------------------------------------------------------
    @property
    def tables(self) -> dict[tuple, frozenset]:
        """The entries written (a copy; the solver keeps them in `_cells`)."""
        return {key: cell[0] for key, cell in self._cells.items() if cell[0] is not None}

    @property
    def readers(self) -> dict[tuple, set[int]]:
        """The dependency index: key -> the positions of the scopes that read it (a copy)."""
        return {key: set(cell[1]) for key, cell in self._cells.items() if cell[1]}

    def read(self, key: tuple) -> frozenset:
        reader = self._reader
        cell = self._cells.get(key)
        if reader >= 0:
            if cell is None:
                cell = self._cells[key] = [None, {reader}]
            elif cell[1] is None:
                cell[1] = {reader}
            else:
                cell[1].add(reader)
        if self._probe is not None:
            if cell is None:
                cell = self._cells[key] = [None, None]
            self._probe.append((cell, cell[0]))
        found = NOTHING if cell is None or cell[0] is None else cell[0]
        if self._log is not None:
            self._log.append((_READ, key, found))
        return found

    def _memoised(self, memo: dict, key, compute, *args):
        """`compute(*args)`, a function of table entries and of the program's (static) answers,
        memoised: kept with the cells it read and the entries it saw, and reused while each of those
        is still the same object (an entry is replaced, never changed, when it grows). A reuse
        depends on those cells as the computation would have. Only outside recorded runs (the log of
        a run must hold every read) and only for a computation that wrote nothing and recorded no
        event (those effects belong to the run that made them)."""
        if self._log is not None:
            return compute(*args)
        known = memo.get(key)
        if known is not None:
            deps, result = known
            for cell, seen in deps:
                if cell[0] is not seen:
                    break
            else:
                reader = self._reader
                if reader >= 0:
                    for cell, _ in deps:
                        readers = cell[1]
                        if readers is None:
                            cell[1] = {reader}
                        else:
                            readers.add(reader)
                if self._probe is not None:
                    self._probe.extend(deps)
                return result
        outer, self._probe = self._probe, []
        writes, events = self._writes, len(self._events)
        try:
            result = compute(*args)
        finally:
            deps, self._probe = self._probe, outer
        if outer is not None:
            outer.extend(deps)
        if writes == self._writes and events == len(self._events):
            memo[key] = (deps, result)
        return result

    def _entry(self, key: tuple):
        """A table entry without depending on it; None when nothing was written."""
        cell = self._cells.get(key)
        return None if cell is None else cell[0]

    def _replace(self, key: tuple, value) -> None:
        """Set an entry (already merged) and queue the scopes that read it."""
        cell = self._cells.get(key)
        if cell is None:
            self._cells[key] = [value, None]
            return
        cell[0] = value
        if cell[1]:
            for reader in cell[1]:
                self._enqueue(reader)

    @contextlib.contextmanager
    def _outside_runs(self):
        """Reads that no scope depends on (derived tables, computed once) and that no run logs."""
        saved = self.current, self._reader, self._log
        self.current, self._reader, self._log = None, -1, None
        try:
            yield
        finally:
            self.current, self._reader, self._log = saved

    def _ask(self, question: str, *args):
        """A question to the program (what a module binds, where an import leads, ...): recorded in
        the run's log with its answer, so that a replay can check the answer is still the same."""
        answer = getattr(self.program, question)(*args)
        if self._log is not None:
            self._log.append((_ASK, question, args, answer))
        return answer

    def _asked(self, question: str, args: tuple, answer) -> None:
        """Log a question answered from a memo (as `_ask` would), so a replay still checks it."""
        if self._log is not None:
            self._log.append((_ASK, question, args, answer))

    def peek(self, key: tuple) -> frozenset:
        """A table entry, without depending on it (after the solve)."""
        cell = self._cells.get(key)
        return NOTHING if cell is None or cell[0] is None else cell[0]

    def write(self, key: tuple, values: frozenset) -> None:
        self._writes += 1
        if not values:
            return
        if self._log is not None:
            self._log.append((_WRITE, key, values))
        cell = self._cells.get(key)
        old = None if cell is None else cell[0]
        if old is not None and values <= old:
            return  # nothing new: the common case on every re-run (as _merged would say)
        new, saturated, without_constants = _merged(old, values, key in self._saturated, key in self._without_constants)
        if saturated:
            self._saturated.add(key)
        if without_constants:
            self._without_constants.add(key)
        if new is None:
            return
        if cell is None:
            self._cells[key] = [new, None]
        else:
            cell[0] = new
            if cell[1]:
                for reader in cell[1]:
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
        self.current, self._reader = None, -1

    def _run(self, scope: ir.Scope) -> None:
        self.current, self._reader = scope, self.order[id(scope)]
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
        cells, saturated, without_constants = self._cells, self._saturated, self._without_constants
        overlay: dict = {}
        flags: dict = {}
        for op in log:
            kind = op[0]
            if kind is _READ:
                key = op[1]
                if key in overlay:
                    current = overlay[key]
                else:
                    cell = cells.get(key)
                    current = NOTHING if cell is None or cell[0] is None else cell[0]
                if current is not op[2] and current != op[2]:
                    return False
            elif kind is _WRITE:
                key, values = op[1], op[2]
                if key in overlay:
                    old = overlay[key]
                else:
                    cell = cells.get(key)
                    old = None if cell is None else cell[0]
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

    # -- statements ------------------------------------------------------------------------------------
    def _exec(self, statements: list, frame: _Frame) -> None:
        for statement in statements:
            handler = _STATEMENTS.get(statement[0])
            if handler is not None:
                handler(self, statement, frame)

    # -- expressions --------------------------------------------------------------------------------------
    def ev(self, expr: tuple, frame: _Frame) -> frozenset:
        handler = _EXPRESSIONS[expr[0]]
        return handler(self, expr, frame)

    # -- events ----------------------------------------------------------------------------------------------------
    def _event(self, kind: str, call: "_Call", **data) -> None:
        self._event_at(kind, call.node, call.frame, **data)

    def _event_at(self, kind: str, node, frame: _Frame, **data) -> None:
        if frame.expecting and kind in _EXPECTED_KINDS:
            return  # `with pytest.raises(...)`: the error is what the test wants
        if frame.excluded and kind in ("wcall", "mark", "backward"):
            return  # the Fabric-less mode: which wrapped models reach it is unknown
        self._events.append(Event(kind, node, frame.scope.path, frame.scope, frame.statement, data, frame.variant,
                                  frame.guards))


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
