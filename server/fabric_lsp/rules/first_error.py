"""The first error on a path is the finding (DESIGN.md, Severity, last row).

A call that raises on every strategy and machine (`mark_forward_method("genrate")`, a model set up twice,
`launch(train(fabric))`, `mark_forward_method(Model.generate)`) stops the program there: what its function
would do after it never runs, so a later finding in that function is not reported at warning or above. The
stopping rule marks its finding (`stopping_context`: the last line the stop covers) when the call is a
statement every run of its function executes (not inside a branch, a loop or a `try`); `apply` then leaves out
the later findings of that function and names them in the stopping finding's notes ("after this is fixed,
line 42 raises FAB001: ...").

Calls on a model whose own setup raises (FAB009: DDP refuses a frozen module) are left out by the rules
themselves (analysis.facts.refused_setups), anywhere in the program."""

from __future__ import annotations

import ast
import dataclasses

from fabric_lsp.findings import Finding, Severity

STOPS_THROUGH = "stops_through"  # Finding.context key: the last line (1-based) of the function the error stops
_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.Match) + (
    (ast.TryStar,) if hasattr(ast, "TryStar") else ())
_MAX_NAMED = 4  # later findings named in the stopping finding's notes


def stopping_context(tree: ast.AST | None, node: ast.AST) -> dict[str, str]:
    """{STOPS_THROUGH: last line} when the statement holding `node` runs on every run of its function (or
    module): directly in the body, or in a `with` block there; {} otherwise (a branch, a loop, a `try`)."""
    if tree is None:
        return {}
    path = _path_to(tree, node)
    if not path:
        return {}
    for ancestor in reversed(path[:-1]):
        if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return {STOPS_THROUGH: str(ancestor.end_lineno or ancestor.lineno)}
        if isinstance(ancestor, ast.Module):
            last = max((getattr(n, "end_lineno", 0) or 0 for n in ancestor.body), default=0)
            return {STOPS_THROUGH: str(last)}
        if isinstance(ancestor, (ast.Lambda, ast.ClassDef, ast.comprehension) + _COMPOUND):
            return {}
    return {}


def stopping(finding: Finding | None, tree: ast.AST | None, node: ast.AST) -> Finding | None:
    """The finding, marked as stopping its function when it is an error and its call always runs there."""
    if finding is None or finding.severity != Severity.ERROR:
        return finding
    context = stopping_context(tree, node)
    return dataclasses.replace(finding, context={**finding.context, **context}) if context else finding


def _path_to(tree: ast.AST, target: ast.AST) -> list[ast.AST]:
    """The nodes from the root to `target` (only the subtrees whose span holds it are entered)."""
    line = getattr(target, "lineno", None)
    path = [tree]
    current = tree
    while current is not target:
        for child in ast.iter_child_nodes(current):
            if child is target:
                path.append(child)
                return path
            start, end = getattr(child, "lineno", None), getattr(child, "end_lineno", None)
            if start is not None and line is not None and start <= line <= (end or start) and _holds(child, target):
                path.append(child)
                current = child
                break
        else:
            return []
    return path


def _holds(node: ast.AST, target: ast.AST) -> bool:
    return any(each is target for each in ast.walk(node))


def apply(by_file: dict[str, list[Finding]]) -> dict[str, list[Finding]]:
    """Leave out the findings a certain earlier error in the same function stops; name them in its notes."""
    stoppers = [f for findings in by_file.values() for f in findings
                if f.severity == Severity.ERROR and f.context.get(STOPS_THROUGH)]
    if not stoppers:
        return by_file
    stoppers.sort(key=lambda f: (f.span.path, f.span.start))
    dropped: set[int] = set()
    replaced: dict[int, Finding] = {}
    for stopper in stoppers:
        if id(stopper) in dropped:
            continue  # stopped itself by an earlier one
        last = int(stopper.context[STOPS_THROUGH]) - 1
        later = [f for f in by_file.get(stopper.span.path, ())
                 if f is not stopper and stopper.span.start < f.span.start and f.span.start.line <= last
                 and f.severity in (Severity.ERROR, Severity.WARNING) and id(f) not in dropped]
        if not later:
            continue
        later.sort(key=lambda f: f.span.start)
        dropped.update(id(f) for f in later)
        notes = tuple(f"after this is fixed, line {f.span.start.line + 1} raises {f.code}: {f.message}"
                      for f in later[:_MAX_NAMED])
        if len(later) > _MAX_NAMED:
            notes += (f"and {len(later) - _MAX_NAMED} more later in the same function",)
        current = replaced.get(id(stopper), stopper)
        replaced[id(stopper)] = dataclasses.replace(current, notes=tuple(current.notes) + notes)
    return {path: [replaced.get(id(f), f) for f in findings if id(f) not in dropped] for path, findings in by_file.items()}
