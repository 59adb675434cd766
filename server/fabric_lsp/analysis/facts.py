"""Solved program -> facts: what the rules read.

`analyze(program)` turns a solved program (analysis.program, analysis.flow) into the facts the
rules read: calls of methods on wrapped models with every way a wrapped model reaches them,
`mark_forward_method` calls, and models built on the meta device with how they are materialized.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import logging
import re
from dataclasses import dataclass, field

from fabric_lsp.analysis import ir
from fabric_lsp.analysis.launch_docs import launch_documents
from fabric_lsp.analysis.choice_reach import ChoiceReach, joined_phrase
from fabric_lsp.analysis.classes import ClassInfo, ClassRef, ClassResolver, LibraryClass, decorator_kind
from fabric_lsp.analysis.flow import Solver
from fabric_lsp.analysis.flow_state import (
    MAX_ORDERED_WRAPS, Event, MetaTag, class_key, compatible, describe, site_key, sort_key,
)
from fabric_lsp.analysis.libraries import models as library_models
from fabric_lsp.analysis.libraries.torch_tables import tables
from fabric_lsp.analysis.modules import Known, ModuleAnalyzer, RunsModule, literal
from fabric_lsp.analysis.order import CallOrder
from fabric_lsp.analysis.source import SourceFile
from fabric_lsp.analysis.libraries.torch_facts import wrapper_attributes
from fabric_lsp.analysis.values import (
    SINGLE, WRAPPING, Bound, Class, Const, Container, FabricValue, Instance, Special, Strategy, Unknown, Wrapped, const,
)
from fabric_lsp.findings import Span

log = logging.getLogger("fabric_lsp.analysis")
_NONE_VALUE = const(None)


@dataclass(frozen=True)
class MethodInfo:
    """What `wrapped.<name>` is on the wrapped model's class."""

    kind: str  # wrapper | method | classmethod | staticmethod | property | generator | attribute | missing | unknown
    class_name: str | None
    definition: Span | None
    runs: RunsModule | None  # for methods: does it run a module?
    # A function bound to the instance at run time (`model.step = types.MethodType(step, model)`):
    # where, and the binding's text.
    bound_at: tuple[Span, str] | None = None
    definition_name: str | None = None  # what `definition` names when not `Class.name` (the bound function)


@dataclass(frozen=True)
class Origin:
    """One `fabric.setup(...)` / `setup_module(...)` call: a source of wrapped models."""

    site: ast.Call
    path: str
    scope: ir.Scope  # the function (or module) that calls setup
    statement: ast.AST | None  # the statement holding the call (for the quick fix)
    target: ast.expr | None  # what the wrapped model is bound to there (`model`, `self._model`)
    fabrics: tuple[FabricValue, ...]
    models: tuple  # flow values of the module given to setup (Instance, UNKNOWN, ...)
    when: str = ""  # the run-time choice the setup runs under ("when run with `--ddp`"), "" on the default run

    def target_text(self, source: SourceFile) -> str:
        return source.segment(self.target) if self.target is not None else "model"


@dataclass(frozen=True)
class WrappedPath:
    """A way a wrapped model reaches a line: its setup call, the Fabric there, the model's class."""

    origin: Origin
    fabric: FabricValue
    strategy: Strategy
    cls: ClassRef  # None: the class could not be seen
    compiled: bool
    # The class is known only from an annotation (Instance.declared: path, annotation node, what it
    # annotates): the object may be of a subclass, so a name missing on `cls` is unknown, not missing.
    declared: tuple | None = None


@dataclass
class MethodCallFact:
    """`wrapped.method(...)` (or a call of a saved `wrapped.method`) on a Fabric-wrapped model."""

    node: ast.Call
    path: str
    span_node: ast.AST  # the attribute (its name is reported) or the called expression
    method: str
    scope: ir.Scope
    paths: list[WrappedPath] = field(default_factory=list)  # the paths on which it is not marked before the call
    # `receiver.method(...)` written as an attribute call, and on every way the analysis sees it
    # run `receiver` is a Fabric wrapper (never the unwrapped module, never a value it cannot see):
    # only then is `receiver.mark_forward_method(...)` / `receiver.module` certain to exist there.
    receiver_always_wrapped: bool = False
    when: str | None = None  # the run-time choice the call is made under ("" on the default run's way)
    # What the call passes, over every way to it, as modules.Known values: ((per position), ((keyword,
    # values), ...)); None when some way spreads `*args`/`**kwargs` (analysis/modules.runs_module_called_with).
    arguments: tuple | None = ()
    # The setup that DDP refuses (FAB009) before this call on every way to it, under the Fabric the call's model
    # is set up by: the call is never reached where it would raise (rules/first_error). id of that setup call.
    stopped_by: int | None = None


@dataclass
class MarkFact:
    """`wrapped.mark_forward_method(argument)`."""

    node: ast.Call
    path: str
    argument: ast.AST | None
    paths: list[WrappedPath]
    names: frozenset[str]
    values: frozenset  # the argument's flow values
    when: str | None = None  # the run-time choice the mark is made under ("" on the default run's way)


@dataclass(frozen=True)
class BackwardPath:
    """One way the wrapped model's output reaches `loss.backward()`: its setup call and the Fabric there,
    with whether that Fabric registers the raising backward hook (True / False / None: not visible)."""

    origin: Origin
    fabric: FabricValue
    hooks: bool | None
    setting: str  # what decides it: 'precision="bf16-mixed"', 'strategy="fsdp"', ...


@dataclass
class BackwardFact:
    """`loss.backward()` where `loss` is computed from the output of a Fabric-wrapped model."""

    node: ast.Call
    path: str
    scope: ir.Scope
    paths: list[BackwardPath] = field(default_factory=list)
    # Expressions naming a Fabric where the call is made: (text, Fabric objects) for the fix.
    fabric_names: list[tuple[str, frozenset]] = field(default_factory=list)
    when: str | None = None  # the run-time choice the call is made under ("" on the default run's way)


@dataclass
class SetupMisuseFact:
    """A call of Fabric's setup API that its own validation refuses, whatever the strategy (the values
    the code gives make it certain):
    `again`: `fabric.setup(model)` / `setup_module(model)` where `model` is already a Fabric wrapper;
    `no_backward_sync`: `fabric.no_backward_sync(m)` where `m` was never set up;
    `dataloaders`: `fabric.setup_dataloaders(x)` where `x` is not a DataLoader (a list, a Dataset);
    `jointly`: `fabric.setup_optimizers(...)` under a DeepSpeed or XLA strategy."""

    kind: str
    node: ast.Call
    path: str
    scope: ir.Scope
    argument: ast.AST | None  # the offending argument (again, no_backward_sync, dataloaders)
    detail: str  # what the argument is, or the strategy, for the message
    origin: Origin | None = None  # again: the setup that wrapped the model first
    method: str = "setup"
    when: str = ""  # the run-time choice the call is made under ("" on the default run's way)


