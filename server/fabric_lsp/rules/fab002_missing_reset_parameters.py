"""FAB002 missing-reset-parameters: a module owning tensors, without `reset_parameters()`, is created
on the meta device and then materialized.

Every materialization path calls `reset_parameters()` on each module that directly owns a meta
tensor: Lightning's `_materialize_meta_tensors` raises TypeError without it, torch FSDP raises
AttributeError, and ModelParallel warns and leaves the tensors as uninitialised memory.
"""

from __future__ import annotations

import ast

from fabric_lsp.analysis import MetaModelFact, ProgramFacts
from fabric_lsp.analysis.classes import ClassInfo, LibraryClass
from fabric_lsp.analysis.meta import MetaAnalyzer, Offender, patched_classes
from fabric_lsp.findings import Applicability, Finding, Fix, Position, Related, Severity, Span, TextEdit
from fabric_lsp.rules.base import AlternativeCase, RuleModule, record_id, under_choice
from fabric_lsp.rules.reset_parameters_codegen import STORED_PREFIX, generate_reset_parameters

CODE = "FAB002"
NAME = "missing-reset-parameters"

# What each materialization path does to a module without reset_parameters (DESIGN.md, FAB002).
_ERRORS = {
    "materialize": 'TypeError "Materialization requires that the `{name}.reset_parameters` method is implemented"',
    "fsdp": "torch FSDP's AttributeError \"'{name}' object has no attribute 'reset_parameters'\"",
    "model_parallel": (
        "no exception: Lightning warns \"Parameter initialization incomplete\" and `{name}`'s tensors stay "
        "uninitialised memory (garbage weights)"
    ),
    "mixed": (
        "under FSDP torch FSDP's AttributeError \"'{name}' object has no attribute 'reset_parameters'\", under "
        "ModelParallel no exception but `{name}`'s tensors left as uninitialised memory"
    ),
}


def check(facts: ProgramFacts) -> list[Finding]:
    findings: dict[tuple, Finding] = {}
    if not facts.meta_models:
        return []
    analyzer = MetaAnalyzer(facts.resolver, facts.modules)
    patched = patched_classes(facts.program.sources.values())
    for model in facts.meta_models:
        tag = model.tag
        source = facts.source(tag.path)
        if source is None or model.cls is None:
            continue
        creation_span = source.span(tag.creation)
        for offender in analyzer.offenders(model.cls, tag.creation, source):
            if getattr(offender.cls, "qualified", offender.name) in patched or offender.name in patched:
                continue
            span, related = _location(facts, model, offender, creation_span)
            for materialization in model.materializations:
                if materialization.call is not None:
                    related.append(Related(facts.source(materialization.path).span(materialization.call), "materialized here"))
            if offender.path:
                root = model.cls.name
                related.append(Related(offender.source.span(offender.call),
                                       f"`{root}.{'.'.join(offender.path).replace('.[', '[')}: {_display(offender)}` is built here"))
            # Error: the exception is certain for the strategy the code states. ModelParallel raises
            # nothing (uninitialised weights: a warning), and a strategy chosen at run time is never
            # an error, whatever it may be.
            # So is a module the model builds only in a branch of `__init__` the program's values may
            # not take (a flag or config read at run time).
            certain = (model.meta_certain and any(m.certain for m in model.materializations)
                       and model.classes_at_materialization == 1 and not offender.chosen_when)
            severity = under_choice(Severity.ERROR if certain else Severity.WARNING, model.when)
            key = (span.path, span.start, offender.name)
            if key in findings:
                continue
            how = _how(model)
            fix = _fix(facts, model, offender)
            headline, notes = _message(facts, model, offender, how)
            if model.when:
                notes = tuple(notes) + (f"this runs only {model.when}",)
            findings[key] = Finding(
                code=CODE,
                severity=severity,
                span=span,
                message=headline,
                notes=notes,
                record_id=record_id(CODE),
                related=tuple(related),
                fix=fix,
                # Used only when `fix` edits a file a fix may not touch (fabric_lsp.fixes.confinement).
                alternatives=_alternatives(facts, model, span.path) if fix is not None and any(
                    edit.path != span.path for edit in fix.edits) else (),
                context={"class": offender.name, "path": how},
            )
    return list(findings.values())


