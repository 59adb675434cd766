"""Where a string computed from literals is written, for FAB004's fixes: `mark_forward_method(name)`
given "forward" by a helper's caller, `mark_forward_method(f"predict_{task}")` over a literal tuple with a
misspelled task. The value flow says which strings reach the mark (Const values keep no place); this reads
the few shapes that make them, so the fix can edit the literal (or the call that passes it):

- a string literal;
- an f-string with one `{name}` and literal parts around it (the literal part of the name is matched);
- a name bound in the function by `name = "literal"`, by `for name in <tuple or list of literals>` (or
  a module-level name bound to one), or a parameter of the function, followed to the calls the value
  flow saw enter the function (its "enter" events) and what they pass (by position or keyword);
- a module-level name bound to a string literal.

Anything else gives no source, so no fix (the finding stays).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

MAX_DEPTH = 4
MAX_SOURCES = 8


@dataclass(frozen=True)
class LiteralSource:
    path: str
    constant: ast.Constant  # the literal the name's text comes from
    prefix: str  # literal text around it in an f-string ("predict_" in f"predict_{task}")
    suffix: str
    passed_by: ast.Call | None = None  # the helper call that passes it (None: an element or assignment)
    element_of: ast.AST | None = None  # the tuple/list display holding it


class _File:
    def __init__(self, source) -> None:
        self.source = source
        self.parents: dict[int, ast.AST] = {}
        for node in ast.walk(source.tree):
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node

    def enclosing_function(self, node: ast.AST):
        current = self.parents.get(id(node))
        while current is not None and not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            current = self.parents.get(id(current))
        return current


class LiteralFinder:
    """Finds the literals behind strings of one program's facts (one per fix computation)."""

    def __init__(self, facts) -> None:
        self.facts = facts
        self._files: dict[str, _File] = {}
        self._bounded = False
        # function node -> the calls that enter it, with the caller's path (from the solved events)
        self._entered_by: dict[int, list[tuple[str, ast.Call]]] = {}
        for event in facts.events:
            if event.kind == "enter" and isinstance(event.node, ast.Call):
                self._entered_by.setdefault(id(event.data["callee"].node), []).append((event.path, event.node))

    def _file(self, path: str) -> _File | None:
        if path not in self._files:
            source = self.facts.source(path)
            self._files[path] = _File(source) if source is not None and source.tree is not None else None
        return self._files[path]

    def sources(self, path: str, expr: ast.AST, value: str) -> list[LiteralSource]:
        """The literals that make `expr` (in `path`) the string `value`; none when a bound was hit (a fix
        that edits only some of them would leave the error)."""
        found: list[LiteralSource] = []
        self._bounded = False
        self._sources(path, expr, value, "", "", None, 0, found)
        return [] if self._bounded or len(found) > MAX_SOURCES else found

    def _sources(self, path, expr, value, prefix, suffix, passed_by, depth, found) -> None:
        if depth > MAX_DEPTH or len(found) > MAX_SOURCES:
            self._bounded = True
            return
        file = self._file(path)
        if file is None:
            return
        if isinstance(expr, ast.Constant) and expr.value == value:
            found.append(LiteralSource(path, expr, prefix, suffix, passed_by))
            return
        if isinstance(expr, ast.JoinedStr):
            formatted = [part for part in expr.values if isinstance(part, ast.FormattedValue)]
            if len(formatted) != 1 or formatted[0].format_spec is not None or formatted[0].conversion not in (-1, ord("s")):
                return
            index = expr.values.index(formatted[0])
            before = "".join(p.value for p in expr.values[:index] if isinstance(p, ast.Constant))
            after = "".join(p.value for p in expr.values[index + 1:] if isinstance(p, ast.Constant))
            if value.startswith(before) and value.endswith(after) and len(value) >= len(before) + len(after):
                inner = value[len(before):len(value) - len(after)]
                self._sources(path, formatted[0].value, inner, prefix + before, after + suffix, passed_by, depth + 1, found)
            return
        if not isinstance(expr, ast.Name):
            return
        name = expr.id
        function = file.enclosing_function(expr)
        if function is not None and not isinstance(function, ast.Lambda):
            local = False
            for node in ast.walk(function):
                if isinstance(node, ast.For) and isinstance(node.target, ast.Name) and node.target.id == name:
                    local = True
                    self._elements(path, node.iter, value, prefix, suffix, passed_by, found)
                elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                    local = True
                    self._sources(path, node.value, value, prefix, suffix, passed_by, depth + 1, found)
            parameters = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
            keywords = [a.arg for a in function.args.kwonlyargs]
            if name in parameters or name in keywords:
                self._callers(path, function, name, parameters, value, prefix, suffix, depth, found)
                return
            if local:
                return
        binding = _module_binding(file.source.tree, name)
        if binding is not None:
            self._sources(path, binding, value, prefix, suffix, passed_by, depth + 1, found)

    def _elements(self, path, iterable, value, prefix, suffix, passed_by, found) -> None:
        file = self._file(path)
        if isinstance(iterable, ast.Name) and file is not None:
            iterable = _module_binding(file.source.tree, iterable.id)
        if isinstance(iterable, (ast.Tuple, ast.List)):
            for element in iterable.elts:
                if isinstance(element, ast.Constant) and element.value == value:
                    found.append(LiteralSource(path, element, prefix, suffix, passed_by, iterable))

    def _callers(self, path, function, name, parameters, value, prefix, suffix, depth, found) -> None:
        """The calls the value flow saw enter `function`, and what each passes as `name`."""
        is_method = bool(parameters) and parameters[0] in ("self", "cls")
        position = parameters.index(name) - (1 if is_method else 0) if name in parameters else None
        seen: set[int] = set()
        for caller_path, node in self._entered_by.get(id(function), ()):
            if id(node) in seen:
                continue
            seen.add(id(node))
            argument = next((k.value for k in node.keywords if k.arg == name), None)
            if argument is None and position is not None and 0 <= position < len(node.args):
                if any(isinstance(a, ast.Starred) for a in node.args[:position + 1]):
                    continue
                argument = node.args[position]
            if argument is not None:
                self._sources(caller_path, argument, value, prefix, suffix, node, depth + 1, found)


def _module_binding(tree: ast.Module, name: str) -> ast.AST | None:
    """The value of the one module-level `name = <value>` (None when bound otherwise or more than once)."""
    values = [statement.value for statement in tree.body if isinstance(statement, ast.Assign)
              and any(isinstance(t, ast.Name) and t.id == name for t in statement.targets)]
    return values[0] if len(values) == 1 else None
