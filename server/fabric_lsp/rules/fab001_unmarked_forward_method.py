"""FAB001 unmarked-forward-method: `wrapped.m(...)` runs a submodule without `mark_forward_method("m")`.

Lightning's wrapper (`_FabricModule.__getattr__`) hooks every submodule while a custom method
runs; if any forward ran, it raises RuntimeError under a strategy that wraps the module. The call
is found wherever the wrapped model goes (analysis/flow.py): helpers, other modules, base classes.
"""

from __future__ import annotations

import ast
import dataclasses

from fabric_lsp.analysis import MethodCallFact, MethodInfo, Origin, ProgramFacts, WrappedPath
from fabric_lsp.findings import Applicability, Finding, Fix, Position, Related, Severity, TextEdit
from fabric_lsp.rules.base import (
    AlternativeCase,
    RuleModule,
    combined_severity,
    path_severity,
    record_id,
    strategy_phrase,
    strongest_path,
    compiled_when,
    under_choice,
    where,
)
from fabric_lsp.analysis.choice_reach import joined_phrase
from fabric_lsp.analysis.facts import refused_setups

CODE = "FAB001"
NAME = "unmarked-forward-method"

# What `wrapped.m` can be besides a method that runs modules: nothing this rule reports.
# A singledispatchmethod is a plain function when looked up: Lightning's wrapper does not track it.
_NOT_REPORTED = ("wrapper", "staticmethod", "property", "attribute", "missing", "generator", "singledispatchmethod")


def check(facts: ProgramFacts) -> list[Finding]:
    findings = []
    parents: dict[str, dict[int, ast.AST]] = {}  # per file, for the alternatives
    for call in facts.method_calls:
        finding = _finding(facts, call, parents)
        if finding is not None:
            findings.append(finding)
    return findings


