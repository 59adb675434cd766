"""Which functions the default run reaches, and under which run-time choice the others run.

Inside a function, an event made in an arm that only a run-time choice takes (`if args.sample:`) records
that choice (`Event.when`, semantics/run_choices.py). A function called only from such arms runs only
under the choice too: `if args.sample: run_sampling(model)` puts every call inside `run_sampling` under
"when run with `--sample`". Here the "enter" events (a call of a project function, with the choices of
the arm it is made in) are followed from the program's roots (module bodies, and functions entered from
where the analysis cannot see: analysis/order.py's roots): a scope reached along calls made on the default
run's way is default; any other scope gets the choices of the first way to it (in the program's order).
"""

from __future__ import annotations

from fabric_lsp.analysis import ir

MAX_STEPS = 200_000  # call edges followed per program; past it every scope counts as default (no cap)


class ChoiceReach:
    def __init__(self, program, solver, events) -> None:
        self.program = program
        self.solver = solver
        edges: dict[int, list[tuple[ir.Scope, tuple]]] = {}
        scopes: dict[int, ir.Scope] = {}
        called: set[int] = set()
        for event in events:
            scopes.setdefault(id(event.scope), event.scope)
            if event.kind == "enter":
                callee = event.data["callee"]
                scopes.setdefault(id(callee), callee)
                edges.setdefault(id(event.scope), []).append((callee, tuple(event.when)))
                called.add(id(callee))
        self._edges = edges
        self._scopes = scopes
        self._called = called
        self._phrases: dict[int, tuple] | None = None

    def _is_root(self, scope: ir.Scope) -> bool:
        if scope.kind not in (ir.FUNCTION, ir.LAMBDA) or id(scope) not in self._called:
            return True
        peek = self.solver.peek
        return bool(self.program.is_entry(scope) or peek(("escaped", scope)) or peek(("unordered", scope)))

    def _solve(self) -> dict[int, tuple]:
        """Scope id -> the choices it runs under (() for the default run's), for every scope reached."""
        order = self.solver.order
        ranked = sorted(self._scopes.items(), key=lambda item: order.get(item[0], len(order)))
        found: dict[int, tuple] = {}
        pending = [scope for key, scope in ranked if self._is_root(scope)]
        for scope in pending:
            found[id(scope)] = ()
        steps = 0
        # Breadth first over the default run's edges, then over the others: a scope keeps the first,
        # shortest way to it, and the default way whenever there is one.
        for default_only in (True, False):
            queue = [scope for key, scope in ranked if key in found]
            while queue:
                following = []
                for scope in queue:
                    mine = found[id(scope)]
                    for callee, when in self._edges.get(id(scope), ()):
                        steps += 1
                        if steps > MAX_STEPS:
                            return {}
                        chosen = mine + tuple(w for w in when if w not in mine)
                        if default_only and chosen:
                            continue
                        known = found.get(id(callee))
                        if known is None or (known and not chosen):
                            found[id(callee)] = chosen
                            following.append(callee)
                queue = following
        return found

    def choices(self, scope: ir.Scope) -> tuple:
        """The run-time choices a scope runs under: () when the default run reaches it (or it cannot be told)."""
        if self._phrases is None:
            self._phrases = self._solve()
        return self._phrases.get(id(scope), ())

    def when(self, event) -> str:
        """The run-time choice an event happens under, as one phrase ("when run with `--sample`"), or ""."""
        return joined_phrase(self.choices(event.scope) + tuple(w for w in event.when if w not in self.choices(event.scope)))


def joined_phrase(parts) -> str:
    """("when run with `--sample`", "when `EVAL=1`") -> "when run with `--sample` and `EVAL=1`"."""
    parts = [p for p in dict.fromkeys(parts) if p]
    if not parts:
        return ""
    return parts[0] + "".join(" and " + (p[5:] if p.startswith("when ") else p) for p in parts[1:])