def _how(model: MetaModelFact) -> str:
    kinds = [m.how for m in model.materializations]
    if "materialize" in kinds:
        return "materialize"
    if "mixed" in kinds or "fsdp" in kinds and "model_parallel" in kinds:
        return "mixed"  # FSDP or ModelParallel, chosen at run time
    if "fsdp" in kinds:
        return "fsdp"
    if "setup" in kinds or not kinds:
        return "fsdp"  # a strategy the code does not show: FSDP is where it raises
    return "model_parallel"


def _display(offender: Offender) -> str:
    if isinstance(offender.cls, LibraryClass) and offender.cls.in_tables:
        return offender.name
    if isinstance(offender.cls, LibraryClass):
        return offender.cls.qualified.replace("torch.nn.", "nn.", 1)
    return offender.name


def _location(facts: ProgramFacts, model: MetaModelFact, offender: Offender, creation_span: Span) -> tuple[Span, list]:
    """The line to change (DESIGN.md "Where findings point")."""
    path = model.tag.path
    related: list[Related] = []
    if isinstance(offender.cls, ClassInfo) and offender.cls.path == path:
        span = offender.cls.source.span_of_name_in(offender.cls.node, offender.name)
        related.append(Related(creation_span, "created on the meta device here"))
        return span, related
    if isinstance(offender.cls, LibraryClass) and offender.source.path == path and offender.call is not model.tag.creation:
        span = offender.source.span(offender.call)
        related.append(Related(creation_span, "created on the meta device here"))
        return span, related
    if isinstance(offender.cls, ClassInfo):
        related.append(Related(offender.cls.source.span_of_name_in(offender.cls.node, offender.name),
                               f"`{offender.name}` is defined here"))
    return creation_span, related


def _message(facts: ProgramFacts, model: MetaModelFact, offender: Offender, how: str) -> tuple[str, tuple[str, ...]]:
    owned = ", ".join(f"`self.{tensor.attribute}`" for tensor in offender.owned[:2])
    if len(offender.owned) > 2:  # the headline stays short: the first two by name
        owned += f" and {len(offender.owned) - 2} more"
    what = f"owns {owned}" if owned else "owns parameters or buffers directly"
    source = facts.source(model.tag.path)
    context = _context_text(source, model)
    built = source.segment(model.tag.creation.func) if isinstance(model.tag.creation, ast.Call) else model.cls.name
    where = f"`{built}(...)` is built under `{context}`" if offender.call is not model.tag.creation else f"it is built under `{context}`"
    description = " and ".join(dict.fromkeys(m.description for m in model.materializations))
    conditions = []
    if not model.meta_certain:
        conditions.append("if `empty_init` is True at run time")
    if any(m.how == "setup" for m in model.materializations) and not any(m.certain for m in model.materializations):
        conditions.append("if the strategy chosen at run time is FSDP/ModelParallel")
    if model.classes_at_materialization > 1:
        conditions.append(f"when the model built is a `{model.cls.name}`")
    if offender.chosen_when:
        conditions.append("when " + " and ".join(dict.fromkeys(offender.chosen_when)))
    certainty = f" ({'; '.join(conditions)})" if conditions else ""
    others = ""
    if offender.others:
        shown = ", ".join(f"`{name}`" for name in offender.others[:3])
        more = f" and {len(offender.others) - 3} more" if len(offender.others) > 3 else ""
        verb = "lacks" if len(offender.others) == 1 else "lack"
        others = f"; {shown}{more} in the same model {verb} it too"
    # Headline: what is wrong; notes: where it is built and materialized, the runtime error, the others.
    notes = [f"{where} and materialized by {description}", f"{_ERRORS[how].format(name=offender.name)}{certainty}"]
    if others:
        notes.append(others[2:])
    return f"`{offender.name}` {what} but has no `reset_parameters()`", tuple(notes)


