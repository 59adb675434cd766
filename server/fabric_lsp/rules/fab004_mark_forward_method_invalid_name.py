"""FAB004 mark-forward-method-invalid-name: `wrapped.mark_forward_method("x")` where `x` is not a
method of the wrapped module's class.

`mark_forward_method` looks the name up on the original module and accepts it only if it is a bound
method: a typo, a plain attribute, a property or a static method raises AttributeError, and
"forward" raises ValueError, on every strategy.
"""

from __future__ import annotations

import ast
import difflib

from fabric_lsp.analysis import MarkFact, ProgramFacts
from fabric_lsp.analysis.caught import catching_handler
from fabric_lsp.analysis.classes import ClassInfo
from fabric_lsp.analysis.literal_sources import LiteralFinder
from fabric_lsp.analysis.values import Const
from fabric_lsp.findings import Applicability, Finding, Fix, Position, Related, Severity, TextEdit
from fabric_lsp.rules.base import RuleModule, combined_severity, record_id, under_choice
from fabric_lsp.rules.first_error import stopping

CODE = "FAB004"
NAME = "mark-forward-method-invalid-name"

# What `getattr(original_module, name)` gives for each kind the analysis tells apart.
# A property that returns a bound method (`return self._greedy`) is one when looked up: accepted.
_METHOD_KINDS = ("method", "classmethod", "generator", "wrapper", "property_method")
_KIND_WORDS = {
    "missing": "does not exist",
    "attribute": "is an attribute, not a method",
    "property": "is a property, not a method",
    "staticmethod": "is a staticmethod, not a bound method",
    "singledispatchmethod": "is a singledispatchmethod, not a bound method",
}


def check(facts: ProgramFacts) -> list[Finding]:
    findings = []
    for mark in facts.marks:
        if mark.argument is None:
            continue
        if isinstance(mark.argument, ast.Constant) and isinstance(mark.argument.value, str):
            names, computed = [mark.argument.value], False
        else:
            # A name computed from literals (an f-string, an element of a literal tuple, a helper's
            # parameter given a literal): the strings the value flow sees; anything else is unknown.
            names = sorted(v.value for v in mark.values if isinstance(v, Const) and v.kind == "str")
            computed = True
        for name in names:  # a computed argument may be given several names that raise: one finding each
            error = "ValueError" if name == "forward" else "AttributeError"
            if catching_handler(facts.source(mark.path).tree, mark.node, error) is not None:
                continue  # `try: ... except AttributeError:` around it: the program goes on without the mark
            finding = _forward(facts, mark, computed) if name == "forward" else _not_a_method(facts, mark, name, computed)
            finding = stopping(finding, facts.source(mark.path).tree, mark.node)  # raises on every strategy
            if finding is not None:
                findings.append(finding)
    return findings


def _when(mark: MarkFact) -> str:
    return f" {mark.when}" if mark.when else ""


def _written(source, mark: MarkFact, name: str, computed: bool) -> str:
    """How the message names the mark: as written, and for a computed name, the string it gets."""
    if not computed:
        return f'`mark_forward_method("{name}")`'
    return f'`mark_forward_method({source.segment(mark.argument)})` (given "{name}")'


def _forward(facts: ProgramFacts, mark: MarkFact, computed: bool = False) -> Finding:
    source = facts.source(mark.path)
    return Finding(
        code=CODE,
        severity=under_choice(Severity.ERROR, mark.when),
        span=source.span(mark.argument),
        message=f'{_written(source, mark, "forward", computed)} marks `forward` itself',
        notes=('ValueError "You cannot mark the forward method itself as a forward method." on every strategy'
               + _when(mark), "`forward` already goes through the strategy"),
        record_id=record_id(CODE),
        related=_related(facts, mark),
        # `forward` already runs through the strategy: the mark asks for nothing that is not there. A
        # computed name may be another one on another way here: the literal that gives "forward" goes
        # (unsafe: the tuple may be read elsewhere, the helper call removed may do more than mark).
        fix=_removal(source, mark, Applicability.SAFE) if not computed else _computed_fix(
            facts, mark, "forward", None, Applicability.UNSAFE),
        context={"class": _class_name(mark) or "Module", "method": "forward", "error": "ValueError"},
    )


