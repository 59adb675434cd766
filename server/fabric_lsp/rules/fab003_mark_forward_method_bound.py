"""FAB003 mark-forward-method-bound: `wrapped.mark_forward_method(wrapped.m)` instead of `("m")`.

Under a wrapping strategy `wrapped.m` is the call-tracking function Lightning builds around the
method, not a bound method, so `mark_forward_method` raises TypeError.
"""

from __future__ import annotations

from fabric_lsp.analysis import FileFacts
from fabric_lsp.findings import Applicability, Finding, Fix, Related, TextEdit
from fabric_lsp.rules.base import RuleModule, record_id, severity_for, strategy_phrase

CODE = "FAB003"
NAME = "mark-forward-method-bound"


def check(facts: FileFacts) -> list[Finding]:
    findings = []
    source = facts.source
    for mark, info in facts.bound_marks:
        if info.kind not in ("method", "classmethod", "unknown"):
            continue  # forward, properties, static methods fail differently: not this error
        wrapped = mark.wrapped
        severity = severity_for(
            wrapped.fabric.strategy, compiled=wrapped.compiled, certain=wrapped.model_class is not None
        )
        span = source.span(mark.argument)
        findings.append(
            Finding(
                code=CODE,
                severity=severity,
                span=span,
                message=(
                    f"`mark_forward_method({source.segment(mark.argument)})` passes the wrapper's function, "
                    f"not a method: TypeError {strategy_phrase(wrapped.fabric.strategy, wrapped.compiled)}; "
                    f"pass the name \"{mark.method}\""
                ),
                record_id=record_id(CODE),
                related=(Related(source.span(wrapped.setup_call), f"`{wrapped.target_text}` is wrapped by Fabric here"),),
                fix=Fix(
                    title=f'Pass the method name "{mark.method}"',
                    applicability=Applicability.SAFE,
                    edits=(TextEdit(source.path, span.start, span.end, f'"{mark.method}"'),),
                ),
                context={"class": info.class_name or "Module", "method": mark.method, "type": "function"},
            )
        )
    return findings


VALID = (
    '''
import torch.nn as nn
from lightning.fabric import Fabric

class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 4)
    def generate(self, x):
        return self.head(x)

fabric = Fabric(strategy="ddp")
model = fabric.setup(LM())
model.mark_forward_method("generate")
model.mark_forward_method(model.module.generate)
''',
)

INVALID = (
    '''
import torch.nn as nn
from lightning.fabric import Fabric

class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 4)
    def generate(self, x):
        return self.head(x)

fabric = Fabric(strategy="ddp")
model = fabric.setup(LM())
model.mark_forward_method(model.generate)  # expect: FAB003 error
''',
)

RULE = RuleModule(CODE, NAME, check, VALID, INVALID)
