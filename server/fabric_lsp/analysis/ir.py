"""Python source -> the small intermediate form that the value-flow analysis (`flow.py`) interprets.

Every scope of a file (the module body, class bodies, functions, methods, lambdas) becomes a
`Scope`: its parameters and its statements in a dozen forms (tuples, tag first). Expressions keep
only what can move a value or call something: `a + model.generate(x)` keeps the call and forgets
the addition. The AST nodes that findings point at (calls, attributes, setup statements) are kept
by reference, so positions are read from the tree when a finding is made.

Built per top-level statement and kept on its node: after an edit, analysis.incremental hands back
the untouched statements' nodes, so only what the edit touched is translated again.

Expression forms                                  Statement forms
  ("const", value)                                  ("assign", (pattern, ...), expr, node)
  ("name", id)                                      ("aug", pattern, expr)
  ("attr", expr, name, node)                        ("expr", expr, node)
  ("sub", expr, index_expr, node)                   ("return", expr | None, node)
  ("call", func, args, kwargs, node)                ("if", test, body, orelse, test_node)
      args: expr | ("star", expr)                   ("for", pattern, iter, body, orelse)
      kwargs: (name | None, expr)                   ("while", test, body, orelse)
  ("tuple", elts, node) / ("list", elts, node)      ("with", ((expr, pattern | None), ...), body, node)
  ("dict", ((key | None, value), ...), node)        ("try", body, ((name | None, body), ...), orelse, final)
  ("ifexp", test, body, orelse, test_node)          ("def", name, Scope, decorators, node)
  ("boolop", "and" | "or", operands, node)          ("class", name, Scope, bases, keywords, decorators, node)
  ("compare", left, ((op, right), ...), node)       ("import", ((dotted, asname | None), ...), node)
  ("not", expr) / ("unary", op, expr)               ("from", module | None, level, ((name, asname), ...), node)
  ("comp", kind, elt, generators, node)             ("global", names) / ("nonlocal", names)
  ("lambda", Scope)                                 ("declare", name, annotation, annotation node)
  ("walrus", name, expr)
  ("fstr", parts)  an f-string: parts are exprs
  ("annotated", expr, annotation, annotation node, target text)  `x: T = expr`
  ("unknown", subexpressions)
  ("arith", operands): `a + b`
Patterns: ("name", id), ("attr", expr, name, node), ("sub", expr, index, node), ("tuple", patterns),
("star", pattern).
"""

from __future__ import annotations

import ast
from functools import cached_property
from dataclasses import dataclass, field

from fabric_lsp.analysis.source import SourceFile

UNKNOWN_EXPR = ("unknown", ())
MAX_DISPLAY = 64  # elements of a list/tuple/dict display kept one by one

MODULE, CLASS, FUNCTION, LAMBDA = "module", "class", "function", "lambda"


@dataclass(eq=False)
class Param:
    name: str
    kind: str  # "positional" (positional-or-keyword or positional-only), "keyword", "varargs", "kwargs"
    annotation: tuple | None = None  # expression, evaluated where the def runs
    default: tuple | None = None
    annotation_node: ast.AST | None = None  # where the annotation is written (for findings)


