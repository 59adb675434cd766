"""FAB008 launch-misuse: `fabric.launch(...)` given something it refuses, before any process starts.

`Fabric.launch(function)` raises TypeError when `function` is not callable (`launch(train(fabric))`
passes what `train` returned: "needs to be a callable, but got None"), when its signature has no
parameter ("needs to take at least one argument": the launcher passes the Fabric), and, without a
function, under a strategy whose launcher spawns or forks processes ("To spawn processes with the
`DDPStrategy` strategy, `.launch()` needs to be called with a function"). Each on every machine.
"""

from __future__ import annotations

import ast
import re

from fabric_lsp.analysis import FabricFact, FabricUse, ProgramFacts
from fabric_lsp.analysis.values import LAUNCH_SPAWN, Bound, Const, Function, Instance
from fabric_lsp.findings import Applicability, Finding, Fix, Related, Severity, TextEdit
from fabric_lsp.rules.base import RuleModule, record_id, under_choice_finding
from fabric_lsp.rules.first_error import stopping

CODE = "FAB008"
NAME = "launch-misuse"


def check(facts: ProgramFacts) -> list[Finding]:
    findings = []
    seen: set[int] = set()
    for fabric in facts.fabrics:
        for launch in fabric.launches:
            if id(launch.node) in seen:
                continue
            finding = under_choice_finding(_finding(facts, fabric, launch), launch.when)
            finding = stopping(finding, facts.source(launch.path).tree, launch.node)  # launch refuses it
            if finding is not None:
                seen.add(id(launch.node))
                findings.append(finding)
    return findings


def _finding(facts: ProgramFacts, fabric: FabricFact, launch: FabricUse) -> Finding | None:
    source = facts.source(launch.path)
    if source is None or not isinstance(launch.node, ast.Call):
        return None
    receiver = source.segment(launch.node.func.value) if isinstance(launch.node.func, ast.Attribute) else "fabric"
    argument = launch.argument
    if argument is None:
        if launch.node.args or launch.node.keywords or fabric.strategy.launch != LAUNCH_SPAWN:
            return None
        strategy = fabric.strategy_class or "DDPStrategy"
        return Finding(
            code=CODE, severity=Severity.ERROR, span=source.span(launch.node),
            message=(f"`{source.segment(launch.node)}` without a function under {fabric.strategy.description}: "
                     f"TypeError \"To spawn processes with the `{strategy}` strategy, `.launch()` needs to be called "
                     "with a function that contains the code to launch in processes.\"; pass the training function "
                     "(`launch(train)`) or use strategy=\"ddp\""),
            record_id=record_id(CODE), related=_related(facts, fabric), fix=_script_strategy(facts, fabric),
            context={"case": "spawn", "spawn_strategy": strategy},
        )
    if isinstance(argument, ast.Call):
        return _called(facts, fabric, launch, source, receiver, argument)
    return _no_parameter(facts, fabric, launch, source, receiver, argument)


def _script_strategy(facts: ProgramFacts, fabric: FabricFact) -> Fix | None:
    """`strategy="ddp_spawn"` / `"ddp_fork"` -> `"ddp"`: the launcher that runs the whole script again,
    which `launch()` without a function is written for. Unsafe: the processes then start differently
    (everything before `launch()` runs in each of them). Not for `ddp_notebook` or `xla`, which have no
    such launcher where they are used."""
    source = facts.source(fabric.fabric.path)
    for keyword in getattr(fabric.fabric.site, "keywords", ()):
        value = keyword.value
        if keyword.arg == "strategy" and isinstance(value, ast.Constant) and value.value in ("ddp_spawn", "ddp_fork"):
            span = source.span(value)
            return Fix(title='Use strategy="ddp", whose launch() runs the script again',
                       applicability=Applicability.UNSAFE,
                       edits=(TextEdit(source.path, span.start, span.end, '"ddp"'),))
    return None


