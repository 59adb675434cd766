"""FAB007 setup-misuse: calls of Fabric's setup API that its own validation refuses before anything runs.

- `fabric.setup(model)` / `setup_module(model)` where `model` is already a Fabric wrapper: ValueError
  "A model should be passed only once to the `setup` method." (every strategy);
- `fabric.no_backward_sync(model)` where `model` was never set up: TypeError (every strategy);
- `fabric.setup_dataloaders(x)` where `x` is a list, tuple or dict, or a Dataset: TypeError;
- `fabric.setup_optimizers(...)` under DeepSpeed or XLA, which need `setup(model, optimizer)`: RuntimeError.
Each is reported only where every value the analysis sees makes the call fail.
"""

from __future__ import annotations

import ast

from fabric_lsp.analysis import ProgramFacts, SetupMisuseFact
from fabric_lsp.findings import Applicability, Finding, Fix, Position, Related, Severity, TextEdit
from fabric_lsp.rules.base import RuleModule, record_id, under_choice_finding, where
from fabric_lsp.rules.first_error import stopping

CODE = "FAB007"
NAME = "setup-misuse"


def check(facts: ProgramFacts) -> list[Finding]:
    findings = []
    for fact in facts.setup_misuses:
        finding = under_choice_finding(_BUILDERS[fact.kind](facts, fact), fact.when)
        finding = stopping(finding, facts.source(fact.path).tree, fact.node)  # refused before anything runs
        if finding is not None:
            findings.append(finding)
    return findings


def _again(facts: ProgramFacts, fact: SetupMisuseFact) -> Finding:
    source = facts.source(fact.path)
    argument = source.segment(fact.argument) if fact.argument is not None else "model"
    origin = fact.origin
    origin_source = facts.source(origin.path)
    message = f"`{argument}` is set up by Fabric a second time"
    notes = (
        f"it is already set up at {where(facts, origin.path, origin.site)}",
        f"`{source.segment(fact.node.func)}({argument}, ...)` raises ValueError \"A model should be passed only once "
        f"to the `{fact.method}` method.\" on every strategy",
        "drop the second setup",
    )
    return Finding(
        code=CODE,
        severity=Severity.ERROR,
        span=source.span(fact.node),
        message=message,
        notes=notes,
        record_id=record_id(CODE),
        related=(Related(origin_source.span(origin.site), f"`{argument}` is set up by Fabric here"),),
        fix=_drop_second_setup(source, fact),
        context={"case": "again"},
    )


def _drop_second_setup(source, fact: SetupMisuseFact) -> Fix | None:
    """`model = fabric.setup(model)` (the same name on both sides, alone on its lines) -> the statement
    is removed; `model, opt = fabric.setup(model, opt)` -> `opt = fabric.setup_optimizers(opt)` is not
    attempted (the optimizer may already be set up too): no fix then."""
    node = fact.node
    if not isinstance(fact.argument, ast.Name) or len(node.args) + len(node.keywords) != 1:
        return None
    statement = _statement(source.tree, node)
    if statement is None:
        return None
    if isinstance(statement, ast.Assign):
        if len(statement.targets) != 1 or not isinstance(statement.targets[0], ast.Name) \
                or statement.targets[0].id != fact.argument.id:
            return None
    first, last = statement.lineno, statement.end_lineno or statement.lineno
    before = source.line(first)[: source.char_col(first, statement.col_offset)]
    after = source.line(last)[source.char_col(last, statement.end_col_offset or 0):]
    if before.strip() or (after.strip() and not after.lstrip().startswith("#")):
        return None
    return Fix(
        title="Remove the second setup",
        applicability=Applicability.SAFE,
        edits=(TextEdit(source.path, Position(first - 1, 0), Position(last, 0), ""),),
    )


def _statement(tree, call: ast.Call):
    """The statement `x = call` or `call` that holds the call, when its block has another statement."""
    if tree is None:
        return None
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            body = getattr(node, name, None)
            if isinstance(body, list) and len(body) > 1:
                for statement in body:
                    if isinstance(statement, (ast.Assign, ast.Expr)) and statement.value is call:
                        return statement
    return None


def _no_backward_sync(facts: ProgramFacts, fact: SetupMisuseFact) -> Finding:
    source = facts.source(fact.path)
    argument = source.segment(fact.argument) if fact.argument is not None else "model"
    return Finding(
        code=CODE,
        severity=Severity.ERROR,
        span=source.span(fact.node),
        message=f"`{argument}` is not a model set up by Fabric",
        notes=(
            f"`{source.segment(fact.node.func)}({argument})` raises TypeError \"You need to set up the model first "
            "before you can call `fabric.no_backward_sync()`\" on every strategy",
            "pass the model `fabric.setup` returned",
        ),
        record_id=record_id(CODE),
        fix=_assign_discarded_setup(source, fact),
        context={"case": "no_backward_sync"},
    )


