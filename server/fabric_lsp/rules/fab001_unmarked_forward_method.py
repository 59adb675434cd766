"""FAB001 unmarked-forward-method: `wrapped.m(...)` runs a submodule without `mark_forward_method("m")`.

Lightning's wrapper (`_FabricModule.__getattr__`) hooks every submodule while a custom method
runs; if any forward ran, it raises RuntimeError under a strategy that wraps the module.
"""

from __future__ import annotations

import ast

from fabric_lsp.analysis import FileFacts, MethodInfo
from fabric_lsp.analysis.fabric import MethodCallFact, WrappedModel
from fabric_lsp.findings import Applicability, Finding, Fix, Position, Related, TextEdit
from fabric_lsp.rules.base import RuleModule, record_id, severity_for, strategy_phrase

CODE = "FAB001"
NAME = "unmarked-forward-method"

# Methods that are not the user's own code: nothing to report.
_NOT_REPORTED = ("wrapper", "staticmethod", "property", "attribute", "missing")


def check(facts: FileFacts) -> list[Finding]:
    findings = []
    source = facts.source
    for call, info in facts.method_calls:
        if call.marked_before or info.kind in _NOT_REPORTED:
            continue
        runs = info.runs
        if runs is None or not runs.runs:
            continue
        wrapped = call.wrapped
        class_known = wrapped.model_class is not None
        severity = severity_for(wrapped.fabric.strategy, compiled=wrapped.compiled, certain=runs.certain and class_known)
        class_name = info.class_name or "the wrapped model"
        qualified_method = f"{info.class_name}.{call.method}()" if info.class_name else f"{call.method}()"
        message = (
            f"`{qualified_method}` runs the model's submodules ({runs.reason}) but is called on the "
            f"Fabric-wrapped `{wrapped.target_text}` without "
            f"`{wrapped.target_text}.mark_forward_method(\"{call.method}\")`: RuntimeError "
            f"{strategy_phrase(wrapped.fabric.strategy, wrapped.compiled)}"
        )
        related = [Related(source.span(wrapped.setup_call), f"`{wrapped.target_text}` is wrapped by Fabric here")]
        if info.definition is not None:
            related.append(Related(info.definition, f"`{class_name}.{call.method}` is defined here"))
        findings.append(
            Finding(
                code=CODE,
                severity=severity,
                span=source.span_of_name_in(call.attribute, call.method),
                message=message,
                record_id=record_id(CODE),
                related=tuple(related),
                fix=_mark_fix(facts, wrapped, call.method),
                context={"class": info.class_name or "Module", "method": call.method},
            )
        )
    return findings


def _mark_fix(facts: FileFacts, wrapped: WrappedModel, method: str) -> Fix | None:
    """Insert `<target>.mark_forward_method("<method>")` on the line after the setup statement."""
    source = wrapped.source
    statement = wrapped.setup_statement
    indentation = source.indentation(statement.lineno)
    if len(indentation) != statement.col_offset:
        return None  # e.g. `if ok: model = fabric.setup(model)`: no line of its own to follow
    end_line = statement.end_lineno or statement.lineno
    end_of_line = Position(end_line - 1, len(source.line(end_line)))
    text = f"\n{indentation}{wrapped.target_text}.mark_forward_method(\"{method}\")"
    return Fix(
        title=f"Mark `{method}` as a forward method after `fabric.setup`",
        applicability=Applicability.SAFE,
        edits=(TextEdit(source.path, end_of_line, end_of_line, text),),
    )


VALID = (
    # Marked before the call.
    '''
import torch.nn as nn
from lightning.fabric import Fabric

class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 4)
    def generate(self, x):
        return self.head(x)

fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp")
model = fabric.setup(LM())
model.mark_forward_method("generate")
model.generate(None)
''',
    # A method that never runs a module, and nn.Module API on the wrapper.
    '''
import torch.nn as nn
from lightning.fabric import Fabric

class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 4)
        self.temperature = 0.7
    def config(self):
        return {"temperature": self.temperature}

fabric = Fabric(strategy="ddp")
model = fabric.setup(LM())
model.config()
model.parameters()
model.module.head(None)
''',
    # Not a Fabric at all.
    '''
import torch.nn as nn

class Engine:
    def setup(self, model):
        return model

class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 4)
    def generate(self, x):
        return self.head(x)

engine = Engine()
model = engine.setup(LM())
model.generate(None)
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

fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp")
model = fabric.setup(LM())
model.generate(None)  # expect: FAB001 error
model.mark_forward_method("generate")
model.generate(None)
''',
    '''
import lightning as L
import torch.nn as nn

class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
    def encode(self, x):
        for block in self.blocks:
            x = block(x)
        return x

def run(fabric: L.Fabric):
    model = fabric.setup(LM())
    return model.encode(None)  # expect: FAB001 warning
''',
    '''
from lightning.fabric import Fabric
import torch.nn as nn

class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 4)
    def forward(self, x):
        return self.head(x)
    def score(self, x):
        return self(x).sum()

fabric = Fabric(accelerator="cpu", devices=1)
model = fabric.setup(LM())
model.score(None)  # expect: FAB001 hint
''',
)

RULE = RuleModule(CODE, NAME, check, VALID, INVALID)