def _not_a_method(facts: ProgramFacts, mark: MarkFact, name: str, computed: bool = False) -> Finding | None:
    raising: list[tuple[object, str]] = []
    safe = 0
    for path in mark.paths:
        if path.cls is None:
            continue
        info = facts.method_info(path.cls, name)
        if info.kind in _METHOD_KINDS or info.kind == "unknown" or (path.declared is not None and info.kind == "missing"):
            safe += 1
        else:
            raising.append((path, info.kind))
    severity = combined_severity([Severity.ERROR] * len(raising), safe)
    if severity is None:
        return None
    source = facts.source(mark.path)
    path, kind = raising[0]
    class_name = path.cls.name
    suggestion, searched = _closest_method(facts, path.cls, name)
    some = "" if severity == Severity.ERROR else " for some of the classes that reach here"
    # Headline: what is wrong; notes: the runtime error, the closest method.
    message = f'{_written(source, mark, name, computed)}: `{class_name}.{name}` {_KIND_WORDS.get(kind, "is not a method")}'
    notes = (f'AttributeError "You marked \'{name}\' as a forward method, but `{class_name}.{name}` does not '
             f'exist or is not a method." on every strategy{some}{_when(mark)}',) + ((f'did you mean "{suggestion}"?',) if suggestion else ())
    if kind == "singledispatchmethod":
        notes += ("a functools.singledispatchmethod looked up on the instance is a plain function",)
    fix = None
    if computed:
        # The literal the name is made of, where it is written (a tuple's element, a helper's caller).
        if suggestion or (severity == Severity.ERROR and searched):
            fix = _computed_fix(facts, mark, name, suggestion, Applicability.UNSAFE)
    elif severity == Severity.ERROR and not suggestion and searched:
        # Every class that reaches the mark raises: removing it only removes the error, but the author
        # wanted something routed through forward, so read it before applying. (Not offered when the
        # closest name was not searched for: renaming may have been the fix.)
        fix = _removal(source, mark, Applicability.UNSAFE)
    if suggestion and not computed:
        span = source.span(mark.argument)
        fix = Fix(
            title=f'Mark "{suggestion}" instead',
            # Another method gets routed through forward: what the author meant, most likely, but not
            # something to apply without reading it.
            applicability=Applicability.UNSAFE,
            edits=(TextEdit(source.path, span.start, span.end, f'"{suggestion}"'),),
        )
    return Finding(
        code=CODE,
        severity=under_choice(severity, mark.when),
        span=source.span(mark.argument),
        message=message,
        record_id=record_id(CODE),
        related=_related(facts, mark),
        fix=fix,
        context={"class": class_name, "method": name, "error": "AttributeError"},
        notes=notes,
    )


def _computed_fix(facts: ProgramFacts, mark: MarkFact, name: str, suggestion: str | None,
                  applicability: Applicability) -> Fix | None:
    """For a name computed from literals: correct the literal it is made of (`"slots"` -> `"slot"` in
    the tuple an f-string formats), or, without a suggestion, drop it (the tuple's element, or the
    helper call that passes it). None unless every literal that gives the name can be edited so."""
    sources = LiteralFinder(facts).sources(mark.path, mark.argument, name)
    edits: list[TextEdit] = []
    for found in sources:
        source = facts.source(found.path)
        if suggestion is not None:
            if not (suggestion.startswith(found.prefix) and suggestion.endswith(found.suffix)) or \
                    len(suggestion) <= len(found.prefix) + len(found.suffix):
                return None
            text = suggestion[len(found.prefix):len(suggestion) - len(found.suffix)]
            written = source.segment(found.constant)
            quote = written[-1] if written[-1:] in ("'", '"') else '"'
            span = source.span(found.constant)
            edits.append(TextEdit(source.path, span.start, span.end, f"{quote}{text}{quote}"))
        elif found.element_of is not None:
            edit = _element_removal(source, found.element_of, found.constant)
            if edit is None:
                return None
            edits.append(edit)
        elif found.passed_by is not None:
            removal = _call_removal(source, found.passed_by)
            if removal is None:
                return None
            edits.append(removal)
        else:
            return None
    if not edits or len({(e.path, e.start, e.end) for e in edits}) != len(edits):
        return None
    title = f'Mark "{suggestion}" instead' if suggestion else f'Drop "{name}" where it is written'
    return Fix(title=title, applicability=applicability, edits=tuple(edits))


def _element_removal(source, display: ast.AST, element: ast.AST) -> TextEdit | None:
    """Remove `element` from a tuple or list display, with the comma that follows it (or precedes it,
    for the last one); a one-element tuple keeps its comma."""
    elements = display.elts
    index = next((i for i, e in enumerate(elements) if e is element), None)
    if index is None:
        return None
    if index + 1 < len(elements):
        start, end = source.start(element), source.start(elements[index + 1])
    elif index > 0:
        start, end = source.end(elements[index - 1]), source.end(element)
    else:
        start, end = source.start(element), source.end(element)
    return TextEdit(source.path, start, end, "")


def _call_removal(source, call: ast.Call) -> TextEdit | None:
    """Delete the statement that is only `call` (its lines; `pass` when alone in its block); None when
    the call is part of a larger statement or shares its lines with another one."""
    body, statement = _statement_of(source.tree, call)
    if statement is None:
        return None
    first, last = statement.lineno, statement.end_lineno or statement.lineno
    before = source.line(first)[: source.char_col(first, statement.col_offset)]
    after = source.line(last)[source.char_col(last, statement.end_col_offset or 0):]
    if before.strip() or (after.strip() and not after.lstrip().startswith("#")):
        return None  # `if ok: model.mark_forward_method(...)` or `a(); model.mark_forward_method(...)`
    if len(body) == 1:
        span = source.span(statement)
        return TextEdit(source.path, span.start, span.end, "pass")
    return TextEdit(source.path, Position(first - 1, 0), Position(last, 0), "")