def _dataloaders(facts: ProgramFacts, fact: SetupMisuseFact) -> Finding:
    source = facts.source(fact.path)
    argument = source.segment(fact.argument) if fact.argument is not None else "..."
    hint = ("pass the DataLoaders as separate arguments: `fabric.setup_dataloaders(a, b)`"
            if fact.detail in ("a list", "a tuple") else "wrap it in a `torch.utils.data.DataLoader` first")
    return Finding(
        code=CODE,
        severity=Severity.ERROR,
        span=source.span(fact.argument if fact.argument is not None else fact.node),
        message=f"`{argument}` is {fact.detail}, not a DataLoader",
        notes=(
            "`setup_dataloaders` raises TypeError \"Only PyTorch DataLoader are currently supported in "
            "`setup_dataloaders`.\" on every strategy",
            hint,
        ),
        record_id=record_id(CODE),
        fix=(_spread(source, fact) or _wrap_batches(source, fact)) if fact.detail in ("a list", "a tuple")
        else _wrap_in_dataloader(source, fact),
        context={"case": "dataloaders"},
    )


def _spread(source, fact: SetupMisuseFact) -> Fix | None:
    """`setup_dataloaders([a, b])` -> `setup_dataloaders(a, b)` when the display is the only argument and
    the result is unpacked the same way (a list of wrapped loaders becomes a tuple: unsafe)."""
    node, display = fact.node, fact.argument
    if not isinstance(display, (ast.List, ast.Tuple)) or len(node.args) != 1 or node.keywords or not display.elts:
        return None
    if any(isinstance(e, ast.Starred) for e in display.elts):
        return None
    span = source.span(display)
    inner = ", ".join(source.segment(e) for e in display.elts)
    return Fix(
        title="Pass the DataLoaders as separate arguments",
        # With one loader the call then returns that loader, not a list: code indexing the result changes.
        applicability=Applicability.UNSAFE,
        edits=(TextEdit(source.path, span.start, span.end, inner),),
    )


def _wrap_batches(source, fact: SetupMisuseFact) -> Fix | None:
    """`setup_dataloaders(batches)` with `batches` a list made elsewhere (not a display of loaders) ->
    `setup_dataloaders(torch.utils.data.DataLoader(batches, batch_size=None))`: without automatic batching the
    loader yields each element as it is, in order, so a list of prepared batches is iterated as before. Unsafe:
    the list may hold something else (loaders, to be spread instead)."""
    argument = fact.argument
    if argument is None or isinstance(argument, (ast.List, ast.Tuple, ast.Starred)) or source.tree is None or not any(
        isinstance(n, ast.Import) and any(a.name == "torch" and a.asname is None for a in n.names)
        for n in source.tree.body
    ):
        return None
    span = source.span(argument)
    return Fix(
        title="Iterate the list through a DataLoader that yields its elements as they are",
        applicability=Applicability.UNSAFE,
        edits=(TextEdit(source.path, span.start, span.end,
                        f"torch.utils.data.DataLoader({source.segment(argument)}, batch_size=None)"),),
    )


def _assign_discarded_setup(source, fact: SetupMisuseFact) -> Fix | None:
    """`fabric.setup_module(model)` as a statement of its own (its result thrown away) in the same function,
    before `no_backward_sync(model)`: assign it, `model = fabric.setup_module(model)`, so the training code
    uses the wrapper. Unsafe: everything after that line now runs through the strategy (what was meant,
    but read it)."""
    if not isinstance(fact.argument, ast.Name) or source.tree is None:
        return None
    name = fact.argument.id
    holder = fact.scope.node if fact.scope.node is not None else source.tree
    for node in ast.walk(holder):
        if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and node.lineno < fact.node.lineno):
            continue
        call = node.value
        if isinstance(call.func, ast.Attribute) and call.func.attr in ("setup", "setup_module") and len(call.args) == 1 \
                and isinstance(call.args[0], ast.Name) and call.args[0].id == name and not call.keywords:
            start = source.span(node).start
            return Fix(
                title=f"Keep the model that `{call.func.attr}` returns: `{name} = ...`",
                applicability=Applicability.UNSAFE,
                edits=(TextEdit(source.path, start, start, f"{name} = "),),
            )
    return None