@dataclass(eq=False)
class Scope:
    """One scope. Identity matters: the solver keys its tables by Scope objects."""

    kind: str  # MODULE | CLASS | FUNCTION | LAMBDA
    name: str
    qualname: str
    path: str
    node: ast.AST  # ast.Module, ast.ClassDef, ast.FunctionDef / AsyncFunctionDef, ast.Lambda
    body: list = field(default_factory=list)
    params: list[Param] = field(default_factory=list)
    returns: tuple | None = None  # the return annotation's expression (as Param.annotation)
    returns_node: ast.AST | None = None
    decorator_names: tuple[str, ...] = ()  # last dotted part of each decorator: "staticmethod", "property", ...
    is_generator: bool = False
    assigned: set[str] = field(default_factory=set)  # names bound in this scope (its locals)
    declared_global: set[str] = field(default_factory=set)
    declared_nonlocal: set[str] = field(default_factory=set)
    read_free: set[str] = field(default_factory=set)  # names read here and bound in no local way
    cellvars: set[str] = field(default_factory=set)  # locals read by nested scopes
    names_used: set[str] = field(default_factory=set)  # module scopes: names and attribute names read
    attributes_assigned: set[str] = field(default_factory=set)  # module scopes: `x.<name> = ...`, setattr
    ordinal: int = 0  # classes: how many classes of the same qualified name come before it in the file
    class_scope: "Scope | None" = None  # for a function defined directly in a class body: that class
    parent: "Scope | None" = None  # enclosing function/module scope (class bodies are skipped, as in Python)
    children: list["Scope"] = field(default_factory=list)

    @cached_property
    def signature(self) -> tuple[list[Param], Param | None, Param | None, frozenset[str]]:
        """(positional parameters, *args, **kwargs, names a keyword argument can bind): read at each call."""
        params = self.params
        return ([p for p in params if p.kind == "positional"], next((p for p in params if p.kind == "varargs"), None),
                next((p for p in params if p.kind == "kwargs"), None),
                frozenset(p.name for p in params if p.kind in ("positional", "keyword")))

    @property
    def method_kind(self) -> str:
        """For functions in a class body: 'staticmethod', 'classmethod', 'property' or 'method'."""
        for name in self.decorator_names:
            if name in ("staticmethod", "classmethod"):
                return name
            if name in ("property", "cached_property", "setter", "getter", "deleter"):
                return "property"
        return "method"

    @property
    def line(self) -> int:
        return getattr(self.node, "lineno", 1)

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"<Scope {self.kind} {self.qualname} {self.path}:{self.line}>"


def _last_name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


_EFFECT_NODES = (ast.Call, ast.NamedExpr, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
                 ast.Yield, ast.YieldFrom, ast.Await)