@dataclass
class Materialization:
    # "materialize" (_materialize_meta_tensors), "fsdp", "model_parallel" (ModelParallel's setup or
    # _materialize_distributed_module), "mixed" (a strategy chosen at run time between them), "setup"
    how: str
    call: ast.Call | None  # None when implied by init_module under FSDP/ModelParallel
    path: str | None
    description: str
    certain: bool  # the error is certain for the strategy the code states (never for a run-time choice)


@dataclass
class MetaModelFact:
    """A module built on the meta device and then materialized."""

    tag: MetaTag
    cls: ClassRef
    materializations: list[Materialization]
    meta_certain: bool  # False for init_module(empty_init=<not a literal>)
    classes_at_materialization: int = 1  # how many different classes reach the same materialization
    when: str | None = None  # the run-time choice the build and its materialization are made under ("": default run)


@dataclass
class FrozenSetupFact:
    """`fabric.setup(m)` / `setup_module(m)` where `m` has no parameter that requires a gradient on every way
    to the call (frozen by `requires_grad_(False)` or a loop over its parameters, or a class that owns none):
    DDP refuses to wrap it (FAB009)."""

    node: ast.Call
    path: str
    scope: ir.Scope
    statement: ast.AST | None
    origin: Origin
    frozen_at: tuple  # (path, node) of the freezing calls or loops, for the related information ("" class: no node)
    reason: str  # "every parameter is frozen by `ema.requires_grad_(False)`", "`Stats` owns only buffers"
    method: str  # "setup" | "setup_module"
    optimizers: bool  # setup(model, optimizer, ...): the fix cannot drop the setup
    when: str = ""


@dataclass
class FabricUse:
    """A call on a Fabric object: `launch(...)`, or one of the methods that need it launched first
    (`setup`, `setup_module`, `init_module`, `barrier`, ...: semantics/fabric.LAUNCH_CHECKED_METHODS)."""

    node: ast.Call
    path: str
    scope: ir.Scope
    statement: ast.AST | None
    method: str
    functions: frozenset = frozenset()  # launch: the flow values of its function argument
    argument: ast.AST | None = None  # launch: the function argument as written
    when: str = ""  # the run-time choice the call is made under ("" on the default run's way)


@dataclass
class FabricFact:
    """A `Fabric(...)` constructed in the program, with its strategy and how it is launched and used."""

    fabric: FabricValue
    strategy: Strategy
    uses: list[FabricUse]  # calls that need it launched, in program order
    launches: list[FabricUse]
    runs_through_run: bool  # a Fabric subclass that overrides `run()`: Fabric launches `run` itself
    # The constructor's file, or the project's README/docs/shell scripts, name `fabric run` (or `lightning run
    # model`) with this script: started by the CLI. None: the project starts other scripts so (a hint here).
    cli_stated: bool | None
    strategy_class: str | None = None  # Lightning's class for a literal `strategy="..."` (`DDPStrategy`)

    def first_unlaunched_use(self) -> FabricUse | None:
        """The call where `Fabric._validate_launched` raises: the first use, unless a `launch()` comes
        before it in the same function or is called in another one (the order across functions cannot be
        told, so that counts as launched). None when launched."""
        if not self.uses or self.runs_through_run:
            return None
        site = self.fabric.site
        encloses: dict[int, bool] = {}  # per scope, not per use: a file of 3,000 setups walks its body once
        for use in self.uses:
            if id(use.scope) not in encloses:
                encloses[id(use.scope)] = use.path == self.fabric.path and _encloses(use.scope, site)
        home = [u for u in self.uses if encloses[id(u.scope)]]
        first = (home or self.uses)[0]
        for launch in self.launches:
            if launch.when and launch.when[5:] not in first.when:
                # `if os.environ.get("MULTI_NODE") == "1": fabric.launch()`: not on the way the use is reached
                continue
            if launch.scope is not first.scope or _position(launch.node) < _position(first.node):
                return None
        return first


def _joined_arguments(known, found):
    """The arguments of a call over its ways: per position and keyword, every value any way passes, as
    modules.Known values (a constant, an object that is not None, or unknown). () before the first way."""
    if found is None or known is None:
        return None
    positional, keywords = found
    if any(values is None for values in positional) or any(name is None for name, _ in keywords):
        return None  # `*args` / `**kwargs`: what lands where cannot be read
    positional = tuple(frozenset(_known(v) for v in values) for values in positional)
    keywords = {name: frozenset(_known(v) for v in values) for name, values in keywords}
    if known == ():
        return positional, tuple(sorted(keywords.items()))
    old_positional, old_keywords = known
    if len(old_positional) != len(positional) or {n for n, _ in old_keywords} != set(keywords):
        return None  # ways that pass different parameters: not one binding
    return (tuple(a | b for a, b in zip(old_positional, positional)),
            tuple(sorted((name, values | keywords[name]) for name, values in old_keywords)))


def _known(value):
    if isinstance(value, Const):
        return literal(value.value)
    if isinstance(value, (Instance, Wrapped, FabricValue, Class, Container, Bound)):
        return Known.OBJECT
    return Known.UNKNOWN


# -- modules without a trainable parameter set up (FAB009) ---------------------------------------------------
def _frozen_setups(facts: ProgramFacts, events: list[Event], origins: dict[int, Origin]) -> None:
    """A setup whose module, on every way the analysis sees it, has no parameter that requires a gradient."""
    found: dict[int, FrozenSetupFact | None] = {}
    for event in events:
        if event.kind != "setup" or not facts.solver.feasible(event.variant):
            continue
        origin = origins.get(id(event.node))
        if origin is None or found.get(id(event.node), 0) is None:
            continue
        modules = [v for v in event.data["values"] if v != _NONE_VALUE]
        verdicts = [_frozen(facts, value) for value in modules]
        if not verdicts or any(v is None for v in verdicts):
            found[id(event.node)] = None  # one way gives a module that trains, or one the analysis cannot see
            continue
        frozen_at = tuple(dict.fromkeys(at for at, _ in verdicts if at is not None))
        node = event.node
        method = node.func.attr if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else "setup"
        known = found.get(id(event.node))
        if known:
            known.frozen_at = tuple(dict.fromkeys(known.frozen_at + frozen_at))
            known.when = _either_way(known.when, facts.when(event))
            continue
        found[id(event.node)] = FrozenSetupFact(
            node, event.path, event.scope, event.statement, origin, frozen_at, verdicts[0][1], method,
            isinstance(node, ast.Call) and len(node.args) > 1, facts.when(event))
    facts.frozen_setups = sorted((f for f in found.values() if f), key=lambda f: (f.path, _position(f.node)))