def _removal(source, mark: MarkFact, applicability: Applicability) -> Fix | None:
    """Delete the statement `wrapped.mark_forward_method("x")` (its whole lines; `pass` when it is
    the only statement of its block). None when the mark is part of a larger statement or shares
    its lines with another one."""
    edit = _call_removal(source, mark.node)
    return Fix(title="Remove the mark", applicability=applicability, edits=(edit,)) if edit is not None else None


def _statement_of(tree: ast.AST | None, call: ast.Call) -> tuple[list, ast.Expr | None]:
    """(the body holding it, the expression statement) whose value is `call`."""
    if tree is None:
        return [], None
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            body = getattr(node, name, None)
            if isinstance(body, list):
                for statement in body:
                    if isinstance(statement, ast.Expr) and statement.value is call:
                        return body, statement
        for handler in getattr(node, "handlers", ()) or ():
            for statement in handler.body:
                if isinstance(statement, ast.Expr) and statement.value is call:
                    return handler.body, statement
    return [], None


def _class_name(mark: MarkFact) -> str | None:
    for path in mark.paths:
        if path.cls is not None:
            return path.cls.name
    return None


def _related(facts: ProgramFacts, mark: MarkFact) -> tuple[Related, ...]:
    related = []
    for path in mark.paths[:1]:
        origin_source = facts.source(path.origin.path)
        related.append(Related(origin_source.span(path.origin.site),
                               f"`{path.origin.target_text(origin_source)}` is wrapped by Fabric here"))
    return tuple(related)


# At most this many methods are compared with a misspelled name (a class and its readable bases; real
# classes have tens). A class with more gets no suggestion, the same on every run, and a notice.
MAX_SUGGESTION_CANDIDATES = 1_000


def _closest_method(facts: ProgramFacts, cls, name: str) -> tuple[str | None, bool]:
    """(The method of the class, own or inherited from readable bases, closest to the name, or None;
    whether they were searched: not when the class has more than MAX_SUGGESTION_CANDIDATES methods)."""
    names: dict[str, None] = {}  # in MRO order, each once
    for ref in facts.resolver.mro(cls):
        if isinstance(ref, ClassInfo):
            for method in ref.methods():
                if not method.startswith("__") and method != "forward":
                    names[method] = None
            if len(names) > MAX_SUGGESTION_CANDIDATES:
                facts.notices.append(
                    f"{cls.path}: `{cls.name}` has more than {MAX_SUGGESTION_CANDIDATES} methods: FAB004 suggests "
                    f"no method name for `mark_forward_method(\"{name}\")`")
                return None, False
    candidates = [method for method in names if facts.method_kind(cls, method) in ("method", "classmethod", "generator")]
    matches = difflib.get_close_matches(name, candidates, n=1, cutoff=0.75)
    return (matches[0] if matches else None), True


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
    @classmethod
    def build(cls):
        return cls()

fabric = Fabric(strategy="ddp")
fabric.launch()
model = fabric.setup(LM())
model.mark_forward_method("generate")
model.mark_forward_method("build")
''',
    # The program expects the mark to fail for some models and goes on without it: nothing raises.
    '''
import contextlib
import torch.nn as nn
from lightning.fabric import Fabric

class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 4)

fabric = Fabric(strategy="ddp")
fabric.launch()
model = fabric.setup(LM())
try:
    model.mark_forward_method("generate")
except AttributeError:
    pass
with contextlib.suppress(Exception):
    model.mark_forward_method("forward")
''',
    # `hasattr` on the wrapper looks the name up on the original module: the names it lacks are skipped.
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
for name in ("generate", "sample"):
    if hasattr(model, name):
        model.mark_forward_method(name)
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
        self.temperature = 0.7
    def generate(self, x):
        return self.head(x)

fabric = Fabric(accelerator="cpu", devices=1)
model = fabric.setup(LM())
model.mark_forward_method("genrate")  # expect: FAB004 error
''',
    # Each mark raises on every strategy, so only the first one of a function is reached: one per function.
    '''
import torch.nn as nn
from lightning.fabric import Fabric

class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 4)
        self.temperature = 0.7
    def generate(self, x):
        return self.head(x)

def mark_attribute(model):
    model.mark_forward_method("temperature")  # expect: FAB004 error

def mark_forward(model):
    model.mark_forward_method("forward")  # expect: FAB004 error

fabric = Fabric(accelerator="cpu", devices=1)
model = fabric.setup(LM())
mark_attribute(model)
mark_forward(model)
''',
)

RULE = RuleModule(CODE, NAME, check, VALID, INVALID)
