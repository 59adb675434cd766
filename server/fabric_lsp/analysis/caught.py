"""Whether the exception a call raises is caught where the call is made.

`try: model.mark_forward_method("x") except AttributeError: ...` (or `except Exception`, a bare
`except`, `contextlib.suppress(AttributeError)`) is code that expects the call to fail and goes on
without it: the program runs, so a rule that predicts that exception must not call it an error.
Only handlers of the call's own function count (a caller's `try` may not be the one that runs), and
a handler that raises again does not catch.
"""

from __future__ import annotations

import ast

# The builtin exception classes a handler may name to catch each error the rules predict.
_CATCHERS = {
    error: frozenset((error, "Exception", "BaseException"))
    for error in ("AttributeError", "ValueError", "TypeError", "RuntimeError")
}
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def catching_handler(tree: ast.AST | None, call: ast.AST, error: str) -> ast.AST | None:
    """The innermost `except` handler (or `with suppress(...)` statement) of `call`'s own function
    that catches `error` raised by the call, or None. Reads only the nodes whose lines hold the call."""
    if tree is None or not hasattr(call, "lineno"):
        return None
    names = _CATCHERS.get(error, frozenset((error,)))
    found: list[ast.AST | None] = []
    _visit(tree, call, names, None, found)
    return found[0] if found else None


def _visit(node: ast.AST, call: ast.AST, names: frozenset, catcher: ast.AST | None, found: list) -> bool:
    line = call.lineno
    for field, value in ast.iter_fields(node):
        children = value if isinstance(value, list) else [value]
        for child in children:
            if not isinstance(child, ast.AST):
                continue
            start = getattr(child, "lineno", None)
            if start is not None and not start <= line <= (child.end_lineno or start):
                continue
            if child is call:
                found.append(catcher)
                return True
            inner = catcher
            if isinstance(child, _SCOPES):
                inner = None  # a function's body runs where it is called, not here
            elif isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))) and field == "body":
                inner = _handler_catching(node, names) or catcher
            elif isinstance(node, (ast.With, ast.AsyncWith)) and field == "body" and _suppresses(node, names):
                inner = node
            if _visit(child, call, names, inner, found):
                return True
    return False


def _handler_catching(statement: ast.AST, names: frozenset) -> ast.AST | None:
    for handler in statement.handlers:
        if _names_one_of(handler.type, names):
            return None if _raises_again(handler) else handler  # the first that matches is the one that runs
    return None


def _names_one_of(expression: ast.AST | None, names: frozenset) -> bool:
    if expression is None:
        return True  # a bare `except:`
    if isinstance(expression, ast.Tuple):
        return any(_names_one_of(element, names) for element in expression.elts)
    if isinstance(expression, ast.Name):
        return expression.id in names
    if isinstance(expression, ast.Attribute):  # builtins.AttributeError
        return expression.attr in names and isinstance(expression.value, ast.Name) and expression.value.id == "builtins"
    return False


def _raises_again(handler: ast.ExceptHandler) -> bool:
    stack = list(handler.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Raise):
            return True
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))
    return False


def _suppresses(statement: ast.AST, names: frozenset) -> bool:
    """`with suppress(AttributeError):` / `with contextlib.suppress(...):`."""
    for item in statement.items:
        context = item.context_expr
        if not isinstance(context, ast.Call):
            continue
        func = context.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name == "suppress" and any(_names_one_of(argument, names) for argument in context.args):
            return True
    return False