def _finding(facts: ProgramFacts, call: MethodCallFact, parents: dict[str, dict[int, ast.AST]]) -> Finding | None:
    raising: list[tuple[WrappedPath, MethodInfo]] = []
    safe = 0
    for path in call.paths:
        if path.cls is None:
            continue  # the class could not be seen: this path says nothing
        info = facts.method_info(path.cls, call.method)
        if path.declared is not None and info.kind == "missing":
            continue  # a class known from an annotation: the object may be of a subclass that has it
        if info.kind in _NOT_REPORTED or info.runs is None:
            safe += 1
            continue
        if info.runs.runs and info.runs.certain and info.kind == "method" and call.arguments:
            # The arguments this call passes may take a way through the body that runs no module.
            here = facts.modules.runs_module_called_with(path.cls, call.method, call.arguments)
            if here is not None and here.certain:
                if not here.runs:
                    safe += 1
                    continue
                info = dataclasses.replace(info, runs=here)
        if not info.runs.certain:
            continue  # a body that could not be read: unknown, not a finding
        elif info.runs.runs:
            raising.append((path, info))
        else:
            safe += 1
    source = facts.source(call.path)
    # The first error on the way: a model whose own setup DDP refuses (FAB009) is never reached where it
    # would raise; the setup's finding names this call instead.
    refused = refused_setups(facts)
    stopped = [(p, i) for p, i in raising if id(p.origin.site) in refused and not p.compiled]
    raising = [(p, i) for p, i in raising if (p, i) not in stopped]
    stopper = stopped[0][0].origin.site if stopped else None
    if raising and call.stopped_by and not any(p.compiled for p, _ in raising):
        # a setup DDP refuses runs before this call on every way to it (an EMA set up before the sampling)
        stopper, raising = refused[call.stopped_by].node, []
    if stopper is not None and not raising and source is not None:
        facts.masked.append((id(stopper), CODE, call.path, call.node,
                             f"raises FAB001 (`{source.segment(call.node)[:60]}`) unless `{call.method}` is marked"))
    severity = combined_severity((path_severity(p.strategy, compiled=p.compiled) for p, _ in raising), safe)
    if severity is None:
        return None
    # The most certain path; among equals, the one set up under the name the call uses (`agent.actor`),
    # so that the message names that model's mark, not another one that reaches here too.
    receiver = _receiver_text(source, call)
    strongest = strongest_path(sorted((p for p, _ in raising), key=lambda p: _names_receiver(facts, p, receiver)))
    when = joined_phrase((call.when or "", strongest.origin.when, compiled_when(strongest)))
    certain = severity == Severity.ERROR
    severity = under_choice(severity, when)
    info = next(i for p, i in raising if p is strongest)
    origin = strongest.origin
    origin_source = facts.source(origin.path)
    target = origin.target_text(origin_source)
    class_names = sorted({i.class_name for _, i in raising if i.class_name})
    class_name = info.class_name or "the wrapped model"
    qualified_method = f"{info.class_name}.{call.method}()" if info.class_name else f"{call.method}()"
    phrase = strategy_phrase(strongest.strategy, strongest.compiled)
    described = list(dict.fromkeys(p.strategy.description for p, _ in raising))
    if certain and len(described) > 1 and not strongest.compiled:
        phrase = f"under {' or '.join(described)}"  # each of them raises: which one runs does not matter
    if when:
        phrase += f" {when}"
    elif severity == Severity.WARNING and path_severity(strongest.strategy, compiled=strongest.compiled) == Severity.ERROR \
            and not strongest.strategy.when:  # "when `args.distributed` is true" already says why
        phrase += _why_not_certain(facts, call, raising, safe)
    wrapped_where = "" if origin.path == call.path and origin.site.lineno <= call.node.lineno and _same_scope(origin, call) \
        else f" (wrapped at {where(facts, origin.path, origin.site)})"
    # Headline: what is wrong; notes: how the method runs submodules, the runtime error, what is missing.
    message = f"`{qualified_method}` runs submodules but is called on the Fabric-wrapped `{receiver}`"
    notes = (
        f"`{call.method}` {info.runs.reason}",
        f"RuntimeError {phrase}",
        f"`{receiver}`{wrapped_where} is not marked with `{target}.mark_forward_method(\"{call.method}\")` "
        "before this call",
    )
    related = []
    origins: list[Origin] = []
    for path, _ in raising:
        if path.origin not in origins:
            origins.append(path.origin)
    for each in origins[:3]:
        each_source = facts.source(each.path)
        related.append(Related(each_source.span(each.site), f"`{each.target_text(each_source)}` is wrapped by Fabric here"))
    for hop_path, hop_node, text in facts.chain(call, origin)[:4]:
        hop_source = facts.source(hop_path)
        if hop_source is not None:
            related.append(Related(hop_source.span(hop_node), text))
    declared = {p.declared: p.cls.name for p, _ in raising if p.declared is not None}
    for (annotation_path, annotation_node, what), declared_name in list(declared.items())[:2]:
        annotation_source = facts.source(annotation_path)
        if annotation_source is not None:
            related.append(Related(annotation_source.span(annotation_node),
                                   f"`{declared_name}` is the class declared for {what} here (the value itself cannot "
                                   "be seen: it comes from a call or a caller the analysis does not follow)"))
    for mark in _later_marks(facts, origins, call.method)[:2]:
        mark_source = facts.source(mark.path)
        related.append(Related(mark_source.span(mark.node),
                               f"`{call.method}` is marked here, but only after this call has run on one of the ways to it"))
    if info.bound_at is not None:
        related.append(Related(info.bound_at[0], f"`{class_name}.{call.method}` is bound to the instance here"))
    if info.definition is not None:
        defined = f"`{info.definition_name}`" if info.definition_name else f"`{class_name}.{call.method}`"
        related.append(Related(info.definition, f"{defined} is defined here"))
    skew = facts.library_skew(strongest.cls)
    if skew is not None:
        related.append(Related(source.span(call.node), skew))
    if len(class_names) > 1:
        class_name = " / ".join(class_names)
    fix = _mark_fix(facts, origins, call.method)
    if _keyed_receiver(call) and (fix is None or any(_sets_up_several(facts, o, parents) for o in origins)):
        # `wrapped["actor"].act(x)` on models set up key by key (`{k: fabric.setup(m) for k, m in ...}`,
        # `for k, m in models.items(): models[k] = fabric.setup(m)`): a mark at the setup would mark every
        # model set up there (AttributeError on those without the method); mark this key's model here.
        fix = _mark_here(facts, call, parents)
    return Finding(
        code=CODE,
        severity=severity,
        span=source.span_of_name_in(call.span_node, call.method) if isinstance(call.span_node, ast.Attribute)
        else source.span(call.span_node),
        message=message,
        record_id=record_id(CODE),
        related=tuple(related),
        fix=fix,
        # Used only when `fix` edits a file a fix may not touch (fabric_lsp.fixes.confinement).
        alternatives=_alternatives(source, call, parents) if fix is not None and any(
            edit.path != call.path for edit in fix.edits) else (),
        context={"class": info.class_name or "Module", "method": call.method},
        notes=notes,
    )