class _Builder:
    """Translates the statements of one file. Not thread-safe; one per translation."""

    def __init__(self, source: SourceFile) -> None:
        self.source = source
        self.path = source.path
        self.names: set[str] = set()  # names and attribute names read (for "is this function called?")
        self.attributes: set[str] = set()  # attribute names assigned (`x.name = ...`, setattr)

    # -- scopes ------------------------------------------------------------------------------
    def module_scope(self, tree: ast.Module) -> Scope:
        scope = Scope(MODULE, "<module>", "", self.path, tree)
        for statement in tree.body:
            scope.body.extend(self.top_level(statement, scope))
        return scope

    def top_level(self, statement: ast.stmt, module: Scope) -> list:
        """Statements of one top-level statement, kept on its node (see the module doc)."""
        cached = statement.__dict__.get("_fabric_lsp_ir")
        if cached is not None and cached[0] == self.path:
            translated, scope_facts, children = cached[1], cached[2], cached[3]
        else:
            holder = Scope(MODULE, "<module>", "", self.path, statement)
            saved = self.names, self.attributes
            self.names, self.attributes = set(), set()
            translated = self.statements([statement], holder)
            scope_facts = (set(holder.assigned), set(holder.declared_global), set(holder.read_free),
                           frozenset(self.names), frozenset(self.attributes))
            self.names, self.attributes = saved
            children = list(holder.children)
            statement.__dict__["_fabric_lsp_ir"] = (self.path, translated, scope_facts, children)
        assigned, declared, read_free, names_used, attributes = scope_facts
        module.names_used |= names_used
        module.attributes_assigned |= attributes
        module.assigned |= assigned
        module.declared_global |= declared
        module.read_free |= read_free
        for child in children:
            child.parent = module if child.parent is None or child.parent.kind == MODULE else child.parent
            module.children.append(child)
        return translated

    def function_scope(self, node: ast.AST, parent: Scope, class_scope: Scope | None, defining: Scope) -> Scope:
        """`defining`: the scope whose code runs the `def` (where defaults and annotations are evaluated)."""
        if isinstance(node, ast.Lambda):
            name = "<lambda>"
            kind = LAMBDA
        else:
            name = node.name
            kind = FUNCTION
        prefix = (class_scope.qualname + ".") if class_scope is not None else (
            (parent.qualname + ".<locals>.") if parent.kind != MODULE else "")
        scope = Scope(kind, name, prefix + name, self.path, node, class_scope=class_scope, parent=parent)
        if not isinstance(node, ast.Lambda):
            scope.decorator_names = tuple(_last_name(d) for d in node.decorator_list)
        arguments = node.args
        positional = [*arguments.posonlyargs, *arguments.args]
        defaults = [None] * (len(positional) - len(arguments.defaults)) + list(arguments.defaults)
        for argument, default in zip(positional, defaults):
            scope.params.append(Param(argument.arg, "positional", self.annotation(argument.annotation),
                                      self.opt_expr(default, defining), argument.annotation))
        if arguments.vararg:
            scope.params.append(Param(arguments.vararg.arg, "varargs", self.annotation(arguments.vararg.annotation)))
        for argument, default in zip(arguments.kwonlyargs, arguments.kw_defaults):
            scope.params.append(Param(argument.arg, "keyword", self.annotation(argument.annotation),
                                      self.opt_expr(default, defining), argument.annotation))
        if arguments.kwarg:
            scope.params.append(Param(arguments.kwarg.arg, "kwargs", self.annotation(arguments.kwarg.annotation)))
        if not isinstance(node, ast.Lambda) and node.returns is not None:
            scope.returns = self.annotation(node.returns)
            scope.returns_node = node.returns if scope.returns is not None else None
        scope.assigned.update(p.name for p in scope.params)
        if isinstance(node, ast.Lambda):
            scope.body = [("return", self.expr(node.body, scope), node)]
        else:
            scope.body = self.statements(node.body, scope)
        return scope

    def annotation(self, annotation: ast.AST | None) -> tuple | None:
        """The expression naming the class an annotation declares (None when it names none we read)."""
        if annotation is None:
            return None
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            try:  # "Fabric" / "L.Fabric" written as a string
                parsed = ast.parse(annotation.value, mode="eval").body
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return None
            return self.annotation_expr(parsed)
        return self.annotation_expr(annotation)

    def annotation_expr(self, node: ast.AST) -> tuple | None:
        # `Fabric`, `L.Fabric`, `Optional[Fabric]`, `Fabric | None`: the names that say the class.
        if isinstance(node, ast.Name):
            return ("name", node.id)
        if isinstance(node, ast.Attribute):
            inner = self.annotation_expr(node.value)
            return ("attr", inner, node.attr, node) if inner is not None else None
        if isinstance(node, ast.Subscript) and _last_name(node.value) == "Optional":
            return self.annotation_expr(node.slice)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            for side in (node.left, node.right):
                if not (isinstance(side, ast.Constant) and side.value is None):
                    return self.annotation_expr(side)
        return None

    # -- statements ----------------------------------------------------------------------------
    def statements(self, statements: list[ast.stmt], scope: Scope) -> list:
        out: list = []
        for statement in statements:
            translated = self.statement(statement, scope)
            if translated is not None:
                out.append(translated)
        return out

    def statement(self, node: ast.stmt, scope: Scope):
        kind = type(node)
        if kind is ast.Assign:
            targets = tuple(self.pattern(target, scope) for target in node.targets)
            return ("assign", targets, self.expr(node.value, scope), node)
        if kind is ast.AnnAssign:
            declared = self.annotation(node.annotation)
            if node.value is None:
                if scope.kind == CLASS and declared is not None and isinstance(node.target, ast.Name):
                    # `actor: PPOActor` in a class body: the declared type of the instances' attribute.
                    return ("declare", node.target.id, declared, node.annotation)
                return None
            value = self.expr(node.value, scope)
            if declared is not None:
                # `teacher: PPOModel = instantiate(cfg.model)`: where the value is unknown, the class is
                # the annotation's (as a type checker reads it).
                value = ("annotated", value, declared, node.annotation, self.source.segment(node.target))
            return ("assign", (self.pattern(node.target, scope),), value, node)
        if kind is ast.AugAssign:
            return ("aug", self.pattern(node.target, scope), self.expr(node.value, scope))
        if kind is ast.Expr:
            value = self.expr(node.value, scope)
            return ("expr", value, node) if value is not UNKNOWN_EXPR else None
        if kind is ast.Return:
            return ("return", self.opt_expr(node.value, scope), node)
        if kind is ast.If:
            return ("if", self.expr(node.test, scope), self.statements(node.body, scope),
                    self.statements(node.orelse, scope), node.test, node)
        if kind in (ast.For, ast.AsyncFor):
            return ("for", self.pattern(node.target, scope), self.expr(node.iter, scope),
                    self.statements(node.body, scope), self.statements(node.orelse, scope))
        if kind is ast.While:
            return ("while", self.expr(node.test, scope), self.statements(node.body, scope),
                    self.statements(node.orelse, scope))
        if kind in (ast.With, ast.AsyncWith):
            items = tuple(
                (self.expr(item.context_expr, scope),
                 self.pattern(item.optional_vars, scope) if item.optional_vars is not None else None)
                for item in node.items
            )
            return ("with", items, self.statements(node.body, scope), node)
        if kind is ast.Try or kind.__name__ == "TryStar":
            handlers = []
            for handler in node.handlers:
                if handler.name:
                    scope.assigned.add(handler.name)
                handlers.append((handler.name, self.statements(handler.body, scope)))
            return ("try", self.statements(node.body, scope), tuple(handlers),
                    self.statements(node.orelse, scope), self.statements(node.finalbody, scope))
        if kind in (ast.FunctionDef, ast.AsyncFunctionDef):
            scope.assigned.add(node.name)
            decorators = tuple(self.expr(d, scope) for d in node.decorator_list)
            class_scope = scope if scope.kind == CLASS else None
            parent = scope.parent if scope.kind == CLASS else scope
            child = self.function_scope(node, parent, class_scope, scope)
            scope.children.append(child)
            return ("def", node.name, child, decorators, node)
        if kind is ast.ClassDef:
            scope.assigned.add(node.name)
            bases = tuple(self.expr(base, scope) for base in node.bases)
            keywords = tuple((k.arg, self.expr(k.value, scope)) for k in node.keywords)
            decorators = tuple(self.expr(d, scope) for d in node.decorator_list)
            prefix = scope.qualname + "." if scope.kind == CLASS else (
                scope.qualname + ".<locals>." if scope.kind != MODULE else "")
            parent = scope.parent if scope.kind == CLASS else scope
            child = Scope(CLASS, node.name, prefix + node.name, self.path, node, parent=parent)
            child.decorator_names = tuple(_last_name(d) for d in node.decorator_list)
            child.body = self.statements(node.body, child)
            scope.children.append(child)
            return ("class", node.name, child, bases, keywords, decorators, node)
        if kind is ast.Import:
            names = []
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                scope.assigned.add(bound)
                names.append((alias.name, alias.asname))
            return ("import", tuple(names), node)
        if kind is ast.ImportFrom:
            names = []
            for alias in node.names:
                if alias.name != "*":
                    scope.assigned.add(alias.asname or alias.name)
                names.append((alias.name, alias.asname))
            return ("from", node.module, node.level, tuple(names), node)
        if kind is ast.Global:
            scope.declared_global.update(node.names)
            return ("global", tuple(node.names))
        if kind is ast.Nonlocal:
            scope.declared_nonlocal.update(node.names)
            return ("nonlocal", tuple(node.names))
        if kind.__name__ == "Match":
            cases = []
            for case in node.cases:
                for inner in ast.walk(case.pattern):
                    name = getattr(inner, "name", None)
                    if isinstance(name, str):
                        scope.assigned.add(name)
                cases.append(self.statements(case.body, scope))
            return ("match", self.expr(node.subject, scope), tuple(cases))
        if kind in (ast.Raise, ast.Assert, ast.Delete):
            effects = self.effects(node, scope)
            return ("expr", ("unknown", effects), node) if effects else None
        return None  # pass, break, continue, type aliases (3.12)

    # -- patterns ------------------------------------------------------------------------------
    def pattern(self, node: ast.AST, scope: Scope) -> tuple:
        kind = type(node)
        if kind is ast.Name:
            scope.assigned.add(node.id)
            return ("name", node.id)
        if kind is ast.Attribute:
            self.attributes.add(node.attr)
            return ("attr", self.expr(node.value, scope), node.attr, node)
        if kind is ast.Subscript:
            return ("sub", self.expr(node.value, scope), self.expr(node.slice, scope), node)
        if kind in (ast.Tuple, ast.List):
            return ("tuple", tuple(self.pattern(element, scope) for element in node.elts))
        if kind is ast.Starred:
            return ("star", self.pattern(node.value, scope))
        return ("tuple", ())

    # -- expressions ---------------------------------------------------------------------------
    def opt_expr(self, node: ast.AST | None, scope: Scope) -> tuple | None:
        if node is None:
            return None
        return self.expr(node, scope)

    def expr(self, node: ast.AST, scope: Scope) -> tuple:
        kind = type(node)
        if kind is ast.Name:
            self.names.add(node.id)
            if node.id not in scope.assigned:
                scope.read_free.add(node.id)
            return ("name", node.id)
        if kind is ast.Attribute:
            self.names.add(node.attr)
            return ("attr", self.expr(node.value, scope), node.attr, node)
        if kind is ast.Call:
            if type(node.func) is ast.Name and node.func.id == "setattr":
                name = node.args[1] if len(node.args) >= 2 else None
                literal = isinstance(name, ast.Constant) and isinstance(name.value, str)
                self.attributes.add(name.value if literal else "*")
            args = []
            for argument in node.args:
                if type(argument) is ast.Starred:
                    args.append(("star", self.expr(argument.value, scope)))
                else:
                    args.append(self.expr(argument, scope))
            kwargs = tuple((k.arg, self.expr(k.value, scope)) for k in node.keywords)
            return ("call", self.expr(node.func, scope), tuple(args), kwargs, node)
        if kind is ast.Constant:
            value = node.value
            if isinstance(value, (str, int, float, bool)) or value is None:
                return ("const", value)
            return UNKNOWN_EXPR
        if kind is ast.Subscript:
            return ("sub", self.expr(node.value, scope), self.expr(node.slice, scope), node)
        if kind is ast.Tuple:
            return ("tuple", self.elements(node.elts, scope), node)
        if kind is ast.List:
            return ("list", self.elements(node.elts, scope), node)
        if kind is ast.Dict:
            if len(node.keys) > MAX_DISPLAY:  # a table of data: its keys are not what a registry looks up
                return ("dict", ((None, ("unknown", self.effects(node, scope))),), node)
            items = tuple(
                (self.expr(k, scope) if k is not None else None, self.expr(v, scope))
                for k, v in zip(node.keys, node.values)
            )
            return ("dict", items, node)
        if kind is ast.IfExp:
            return ("ifexp", self.expr(node.test, scope), self.expr(node.body, scope), self.expr(node.orelse, scope),
                    node.test)
        if kind is ast.BoolOp:
            return ("boolop", "and" if isinstance(node.op, ast.And) else "or",
                    tuple(self.expr(v, scope) for v in node.values), node)
        if kind is ast.Compare:
            return ("compare", self.expr(node.left, scope),
                    tuple((type(op).__name__, self.expr(right, scope)) for op, right in zip(node.ops, node.comparators)),
                    node)
        if kind is ast.UnaryOp:
            if isinstance(node.op, ast.Not):
                return ("not", self.expr(node.operand, scope))
            return ("unary", type(node.op).__name__, self.expr(node.operand, scope))
        if kind is ast.NamedExpr:
            target = node.target.id
            scope.assigned.add(target)
            return ("walrus", target, self.expr(node.value, scope))
        if kind is ast.Lambda:
            child = self.function_scope(node, scope if scope.kind != CLASS else scope.parent, None, scope)
            scope.children.append(child)
            return ("lambda", child)
        if kind in (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp):
            generators = []
            for generator in node.generators:
                iterable = self.expr(generator.iter, scope)
                target = self.pattern(generator.target, scope)
                conditions = tuple(self.expr(c, scope) for c in generator.ifs)
                generators.append((target, iterable, conditions))
            if kind is ast.DictComp:
                element = ("tuple", (self.expr(node.key, scope), self.expr(node.value, scope)), node)
                comp_kind = "dict"
            else:
                element = self.expr(node.elt, scope)
                comp_kind = {ast.ListComp: "list", ast.SetComp: "set", ast.GeneratorExp: "gen"}[kind]
            return ("comp", comp_kind, element, tuple(generators), node)
        if kind is ast.JoinedStr:
            return self.joined_str(node, scope)
        if kind is ast.Await:
            return self.expr(node.value, scope)
        if kind in (ast.Yield, ast.YieldFrom):
            self._mark_generator(scope)
            return ("unknown", (self.expr(node.value, scope),) if node.value is not None else ())
        if kind is ast.Starred:
            return self.expr(node.value, scope)
        if kind is ast.BinOp:
            return ("arith", (self.expr(node.left, scope), self.expr(node.right, scope)))
        effects = self.effects(node, scope)
        return ("unknown", effects) if effects else UNKNOWN_EXPR

    def joined_str(self, node: ast.JoinedStr, scope: Scope) -> tuple:
        """`f"{stage}_fast"`: its literal parts and the expressions formatted as `str()` does; a part
        with a conversion other than `!s` or a format spec makes the string unknown (its effects kept)."""
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                parts.append(("const", value.value))
            elif isinstance(value, ast.FormattedValue) and value.conversion in (-1, ord("s")) and value.format_spec is None:
                parts.append(self.expr(value.value, scope))
            else:
                effects = self.effects(node, scope)
                return ("unknown", effects) if effects else UNKNOWN_EXPR
        return ("fstr", tuple(parts))

    def elements(self, nodes: list[ast.AST], scope: Scope) -> tuple:
        """The elements of a display; past MAX_DISPLAY (data, not models) only what can have an effect."""
        if len(nodes) <= MAX_DISPLAY:
            return tuple(self.element(e, scope) for e in nodes)
        kept = [self.element(e, scope) for e in nodes[:MAX_DISPLAY]]
        rest = [e for e in nodes[MAX_DISPLAY:] if not isinstance(e, (ast.Constant, ast.Name))]
        effects = tuple(self.expr(e, scope) for e in rest if any(isinstance(n, _EFFECT_NODES) for n in ast.walk(e)))
        return tuple(kept) + (("star", ("unknown", effects)),)

    def element(self, node: ast.AST, scope: Scope) -> tuple:
        if type(node) is ast.Starred:
            return ("star", self.expr(node.value, scope))
        return self.expr(node, scope)

    def effects(self, node: ast.AST, scope: Scope) -> tuple:
        """The sub-expressions of an expression we do not model that can still call or bind something."""
        found = []
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr_context):
                continue
            if isinstance(child, _EFFECT_NODES):
                found.append(self.expr(child, scope))
            elif isinstance(child, ast.AST):
                found.extend(self.effects(child, scope))
        return tuple(found)

    def _mark_generator(self, scope: Scope) -> None:
        if scope.kind in (FUNCTION, LAMBDA):
            scope.is_generator = True