def ddp_refusal(facts: "ProgramFacts", fabric) -> tuple[bool | None, str]:
    """Does setup under this Fabric wrap the module in DistributedDataParallel? True (the strategy the code
    states is a DDP one), None (it depends: a strategy chosen at run time, the machine's devices, `"dp"`), False
    (single device, FSDP, DeepSpeed, XLA); and the setting that decides, for the message."""
    strategy = facts.strategy(fabric)
    if strategy.kind == SINGLE:
        return False, strategy.description
    names = facts.solver.strategy_names(fabric)
    if names is None:
        return None, strategy.description
    verdicts = set()
    for name in names:
        if name == "auto":
            if strategy.kind == WRAPPING:
                verdicts.add(True)  # devices>1 or num_nodes>1 with the default strategy: DDP
            else:
                verdicts.add(None)  # the machine decides (`devices="auto"` on several GPUs: DDP)
            continue
        known = tables().strategy(name)
        if known is None:
            verdicts.add(None)
        elif known.name == "DDPStrategy":
            verdicts.add(True)
        elif known.name == "DataParallelStrategy":
            verdicts.add(None)  # DataParallel on GPUs; on a machine without them "dp" becomes DDP
        else:
            verdicts.add(False)
    if verdicts == {True}:
        return True, strategy.description
    if verdicts == {False}:
        return False, strategy.description
    return None, strategy.description


def refused_setups(facts: "ProgramFacts") -> dict:
    """Setups that raise (FAB009) on every configuration where the module they wrap would be a wrapper that
    guards its methods: the Fabric's strategy is a DDP one, or "auto" (which wraps only when it picks DDP, with
    several devices); id(setup call) -> its fact. A later call on that wrapper is never reached there."""
    known = facts.__dict__.get("_refused_setups")
    if known is None:
        known = {}
        for fact in facts.frozen_setups:
            # (a setup made only under a run-time choice stops the calls on its model all the same: they are
            # made on the model it returned, after it)
            if not fact.origin.fabrics:
                continue
            if all(_covers_wrapping(facts, fabric) for fabric in fact.origin.fabrics):
                known[id(fact.node)] = fact
        facts.__dict__["_refused_setups"] = known
    return known


def _covers_wrapping(facts: "ProgramFacts", fabric) -> bool:
    names = facts.solver.strategy_names(fabric)
    if not names:
        return False
    for name in names:
        if name == "auto":
            continue
        found = tables().strategy(name)
        if found is None or found.name != "DDPStrategy":
            return False
    return True


def _frozen(facts: ProgramFacts, value) -> tuple | None:
    """((path, node) where it was frozen, or None for a class that owns no trainable parameter; the reason), or
    None when the module may have a parameter that requires a gradient (or cannot be seen)."""
    if not isinstance(value, Instance):
        return None
    if value.frozen is not None:
        path, node = value.frozen
        text = facts.program.segment(path, node) if path else ""
        how = f"`{text}`" if text and len(text) <= 80 else "the call that freezes it"
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in ("parameters", "named_parameters"):
            how = f"the loop over {how}"  # `for p in m.parameters(): p.requires_grad = False`
        return (path, node), f"every parameter is frozen by {how}"
    cls = facts.resolver.ref_of(value.cls)
    reason = facts.modules.without_trainable_parameters(cls)
    return (None, reason) if reason is not None else None


def _either_way(known: str | None, found: str) -> str:
    """The choice a site is reached under, over every way to it: "" as soon as one way is the default run's."""
    if known is None:
        return found
    return "" if not known or not found else known


def _position(node: ast.AST) -> tuple[int, int]:
    return getattr(node, "lineno", 0), getattr(node, "col_offset", 0)


def _encloses(scope: ir.Scope, node: ast.AST) -> bool:
    """Whether `node` (the constructor) sits directly in `scope`'s body (not in a nested function or
    class). Only the nodes whose span holds `node`'s are entered (a script's module body is not walked
    whole for each Fabric); inside an f-string, where Python before 3.12 may misplace positions, all."""
    root = getattr(scope, "node", None)
    if root is None:
        return False
    start = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
    end = (getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0)
    pending = [(child, False) for child in ast.iter_child_nodes(root)]
    while pending:
        current, in_fstring = pending.pop()
        if current is node:
            return True
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        line = getattr(current, "lineno", None)
        if line is not None and not in_fstring and (
                (line, current.col_offset) > start or (current.end_lineno or 0, current.end_col_offset or 0) < end):
            continue  # its span does not hold the node's
        in_fstring = in_fstring or isinstance(current, ast.JoinedStr)
        pending.extend((child, in_fstring) for child in ast.iter_child_nodes(current))
    return False


@dataclass
class ProgramFacts:
    program: object
    solver: Solver
    resolver: ClassResolver
    modules: ModuleAnalyzer
    method_calls: list[MethodCallFact] = field(default_factory=list)
    marks: list[MarkFact] = field(default_factory=list)
    meta_models: list[MetaModelFact] = field(default_factory=list)
    backwards: list[BackwardFact] = field(default_factory=list)
    setup_misuses: list[SetupMisuseFact] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    origins: dict[int, Origin] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    fabrics: list[FabricFact] = field(default_factory=list)
    frozen_setups: list[FrozenSetupFact] = field(default_factory=list)
    reach: ChoiceReach | None = None
    # Findings left out because an earlier error on their path stops the program first (rules/first_error):
    # (id of the stopping setup call, code, path, node, headline), filled by the rules that leave them out.
    masked: list = field(default_factory=list)

    def when(self, event: Event) -> str:
        """The run-time choice an event happens under ("when run with `--sample`"), "" on the default run's way."""
        return self.reach.when(event) if self.reach is not None else ""

    def source(self, path: str) -> SourceFile | None:
        return self.program.source_of(path)

    def strategy(self, fabric: FabricValue) -> Strategy:
        return self.solver.strategy(fabric)

    def method_info(self, cls: ClassRef, name: str) -> MethodInfo:
        key = (id(cls), name)
        cache = self.__dict__.setdefault("_method_infos", {})
        if key not in cache:
            cache[key] = (cls, method_info(self, cls, name))
        return cache[key][1]

    def library_skew(self, cls: ClassRef) -> str | None:
        """When `cls` is (or derives from) a library model the tables describe and the analysis
        interpreter has another version of that library installed: a sentence saying so."""
        for ref in self.resolver.mro(cls) if cls is not None else ():
            if isinstance(ref, LibraryClass) and ref.in_tables:
                name = library_models.library(ref.qualified)
                table = library_models.table_version(name)
                installed = library_models.installed_version(name, self.program.resolver.library_path)
                if installed is not None and installed != table:
                    return (f"{name} {installed} is installed; fabric-lsp's tables for {name} come from {table}, "
                            "so what this method runs may differ")
                return None
        return None

    def method_kind(self, cls: ClassRef, name: str) -> str:
        """method_info's kind, without asking whether the method runs a module (which reads its body
        and what it calls): for questions about many names at once."""
        known = self.__dict__.get("_method_infos", {}).get((id(cls), name))
        return known[1].kind if known is not None else method_info(self, cls, name, runs=False).kind

    def _carrying_events(self, site) -> tuple[dict[int, list[Event]], dict[int, list[Event]]]:
        """The "pass" events (by callee) and "returned" events (by scope) that carry the wrapped
        model of `site`. Indexed once for all sites: scanning every event for each finding made a
        file with n setup calls cost n * events (quadratic)."""
        index = self.__dict__.get("_carrying_index")
        if index is None:
            index = {}
            for event in self.events:
                if event.kind == "pass":
                    for each in event.data["sites"]:
                        index.setdefault(each, ({}, {}))[0].setdefault(id(event.data["callee"]), []).append(event)
                elif event.kind == "returned":
                    for each in event.data["sites"]:
                        index.setdefault(each, ({}, {}))[1].setdefault(id(event.scope), []).append(event)
            self.__dict__["_carrying_index"] = index
        return index.get(site, ({}, {}))

    def chain(self, call: "MethodCallFact", origin: Origin, limit: int = 6) -> list[tuple[str, ast.AST, str]]:
        """The calls that bring the wrapped model of `origin` to the scope of `call`, from the setup
        towards the call: arguments passed into helpers, and values helpers return."""
        passes, returns = self._carrying_events(origin.site)
        target = origin.scope
        frontier: list[tuple[ir.Scope, list]] = [(call.scope, [])]
        seen = {id(call.scope)}
        for _ in range(limit):
            following: list[tuple[ir.Scope, list]] = []
            for scope, hops in frontier:
                if scope is target:
                    return list(reversed(hops))
                for event in passes.get(id(scope), ()):
                    if id(event.scope) not in seen:
                        seen.add(id(event.scope))
                        text = f"the wrapped model is passed to `{scope.name}` here"
                        following.append((event.scope, hops + [(event.path, event.node, text)]))
                for event in returns.get(id(scope), ()):
                    callee = event.data["callee"]
                    if id(callee) not in seen:
                        seen.add(id(callee))
                        text = f"`{callee.name}` returns the wrapped model here"
                        following.append((callee, hops + [(event.path, event.node, text)]))
            frontier = following
            if not frontier:
                break
        for scope, hops in frontier:
            if scope is target:
                return list(reversed(hops))
        return []