def _later_marks(facts: ProgramFacts, origins: list[Origin], method: str) -> list:
    """Marks of `method` on the models of `origins`: a call reported despite them runs before them."""
    sites = {id(origin.site) for origin in origins}
    return [mark for mark in facts.marks if method in mark.names and any(id(p.origin.site) in sites for p in mark.paths)]


def _keyed_receiver(call: MethodCallFact) -> bool:
    """Is the call's receiver an element read by a literal key (`models["student"]`)?"""
    node = call.span_node
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Subscript) \
        and isinstance(node.value.slice, ast.Constant)


def _sets_up_several(facts: ProgramFacts, origin: Origin, parents: dict[str, dict[int, ast.AST]]) -> bool:
    """Does the setup call run in a loop or a comprehension of its scope (one call, several models)?"""
    source = facts.source(origin.path)
    if source is None or source.tree is None:
        return False
    if source.path not in parents:
        parents[source.path] = _parents(source.tree)
    node = parents[source.path].get(id(origin.site))
    while node is not None and node is not origin.scope.node:
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.comprehension, ast.ListComp, ast.SetComp,
                             ast.DictComp, ast.GeneratorExp)):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return False
        node = parents[source.path].get(id(node))
    return False


def _mark_here(facts: ProgramFacts, call: MethodCallFact, parents: dict[str, dict[int, ast.AST]]) -> Fix | None:
    """The mark just before the call, as the main fix (see `_mark_before_call`)."""
    source = facts.source(call.path)
    node = call.span_node
    if source is None or source.tree is None or not call.receiver_always_wrapped or node.attr != call.method \
            or not isinstance(call.node, ast.Call) or call.node.func is not node:
        return None
    if source.path not in parents:
        parents[source.path] = _parents(source.tree)
    return _mark_before_call(source, call, node.value, parents[source.path], keyed=True)


def _same_scope(origin: Origin, call: MethodCallFact) -> bool:
    scope_node = call.scope.node
    return getattr(scope_node, "lineno", 0) <= origin.site.lineno <= getattr(scope_node, "end_lineno", 1 << 30) or \
        call.scope.kind == "module"


def _names_receiver(facts: ProgramFacts, path: WrappedPath, receiver: str) -> int:
    """0 when the path's setup binds the wrapper to the name the call uses, else 1 (a sort key)."""
    origin_source = facts.source(path.origin.path)
    return 0 if origin_source is not None and path.origin.target_text(origin_source) == receiver else 1


