"""FAB006 loss-backward-on-wrapped-output: `loss.backward()` where `loss` is computed from the output of
a Fabric-wrapped model, under a strategy or precision that registers Lightning's backward hook.

`_FabricModule.forward` hooks every output tensor that requires a gradient; the hook raises
RuntimeError when autograd reaches it outside `fabric.backward()` if the strategy overrides
`backward` or the precision plugin overrides (pre_/post_)backward: mixed precision, FSDP, DeepSpeed.
"""

from __future__ import annotations

import ast

from fabric_lsp.analysis import BackwardFact, ProgramFacts
from fabric_lsp.findings import Applicability, Finding, Fix, Related, Severity, TextEdit
from fabric_lsp.analysis.choice_reach import joined_phrase
from fabric_lsp.rules.base import RuleModule, combined_severity, record_id, under_choice

CODE = "FAB006"
NAME = "loss-backward-on-wrapped-output"
_MESSAGE = ("The current strategy and precision selection requires you to call `fabric.backward(loss)` instead of "
            "`loss.backward()`.")


def check(facts: ProgramFacts) -> list[Finding]:
    findings = []
    for fact in facts.backwards:
        finding = _finding(facts, fact)
        if finding is not None:
            findings.append(finding)
    return findings


def _finding(facts: ProgramFacts, fact: BackwardFact) -> Finding | None:
    node = fact.node
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return None
    raising = [p for p in fact.paths if p.hooks is not False]
    safe = len(fact.paths) - len(raising)
    severity = combined_severity((Severity.ERROR if p.hooks else Severity.WARNING for p in raising), safe)
    if severity is None or severity == Severity.HINT:
        return None
    source = facts.source(fact.path)
    strongest = min(raising, key=lambda p: 0 if p.hooks else 1)
    if severity == Severity.ERROR:
        why = f"under {strongest.setting}"
    else:
        why = f"under mixed precision, FSDP or DeepSpeed (this depends on {strongest.setting})"
    when = joined_phrase((fact.when or "", strongest.origin.when))
    if when:
        severity = under_choice(severity, when)
        why += f" {when}"
    loss = source.segment(node.func.value)
    fabric = _fabric_text(fact)
    call_text = f"{fabric or 'fabric'}.backward({loss})"
    message = f"`{source.segment(node)}` on the output of a Fabric-wrapped model"
    notes = (f"RuntimeError \"{_MESSAGE}\" {why}", f"call `{call_text}`")
    related = []
    origin = strongest.origin
    origin_source = facts.source(origin.path)
    related.append(Related(origin_source.span(origin.site),
                           f"`{origin.target_text(origin_source)}` is wrapped by Fabric here"))
    return Finding(
        code=CODE,
        severity=severity,
        span=source.span(node),
        message=message,
        notes=notes,
        record_id=record_id(CODE),
        related=tuple(related),
        fix=_fix(facts, fact, source, fabric, loss),
        context={"loss": loss},
    )


def _fabric_text(fact: BackwardFact) -> str | None:
    """An expression naming the Fabric of every path where the call is made (`fabric`, `self.fabric`):
    the fix calls its `backward`. None when no name there holds only those Fabric objects."""
    wanted = {p.fabric for p in fact.paths}
    candidates = [name for name, values in fact.fabric_names if values <= wanted]
    if not candidates:
        return None
    return "fabric" if "fabric" in candidates else candidates[0]


def _fix(facts: ProgramFacts, fact: BackwardFact, source, fabric: str | None, loss: str) -> Fix | None:
    node = fact.node
    if fabric is None or any(isinstance(a, ast.Starred) for a in node.args):
        return None
    arguments = [loss] + [source.segment(a) for a in node.args]
    arguments += [f"{k.arg}={source.segment(k.value)}" if k.arg else f"**{source.segment(k.value)}" for k in node.keywords]
    applicability = Applicability.SAFE
    if any("deepspeed" in p.setting.lower() for p in fact.paths):
        # fabric.backward needs `model=` when DeepSpeed has several models set up: name this loss's model.
        targets = {p.origin.target_text(facts.source(p.origin.path)) for p in fact.paths if p.origin.target is not None}
        if len(targets) == 1 and not any(k.arg == "model" for k in node.keywords):
            arguments.append(f"model={targets.pop()}")
        else:
            applicability = Applicability.UNSAFE
    span = source.span(node)
    return Fix(
        title=f"Call `{fabric}.backward({loss})`",
        applicability=applicability,
        edits=(TextEdit(source.path, span.start, span.end, f"{fabric}.backward({', '.join(arguments)})"),),
    )


VALID = (
    '''
import torch
import torch.nn as nn
from lightning.fabric import Fabric

fabric = Fabric(accelerator="cpu", devices=1, precision="bf16-mixed")
model = fabric.setup(nn.Linear(4, 1))
x = torch.randn(2, 4)
fabric.backward(model(x).sum())
model.module(x).sum().backward()  # the unwrapped module registers no hook
''',
    '''
import torch
import torch.nn as nn
from lightning.fabric import Fabric

fabric = Fabric(accelerator="cpu", devices=1)  # "32-true": no hook raises
model = fabric.setup(nn.Linear(4, 1))
model(torch.randn(2, 4)).sum().backward()
''',
    # The arm that would call `loss.backward()` never runs: every instance is given the Fabric.
    '''
import torch
import torch.nn as nn
from lightning.fabric import Fabric

class Rule:
    def __init__(self, model, fabric=None):
        self.model = model
        self.fabric = fabric
    def update(self, x):
        loss = self.model(x).sum()
        loss.backward() if self.fabric is None else self.fabric.backward(loss)

fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp", precision="bf16-mixed")
fabric.launch()
rule = Rule(**{"model": fabric.setup(nn.Linear(4, 1)), "fabric": fabric})
rule.update(torch.randn(2, 4))
''',
)

INVALID = (
    '''
import torch
import torch.nn as nn
import torch.nn.functional as F
from lightning.fabric import Fabric

fabric = Fabric(accelerator="cpu", devices=1, precision="bf16-mixed")
model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model, optimizer = fabric.setup(model, optimizer)
x, y = torch.randn(8, 4), torch.randint(0, 2, (8,))
loss = F.cross_entropy(model(x), y)
loss.backward()  # expect: FAB006 error
optimizer.step()
''',
    # A hand-rolled GradScaler path behind a flag, next to Fabric's mixed precision.
    '''
import argparse
import torch
import torch.nn as nn
from lightning.fabric import Fabric

parser = argparse.ArgumentParser()
parser.add_argument("--amp", action="store_true")
args = parser.parse_args()
fabric = Fabric(accelerator="cpu", devices=1, precision="bf16-mixed")
model = fabric.setup(nn.Linear(4, 1))
scaler = torch.amp.GradScaler("cpu")
loss = model(torch.randn(2, 4)).sum()
if args.amp:
    scaler.scale(loss).backward()  # expect: FAB006 warning
else:
    fabric.backward(loss)
''',
)

RULE = RuleModule(CODE, NAME, check, VALID, INVALID)