def analyze(program) -> ProgramFacts:
    solver: Solver = program.solver
    resolver = ClassResolver(program)
    modules = ModuleAnalyzer(resolver)
    modules.flow = solver
    facts = ProgramFacts(program, solver, resolver, modules, notices=list(program.notices))
    if solver.bound_hit:
        return facts  # the tables are not a fixed point: nothing that rests on them is reported
    events = solver.all_events()
    facts.reach = ChoiceReach(program, solver, events)
    origins = _origins(program, solver, events, facts.reach)
    facts.origins, facts.events = origins, events
    _frozen_setups(facts, events, origins)  # (before the calls: a refused setup stops those after it)
    _method_calls(facts, events, origins)
    _marks(facts, events, origins)
    _meta_models(facts, events)
    _backwards(facts, events, origins)
    _setup_misuses(facts, events, origins)
    _fabrics(facts, events)
    return facts


# -- Fabric objects: launched or not ---------------------------------------------------------------------------
# A usage line naming a script started by the CLI: `fabric run --devices 2 train.py`, `lightning run model x.py`.
_CLI_STATED = re.compile(r"\b(?:fabric\s+run|lightning\s+run\s+model)\b[^\n]{0,200}?\.py\b")


def _fabrics(facts: ProgramFacts, events: list[Event]) -> None:
    """One fact per Fabric constructed in the program (a site), with its uses and launches."""
    by_site: dict[int, FabricFact] = {}
    for event in events:
        if event.kind not in ("fabric_use", "launch"):
            continue
        fabric: FabricValue = event.data["fabric"]
        if fabric.site is None:
            continue  # a Fabric passed in from outside: its launch cannot be seen
        fact = by_site.get(id(fabric.site))
        if fact is None:
            source = facts.source(fabric.path) if fabric.path else None
            cli = bool(source is not None and _CLI_STATED.search(source.text))
            if not cli and fabric.path:
                cli = _documented_cli(facts, fabric.path)
            fact = by_site[id(fabric.site)] = FabricFact(fabric, facts.strategy(fabric), [], [],
                                                          _overrides_run(facts, fabric), cli,
                                                          _strategy_class(fabric.site))
        use = FabricUse(event.node, event.path, event.scope, event.statement, event.data.get("method", "launch"),
                        event.data.get("functions", frozenset()), event.data.get("argument"), facts.when(event))
        (fact.launches if event.kind == "launch" else fact.uses).append(use)
    for fact in by_site.values():
        for uses in (fact.uses, fact.launches):
            uses.sort(key=lambda u: (u.path, _position(u.node)))
    facts.fabrics = sorted(by_site.values(), key=lambda f: (f.fabric.path or "", _position(f.fabric.site)))


def _documented_cli(facts: ProgramFacts, path: str) -> bool | None:
    """True when the project's README, docs or shell scripts start this script with `fabric run` /
    `lightning run model`; None (a hint, not a warning) when they start other scripts so and not this one."""
    program = facts.program
    root = getattr(program, "root", None)
    if not root:
        return False
    documents = launch_documents(root)
    note = getattr(program, "note_outside_reads", None)
    if note is not None:
        note(documents.read)  # the findings cache checks them: an edit of the README is seen
    if os.path.basename(path) in documents.scripts:
        return True
    return None if documents.any_command else False


def _strategy_class(site: ast.AST) -> str | None:
    from fabric_lsp.analysis.libraries.torch_tables import tables

    for keyword in getattr(site, "keywords", ()):
        if keyword.arg == "strategy" and isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, str):
            found = tables().strategy(keyword.value.value)
            return found.name if found is not None else None
    return None


def _overrides_run(facts: ProgramFacts, fabric: FabricValue) -> bool:
    if fabric.cls is None:
        return False
    owner, _ = facts.solver.lookup_class_attribute(fabric.cls, "run")
    return isinstance(owner, Class) and not owner.external


# -- wrapped models -----------------------------------------------------------------------------------------
def _origins(program, solver: Solver, events: list[Event], reach: ChoiceReach) -> dict[int, Origin]:
    found: dict[int, Origin] = {}
    for event in events:
        if event.kind != "setup":
            continue
        if id(event.node) in found:
            if found[id(event.node)].when and not reach.when(event):
                found[id(event.node)] = dataclasses.replace(found[id(event.node)], when="")
            continue
        site = event.node
        # A Fabric made in a case of a split that the program's values never take is not one it runs.
        fabrics = tuple(sorted((v for v in solver.peek(("setup_fabric", site))
                                if isinstance(v, FabricValue) and solver.feasible(v.variant)), key=sort_key))
        models = tuple(sorted(solver.peek(("setup_module", site)), key=sort_key))
        found[id(site)] = Origin(site, event.path, event.scope, event.statement, _setup_target(event.statement, site),
                                 fabrics, models, reach.when(event))
    return found


