"""FAB003 mark-forward-method-bound: `wrapped.mark_forward_method(wrapped.m)` instead of `("m")`.

`mark_forward_method` takes a string or a bound method. Under a wrapping strategy (or after
torch.compile before setup) `wrapped.m` is the call-tracking function Lightning builds around the
method; `Model.m` taken from the class is a plain function on every strategy: both raise TypeError.
"""

from __future__ import annotations


from fabric_lsp.analysis import MarkFact, ProgramFacts, wrapped_paths
from fabric_lsp.analysis.caught import catching_handler
from fabric_lsp.analysis.values import Function, WrappedMethod
from fabric_lsp.findings import Applicability, Finding, Fix, Related, Severity, TextEdit
from fabric_lsp.rules.first_error import stopping
from fabric_lsp.rules.base import (
    RuleModule, combined_severity, compiled_when, path_severity, record_id, strategy_phrase, strongest_path,
    under_choice,
)

CODE = "FAB003"
NAME = "mark-forward-method-bound"


def check(facts: ProgramFacts) -> list[Finding]:
    findings = []
    for mark in facts.marks:
        finding = _finding(facts, mark)
        if finding is not None and finding.context.get("type") == "function" and any(
                isinstance(v, Function) and not v.external for v in mark.values):
            finding = stopping(finding, facts.source(mark.path).tree, mark.node)  # a TypeError on every strategy
        if finding is not None:
            findings.append(finding)
    return findings


def _finding(facts: ProgramFacts, mark: MarkFact) -> Finding | None:
    argument = mark.argument
    if argument is None:
        return None
    source = facts.source(mark.path)
    if catching_handler(source.tree, mark.node, "TypeError") is not None:
        return None  # `try: ... except TypeError:` around it: the program goes on without the mark
    functions = [v for v in mark.values if isinstance(v, Function) and not v.external]
    wrapped_methods = [v for v in mark.values if isinstance(v, WrappedMethod)]
    method = None
    if functions:
        # `mark_forward_method(Model.generate)`: a plain function on every strategy.
        severity = Severity.ERROR
        method = functions[0].scope.name
        why = "on every strategy (a function taken from the class is not a bound method)"
        class_name = functions[0].scope.class_scope.name if functions[0].scope.class_scope else "Module"
    elif wrapped_methods:
        method = wrapped_methods[0].name
        raising, safe = [], 0
        for value in wrapped_methods:
            origin = facts.origins.get(id(value.wrapped.site))
            if origin is None:
                continue
            for path in wrapped_paths(facts, origin):
                if path.cls is None:
                    continue
                info = facts.method_info(path.cls, value.name)
                if info.kind in ("method", "classmethod", "generator", "property_method"):
                    raising.append(path)
                else:
                    safe += 1  # forward, properties, static methods fail differently: not this error
        severity = combined_severity((path_severity(p.strategy, compiled=p.compiled) for p in raising), safe)
        if severity is None:
            return None
        strongest = strongest_path(raising)
        why = strategy_phrase(strongest.strategy, strongest.compiled)
        compiled_choice = compiled_when(strongest)
        if compiled_choice:
            severity = under_choice(severity, compiled_choice)
            why += f" {compiled_choice}"
        class_name = strongest.cls.name if strongest.cls is not None else "Module"
    else:
        return None
    if mark.when:
        severity = under_choice(severity, mark.when)
        why += f" {mark.when}"
    span = source.span(argument)
    related = []
    for path in mark.paths[:1]:
        origin_source = facts.source(path.origin.path)
        related.append(Related(origin_source.span(path.origin.site),
                               f"`{path.origin.target_text(origin_source)}` is wrapped by Fabric here"))
    return Finding(
        code=CODE,
        severity=severity,
        span=span,
        message=f"`mark_forward_method({source.segment(argument)})` passes a function, not a method",
        notes=(f"TypeError \"Expected a method or a string, but got: function\" {why}",
               f"pass the name \"{method}\""),
        record_id=record_id(CODE),
        related=tuple(related),
        fix=Fix(
            title=f'Pass the method name "{method}"',
            applicability=Applicability.SAFE,
            edits=(TextEdit(source.path, span.start, span.end, f'"{method}"'),),
        ),
        context={"class": class_name, "method": method, "type": "function"},
    )


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
fabric.launch()
model = fabric.setup(LM())
model.mark_forward_method("generate")
model.mark_forward_method(model.module.generate)
''',
    # `type(model)` is the wrapper's class: `.generate` raises AttributeError on `_FabricModule` first.
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
model.mark_forward_method(type(model).generate)
''',
    # A failing mark caught where it is made: the program goes on without it.
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
fabric.launch()
model = fabric.setup(LM())
try:
    model.mark_forward_method(LM.generate)
except (TypeError, AttributeError):
    model.mark_forward_method("generate")
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
fabric.launch()
model = fabric.setup(LM())
model.mark_forward_method(model.generate)  # expect: FAB003 error
''',
    # A function taken from the class is never a bound method, whatever the strategy.
    '''
import torch.nn as nn
from lightning.fabric import Fabric

class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 4)
    def generate(self, x):
        return self.head(x)

fabric = Fabric(accelerator="cpu", devices=1)
model = fabric.setup(LM())
model.mark_forward_method(LM.generate)  # expect: FAB003 error
''',
)

RULE = RuleModule(CODE, NAME, check, VALID, INVALID)
