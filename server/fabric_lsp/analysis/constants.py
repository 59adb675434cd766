"""Module constants: names a module binds once, at its top level, to a literal (`devices = 1`,
`USE_FSDP = devices > 1`), and never binds again. The value-flow analysis (flow.py) folds branches
and comparisons on them before it runs (`Program.module_constant` adds what only the whole program
can tell: no other module assigns `config.devices = ...`).

Read from the syntax tree alone, so a module's constants are the same on every run.
"""

from __future__ import annotations

import ast
import operator

_NOT_CONSTANT = object()
_MAX_STATEMENTS = 20_000  # a generated module of data: its names are not what decides a branch


def module_constants(tree: ast.Module) -> tuple[dict[str, object], dict[str, tuple[str | None, int, str]]]:
    """(name -> literal value of the module's constants, name -> (module, level, imported name) for
    names bound only by one top-level `from module import name`)."""
    if len(tree.body) > _MAX_STATEMENTS:
        return {}, {}
    counts: dict[str, int] = {}
    for name in _bindings(tree):
        counts[name] = counts.get(name, 0) + 1
    declared_global: set[str] = set()
    rebinding_everything = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            declared_global.update(node.names)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("globals", "vars", "exec"):
            rebinding_everything = True  # globals()["x"] = ..., exec(...): any name may be rebound
    if rebinding_everything:
        return {}, {}
    constants: dict[str, object] = {}
    imported: dict[str, tuple[str | None, int, str]] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, value = statement.target, statement.value
        elif isinstance(statement, ast.ImportFrom):
            for alias in statement.names:
                bound = alias.asname or alias.name
                if alias.name != "*" and counts.get(bound) == 1 and bound not in declared_global:
                    imported[bound] = (statement.module, statement.level, alias.name)
            continue
        else:
            continue
        if not isinstance(target, ast.Name) or counts.get(target.id) != 1 or target.id in declared_global:
            continue
        found = literal_value(value, constants)
        if found is not _NOT_CONSTANT:
            constants[target.id] = found
    return constants, imported


def _bindings(tree: ast.Module):
    """Every name the module's own code binds (its top level and the blocks in it; not the bodies of
    functions, classes and lambdas, whose names are their own unless declared global)."""
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name
            pending.extend(node.decorator_list)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            yield node.id
        elif isinstance(node, ast.alias):
            if node.name != "*":
                yield node.asname or node.name.split(".")[0]
        elif isinstance(node, ast.ExceptHandler) and node.name:
            yield node.name
        elif type(node).__name__ in ("MatchAs", "MatchStar") and getattr(node, "name", None):
            yield node.name
        elif type(node).__name__ == "MatchMapping" and getattr(node, "rest", None):
            yield node.rest
        pending.extend(ast.iter_child_nodes(node))


_COMPARISONS = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}


def literal_value(node: ast.AST, constants: dict[str, object], depth: int = 0):
    """The value of a literal expression over earlier constants (numbers, strings, booleans, None;
    comparisons, `not`, `and`/`or`, unary minus, conditional expressions), or _NOT_CONSTANT."""
    if depth > 20:
        return _NOT_CONSTANT
    if isinstance(node, ast.Constant):
        value = node.value
        return value if value is None or isinstance(value, (bool, int, float, str)) else _NOT_CONSTANT
    if isinstance(node, ast.Name):
        return constants.get(node.id, _NOT_CONSTANT)
    if isinstance(node, ast.UnaryOp):
        inner = literal_value(node.operand, constants, depth + 1)
        if inner is _NOT_CONSTANT:
            return inner
        if isinstance(node.op, ast.Not):
            return not inner
        if isinstance(inner, (int, float)) and not isinstance(inner, bool):
            if isinstance(node.op, ast.USub):
                return -inner
            if isinstance(node.op, ast.UAdd):
                return inner
        return _NOT_CONSTANT
    if isinstance(node, ast.BoolOp):
        passing = isinstance(node.op, ast.And)
        value = _NOT_CONSTANT
        for operand in node.values:
            value = literal_value(operand, constants, depth + 1)
            if value is _NOT_CONSTANT or bool(value) != passing:
                return value
        return value
    if isinstance(node, ast.IfExp):
        test = literal_value(node.test, constants, depth + 1)
        if test is _NOT_CONSTANT:
            return test
        return literal_value(node.body if test else node.orelse, constants, depth + 1)
    if isinstance(node, ast.Compare):
        values = [literal_value(node.left, constants, depth + 1)]
        values += [literal_value(right, constants, depth + 1) for right in node.comparators]
        if any(value is _NOT_CONSTANT for value in values):
            return _NOT_CONSTANT
        for op, left, right in zip(node.ops, values, values[1:]):
            compare = _COMPARISONS.get(type(op))
            if compare is None or type(left) is not type(right) and not (
                    isinstance(left, (int, float)) and isinstance(right, (int, float))):
                if isinstance(op, (ast.Is, ast.IsNot)) and (left is None or right is None):
                    same = left is right
                    if same != isinstance(op, ast.Is):
                        return False
                    continue
                if isinstance(op, (ast.Eq, ast.NotEq)):  # 1 == "1": defined, False
                    if (left == right) != isinstance(op, ast.Eq):
                        return False
                    continue
                return _NOT_CONSTANT
            try:
                if not compare(left, right):
                    return False
            except TypeError:
                return _NOT_CONSTANT
        return True
    return _NOT_CONSTANT