def translate(source: SourceFile) -> Scope | None:
    """The module scope of a parsed file (None when it does not parse)."""
    if source.tree is None:
        return None
    cached = source.__dict__.get("_fabric_lsp_module_scope")
    if cached is not None:
        return cached
    builder = _Builder(source)
    scope = builder.module_scope(source.tree)
    _finish(scope)
    source.__dict__["_fabric_lsp_module_scope"] = scope
    return scope


def _finish(module: Scope) -> None:
    """Parents, locals and cell variables, once the whole file is translated (scopes kept from an
    earlier translation of an untouched statement get their parents again here)."""
    every = []
    pending = [module]
    while pending:
        scope = pending.pop()
        every.append(scope)
        for child in scope.children:
            if child.kind == CLASS or scope.kind != CLASS:
                child.parent = scope if scope.kind != CLASS else scope.parent
            else:
                child.parent = scope.parent  # a method: class bodies are not enclosing scopes
            pending.append(child)
    seen: dict[str, int] = {}
    for scope in every_scope(module):  # in source order: a class's identity survives lines moving
        if scope.kind == CLASS:
            scope.ordinal = seen.get(scope.qualname, 0)
            seen[scope.qualname] = scope.ordinal + 1
    for scope in every:
        if scope.kind in (FUNCTION, LAMBDA):
            # A name bound anywhere in a function is local to all of it (reads before the binding too).
            scope.read_free -= scope.assigned - scope.declared_global - scope.declared_nonlocal
    # A name read freely in a nested function and bound in an enclosing function is a cell there.
    for scope in every:
        if scope.kind not in (FUNCTION, LAMBDA):
            continue
        for name in scope.read_free | scope.declared_nonlocal:
            enclosing = scope.parent
            while enclosing is not None and enclosing.kind in (FUNCTION, LAMBDA):
                if name in enclosing.assigned and name not in enclosing.declared_global:
                    enclosing.cellvars.add(name)
                    break
                enclosing = enclosing.parent


def every_scope(module: Scope) -> list[Scope]:
    """The scopes of a file in source order (module first)."""
    found = []
    pending = [module]
    while pending:
        scope = pending.pop()
        found.append(scope)
        pending.extend(reversed(scope.children))
    return found