def _receiver_text(source, call: MethodCallFact) -> str:
    node = call.span_node
    if isinstance(node, ast.Attribute):
        return source.segment(node.value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" and node.args:
        return source.segment(node.args[0])  # `getattr(model, name)(...)`: the model
    return source.segment(node)


def _why_not_certain(facts: ProgramFacts, call: MethodCallFact, raising, safe: int) -> str:
    if safe:
        return " on some of the paths that reach this call (others do not raise)"
    return " on one of the paths that reach this call"


def _mark_fix(facts: ProgramFacts, origins: list[Origin], method: str) -> Fix | None:
    """Insert `<target>.mark_forward_method("<method>")` on the line after each setup statement
    that wraps a model reaching the call."""
    edits = []
    for origin in origins:
        source = facts.source(origin.path)
        statement = origin.statement
        if source is not None and isinstance(statement, ast.Return) and statement.value is origin.site:
            edit = _mark_in_return(source, origin, statement, method)
            if edit is None:
                return None
            edits.append(edit)
            continue
        if source is None or origin.target is None or not isinstance(statement, (ast.Assign, ast.AnnAssign)):
            return None  # no line of its own to follow
        indentation = source.indentation(statement.lineno)
        if len(indentation) != statement.col_offset:
            return None  # e.g. `if ok: model = fabric.setup(model)`
        end_line = statement.end_lineno or statement.lineno
        end_of_line = Position(end_line - 1, len(source.line(end_line)))
        text = f"\n{indentation}{origin.target_text(source)}.mark_forward_method(\"{method}\")"
        edits.append(TextEdit(source.path, end_of_line, end_of_line, text))
    if not edits:
        return None
    return Fix(
        title=f"Mark `{method}` as a forward method after `fabric.setup`",
        applicability=Applicability.SAFE,
        edits=tuple(edits),
    )


def _mark_in_return(source, origin: Origin, statement: ast.Return, method: str) -> TextEdit | None:
    """`return fabric.setup(model, optimizer)` (a factory) becomes
    `model, optimizer = fabric.setup(model, optimizer)`, the mark, then `return model, optimizer`:
    the values returned are the same objects. Only when every argument given to setup is a plain
    local name (rebinding it just before returning changes nothing else)."""
    site = origin.site
    setup = site.func.attr if isinstance(site.func, ast.Attribute) else None
    if setup not in ("setup", "setup_module") or not site.args:
        return None
    if not all(isinstance(arg, ast.Name) for arg in site.args):
        return None  # `fabric.setup(Net(), opt)` or `*parts`: no name to bind the result to
    names = [arg.id for arg in site.args]
    if setup == "setup_module":
        names = names[:1]
    if len(set(names)) != len(names) or _declared_outside(origin.scope.node, names):
        return None
    indentation = source.indentation(statement.lineno)
    if len(indentation) != statement.col_offset or statement.end_lineno is None:
        return None  # e.g. `if ok: return fabric.setup(model)`
    bound = ", ".join(names)
    text = (
        f"{bound} = {source.segment(site)}\n"
        f"{indentation}{names[0]}.mark_forward_method(\"{method}\")\n"
        f"{indentation}return {bound}"
    )
    span = source.span(statement)
    return TextEdit(source.path, span.start, span.end, text)


def _declared_outside(function: ast.AST, names: list[str]) -> bool:
    """A `global`/`nonlocal` declaration of one of `names` in the function: rebinding would leak."""
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return True  # a module-level `return` does not run; nothing to fix
    for node in ast.walk(function):
        if isinstance(node, (ast.Global, ast.Nonlocal)) and set(node.names) & set(names):
            return True
    return False


# -- in-file alternatives (offered when the setup's file may not be edited: fabric_lsp.fixes.confinement) --


def _alternatives(source, call: MethodCallFact, parents: dict[str, dict[int, ast.AST]]) -> tuple[Fix, ...]:
    """Fixes at the failing call, in its own file. Both need `receiver` to be the Fabric wrapper on
    every way the call runs (on the unwrapped module `mark_forward_method` / `.module` do not exist:
    AttributeError), so neither is offered when the analysis sees it reached unwrapped too."""
    node = call.span_node
    if source is None or source.tree is None or not call.receiver_always_wrapped or not isinstance(node, ast.Attribute) \
            or node.attr != call.method or not isinstance(call.node, ast.Call) or call.node.func is not node:
        return ()
    if source.path not in parents:
        parents[source.path] = _parents(source.tree)
    mark = _mark_before_call(source, call, node.value, parents[source.path])
    if mark is not None:
        return (mark,)
    bypass = _call_on_module(source, call, node.value)
    return (bypass,) if bypass is not None else ()


def _mark_before_call(source, call: MethodCallFact, receiver: ast.expr, parents: dict[int, ast.AST],
                      keyed: bool = False) -> Fix | None:
    """`receiver.mark_forward_method("m")` inserted just before the statement holding the call: what
    the runtime error asks for, done where the call is (marking again is a no-op). Only for a receiver
    that reads a name (`model`, `self.model`) not rebound inside that statement, in a statement that
    runs the call when it runs (not inside a lambda or a generator expression)."""
    base = _base_name(receiver, keyed)
    if base is None:
        return None
    statement, lazy = parents.get(id(call.node)), False
    while statement is not None and not isinstance(statement, ast.stmt):
        if isinstance(statement, (ast.Lambda, ast.GeneratorExp)):
            lazy = True
        statement = parents.get(id(statement))
    if statement is None or lazy or isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return None  # a call in a decorator, default, base or annotation: no line of its own before it
    if _rebinds(source, statement, receiver, base):
        return None
    if statement.lineno > 1 and source.line(statement.lineno - 1).endswith("\\"):
        return None  # the statement continues a backslash-continued line
    mark = f"{source.segment(receiver)}.mark_forward_method(\"{call.method}\")"
    start = source.start(statement)
    line = source.line(statement.lineno)
    before = line[:start.character]
    if before.strip():
        # After `;` or on the line of `if ...:`: a simple statement, joined with `;` on its line.
        if not before.rstrip().endswith((";", ":")):
            return None
        edit = TextEdit(source.path, start, start, f"{mark}; ")
    else:
        if isinstance(statement, ast.If) and line[start.character:].startswith("elif"):
            return None  # the `elif` of a chain: no statement can go before it
        at = Position(start.line, 0)
        edit = TextEdit(source.path, at, at, f"{before}{mark}\n")
    return Fix(
        title=f"Mark `{call.method}` as a forward method just before this call (`{mark}`)",
        applicability=Applicability.SAFE,
        edits=(edit,),
    )


def _call_on_module(source, call: MethodCallFact, receiver: ast.expr) -> Fix | None:
    """`receiver.module.m(...)`: the original module's method, outside the strategy's wrapper. Under
    DDP it skips the gradient synchronisation (ranks that train through it drift apart): unsafe,
    right for inference only."""
    if not isinstance(receiver, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
        return None  # `(a or b).m()`: `.module` would bind to the last operand only
    end = source.end(receiver)
    return Fix(
        title=(f"Call `{call.method}` on the unwrapped `{source.segment(receiver)}.module` (bypasses the strategy: "
               "under DDP its gradients are not synchronised across processes; for inference only)"),
        applicability=Applicability.UNSAFE,
        edits=(TextEdit(source.path, end, end, ".module"),),
    )


def _base_name(receiver: ast.expr, keyed: bool = False) -> str | None:
    """`model` for `model`, `self.model`, `self.state.model` (and `models["student"]` when `keyed`); None
    for anything that runs code."""
    node = receiver
    while isinstance(node, ast.Attribute) or (keyed and isinstance(node, ast.Subscript)
                                              and isinstance(node.slice, ast.Constant)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _rebinds(source, statement: ast.stmt, receiver: ast.expr, base: str) -> bool:
    """Does `statement` bind `base` (or assign the receiver's attribute) anywhere but in the targets
    of a plain assignment (those bind after the call has run)?"""
    allowed: set[int] = set()
    if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        for target in targets:
            allowed.update(id(n) for n in ast.walk(target))
    text = source.segment(receiver)
    for node in ast.walk(statement):
        if id(node) in allowed:
            continue
        if isinstance(node, ast.Name) and node.id == base and isinstance(node.ctx, (ast.Store, ast.Del)):
            return True
        if isinstance(node, ast.arg) and node.arg == base:
            return True
        if isinstance(node, ast.alias) and (node.asname or node.name.split(".")[0]) == base:
            return True
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)) and source.segment(node) == text:
            return True
        if isinstance(node, (ast.Global, ast.Nonlocal)) and base in node.names:
            return True
    return False


def _parents(tree: ast.AST) -> dict[int, ast.AST]:
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    return parents


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
fabric.launch()
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
fabric.launch()
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
    # Values the program states rule the call out: a default argument no caller passes, YAML text
    # written in the program, and arguments that take the method's way without a module.
    '''
import yaml
import torch.nn as nn
from lightning.fabric import Fabric

SETTINGS = yaml.safe_load("preview: false")

class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 4)
    def generate(self, x=None):
        if x is None:
            return None
        return self.head(x)

def fit(model, evaluate=False):
    if evaluate:
        model.generate(1)

fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp")
fabric.launch()
model = fabric.setup(LM())
fit(model)
if SETTINGS["preview"]:
    model.generate(1)
model.generate()
''',
    # Another object kept the module before it was set up: its reference is not the wrapper.
    '''
import torch.nn as nn
from lightning.fabric import Fabric

class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 4)
    def embed(self, x):
        return self.net(x)

class Agent:
    def __init__(self):
        self.encoder = Encoder()
        self.kept = [self.encoder]
        self.original = self.encoder

fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp")
fabric.launch()
agent = Agent()
agent.encoder = fabric.setup_module(agent.encoder)
agent.original.embed(None)
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
fabric.launch()
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
    # Through a helper, called with the wrapped model and with the unwrapped one: reported once.
    '''
import torch.nn as nn
from lightning.fabric import Fabric

class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 4)
    def generate(self, x):
        return self.head(x)

