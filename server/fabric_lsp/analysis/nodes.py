"""Fast traversals of ast trees, in the same order as the standard library's.

`ast.walk` costs about half an `ast.parse` on a long file (generator frames, `iter_fields`,
`iter_child_nodes`); the analysis runs on every keystroke, so the hot paths use these instead.
"""

from __future__ import annotations

import ast

_AST = ast.AST
# Fields that hold statements (in `_fields` order for every node type that has several of them).
_STATEMENT_FIELDS = ("body", "handlers", "orelse", "finalbody", "cases")


def walk(node: ast.AST) -> list[ast.AST]:
    """The nodes `ast.walk(node)` yields, in the same (breadth-first) order, as a list."""
    found = [node]
    append = found.append
    index = 0
    while index < len(found):
        current = found[index]
        index += 1
        for name in current._fields:
            value = getattr(current, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, _AST):
                        append(item)
            elif isinstance(value, _AST):
                append(value)
    return found


def statement_children(node: ast.AST) -> list[ast.AST]:
    """The children of `node` that can contain statements, in `ast.iter_child_nodes` order:
    statements, `except` handlers and `match` cases. Expressions never contain statements, so a
    traversal that only needs statements (imports, defs, classes) can skip them."""
    children: list[ast.AST] = []
    for name in _STATEMENT_FIELDS:
        value = getattr(node, name, None)
        if type(value) is list:
            children.extend(value)
    return children


def statements_breadth_first(node: ast.AST) -> list[ast.AST]:
    """The statements (and handlers/cases) under `node`, in the order `ast.walk` would meet them."""
    found = [node]
    index = 0
    while index < len(found):
        found.extend(statement_children(found[index]))
        index += 1
    return found