def _wrap_in_dataloader(source, fact: SetupMisuseFact) -> Fix | None:
    """`setup_dataloaders(dataset)` -> `setup_dataloaders(torch.utils.data.DataLoader(dataset))` where the
    file imports `torch`. Unsafe: the loader's batch size (1), shuffling and workers are the defaults."""
    if fact.argument is None or source.tree is None or not any(
        isinstance(n, ast.Import) and any(a.name == "torch" and a.asname is None for a in n.names)
        for n in source.tree.body
    ):
        return None
    span = source.span(fact.argument)
    return Fix(
        title="Wrap it in a DataLoader (default batch size 1: set yours)",
        applicability=Applicability.UNSAFE,
        edits=(TextEdit(source.path, span.start, span.end,
                        f"torch.utils.data.DataLoader({source.segment(fact.argument)})"),),
    )


def _jointly(facts: ProgramFacts, fact: SetupMisuseFact) -> Finding:
    source = facts.source(fact.path)
    return Finding(
        code=CODE,
        severity=Severity.ERROR,
        span=source.span(fact.node),
        message=f"`{source.segment(fact.node.func)}(...)` apart from the model under the {fact.detail}",
        notes=(
            f"RuntimeError \"The `{fact.detail}` requires the model and optimizer(s) to be set up jointly through "
            "`.setup(model, optimizer, ...)`.\"",
            "set them up together with `fabric.setup(model, optimizer)`",
        ),
        record_id=record_id(CODE),
        fix=None,
        context={"case": "jointly", "strategy": fact.detail},
    )


_BUILDERS = {"again": _again, "no_backward_sync": _no_backward_sync, "dataloaders": _dataloaders, "jointly": _jointly}


VALID = (
    '''
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from lightning.fabric import Fabric

fabric = Fabric(accelerator="cpu", devices=1)
model = fabric.setup(nn.Linear(2, 1))
with fabric.no_backward_sync(model):
    pass
dataset = TensorDataset(torch.randn(8, 2))
train, val = fabric.setup_dataloaders(DataLoader(dataset), DataLoader(dataset))
''',
    # DataLoaders spread from a list are what setup_dataloaders takes.
    '''
import torch
from torch.utils.data import DataLoader, TensorDataset
from lightning.fabric import Fabric

fabric = Fabric(accelerator="cpu", devices=1)
loaders = [DataLoader(TensorDataset(torch.randn(8, 2))) for _ in range(2)]
train, val = fabric.setup_dataloaders(*loaders)
''',
)

INVALID = (
    '''
import torch
from torch import nn
from lightning.fabric import Fabric

fabric = Fabric(accelerator="cpu", devices=1)
model = nn.Linear(4, 2)
model = fabric.setup(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model = fabric.setup(model)  # expect: FAB007 error
optimizer = fabric.setup_optimizers(optimizer)
''',
    '''
from torch import nn
from torch.utils.data import DataLoader, Dataset
from lightning.fabric import Fabric

class Squares(Dataset):
    def __len__(self):
        return 8
    def __getitem__(self, index):
        return float(index) ** 2

fabric = Fabric(accelerator="cpu", devices=1)
model = nn.Linear(1, 1)
wrapped = fabric.setup(model)
with fabric.no_backward_sync(model):  # expect: FAB007 error
    pass
''',
    # Each refusal stops the program where it is: one per function (a later one in the same function is named
    # in the first one's notes).
    '''
from torch.utils.data import DataLoader, Dataset
from lightning.fabric import Fabric

class Squares(Dataset):
    def __len__(self):
        return 8
    def __getitem__(self, index):
        return float(index) ** 2

def loaders(fabric):
    return fabric.setup_dataloaders(Squares())  # expect: FAB007 error

def both(fabric):
    return fabric.setup_dataloaders([DataLoader(Squares()), DataLoader(Squares())])  # expect: FAB007 error

fabric = Fabric(accelerator="cpu", devices=1)
loaders(fabric)
both(fabric)
''',
    # A list of batches made by a comprehension, and loaders spread from a list of lists.
    '''
import torch
from lightning.fabric import Fabric

def batches(fabric):
    data = [torch.randn(4, 2) for _ in range(3)]
    return fabric.setup_dataloaders(data)  # expect: FAB007 error

def spread(fabric):
    nested = [[torch.randn(2)], [torch.randn(2)]]
    return fabric.setup_dataloaders(*nested)  # expect: FAB007 error

fabric = Fabric(accelerator="cpu", devices=1)
batches(fabric)
spread(fabric)
''',
)

RULE = RuleModule(CODE, NAME, check, VALID, INVALID)