def _setup_target(statement: ast.AST | None, site: ast.Call) -> ast.expr | None:
    if isinstance(statement, (ast.Assign, ast.AnnAssign)):
        target = statement.targets[0] if isinstance(statement, ast.Assign) else statement.target
        value = statement.value
        if isinstance(target, (ast.Tuple, ast.List)):
            if value is site or (isinstance(value, ast.Subscript) and value.value is site):
                first = target.elts[0] if target.elts else None
                return None if isinstance(first, ast.Starred) else first
            if isinstance(value, (ast.Tuple, ast.List)):  # a, b = fabric.setup(x), other
                for element, part in zip(target.elts, value.elts):
                    if part is site:
                        return element
            return None
        if value is site or (isinstance(value, ast.Subscript) and value.value is site):
            return target
    return None


def wrapped_paths(facts: ProgramFacts, origin: Origin, variant=None, wrapped: Wrapped | None = None) -> list[WrappedPath]:
    """The ways the model of `origin` is wrapped; seen from an event of some cases (`variant`: a split
    scope's flag, a loop's key), only the Fabric objects those cases can meet; for a wrapped value
    made in some cases, only the models and Fabric objects of those."""
    paths = []
    fabrics, models = origin.fabrics, origin.models
    if wrapped is not None and wrapped.variant:
        key = site_key(wrapped.site, wrapped.variant)
        fabrics = tuple(f for f in origin.fabrics if f in facts.solver.peek(("setup_fabric", key)))
        models = tuple(sorted(facts.solver.peek(("setup_module", key)), key=sort_key))
        variant = tuple(variant or ()) + tuple(wrapped.variant)
    for fabric in fabrics:
        if not compatible(fabric.variant, variant):
            continue
        strategy = facts.strategy(fabric)
        for model in models:
            cls, compiled, declared = None, False, None
            if isinstance(model, Instance):
                cls = facts.resolver.ref_of(model.cls)
                compiled = model.compiled
                declared = model.declared
            paths.append(WrappedPath(origin, fabric, strategy, cls, compiled, declared))
    return paths


def _method_calls(facts: ProgramFacts, events: list[Event], origins: dict[int, Origin]) -> None:
    """One fact per call node and method, with the paths on which the method is not marked before the
    call: in the order of the statements and of the calls that lead there (analysis.order); where that
    order cannot be told, a mark in another function counts as made before. A mark whose name cannot be
    read counts for every method."""
    by_node: dict[tuple, MethodCallFact] = {}
    marks = _marks_by_origin(events, facts.solver)
    order = CallOrder(facts.program, facts.solver, events)
    always_wrapped: dict[int, bool] = {}
    for event in events:
        if event.kind == "wcall":
            receivers = event.data.get("receivers")
            # None is not an unwrapped module: `None.m()` fails the same way with or without the mark.
            wrapped_only = bool(receivers) and all(isinstance(v, Wrapped) or v == _NONE_VALUE for v in receivers)
            always_wrapped[id(event.node)] = always_wrapped.get(id(event.node), True) and wrapped_only
    for event in events:
        if event.kind != "wcall" or not facts.solver.feasible(event.variant):
            continue
        wrapped: Wrapped = event.data["wrapped"]
        origin = origins.get(id(wrapped.site))
        if origin is None:
            continue
        method = event.data["method"]
        site = id(wrapped.site)
        if event.data["marked"] or (site, None) in marks:
            continue
        elsewhere = bool(marks.get((site, method), set()) - {id(event.scope)})
        if not order.unmarked(event.scope, wrapped, method, event.data.get("before", frozenset()), origin.scope, elsewhere):
            continue
        fact = by_node.get((id(event.node), method))
        if fact is None:
            func = event.data.get("func")
            span_node = func[3] if func is not None and func[0] == "attr" else getattr(event.node, "func", event.node)
            fact = by_node[(id(event.node), method)] = MethodCallFact(
                event.node, event.path, span_node, method, event.scope,
                receiver_always_wrapped=always_wrapped[id(event.node)])
        fact.when = _either_way(fact.when, facts.when(event))
        fact.arguments = _joined_arguments(fact.arguments, event.data.get("arguments"))
        stopper = _stopped_before(facts, order, event, wrapped)
        if fact.stopped_by is None:
            fact.stopped_by = stopper if stopper is not None else 0  # 0: reached on some way (reported as usual)
        elif stopper is None:
            fact.stopped_by = 0
        fact.paths.extend(p for p in wrapped_paths(facts, origin, event.variant, wrapped) if p not in fact.paths)
    if order.notice:
        facts.notices.append(f"{facts.program.root}: {order.notice}")
    if facts.solver.peek(("order_bound",)):
        facts.notices.append(
            f"{facts.program.root}: the order of setups was followed for {MAX_ORDERED_WRAPS} wrapped models on one "
            "function's way (counted); past that a mark made anywhere counts as made before a call")
    facts.method_calls = sorted(by_node.values(), key=lambda f: (f.path, f.node.lineno, f.node.col_offset, f.method))


def _stopped_before(facts: ProgramFacts, order: CallOrder, event: Event, wrapped: Wrapped) -> int | None:
    """The refused setup (analysis.facts.refused_setups) that ran before this call on every way to it, under
    the Fabric that set up the call's model; None when there is none."""
    refused = refused_setups(facts)
    if not refused:
        return None
    fabrics = set(facts.solver.peek(("setup_fabric", wrapped.site)))
    for site_id, fact in refused.items():
        if not fabrics or not fabrics <= set(fact.origin.fabrics):
            continue  # the call's model is set up under another Fabric: its configurations may differ
        if order.always_after(event.scope, site_id, event.data.get("before", frozenset())):
            return site_id
    return None


def _marks_by_origin(events: list[Event], solver: Solver) -> dict[tuple, set[int]]:
    """(setup site id, method name or None for a name we cannot read) -> ids of the scopes marking it."""
    found: dict[tuple, set[int]] = {}
    for event in events:
        if event.kind != "mark" or not solver.feasible(event.variant):
            continue
        site = id(event.data["wrapped"].site)
        for name in event.data["names"]:
            found.setdefault((site, name), set()).add(id(event.scope))
        if event.data["unknown"]:
            found.setdefault((site, None), set()).add(id(event.scope))
    return found


def _marks(facts: ProgramFacts, events: list[Event], origins: dict[int, Origin]) -> None:
    by_node: dict[int, MarkFact] = {}
    for event in events:
        if event.kind != "mark" or not facts.solver.feasible(event.variant):
            continue
        origin = origins.get(id(event.data["wrapped"].site))
        if origin is None:
            continue
        fact = by_node.get(id(event.node))
        if fact is None:
            fact = by_node[id(event.node)] = MarkFact(event.node, event.path, event.data["argument"], [],
                                                      frozenset(), frozenset())
        fact.paths.extend(p for p in wrapped_paths(facts, origin, event.variant, event.data["wrapped"])
                          if p not in fact.paths)
        fact.names = fact.names | event.data["names"]
        fact.values = fact.values | event.data["arguments"]
        fact.when = _either_way(fact.when, facts.when(event))
    facts.marks = sorted(by_node.values(), key=lambda f: (f.path, f.node.lineno, f.node.col_offset))


