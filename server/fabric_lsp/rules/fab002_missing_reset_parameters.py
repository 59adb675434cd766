"""FAB002 missing-reset-parameters: a module owning tensors, without `reset_parameters()`, is created
on the meta device and then materialized.

Lightning's `_materialize` calls `to_empty` and then `reset_parameters()` on every module that
directly owns a meta tensor; without the method it raises TypeError.
"""

from __future__ import annotations

import ast

from fabric_lsp.analysis import FileFacts
from fabric_lsp.analysis.classes import ClassInfo, LibraryClass
from fabric_lsp.analysis.meta import INIT_MODULE, META_DEVICE, MetaModelFact, Offender
from fabric_lsp.findings import Applicability, Finding, Fix, Position, Related, Severity, Span, TextEdit
from fabric_lsp.rules.base import RuleModule, record_id
from fabric_lsp.rules.reset_parameters_codegen import STORED_PREFIX, generate_reset_parameters

CODE = "FAB002"
NAME = "missing-reset-parameters"


def check(facts: FileFacts) -> list[Finding]:
    findings: dict[tuple, Finding] = {}
    source = facts.source
    for model in facts.meta_models:
        creation_span = source.span(model.creation)
        for offender in model.offenders:
            in_this_file = isinstance(offender.cls, ClassInfo) and offender.cls.path == source.path
            if in_this_file:
                span = offender.cls.source.span_of_name_in(offender.cls.node, offender.name)
                related = [Related(creation_span, "created on the meta device here")]
            else:
                span = creation_span
                related = []
                if isinstance(offender.cls, ClassInfo):
                    related.append(
                        Related(offender.cls.source.span_of_name_in(offender.cls.node, offender.name), f"`{offender.name}` is defined here")
                    )
            if model.materialization.call is not None:
                related.append(Related(source.span(model.materialization.call), "materialized here"))
            severity = Severity.ERROR if model.materialization.certain else Severity.WARNING
            key = (span.start, offender.name)
            if key in findings:
                continue
            findings[key] = Finding(
                code=CODE,
                severity=severity,
                span=span,
                message=_message(facts, model, offender),
                record_id=record_id(CODE),
                related=tuple(related),
                fix=_fix(facts, model, offender),
                context={"class": offender.name},
            )
    return list(findings.values())


def _message(facts: FileFacts, model: MetaModelFact, offender: Offender) -> str:
    owned = ", ".join(f"`self.{tensor.attribute}`" for tensor in offender.owned[:3])
    what = f"owns {owned}" if owned else "owns parameters or buffers directly"
    context = facts.source.segment(model.context.item)
    built = facts.source.segment(model.creation.func)
    where = f"`{built}(...)` is built under `{context}`" if offender.call is not model.creation else f"it is built under `{context}`"
    certainty = "" if model.materialization.certain else " if the strategy chosen at run time is FSDP/ModelParallel"
    return (
        f"`{offender.name}` {what} but has no `reset_parameters()`; {where} and materialized by "
        f"{model.materialization.description}: TypeError \"Materialization requires that the "
        f"`{offender.name}.reset_parameters` method is implemented\"{certainty}"
    )


def _fix(facts: FileFacts, model: MetaModelFact, offender: Offender) -> Fix | None:
    cls = offender.cls
    if isinstance(cls, ClassInfo) and "site-packages" not in cls.path and cls.node.body:
        return _add_method_fix(facts, cls, offender)
    if isinstance(cls, LibraryClass) and cls.name == "MultiheadAttention":
        return _multihead_attention_fix(facts, model)
    return _leave_meta_fix(facts, model)


def _add_method_fix(facts: FileFacts, cls: ClassInfo, offender: Offender) -> Fix:
    torch_name = cls.imports.alias_for("torch")  # the class's own file decides how torch is named
    edits: list[TextEdit] = []
    if torch_name is None:
        torch_name = "torch"
        edits.append(_import_torch_edit(cls))
    generated = generate_reset_parameters(cls, offender.owned, torch_name)
    for line, name in generated.stores:
        indentation = cls.source.indentation(line)
        at = Position(line - 1, 0)
        edits.append(
            TextEdit(cls.path, at, at, f"{indentation}self.{STORED_PREFIX}{name} = {name}  # used by reset_parameters\n")
        )
    last = cls.node.body[-1]
    end_line = last.end_lineno or last.lineno
    at = Position(end_line - 1, len(cls.source.line(end_line)))
    edits.append(TextEdit(cls.path, at, at, "\n" + generated.text))
    title = f"Add `{cls.name}.reset_parameters()` re-creating its tensors"
    if not generated.exact:
        title += " (initial values differ from the constructor's)"
    return Fix(title, Applicability.SAFE if generated.exact else Applicability.UNSAFE, tuple(edits))