def _context_text(source, model: MetaModelFact) -> str:
    tag = model.tag
    node = tag.context
    if isinstance(node, (ast.With, ast.AsyncWith)):
        for item in node.items:
            text = source.segment(item.context_expr)
            if "meta" in text or "init_module" in text or tag.kind != "init_module":
                return text
        return source.segment(node.items[0].context_expr)
    return source.segment(node)


def _fix(facts: ProgramFacts, model: MetaModelFact, offender: Offender) -> Fix | None:
    cls = offender.cls
    if isinstance(cls, ClassInfo) and not getattr(cls.key, "external", True) and cls.node.body:
        return _add_method_fix(facts, cls, offender)
    if isinstance(cls, LibraryClass) and cls.name == "MultiheadAttention":
        return _multihead_attention_fix(facts, model)
    return _leave_meta_fix(facts, model)


def _add_method_fix(facts: ProgramFacts, cls: ClassInfo, offender: Offender) -> Fix:
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


def _multihead_attention_fix(facts: ProgramFacts, model: MetaModelFact) -> Fix | None:
    """Lightning's transformer demo gives MultiheadAttention the `reset_parameters` it lacks."""
    source = facts.source(model.tag.path)
    statement = _statement_of(source, model.tag.context)
    if statement is None:
        return None
    imports = facts.resolver.imports_of(source)
    indentation = source.indentation(statement.lineno)
    torch_name = imports.alias_for("torch") or "torch"
    mha = f"{torch_name}.nn.MultiheadAttention"
    text = (
        f"{indentation}if not hasattr({mha}, \"reset_parameters\"):\n"
        f"{indentation}    # MultiheadAttention only has _reset_parameters; materialization needs reset_parameters.\n"
        f"{indentation}    {mha}.reset_parameters = {mha}._reset_parameters\n"
    )
    at = Position(statement.lineno - 1, 0)
    edits = [TextEdit(source.path, at, at, text)]
    if imports.alias_for("torch") is None:
        edits.insert(0, TextEdit(source.path, Position(0, 0), Position(0, 0), "import torch\n"))
    return Fix(
        "Give nn.MultiheadAttention a reset_parameters (as Lightning's transformer demo does)",
        Applicability.UNSAFE,
        tuple(edits),
    )


def _statement_of(source, node: ast.AST) -> ast.stmt | None:
    """The statement that holds `node` (a `with` is one; a call is found among the statements)."""
    if isinstance(node, ast.stmt):
        return node
    for statement in ast.walk(source.tree):
        if isinstance(statement, ast.stmt) and not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
            if any(inner is node for inner in ast.walk(statement)) and statement.lineno == getattr(node, "lineno", -1):
                return statement
    return None


def _alternatives(facts: ProgramFacts, model: MetaModelFact, path: str) -> tuple[Fix, ...]:
    """The fix in the finding's own file, for a class whose file may not be edited: build the model
    for real where it is built on the meta device (when that construction is in this file)."""
    fix = _leave_meta_fix(facts, model)
    if fix is None or any(edit.path != path for edit in fix.edits):
        return ()
    return (fix,)