# -- loss.backward() on the wrapped model's output ---------------------------------------------------------
def _backwards(facts: ProgramFacts, events: list[Event], origins: dict[int, Origin]) -> None:
    by_node: dict[int, BackwardFact] = {}
    for event in events:
        if event.kind != "backward":
            continue
        origin = origins.get(id(event.data["output"].wrapped.site))
        if origin is None or not facts.solver.output_reaches(event.scope) or _home_made_backward(event):
            continue
        fact = by_node.get(id(event.node))
        if fact is None:
            fact = by_node[id(event.node)] = BackwardFact(event.node, event.path, event.scope)
        fact.when = _either_way(fact.when, facts.when(event))
        for fabric in origin.fabrics:
            hooks, setting = facts.solver.backward_hook(fabric)
            path = BackwardPath(origin, fabric, hooks, setting)
            if path not in fact.paths:
                fact.paths.append(path)
        for name, values in event.data["fabrics"]:
            if all(name != known for known, _ in fact.fabric_names):
                fact.fabric_names.append((name, values))
    facts.backwards = sorted(by_node.values(), key=lambda f: (f.path, f.node.lineno, f.node.col_offset))


def _home_made_backward(event: Event) -> bool:
    """`def backward(self, loss): loss.backward()` in a project class: a Fabric stand-in (a test double, a
    home-made distributed wrapper). Its summary joins every Fabric-like object's `backward(loss)` call, so the
    real Fabric's callers' outputs reach it on paper; the real Fabric never calls it."""
    scope = event.scope
    if scope.kind != ir.FUNCTION or scope.class_scope is None or scope.name != "backward":
        return False
    func = getattr(event.node, "func", None)
    receiver = getattr(func, "value", None)
    return isinstance(receiver, ast.Name) and any(p.name == receiver.id for p in scope.params[1:])


# -- setup misuse ---------------------------------------------------------------------------------------------
_DATASET_CLASSES = frozenset(("torch.utils.data.Dataset", "torch.utils.data.dataset.Dataset",
                              "torch.utils.data.IterableDataset", "torch.utils.data.dataset.IterableDataset"))


def _setup_misuses(facts: ProgramFacts, events: list[Event], origins: dict[int, Origin]) -> None:
    """One fact per call node, only where every value the analysis sees makes Lightning refuse the call
    (values it cannot see make it no finding). A call reached several times must be refused each time."""
    verdicts: dict[tuple, SetupMisuseFact | None] = {}
    for event in events:
        key = (event.kind, id(event.node), id(event.data.get("argument")))
        if key in verdicts and verdicts[key] is None:
            continue
        fact = _misuse(facts, event, origins)
        if fact is None:
            if event.kind in ("setup_again", "no_backward_sync", "setup_dataloaders", "setup_optimizers"):
                verdicts[key] = None
            continue
        fact.when = facts.when(event)
        known = verdicts.setdefault(key, fact)
        known.when = _either_way(known.when, fact.when)
    found = [fact for fact in verdicts.values() if fact is not None]
    facts.setup_misuses = sorted(found, key=lambda f: (f.path, f.node.lineno, f.node.col_offset, f.kind))


def _argument_node(call: ast.AST, keyword: str) -> ast.AST | None:
    if not isinstance(call, ast.Call):
        return None
    return call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == keyword), None)


def _misuse(facts: ProgramFacts, event: Event, origins: dict[int, Origin]) -> SetupMisuseFact | None:
    values = frozenset(v for v in event.data.get("values", ()) if v != _NONE_VALUE)
    if event.kind == "setup_again":
        if not event.data["local"] or not values or not all(isinstance(v, Wrapped) for v in values):
            return None
        wrapped = sorted(values, key=sort_key)[0]
        origin = origins.get(id(wrapped.site))
        if origin is None or origin.site is event.node:
            return None
        return SetupMisuseFact("again", event.node, event.path, event.scope, _argument_node(event.node, "module"),
                               "", origin, event.data["method"])
    if event.kind == "no_backward_sync":
        if not values or not all(isinstance(v, Instance) for v in values):
            return None  # a wrapper, or something the analysis cannot see
        if facts.resolver.is_module(facts.resolver.ref_of(sorted(values, key=sort_key)[0].cls)) is not True:
            return None
        return SetupMisuseFact("no_backward_sync", event.node, event.path, event.scope,
                               _argument_node(event.node, "module"), "a module that was never set up")
    if event.kind == "setup_dataloaders":
        if not values:
            return None
        details = set()
        for value in values:
            detail = _not_a_dataloader(facts, value)
            if detail is None:
                return None
            details.add(detail)
        return SetupMisuseFact("dataloaders", event.node, event.path, event.scope, event.data["argument"],
                               " or ".join(sorted(details)))
    if event.kind == "setup_optimizers":
        names = facts.solver.strategy_names(event.data["fabric"])
        if not names or not all(n.lower().startswith("deepspeed") or n.lower() == "xla" or n == "XLAStrategy"
                                for n in names):
            return None
        name = "XLAStrategy" if any(n.lower() in ("xla", "xlastrategy") for n in names) else "DeepSpeedStrategy"
        return SetupMisuseFact("jointly", event.node, event.path, event.scope, None, name)
    return None


def _not_a_dataloader(facts: ProgramFacts, value) -> str | None:
    """What `value` is when it is certainly not a torch DataLoader: "a list" / "a tuple" / "a dict" (a
    display), "a `Name` dataset" (a project class deriving from torch's Dataset); else None."""
    if isinstance(value, Container):
        node = value.site
        if isinstance(node, (ast.List, ast.ListComp)):
            return "a list"
        if isinstance(node, ast.Tuple):
            return "a tuple"
        if isinstance(node, (ast.Dict, ast.DictComp)):
            return "a dict"
        return None
    if isinstance(value, Instance):
        cls = facts.resolver.ref_of(value.cls)
        refs = list(facts.resolver.mro(cls))
        if None in refs:
            return None
        qualified = [r.qualified for r in refs if isinstance(r, LibraryClass)]
        if any("DataLoader" in q for q in qualified) or not any(q in _DATASET_CLASSES for q in qualified):
            return None
        return f"a `{cls.name}` dataset"
    return None


