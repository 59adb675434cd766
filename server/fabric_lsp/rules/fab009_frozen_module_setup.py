"""FAB009 frozen-module-setup: a module without any parameter that requires a gradient set up under DDP.

`fabric.setup(m)` / `fabric.setup_module(m)` wraps `m` in torch's `DistributedDataParallel` under the DDP
strategies, which raises RuntimeError "DistributedDataParallel is not needed when a module doesn't have any
parameter that requires a gradient." for a frozen EMA or teacher copy, a frozen VAE or text encoder, a module
holding only buffers. A single-device strategy and torch FSDP accept it; a module frozen after its setup is not
refused. The fix moves the module instead of setting it up (`fabric.to_device(m)`)."""

from __future__ import annotations

import ast

from fabric_lsp.analysis import FrozenSetupFact, ProgramFacts
from fabric_lsp.analysis.facts import ddp_refusal
from fabric_lsp.analysis.values import LAUNCH_MACHINE, SINGLE
from fabric_lsp.findings import Applicability, Finding, Fix, Related, Severity, TextEdit
from fabric_lsp.rules.base import RuleModule, record_id, under_choice, where
from fabric_lsp.rules.first_error import stopping

CODE = "FAB009"
NAME = "frozen-module-setup"
_MESSAGE = "DistributedDataParallel is not needed when a module doesn't have any parameter that requires a gradient."


def check(facts: ProgramFacts) -> list[Finding]:
    findings = []
    for fact in facts.frozen_setups:
        finding = stopping(_finding(facts, fact), facts.source(fact.path).tree, fact.node)  # DDP refuses it there
        if finding is not None:
            findings.append(finding)
    return findings


def _finding(facts: ProgramFacts, fact: FrozenSetupFact) -> Finding | None:
    verdicts = [ddp_refusal(facts, fabric) for fabric in fact.origin.fabrics] or [(None, "a Fabric passed in")]
    single = all(facts.strategy(f).kind == SINGLE for f in fact.origin.fabrics) and bool(fact.origin.fabrics)
    if all(verdict is False for verdict, _ in verdicts) and not single:
        return None  # FSDP, DeepSpeed, XLA: not DistributedDataParallel
    certain = all(verdict is True for verdict, _ in verdicts)
    setting = next((text for verdict, text in verdicts if verdict is not False), verdicts[0][1])
    severity = Severity.HINT if single else Severity.ERROR if certain and not any(
        facts.strategy(f).when for f in fact.origin.fabrics) else Severity.WARNING
    severity = under_choice(severity, fact.when)
    source = facts.source(fact.path)
    if source is None or not isinstance(fact.node, ast.Call) or not fact.node.args:
        return None
    argument = source.segment(fact.node.args[0])
    machine = any(facts.strategy(f).launch == LAUNCH_MACHINE for f in fact.origin.fabrics)
    if single:
        setting = facts.strategy(fact.origin.fabrics[0]).description
        why = (f"if the strategy becomes DDP (`{setting}` is single-device today, but `fabric run --strategy ddp` or "
               "LT_STRATEGY can change it)")
    elif certain:
        why = f"under {setting}"
    elif machine:
        why = f"on a machine with several GPUs ({setting})"
    else:
        why = f"under a DDP strategy (this depends on {setting})"
    if fact.when:
        why += f" {fact.when}"
    notes = [
        f"{fact.reason}",
        f"`{source.segment(fact.node.func)}(...)` {'would wrap' if single else 'wraps'} it in DistributedDataParallel, "
        f"which raises RuntimeError \"{_MESSAGE}\" {why}",
        "a module that does not train needs no setup: move it with `fabric.to_device(...)`",
    ]
    for _, code, path, node, text in [m for m in facts.masked if m[0] == id(fact.node)][:4]:
        place = f"line {node.lineno}" if path == fact.path else where(facts, path, node)
        notes.append(f"once this setup goes through, {place} {text}")
    related = []
    for path, node in fact.frozen_at[:2]:
        frozen_source = facts.source(path) if path else None
        if frozen_source is not None and node is not None:
            related.append(Related(frozen_source.span(node), "its parameters are frozen here"))
    return Finding(
        code=CODE,
        severity=severity,
        span=source.span(fact.node),
        message=f"`{argument}` has no parameter that requires a gradient but is set up by Fabric",
        notes=tuple(notes),
        record_id=record_id(CODE),
        related=tuple(related),
        fix=_to_device(source, fact),
        context={"module": argument},
    )


def _to_device(source, fact: FrozenSetupFact) -> Fix | None:
    """`fabric.setup_module(m)` / `fabric.setup(m)` (the module alone) -> `fabric.to_device(m)`: the module is
    moved to the device instead of wrapped. Unsafe: a wrapped module's forward runs in the precision's autocast
    context, a moved one does not (a frozen VAE under bf16-mixed then runs in float32 unless it is cast)."""
    node = fact.node
    if fact.optimizers or len(node.args) != 1 or node.keywords or not isinstance(node.func, ast.Attribute):
        return None
    func = node.func
    span = source.span_of_name_in(func, func.attr)
    return Fix(
        title="Move the module with `fabric.to_device(...)` instead of setting it up",
        applicability=Applicability.UNSAFE,
        edits=(TextEdit(source.path, span.start, span.end, "to_device"),),
    )