def _leave_meta_fix(facts: ProgramFacts, model: MetaModelFact) -> Fix | None:
    """For torch built-ins that cannot get the method (and classes whose file may not be edited):
    build the model for real instead of on meta. Unsafe: the whole model is allocated and
    initialised on the host (the memory and time the meta device was there to save), and it stays
    there until `fabric.setup` moves it."""
    tag = model.tag
    source = facts.source(tag.path)
    if source is None:
        return None
    if tag.kind in ("meta_device", "default_device"):
        calls = [tag.context] if isinstance(tag.context, ast.Call) else [
            item.context_expr for item in getattr(tag.context, "items", []) if isinstance(item.context_expr, ast.Call)]
        for call in calls:
            argument = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg in ("type", "device")), None)
            if isinstance(argument, ast.Constant) and argument.value == "meta":
                holder = _source_holding(facts, argument)
                if holder is None:
                    return None
                span = holder.span(argument)
                return Fix("Build the model on the CPU instead of the meta device (uses host memory for the full model)",
                           Applicability.UNSAFE, (TextEdit(span.path, span.start, span.end, '"cpu"'),))
        return None
    init_call = tag.init_call
    keyword = next((k.value for k in getattr(init_call, "keywords", []) if k.arg == "empty_init"), None)
    if keyword is None and isinstance(init_call, ast.Call) and len(init_call.args) == 1 \
            and not isinstance(init_call.args[0], ast.Starred):
        keyword = init_call.args[0]  # init_module(True)
    if keyword is None:
        return None
    init_source = _source_holding(facts, init_call) or source
    span = init_source.span(keyword)
    return Fix("Initialise the model for real (`empty_init=False`) instead of on the meta device "
               "(uses memory for the full model on every process)",
               Applicability.UNSAFE, (TextEdit(span.path, span.start, span.end, "False"),))


def _source_holding(facts: ProgramFacts, node: ast.AST):
    for source in facts.program.sources.values():
        if source.tree is not None and getattr(node, "lineno", 0) <= len(source.lines):
            for statement in source.tree.body:
                if statement.lineno <= node.lineno <= (statement.end_lineno or statement.lineno):
                    if any(inner is node for inner in ast.walk(statement)):
                        return source
    return None


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
    # init_module(empty_init=False) builds the model for real, even under FSDP.
    '''
import torch
import torch.nn as nn
from lightning.fabric import Fabric

class Scale(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

fabric = Fabric(strategy="fsdp")
fabric.launch()
with fabric.init_module(empty_init=False):
    model = Scale(4)
model = fabric.setup(model)
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
fabric.launch()
with fabric.init_module(empty_init=True):
    model = Block()
model = fabric.setup(model)
''',
    # Built on meta in a factory, materialized by the caller.
    '''
import torch
import torch.nn as nn
from lightning.fabric.utilities.init import _materialize_meta_tensors

class Gate(nn.Module):  # expect: FAB002 error
    def __init__(self):
        super().__init__()
        self.logit = nn.Parameter(torch.zeros(1))

def build():
    torch.set_default_device("meta")
    return nn.Sequential(nn.Linear(2, 2), Gate())

model = build()
_materialize_meta_tensors(model, "cpu")
''',
)

_BLOCKS = """\
import torch
import torch.nn as nn

class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.logit = nn.Parameter(torch.zeros(4))
"""

# The class (where the main fix adds reset_parameters) is in blocks.py, which is not checked.
ALTERNATIVES = (
    AlternativeCase((("blocks.py", _BLOCKS), ("example.py", """\
import torch
import torch.nn as nn
from lightning.fabric.utilities.init import _materialize_meta_tensors
from blocks import Gate

with torch.device("meta"):
    model = nn.Sequential(nn.Linear(4, 4), Gate())  # expect: FAB002 error
_materialize_meta_tensors(model, "cpu")
""")), "example.py", """\
import torch
import torch.nn as nn
from lightning.fabric.utilities.init import _materialize_meta_tensors
from blocks import Gate

with torch.device("cpu"):
    model = nn.Sequential(nn.Linear(4, 4), Gate())  # expect: FAB002 error
_materialize_meta_tensors(model, "cpu")
"""),
    AlternativeCase((("blocks.py", _BLOCKS), ("example.py", """\
from lightning.fabric import Fabric
from blocks import Gate

fabric = Fabric(strategy="fsdp")
with fabric.init_module(empty_init=True):
    model = Gate()  # expect: FAB002 error
model = fabric.setup(model)
""")), "example.py", """\
from lightning.fabric import Fabric
from blocks import Gate

fabric = Fabric(strategy="fsdp")
with fabric.init_module(empty_init=False):
    model = Gate()  # expect: FAB002 error
model = fabric.setup(model)
"""),
)

RULE = RuleModule(CODE, NAME, check, VALID, INVALID, ALTERNATIVES)