def sample(model, x):
    return model.generate(x)  # expect: FAB001 error

fabric = Fabric(strategy="ddp")
fabric.launch()
model = fabric.setup(LM())
sample(model, None)
sample(model.module, None)
''',
    # Wrapped in a base class, used in a subclass.
    '''
import torch.nn as nn
from lightning.fabric import Fabric

class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 4)
    def decode(self, x):
        return self.head(x)

class BaseTrainer:
    def __init__(self, fabric):
        self.fabric = fabric
    def prepare(self, model):
        self._model = self.fabric.setup(model)

class Decoder(BaseTrainer):
    def run(self, x):
        return self._model.decode(x)  # expect: FAB001 error

fabric = Fabric(strategy="ddp")
fabric.launch()
trainer = Decoder(fabric)
trainer.prepare(LM())
trainer.run(None)
''',
    # A command-line flag (off by default) guards the call: a run-time choice, a warning that names it.
    '''
import argparse
import torch.nn as nn
from lightning.fabric import Fabric

class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 4)
    def generate(self, x):
        return self.head(x)

parser = argparse.ArgumentParser()
parser.add_argument("--sample", action="store_true")
args = parser.parse_args()
fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp")
fabric.launch()
model = fabric.setup(LM())
if args.sample:
    model.generate(None)  # expect: FAB001 warning
