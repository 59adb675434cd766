"""FAB005 missing-launch: a multi-device Fabric used (`setup`, `setup_module`, `init_module`, `barrier`,
...) before `fabric.launch()`.

Every one of those methods calls `Fabric._validate_launched()`, which raises RuntimeError "To use Fabric
with more than one device, you must call `.launch()` or use the CLI" unless the Fabric was launched
(`launch()`, `run()` of a subclass) or the script was started by `fabric run` (`LT_CLI_USED=1`, read in
the constructor), for every strategy but SingleDeviceStrategy and DataParallelStrategy, whatever the
device count (`strategy="ddp", devices=1` raises). `torchrun` and SLURM do not launch it.
"""

from __future__ import annotations

import ast

from fabric_lsp.analysis import FabricFact, FabricUse, ProgramFacts
from fabric_lsp.analysis.values import LAUNCH_MACHINE, LAUNCH_NONE, LAUNCH_SCRIPT, LAUNCH_SPAWN
from fabric_lsp.findings import Applicability, Finding, Fix, Position, Related, Severity, TextEdit
from fabric_lsp.rules.base import RuleModule, record_id

CODE = "FAB005"
NAME = "missing-launch"


def check(facts: ProgramFacts) -> list[Finding]:
    findings = []
    for fabric in facts.fabrics:
        finding = _finding(facts, fabric)
        if finding is not None:
            findings.append(finding)
    return findings


def _finding(facts: ProgramFacts, fabric: FabricFact) -> Finding | None:
    launch = fabric.strategy.launch
    if launch == LAUNCH_NONE or fabric.cli_stated is True:
        return None  # one device; or the file or the project says it is started by `fabric run`, which launches it
    use = fabric.first_unlaunched_use()
    if use is None:
        return None
    source = facts.source(use.path)
    constructor_source = facts.source(fabric.fabric.path)
    if source is None or constructor_source is None:
        return None
    if launch in (LAUNCH_SCRIPT, LAUNCH_SPAWN):
        # Certain for `python script.py`, torchrun and srun; `fabric run` launches it for you.
        severity = Severity.WARNING
        why = f"under {fabric.strategy.description}"
    elif launch == LAUNCH_MACHINE:
        # Raises on a machine with several GPUs, where such a script is meant to run; `launch()` is one line.
        severity = Severity.WARNING
        why = f"on a machine with several GPUs ({fabric.strategy.description})"
    else:
        severity = Severity.WARNING
        why = f"if the strategy needs several processes (it depends on {fabric.strategy.description})"
    if use.when:
        why += f" {use.when}"
    if fabric.cli_stated is None and severity == Severity.WARNING:
        # The project's README or scripts start its other scripts with `fabric run`: this one likely too.
        severity = Severity.HINT
        why += " (the project starts other scripts with `fabric run`; started so, this one would not raise)"
    chosen = [launch_call.when for launch_call in fabric.launches if launch_call.when and launch_call.when[5:] not in use.when]
    if chosen:
        why += f" (`launch()` runs only {chosen[0]})"
    later = any(launch_call.scope is use.scope and not launch_call.when for launch_call in fabric.launches)
    func = use.node.func if isinstance(use.node, ast.Call) else use.node
    span = source.span_of_name_in(func, func.attr) if isinstance(func, ast.Attribute) else source.span(func)
    constructor = fabric.fabric.site
    message = (
        f"`{source.segment(func)}(...)` before `launch()`: RuntimeError \"To use Fabric with more than one device, "
        f"you must call `.launch()` or use the CLI: `fabric run --help`.\" {why}"
        + ("; `launch()` comes after it" if later else
           " when the script is started with `python`, torchrun or srun (only `fabric run` launches it for you)")
    )
    related = [Related(constructor_source.span(constructor), "the Fabric is created here, and never launched before "
                                                             "this call")]
    return Finding(
        code=CODE,
        severity=severity,
        span=span,
        message=message,
        record_id=record_id(CODE),
        related=tuple(related),
        # A later `launch()` stays: called again without a function it does nothing.
        fix=None if launch == LAUNCH_SPAWN else _insert_launch(facts, fabric, use),
        context={"method": use.method},
    )


def _insert_launch(facts: ProgramFacts, fabric: FabricFact, use: FabricUse) -> Fix | None:
    """`fabric.launch()` on the line after `fabric = Fabric(...)`: only where the constructor is a
    statement of its own that binds a name or attribute, in the function that then uses it."""
    source = facts.source(fabric.fabric.path)
    statement = _statement_of(source.tree, fabric.fabric.site)
    if statement is None:
        return None
    target = statement.targets[0] if isinstance(statement, ast.Assign) else statement.target
    if not isinstance(target, (ast.Name, ast.Attribute)) or (
            isinstance(statement, ast.Assign) and len(statement.targets) != 1):
        return None
    first, last = statement.lineno, statement.end_lineno or statement.lineno
    before = source.line(first)[: source.char_col(first, statement.col_offset)]
    after = source.line(last)[source.char_col(last, statement.end_col_offset or 0):]
    if before.strip() or (after.strip() and not after.lstrip().startswith("#")):
        return None  # `if x: fabric = Fabric(...)` or `fabric = Fabric(...); ...` on one line
    text = f"{before}{source.segment(target)}.launch()\n"
    # The default launcher starts the other processes by running the script's command again: what a
    # script wants; from code imported by something else, read it first.
    scripted = isinstance(source.tree, ast.Module) and (
        statement in source.tree.body or "__main__" in source.text)
    return Fix(
        title=f"Call `{source.segment(target)}.launch()` after creating the Fabric",
        applicability=Applicability.SAFE if scripted else Applicability.UNSAFE,
        edits=(TextEdit(source.path, Position(last, 0), Position(last, 0), text),),
    )


def _statement_of(tree: ast.AST | None, call: ast.AST):
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is call:
            return node
    return None


VALID = (
    '''
import torch
from lightning.fabric import Fabric

fabric = Fabric(strategy="ddp", devices=2)
fabric.launch()
model = fabric.setup(torch.nn.Linear(2, 2))
''',
    # One device never needs launch(); `fabric run` starts a script that never calls it.
    '''
import torch
from lightning.fabric import Fabric

fabric = Fabric(accelerator="cpu", devices=1)
model = fabric.setup(torch.nn.Linear(2, 2))
''',
    '''
"""Run with: fabric run --devices 2 train.py"""
import torch
from lightning.fabric import Fabric

fabric = Fabric(strategy="ddp")
model = fabric.setup(torch.nn.Linear(2, 2))
''',
)

INVALID = (
    '''
import torch
from lightning.fabric import Fabric

fabric = Fabric(strategy="ddp", devices=2)
model = fabric.setup(torch.nn.Linear(2, 2))  # expect: FAB005 warning
''',
    # The launch runs only when an environment variable is set: the default run sets up unlaunched.
    '''
import os
import torch.nn as nn
from lightning.fabric import Fabric

fabric = Fabric(accelerator="cpu", devices=2, strategy="ddp")
if os.environ.get("MULTI_NODE") == "1":
    fabric.launch()
model = fabric.setup(nn.Linear(4, 2))  # expect: FAB005 warning
''',
)

RULE = RuleModule(CODE, NAME, check, VALID, INVALID)