# -- meta-device models -------------------------------------------------------------------------------------------
def _meta_models(facts: ProgramFacts, events: list[Event]) -> None:
    """Models built on the meta device and materialized: the pairs of a meta-device construction and
    a materialization that one run of the program can meet (the cases of a split scope keep the
    meta device and the strategy the same flag chose together; a case the program's values never
    take counts for nothing). Under ModelParallel nothing is raised; when the program gives the
    weights values after setup (`model.reset_parameters()`, `model.apply(fn)`, a checkpoint load),
    nothing is left uninitialised either: no fact."""
    solver = facts.solver
    reinits = [e for e in events if e.kind == "reinit" and solver.feasible(e.variant)]
    built_when: dict[int, str | None] = {}  # meta-device constructions: the choice each is made under
    for event in events:
        if event.kind == "meta_build":
            built_when[id(event.node)] = _either_way(built_when.get(id(event.node)), facts.when(event))
    found: dict[tuple, MetaModelFact] = {}
    for event in events:
        if event.kind not in ("materialize", "setup") or not solver.feasible(event.variant):
            continue
        instances = [v for v in event.data["values"] if isinstance(v, Instance) and v.meta is not None
                     and solver.feasible(v.meta.variant) and compatible(v.meta.variant, event.variant)]
        if not instances:
            continue
        classes = {describe(v.cls) for v in event.data["values"] if isinstance(v, Instance)}
        for instance in sorted(instances, key=sort_key):
            materialization = _materialization(facts, event, instance.meta)
            if materialization is None:
                continue
            if materialization.how == "model_parallel" and _initialised_after(facts, instance, event, reinits):
                continue
            cls = facts.resolver.ref_of(instance.cls)
            key = (id(instance.meta[2]), describe(instance.cls))
            fact = found.get(key)
            if fact is None:
                fact = found[key] = MetaModelFact(instance.meta, cls, [], _meta_certain(solver, instance.meta))
            fact.materializations.append(materialization)
            fact.classes_at_materialization = max(fact.classes_at_materialization, len(classes))
            fact.when = _either_way(fact.when, joined_phrase((facts.when(event), built_when.get(id(instance.meta[2])) or "")))
    # init_module(empty_init=True) under FSDP / ModelParallel: setup materializes, in sight or not.
    for event in events:
        if event.kind != "meta_build" or not solver.feasible(event.variant):
            continue
        for instance in sorted(event.data["values"], key=sort_key):
            tag = instance.meta
            if not isinstance(instance, Instance) or tag is None or tag.kind != "init_module":
                continue
            key = (id(tag[2]), describe(instance.cls))
            if key in found:
                continue
            implied = _implied_by_init_module(facts, tag)
            if implied is None or implied.how == "model_parallel" and _initialised_after(facts, instance, None, reinits):
                continue
            found[key] = MetaModelFact(tag, facts.resolver.ref_of(instance.cls), [implied], _meta_certain(solver, tag),
                                       when=facts.when(event))
    facts.meta_models = [found[k] for k in sorted(found, key=lambda k: (found[k].tag.path, getattr(found[k].tag.creation, "lineno", 0), k[1]))]


def _initialised_after(facts: ProgramFacts, instance: Instance, setup: Event | None, reinits: list[Event]) -> bool:
    """Does the program give the model's weights values after Fabric set it up: on the wrapped model
    (after setup by construction), or on the module itself later in the function that set it up?"""
    solver = facts.solver
    for event in reinits:
        if not compatible(event.variant, instance.meta.variant):
            continue
        for value in event.data["values"]:
            if isinstance(value, Wrapped) and instance in solver.peek(("setup_module", site_key(value.site, value.variant))):
                if setup is None or value.site is setup.node:
                    return True
            elif value == instance and setup is not None and event.scope is setup.scope \
                    and (event.node.lineno, event.node.col_offset) > (setup.node.lineno, setup.node.col_offset):
                return True
    return False


def _meta_certain(solver: Solver, tag: MetaTag) -> bool:
    if tag.kind != "init_module":
        return True
    return solver.empty_init(tag.init_call, tag.variant) is True


def _materialization(facts: ProgramFacts, event: Event, tag: MetaTag) -> Materialization | None:
    solver = facts.solver
    source = facts.source(event.path)
    text = source.segment(event.node.func) if source is not None and isinstance(event.node, ast.Call) else "setup"
    if tag.kind == "init_module" and solver.empty_init(tag.init_call, tag.variant) is False:
        return None
    if event.kind == "materialize":
        how = {"_materialize_meta_tensors": "materialize", "_materialize_distributed_module": "model_parallel"}.get(
            event.data["how"], "fsdp")
        return Materialization(how, event.node, event.path, f"`{text}(...)`", True)
    fabric: FabricValue = event.data["fabric"]
    if not solver.feasible(fabric.variant) or not compatible(fabric.variant, tag.variant):
        return None
    strategy = solver.strategy(fabric)
    if strategy.materializes is False:
        return None
    how, certain = _how(strategy)
    if _chosen_at_run_time(solver, fabric.variant, tag.variant, event.variant):
        certain = False  # the case of the split this Fabric was made in is itself chosen at run time
    when = f" {strategy.when}" if strategy.when else ""
    return Materialization(how, event.node, event.path, f"`{text}(...)` under {strategy.description}{when}", certain)


def _chosen_at_run_time(solver: Solver, *variants) -> bool:
    """Is one of these cases of a split chosen at run time (the program's values can take the other)?"""
    return any(solver.chosen_at_run_time(v) for v in variants)


def _how(strategy: Strategy) -> tuple[str, bool]:
    """(how setup materializes, whether the error is certain): only torch FSDP, stated by the code,
    makes it certain; a strategy chosen at run time never does, whatever it may be."""
    if strategy.how in ("fsdp", "model_parallel", "mixed"):
        return strategy.how, strategy.how == "fsdp" and strategy.materializes is True
    return "setup", False


def _implied_by_init_module(facts: ProgramFacts, tag: MetaTag) -> Materialization | None:
    solver = facts.solver
    if solver.empty_init(tag.init_call, tag.variant) is False:
        return None  # init_module(empty_init=False) or without it: nothing is built on the meta device
    fabrics = [f for f in sorted(tag.fabrics, key=sort_key) if isinstance(f, FabricValue)
               and solver.feasible(f.variant) and compatible(f.variant, tag.variant)]
    strategies = [solver.strategy(f) for f in fabrics]
    if not strategies or all(s.materializes is False for s in strategies):
        return None
    hows = [_how(s) for s in strategies if s.materializes is not False]
    kinds = {how for how, _ in hows}
    how = kinds.pop() if len(kinds) == 1 else "mixed"
    certain = all(s.materializes is True for s in strategies) and all(c for _, c in hows) \
        and not _chosen_at_run_time(solver, tag.variant, *(f.variant for f in fabrics))
    strategy = strategies[0]
    return Materialization(how, None, None, f"Fabric's setup under {strategy.description or 'this strategy'}", certain)