def _called(facts, fabric, launch, source, receiver: str, argument: ast.Call) -> Finding | None:
    """`launch(train(fabric))`: what `train` returns is given to launch."""
    values = launch.functions
    # (None: every function may fall off its end, which `return model` never does)
    returned = [v for v in values if not (isinstance(v, Const) and v.value is None)]
    module = bool(returned) and all(_is_module(facts, v) for v in returned)
    if not module and (not values or not all(isinstance(v, Const) and not callable(v.value) for v in values)):
        return None  # a factory that returns a function, or a value the analysis cannot see
    edits = []
    callee = argument.func
    # The same Fabric the launcher would pass: `launch(train(fabric))` -> `launch(train)`, the other
    # arguments after it; a call without that first argument only moves its arguments.
    args = list(argument.args)
    same_fabric = bool(args) and not isinstance(args[0], ast.Starred) and source.segment(args[0]) == receiver
    rest = args[1:] if same_fabric else args
    if argument.keywords and any(k.arg is None for k in argument.keywords):
        rest = None
    if rest is not None:
        text = ", ".join([source.segment(callee)] + [source.segment(a) for a in rest]
                         + [f"{k.arg}={source.segment(k.value)}" for k in argument.keywords])
        span = source.span(argument)
        edits.append(TextEdit(source.path, span.start, span.end, text))
    applicability = Applicability.SAFE if same_fabric else Applicability.UNSAFE
    callee_values = _callee_functions(facts, callee)
    if not same_fabric and callee_values and all(_parameters(v) == 0 for v in callee_values):
        added = _add_parameter(facts, callee_values, receiver)
        if added is None:
            edits = []
        else:
            edits.extend(added)
    fix = Fix(title=f"Pass `{source.segment(callee)}` itself to launch", applicability=applicability,
              edits=tuple(edits)) if edits else None
    if module:
        # The function then runs in the launched processes, and what it returns is dropped: read it first.
        fix = Fix(fix.title, Applicability.UNSAFE, fix.edits) if fix is not None else None
        return _launched_module(facts, fabric, source, argument, fix)
    got = repr(sorted(values, key=repr)[0].value)
    return Finding(
        code=CODE, severity=Severity.ERROR, span=source.span(argument),
        message=(f"`launch({source.segment(argument)})` calls `{source.segment(callee)}` here, unlaunched, and passes "
                 f"its result: TypeError \"`Fabric.launch(...)` needs to be a callable, but got {got}.\"; pass the "
                 f"function: `launch({source.segment(callee)})` (it receives the Fabric as its first argument)"),
        record_id=record_id(CODE), related=_related(facts, fabric), fix=fix,
        context={"function": got},
    )


def _is_module(facts, value) -> bool:
    """An instance of an `nn.Module` class (the project's or torch's): callable, so launch accepts it."""
    if not isinstance(value, Instance):
        return False
    return facts.resolver.is_module(facts.resolver.ref_of(value.cls)) is True


def _launched_module(facts, fabric, source, argument: ast.Call, fix: Fix | None) -> Finding:
    """`launch(build(fabric))` where `build` returns a module: a module is callable, so launch's own check
    passes and the launcher calls `module(fabric)`, whose forward fails on the Fabric it is given, after
    `build` already ran outside the launched processes."""
    callee = source.segment(argument.func)
    return Finding(
        code=CODE, severity=Severity.ERROR, span=source.span(argument),
        message=f"`launch({source.segment(argument)})` launches the module `{callee}` returns",
        notes=(f"`{callee}` runs here, before and outside the launched processes, and returns a module",
               "a module is callable, so `launch` accepts it and calls `module(fabric)`: its forward gets the Fabric "
               "instead of a tensor and raises TypeError (`... must be Tensor, not Fabric`)",
               f"pass the training function itself: `launch(train)`, where `train(fabric)` builds the model and "
               "trains it"),
        record_id=record_id(CODE), related=_related(facts, fabric), fix=fix,
        context={"function": "a module"},
    )


def _no_parameter(facts, fabric, launch, source, receiver: str, argument: ast.AST) -> Finding | None:
    """`launch(train)` where `train` takes no parameter (a bound method: none after self)."""
    values = launch.functions
    functions = [v for v in values if isinstance(v, (Function, Bound))]
    if not functions or len(functions) != len(values) or not all(_parameters(v) == 0 for v in functions):
        return None
    if any((v.function if isinstance(v, Bound) else v).external for v in functions):
        return None
    name = _name_of(functions[0])
    signature = ("self, " if isinstance(functions[0], Bound) else "") + _parameter_name(receiver)
    added = _add_parameter(facts, functions, receiver)
    fix = None
    if added:
        # The launcher passes the launching Fabric: a parameter named as the receiver shadows a global of
        # that name with the same object; under another name, or where the body reads a Fabric stored
        # elsewhere, read it first.
        safe = receiver == "fabric" or receiver.isidentifier()
        fix = Fix(title=f"Add a `{_parameter_name(receiver)}` parameter to `{name}`",
                  applicability=Applicability.SAFE if safe else Applicability.UNSAFE, edits=tuple(added))
    return Finding(
        code=CODE, severity=Severity.ERROR, span=source.span(argument),
        message=(f"`{name}` takes no argument, but `launch` calls it with the Fabric: TypeError \"`Fabric.launch("
                 f"function=...)` needs to take at least one argument.\"; add a parameter: `def {name}({signature}):`"),
        record_id=record_id(CODE), related=_related(facts, fabric), fix=fix,
        context={"case": "no_argument", "function": name},
    )