VALID = (
    # The module trains (only part of it is frozen), and a frozen copy is moved, not set up.
    '''
import copy
import torch.nn as nn
from lightning.fabric import Fabric

fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp")
fabric.launch()
model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
model[0].requires_grad_(False)
model = fabric.setup_module(model)
ema = copy.deepcopy(model.module).requires_grad_(False)
ema = fabric.to_device(ema)
''',
    # Frozen whole, then part of it switched back on (a head; adapters picked by name): part of it trains.
    '''
import torch.nn as nn
from lightning.fabric import Fabric

fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp")
fabric.launch()
model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
model.requires_grad_(False)
model[1].requires_grad_(True)
model = fabric.setup_module(model)
adapted = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))
for parameter in adapted.parameters():
    parameter.requires_grad = False
for name, parameter in adapted.named_parameters():
    if name.startswith("1."):
        parameter.requires_grad = True
adapted = fabric.setup_module(adapted)
''',
    # Frozen after its setup: DDP wrapped it while it trained.
    '''
import torch.nn as nn
from lightning.fabric import Fabric

fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp")
fabric.launch()
teacher = fabric.setup_module(nn.Linear(4, 2))
teacher.requires_grad_(False)
''',
    # Frozen, then given trainable layers (directly or through a helper): it trains again.
    '''
import torch.nn as nn
from lightning.fabric import Fabric

def attach_adapter(model):
    model.adapter = nn.Linear(4, 4)

fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp")
fabric.launch()
backbone = nn.Sequential(nn.Linear(4, 4))
backbone.requires_grad_(False)
backbone.head = nn.Linear(4, 2)
backbone = fabric.setup_module(backbone)
encoder = nn.Sequential(nn.Linear(4, 4)).requires_grad_(False)
attach_adapter(encoder)
encoder = fabric.setup_module(encoder)
''',
    # torch FSDP accepts a module without trainable parameters.
    '''
import torch.nn as nn
from lightning.fabric import Fabric

fabric = Fabric(accelerator="cuda", devices=2, strategy="fsdp")
fabric.launch()
vae = nn.Linear(4, 2).requires_grad_(False)
vae = fabric.setup_module(vae)
''',
)

INVALID = (
    # A class that freezes itself at the end of its `__init__`; a torch loss owns no parameter.
    '''
import torch.nn as nn
from lightning.fabric import Fabric

class PerceptualLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
        self.requires_grad_(False)
        self.eval()

    def forward(self, a, b):
        return (self.net(a) - self.net(b)).abs().mean()

fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp")
fabric.launch()
criterion = fabric.setup_module(PerceptualLoss())  # expect: FAB009 error
''',
    '''
import torch
import torch.nn as nn
from lightning.fabric import Fabric

fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp")
fabric.launch()
criterion = fabric.setup_module(nn.CrossEntropyLoss(weight=torch.ones(3)))  # expect: FAB009 error
''',
    '''
import copy
import torch.nn as nn
from lightning.fabric import Fabric

fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp")
fabric.launch()
model = nn.Linear(4, 2)
ema = copy.deepcopy(model).requires_grad_(False)
model = fabric.setup_module(model)
ema = fabric.setup_module(ema)  # expect: FAB009 error
''',
    '''
import torch
import torch.nn as nn
from lightning.fabric import Fabric


class Normalize(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.zeros(3))

    def forward(self, x):
        return x - self.mean


def main(devices):
    fabric = Fabric(accelerator="cpu", devices=devices)
    fabric.launch()
    return fabric.setup(Normalize())  # expect: FAB009 warning
''',    # One device wraps nothing today; DDP (`fabric run --strategy ddp`) would refuse it: a hint.
    '''
import torch.nn as nn
from lightning.fabric import Fabric

fabric = Fabric(accelerator="cpu", devices=1)
vae = nn.Linear(4, 2).requires_grad_(False)
vae = fabric.setup_module(vae)  # expect: FAB009 hint
''',
    # The first error on the way: the EMA's own `sample` and the model's after it are not reached while the
    # EMA's setup raises (named in its notes, not reported).
    '''
import copy
import torch.nn as nn
from lightning.fabric import Fabric

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(4, 4)
    def forward(self, x):
        return self.layer(x)
    def sample(self, x):
        return self.layer(x)

def preview(ema):
    return ema.sample(None)

fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp")
fabric.launch()
model = Net()
ema = copy.deepcopy(model).requires_grad_(False)
model = fabric.setup_module(model)
ema = fabric.setup_module(ema)  # expect: FAB009 error
preview(ema)
model.sample(None)
''',
)

RULE = RuleModule(CODE, NAME, check, VALID, INVALID)