# -- what `wrapped.name` is --------------------------------------------------------------------------------------------
def method_info(facts: ProgramFacts, cls: ClassRef, name: str, runs: bool = True) -> MethodInfo:
    """What `wrapped.<name>` is for an instance of `cls`; with `runs`, whether it runs a module."""
    resolver = facts.resolver
    runs_module = facts.modules.runs_module if runs else (lambda *args: None)
    if name in wrapper_attributes():
        return MethodInfo("wrapper", None, None, None)
    if cls is None:
        return MethodInfo("unknown", None, None, None)
    owner, definition = resolver.find_attribute(cls, name)
    class_name = cls.name
    if isinstance(owner, LibraryClass) and owner.in_tables:
        return _library_method_info(runs_module, owner, name, class_name)
    if owner is None:
        bound = _bound_method_attribute(facts, cls, name)
        if bound is not None:
            target_cls, target, span, bound_at = bound
            if isinstance(target, str):
                return MethodInfo("method", class_name, span, runs_module(target_cls, target), bound_at)
            verdict = facts.modules.runs_bound_function(target_cls, target.node, facts.source(target.path)) \
                if runs else None
            if verdict is not None and bound_at is not None:
                verdict = RunsModule(verdict.runs, f"is the function `{target.name}` bound to the instance with "
                                                   f"{bound_at[1]}, which {verdict.reason}", verdict.certain)
            return MethodInfo("method", class_name, span, verdict, bound_at, target.name)
        return MethodInfo("missing", class_name, None, None)
    if isinstance(owner, LibraryClass) or definition is None:
        return MethodInfo("wrapper", class_name, None, None)  # nn.Module API, found on the wrapper too
    if not isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
        alias = _method_alias(owner, definition)
        if alias is not None:
            span = owner.source.span_of_name_in(alias, alias.name)
            kind = decorator_kind(alias)
            verdict = runs_module(owner, alias.name) if kind in ("method", "classmethod") else None
            return MethodInfo(kind, class_name, span, verdict)
        return MethodInfo("attribute", class_name, owner.source.span(definition), None)
    span = owner.source.span_of_name_in(definition, name)
    kind = decorator_kind(definition)
    if kind == "property":
        returned = _property_returns(facts, owner, name)
        if returned is not None:
            kind, target = returned
            if kind == "property_method" and target is not None and runs:
                # Looked up on the original module it is a bound method: Lightning's wrapper tracks it.
                inner = runs_module(cls, target)
                verdict = RunsModule(inner.runs, f"a property returning `self.{target}`, which {inner.reason}",
                                     inner.certain)
                return MethodInfo(kind, class_name, span, verdict)
            return MethodInfo(kind, class_name, span, None)
    if kind in ("method", "classmethod") and _is_generator(definition):
        return MethodInfo("generator", class_name, span, None)
    verdict = runs_module(cls, name) if kind in ("method", "classmethod") else None
    return MethodInfo(kind, class_name, span, verdict)


_LIBRARY_KINDS = {"method": "method", "classmethod": "classmethod", "staticmethod": "staticmethod",
                  "property": "property", "property_method": "property_method", "attribute": "attribute"}


def _library_method_info(runs_module, owner: LibraryClass, name: str, class_name: str) -> MethodInfo:
    """`name` on a model of transformers, timm, ... (the library tables): its kind, and for a method
    whether it runs a module (FAB001); unknown where the tables cannot tell."""
    kind = library_models.method_kind(owner.qualified, name)
    if kind is None:
        return MethodInfo("unknown", class_name, None, None)
    kind = _LIBRARY_KINDS.get(kind, kind)
    runs = runs_module(owner, name) if kind in ("method", "classmethod") else None
    return MethodInfo(kind, class_name, None, runs)


def _property_returns(facts: ProgramFacts, owner: ClassInfo, name: str) -> tuple[str, str | None] | None:
    """What the getter of the property `name` returns, read from the value flow: ("property_method",
    the method's name or None when not one method) when it returns a bound method (`return
    self._greedy`: Lightning's `isinstance(getattr(module, name), MethodType)` holds); ("unknown",
    None) when it may return anything; ("property", None) when it returns no method. None: the
    getter's run is not in the flow."""
    class_scope = facts.solver.classes.get(owner.key) if owner.key is not None else None
    getter = None
    for child in class_scope.children if class_scope is not None else ():
        if child.kind == ir.FUNCTION and child.name == name and child.class_scope is class_scope and not (
                {"setter", "deleter"} & set(child.decorator_names)):
            getter = child
    if getter is None:
        return None
    values = [v for v in facts.solver.peek(("return", getter)) if v != _NONE_VALUE]
    if not values:
        return None
    if any(isinstance(v, Unknown) for v in values):
        return "unknown", None
    methods = [v for v in values if (isinstance(v, Bound) and not isinstance(v.receiver, Class))
               or (isinstance(v, Special) and v.kind == "lib_method")]
    if not methods:
        return "property", None
    targets = {v.function.scope.name for v in methods if isinstance(v, Bound) and not v.function.external}
    one = len(methods) == len(values) and len(targets) == 1
    return "property_method", (next(iter(targets)) if one else None)


def _method_alias(owner: ClassInfo, value: ast.AST):
    """`decode = _greedy` in a class body: the aliased method (accessed, it is a bound method)."""
    if isinstance(value, ast.Name):
        target = owner.methods().get(value.id)
        if target is not None:
            return target
    return None


def _bound_method_attribute(facts: ProgramFacts, cls: ClassRef, name: str):
    """`self.decode = self._greedy` in a method: instances hold a bound method under `decode`, as they
    do after `model.step = types.MethodType(step, model)` or `self.step = step.__get__(self)` (a
    function of the module bound to the instance). (the class whose method it is and the method's
    name, or the receiver's class and the function's scope; the definition's span; where it was
    bound at run time, or None)."""
    if not isinstance(cls, ClassInfo) or cls.key is None:
        return None
    for value in sorted(facts.solver.peek(("field", cls.key, name)), key=sort_key):
        if isinstance(value, Bound) and not value.function.external and isinstance(value.receiver, Instance):
            scope = value.function.scope
            bound_at = _bound_at(facts, value)
            if scope.class_scope is None and scope.kind == ir.FUNCTION:
                source = facts.source(scope.path)
                if source is None:
                    continue
                return cls, scope, source.span_of_name_in(scope.node, scope.name), bound_at
            owner_key = class_key(scope.class_scope) if scope.class_scope else None
            owner = facts.resolver.class_info(owner_key) if owner_key is not None else None
            if owner is not None and scope.method_kind in ("method", "classmethod"):
                source = owner.source
                return owner, scope.name, source.span_of_name_in(scope.node, scope.name), bound_at
    return None


def _bound_at(facts: ProgramFacts, value: Bound) -> tuple[Span, str] | None:
    """Where `types.MethodType(f, obj)` / `f.__get__(obj)` made this bound method (the first such call),
    and the call's text (shortened to its callee when long)."""
    for site in sorted(facts.solver.peek(("bound_at", value)), key=sort_key):
        source = facts.source(site.extra)
        if source is None:
            continue
        text = source.segment(site.receiver)
        if len(text) > 60 or "\n" in text:
            text = source.segment(site.receiver.func) + "(...)"
        return source.span(site.receiver), f"`{text}`"
    return None


def _is_generator(function: ast.AST) -> bool:
    pending = list(ast.iter_child_nodes(function))
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        pending.extend(ast.iter_child_nodes(node))
    return False