def _import_torch_edit(cls: ClassInfo) -> TextEdit:
    tree = cls.source.tree
    line = 0
    if tree is not None:
        for statement in tree.body:
            if isinstance(statement, (ast.Import, ast.ImportFrom)):
                line = statement.lineno - 1
                if not (isinstance(statement, ast.ImportFrom) and statement.module == "__future__"):
                    break
                line = (statement.end_lineno or statement.lineno)
    at = Position(line, 0)
    return TextEdit(cls.path, at, at, "import torch\n")


def _multihead_attention_fix(facts: FileFacts, model: MetaModelFact) -> Fix:
    """Lightning's transformer demo gives MultiheadAttention the `reset_parameters` it lacks."""
    statement = model.context.statement
    indentation = facts.source.indentation(statement.lineno)
    torch_name = facts.imports.alias_for("torch") or "torch"
    mha = f"{torch_name}.nn.MultiheadAttention"
    text = (
        f"{indentation}if not hasattr({mha}, \"reset_parameters\"):\n"
        f"{indentation}    # MultiheadAttention only has _reset_parameters; materialization needs reset_parameters.\n"
        f"{indentation}    {mha}.reset_parameters = {mha}._reset_parameters\n"
    )
    at = Position(statement.lineno - 1, 0)
    edits = [TextEdit(facts.source.path, at, at, text)]
    if facts.imports.alias_for("torch") is None:
        edits.insert(0, TextEdit(facts.source.path, Position(0, 0), Position(0, 0), "import torch\n"))
    return Fix(
        "Give nn.MultiheadAttention a reset_parameters (as Lightning's transformer demo does)",
        Applicability.UNSAFE,
        tuple(edits),
    )


def _leave_meta_fix(facts: FileFacts, model: MetaModelFact) -> Fix | None:
    """For torch built-ins that cannot get the method: build the model for real instead of on meta."""
    item = model.context.item
    if model.context.kind == META_DEVICE:
        argument = item.args[0] if item.args else next((k.value for k in item.keywords if k.arg == "type"), None)
        if argument is None:
            return None
        span = facts.source.span(argument)
        replacement = '"cpu"'
        title = "Build the model on the CPU instead of the meta device (uses host memory for the full model)"
    elif model.context.kind == INIT_MODULE:
        keyword = next((k for k in item.keywords if k.arg == "empty_init"), None)
        if keyword is None:
            return None
        span = facts.source.span(keyword.value)
        replacement = "False"
        title = "Initialise the model for real (`empty_init=False`) instead of on the meta device"
    else:
        return None
    return Fix(title, Applicability.UNSAFE, (TextEdit(span.path, span.start, span.end, replacement),))


VALID = (
    '''
import torch
import torch.nn as nn
from lightning.fabric.utilities.init import _materialize_meta_tensors

class Scale(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
    def reset_parameters(self):
        nn.init.ones_(self.weight)

with torch.device("meta"):
    model = nn.Sequential(nn.Linear(4, 4), Scale(4))
_materialize_meta_tensors(model, "cpu")
''',
    # Created on meta but never materialized (only counted).
    '''
import torch
import torch.nn as nn

class Scale(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

with torch.device("meta"):
    model = Scale(4)
print(sum(p.numel() for p in model.parameters()))
''',
)

INVALID = (
    '''
import torch
import torch.nn as nn
from lightning.fabric.utilities.init import _materialize_meta_tensors

class Scale(nn.Module):  # expect: FAB002 error
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

with torch.device("meta"):
    model = nn.Sequential(nn.Linear(4, 4), Scale(4))
_materialize_meta_tensors(model, "cpu")
''',
    '''
import torch
import torch.nn as nn
from lightning.fabric import Fabric

class Block(nn.Module):  # expect: FAB002 error
    def __init__(self):
        super().__init__()
        self.register_buffer("mask", torch.ones(4))

fabric = Fabric(strategy="fsdp")
with fabric.init_module(empty_init=True):
    model = Block()
model = fabric.setup(model)
''',
)

RULE = RuleModule(CODE, NAME, check, VALID, INVALID)
