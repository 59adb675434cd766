"""The order of marks, setups and calls across functions, for FAB001: `fit()` calls `self._check()`
(which calls `self.model.sample(...)`) before it calls `self.model.mark_forward_method("sample")`.

Inside a scope the value flow follows the statements in order: each frame carries what happened on
the way (flow_state._Frame.marked: the marks made and the models wrapped, also by the functions it called,
whose "made" table it adds when a call returns). Each call of a project function is an "enter" event
with what had happened before it in the caller. Here those events are followed from the roots of
the program (module bodies, and functions called from where the analysis cannot see: entry points,
functions handed to a library, property reads), so each scope gets its entry states: (root, what
happened between the root's entry and this scope's entry), one per way of reaching it.

A call `wrapped.m(...)` is unmarked on a state when the model was wrapped on that way and not marked
before the call. Where the order cannot be told, the old rule holds: a mark in another function counts
as made before. That is the case for a model that may have been wrapped before the root was entered
(its setup is not reached from the root), for a scope with more than MAX_STATES entry states, and for
a model wrapped past the first flow_state.MAX_ORDERED_WRAPS on one way (a frame does not carry it).
"""

from __future__ import annotations

import heapq

from fabric_lsp.analysis import ir
from fabric_lsp.analysis.values import Marked, Wrapped

MAX_STATES = 16  # entry states kept per scope; past it the scope's order is unknown (STAR)
MAX_STEPS = 200_000  # states carried along call edges per program; past it every order is unknown
STAR = "*"  # the root of an unknown order


class CallOrder:
    """Entry states of the program's scopes, from the solved events (built once per analysis)."""

    def __init__(self, program, solver, events) -> None:
        self.program = program
        self.solver = solver
        self.notice: str | None = None
        self._edges: dict[int, list[tuple[ir.Scope, frozenset]]] = {}
        self._scopes: dict[int, ir.Scope] = {}
        called: set[int] = set()
        for event in events:
            self._scopes.setdefault(id(event.scope), event.scope)
            if event.kind == "enter":
                callee = event.data["callee"]
                self._scopes.setdefault(id(callee), callee)
                self._edges.setdefault(id(event.scope), []).append((callee, event.data["before"]))
                called.add(id(callee))
        self._called = called
        self._states: dict[int, set] | None = None
        self._reach: dict[int, frozenset] = {}

    def _is_root(self, scope: ir.Scope) -> bool:
        if scope.kind not in (ir.FUNCTION, ir.LAMBDA) or id(scope) not in self._called:
            return True
        peek = self.solver.peek
        return bool(self.program.is_entry(scope) or peek(("escaped", scope)) or peek(("unordered", scope)))

    def states(self, scope: ir.Scope) -> set:
        """{(root scope or STAR, frozenset of Marked and Wrapped)}: the ways this scope is entered."""
        if self._states is None:
            self._states = self._solve()
        return self._states.get(id(scope)) or {(scope, frozenset())}

    def _solve(self) -> dict[int, set]:
        order = self.solver.order
        states: dict[int, set] = {}
        pending: list[tuple[int, int]] = []
        queued: set[int] = set()

        def push(scope: ir.Scope) -> None:
            if id(scope) not in queued:
                queued.add(id(scope))
                heapq.heappush(pending, (order.get(id(scope), len(order)), id(scope)))

        for key, scope in sorted(self._scopes.items(), key=lambda item: order.get(item[0], len(order))):
            if self._is_root(scope):
                states[key] = {(scope, frozenset())}
                push(scope)
        steps = 0
        saturated: set[int] = set()
        while pending:
            _, key = heapq.heappop(pending)
            queued.discard(key)
            here = sorted(states.get(key, ()), key=_state_key)
            for callee, before in self._edges.get(key, ()):
                target = id(callee)
                if target in saturated:
                    continue
                found = states.setdefault(target, set())
                grown = False
                for root, made in here:
                    steps += 1
                    state = (root, made | before)
                    if state not in found:
                        found.add(state)
                        grown = True
                if len(found) > MAX_STATES:
                    states[target] = {(STAR, frozenset())}
                    saturated.add(target)
                if grown:
                    push(callee)
            if steps > MAX_STEPS:
                self.notice = (f"the order of calls across functions was followed for {MAX_STEPS:,} steps (counted); "
                               "past that a mark made anywhere counts as made before a call")
                return {}  # every scope: its own root, the old rule
        return states

    def reach(self, root: ir.Scope) -> frozenset:
        """Ids of the scopes a call of `root` may run (itself included), along the call events."""
        known = self._reach.get(id(root))
        if known is None:
            found = {id(root)}
            pending = [id(root)]
            while pending:
                for callee, _ in self._edges.get(pending.pop(), ()):
                    if id(callee) not in found:
                        found.add(id(callee))
                        pending.append(id(callee))
            known = self._reach[id(root)] = frozenset(found)
        return known

    def always_after(self, scope: ir.Scope, site_id: int, before: frozenset) -> bool:
        """Has the setup call `site_id` run before this point of `scope` on every way the program enters it
        (its wrapped model is among what happened on each way, or in `scope` before this point)?"""
        if any(isinstance(v, Wrapped) and id(v.site) == site_id for v in before):
            return True
        states = self.states(scope)
        if not states:
            return False
        for root, made in states:
            if root is STAR or not any(isinstance(v, Wrapped) and id(v.site) == site_id for v in made):
                return False
        return True

    def unmarked(self, scope: ir.Scope, wrapped: Wrapped, method: str, before: frozenset, setup_scope: ir.Scope | None,
                 marked_elsewhere: bool) -> bool:
        """Is `wrapped.method(...)` in `scope` (with `before` happened in it) reached unmarked on some
        entry state? `marked_elsewhere`: a mark of it in another scope (the old rule, where the order
        cannot be told)."""
        mark = Marked(wrapped, method)
        if mark in before:
            return False
        skipped = 0
        states = self.states(scope)
        for root, made in states:
            if mark in made:  # (no union of made and before: a long way's sets would be copied per call)
                continue
            if root is STAR:
                if not marked_elsewhere:
                    return True
                continue
            if wrapped in made or wrapped in before:
                return True  # wrapped on this way, and not marked before the call
            if setup_scope is not None and id(setup_scope) in self.reach(root):
                skipped += 1  # wrapped later on this way: the call does not meet this model here
                continue
            if not marked_elsewhere:  # it may have been wrapped before the root was entered
                return True
        # Not wrapped before the call on any way we see: the old rule rather than no answer.
        return skipped == len(states) and not marked_elsewhere


def _state_key(state) -> tuple:
    root, made = state
    return (root if root is STAR else f"{root.path}:{root.qualname}:{root.line}", len(made))