''',
)

_LM = """\
import torch.nn as nn
from lightning.fabric import Fabric

class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 4)
    def generate(self, x):
        return self.head(x)

def build():
    model = LM()
    return Fabric(strategy="ddp").setup(model)
"""

# The setup (where the main fix marks the method) is in lm.py, which is not checked.
ALTERNATIVES = (
    AlternativeCase((("lm.py", _LM), ("example.py", """\
from lm import build

model = build()
for x in (None, None):
    y = model.generate(x)  # expect: FAB001 error
""")), "example.py", """\
from lm import build

model = build()
for x in (None, None):
    model.mark_forward_method("generate")
    y = model.generate(x)  # expect: FAB001 error
"""),
    # A one-line suite: the mark joins it.
    AlternativeCase((("lm.py", _LM), ("example.py", """\
from lm import build

model = build()
if model: model.generate(None)  # expect: FAB001 error
""")), "example.py", """\
from lm import build

model = build()
if model: model.mark_forward_method("generate"); model.generate(None)  # expect: FAB001 error
"""),
    # A lambda runs later (no line before it is the right place): the unwrapped module's method.
    AlternativeCase((("lm.py", _LM), ("example.py", """\
from lm import build

model = build()
sample = lambda x: model.generate(x)  # expect: FAB001 error
""")), "example.py", """\
from lm import build

model = build()
sample = lambda x: model.module.generate(x)  # expect: FAB001 error
"""),
    # The helper also gets the unwrapped module: a mark or `.module` there would raise AttributeError.
    AlternativeCase((("lm.py", _LM + """\

from example import sample

sample(build(), None)
sample(LM(), None)
"""), ("example.py", """\
def sample(model, x):
    return model.generate(x)  # expect: FAB001 error
""")), "example.py", None),
)

RULE = RuleModule(CODE, NAME, check, VALID, INVALID, ALTERNATIVES)