def _callee_functions(facts: ProgramFacts, callee: ast.AST) -> list:
    """The project function a `train(...)` inside `launch(...)` names, when it is a plain def of that file
    or a name the module binds to one (by its definition in the program)."""
    if not isinstance(callee, ast.Name):
        return []
    found = []
    for scope in facts.program.scopes if hasattr(facts.program, "scopes") else ():
        if getattr(scope, "name", None) == callee.id and scope.kind == "function" and scope.class_scope is None:
            found.append(Function(scope))
    return found if len(found) == 1 else []


def _parameters(value) -> int | None:
    """How many parameters `inspect.signature` shows (varargs count; a bound method loses its first)."""
    function = value.function if isinstance(value, Bound) else value
    if function.external:
        return None
    params = list(function.scope.params)
    if isinstance(value, Bound) and params:
        params = params[1:]
    return len(params)


def _name_of(value) -> str:
    function = value.function if isinstance(value, Bound) else value
    return function.scope.name


def _parameter_name(receiver: str) -> str:
    return receiver if receiver.isidentifier() else "fabric"


def _add_parameter(facts: ProgramFacts, functions: list, receiver: str) -> list[TextEdit] | None:
    """`def train():` -> `def train(fabric):` (`def train(self):` -> `def train(self, fabric):`)."""
    edits = []
    for value in functions:
        function = value.function if isinstance(value, Bound) else value
        node = function.scope.node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None  # a lambda: rewrite it by hand
        source = facts.source(function.scope.path)
        if source is None:
            return None
        line = source.line(node.lineno)
        match = re.search(rf"\bdef\s+{re.escape(node.name)}\s*\(", line)
        if match is None:
            return None
        name = _parameter_name(receiver)
        if node.args.args:  # the bound method's self
            first = node.args.args[0]
            if first.lineno != node.lineno or first.end_lineno != node.lineno or len(node.args.args) != 1:
                return None
            start = source.span(first).end
            edits.append(TextEdit(source.path, start, start, f", {name}"))
        else:
            span = source.span(node)
            position = type(span.start)(node.lineno - 1, match.end())
            edits.append(TextEdit(source.path, position, position, name))
    return edits


def _related(facts: ProgramFacts, fabric: FabricFact) -> tuple[Related, ...]:
    source = facts.source(fabric.fabric.path)
    if source is None:
        return ()
    return (Related(source.span(fabric.fabric.site), "the Fabric is created here"),)


VALID = (
    '''
import torch
from lightning.fabric import Fabric

def train(fabric):
    model = fabric.setup(torch.nn.Linear(2, 2))

fabric = Fabric(strategy="ddp_spawn", accelerator="cpu", devices=2)
fabric.launch(train)
''',
)

INVALID = (
    '''
import torch
from lightning.fabric import Fabric

def train(fabric):
    model = fabric.setup(torch.nn.Linear(2, 2))

fabric = Fabric(accelerator="cpu", devices=1)
fabric.launch(train(fabric))  # expect: FAB008 error
''',
    '''
import torch
from lightning.fabric import Fabric

def train():
    model = fabric.setup(torch.nn.Linear(2, 2))

fabric = Fabric(accelerator="cpu", devices=1)
fabric.launch(train)  # expect: FAB008 error
''',
    '''
import torch
from lightning.fabric import Fabric

fabric = Fabric(strategy="ddp_spawn", accelerator="cpu", devices=2)
fabric.launch()  # expect: FAB008 error
model = fabric.setup(torch.nn.Linear(2, 2))
''',
    # The function returns a module: launch accepts it (it is callable) and calls `module(fabric)`.
    '''
import torch.nn as nn
from lightning.fabric import Fabric

def build(fabric):
    return nn.Linear(4, 2)

fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp")
fabric.launch(build(fabric))  # expect: FAB008 error
''',
)

RULE = RuleModule(CODE, NAME, check, VALID, INVALID)
