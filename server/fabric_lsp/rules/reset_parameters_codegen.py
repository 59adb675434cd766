"""Writes a `reset_parameters(self)` that re-creates, in place, the tensors a class owns directly.

Materialization allocates empty storage (`to_empty`) and then calls `reset_parameters()` on each
module that owns meta tensors, so the method must rebuild exactly what `__init__` put there.
The result is "exact" when every tensor is rebuilt deterministically with the constructor's
values; random initialisers get the same distribution but not the same numbers (the order in which
materialization resets modules differs from construction order), so they are not exact.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass

from fabric_lsp.analysis.classes import ClassInfo
from fabric_lsp.analysis.imports import ImportTable
from fabric_lsp.analysis.modules import OwnedTensor

_RANDOM_FACTORIES = {"randn", "rand", "randint", "randn_like", "rand_like", "randint_like", "normal", "bernoulli",
                     "randperm", "multinomial", "empty", "empty_like", "poisson"}
_DETERMINISTIC_INITS = {"constant_", "ones_", "zeros_", "eye_", "dirac_"}
_IN_PLACE_FACTORIES = {"zeros": "{t}.zero_()", "ones": "{t}.fill_(1.0)", "randn": "{t}.normal_()", "rand": "{t}.uniform_()"}
_SCALAR_OPS = {ast.Mult: "mul_", ast.Add: "add_", ast.Sub: "sub_", ast.Div: "div_"}


STORED_PREFIX = "_init_"


@dataclass(frozen=True)
class GeneratedMethod:
    text: str  # the method, indented for the class body, starting with a blank line
    exact: bool  # reproduces the constructor's tensors exactly
    notes: tuple[str, ...]  # what could not be reproduced
    # Constructor arguments reset_parameters needs but __init__ does not keep: (line before which
    # `self._init_<name> = <name>` is inserted, name). The value at that point of __init__ is the one used.
    stores: tuple[tuple[int, str], ...] = ()


class _Rebuilder:
    """Turns one `__init__` expression into an expression valid inside reset_parameters."""

    def __init__(self, cls: ClassInfo, init: ast.FunctionDef | None, imports: ImportTable, self_name: str) -> None:
        self.cls = cls
        self.imports = imports
        self.self_name = self_name
        self.parameters = set()
        self.stored: dict[str, str] = {}  # constructor parameter -> attribute that keeps it
        self.locals: dict[str, ast.expr] = {}
        self.to_store: dict[str, int] = {}  # parameter -> line of its first use
        self.current_line = 0  # line of the statement being rebuilt
        if init is not None:
            arguments = init.args
            self.parameters = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}
            for node in ast.walk(init):
                if isinstance(node, ast.Assign) and len(node.targets) == 1:
                    target, value = node.targets[0], node.value
                    if isinstance(target, ast.Name):
                        self.locals[target.id] = value
                    elif (
                        isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == self_name
                        and isinstance(value, ast.Name)
                        and value.id in self.parameters
                    ):
                        self.stored.setdefault(value.id, target.attr)
        module_tree = cls.source.tree
        self.globals = set(imports.names)
        if module_tree is not None:
            for statement in module_tree.body:
                if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    self.globals.add(statement.name)
                elif isinstance(statement, ast.Assign):
                    for target in statement.targets:
                        for node in ast.walk(target):
                            if isinstance(node, ast.Name):
                                self.globals.add(node.id)

    def rebuild(self, expr: ast.expr, depth: int = 0) -> ast.expr | None:
        """A copy of expr whose free names are reachable from reset_parameters, or None."""
        if depth > 4:
            return None
        expr = _copy(expr)
        replacements: list[tuple[ast.Name, ast.expr]] = []
        for node in ast.walk(expr):
            if not isinstance(node, ast.Name) or isinstance(node.ctx, ast.Store):
                continue
            name = node.id
            if name == self.self_name:
                continue
            if name in self.parameters and name in self.stored:
                replacements.append((node, _self_attr(self.stored[name])))
            elif name in self.parameters and name != self.self_name:
                self.to_store.setdefault(name, self.current_line)
                replacements.append((node, _self_attr(STORED_PREFIX + name)))
            elif name in self.locals and name not in self.parameters:
                inner = self.rebuild(self.locals[name], depth + 1)
                if inner is None:
                    return None
                replacements.append((node, inner))
            elif name in self.globals or hasattr(builtins, name):
                continue
            else:
                return None
        return _replace(expr, dict((id(old), new) for old, new in replacements))

    def is_random(self, expr: ast.AST) -> bool:
        for node in ast.walk(expr):
            if isinstance(node, ast.Call):
                qualified = self.imports.qualify(node.func) or ""
                last = qualified.rsplit(".", 1)[-1]
                if qualified.startswith("torch.") and last in _RANDOM_FACTORIES:
                    return True
                if qualified.startswith("torch.nn.init.") and last not in _DETERMINISTIC_INITS:
                    return True
                if isinstance(node.func, ast.Attribute) and node.func.attr in ("normal_", "uniform_", "random_", "bernoulli_", "exponential_"):
                    return True
        return False


def generate_reset_parameters(cls: ClassInfo, owned: tuple[OwnedTensor, ...], torch_name: str, indent_unit: str = "    ") -> GeneratedMethod:
    imports = cls.imports
    init = cls.methods().get("__init__")
    self_name = init.args.args[0].arg if init is not None and init.args.args else "self"
    rebuilder = _Rebuilder(cls, init, imports, self_name)
    body: list[str] = []
    notes: list[str] = []
    exact = True
    for tensor in owned:
        target = f"self.{tensor.attribute}"
        lines, tensor_exact, note = _reinit(rebuilder, tensor, target, torch_name)
        body.extend(lines)
        exact = exact and tensor_exact
        if note:
            notes.append(note)
    if not body:
        body = ["pass  # TODO: re-initialise the tensors this module owns"]
        exact = False
    stores = tuple(sorted((line, name) for name, line in rebuilder.to_store.items()))
    class_indent = cls.source.indentation(cls.node.body[0].lineno) if cls.node.body else indent_unit
    method_indent = class_indent + indent_unit
    block_indent = method_indent + indent_unit
    comment = "# Re-create what __init__ puts in the tensors this module owns (child modules reset themselves)."
    lines = [
        "",
        f"{class_indent}def reset_parameters(self) -> None:",
        f"{method_indent}{comment}",
        f"{method_indent}with {torch_name}.no_grad():",
        *[f"{block_indent}{line}" for line in body],
    ]
    return GeneratedMethod("\n".join(lines), exact, tuple(notes), stores)


def _reinit(rebuilder: _Rebuilder, tensor: OwnedTensor, target: str, torch_name: str) -> tuple[list[str], bool, str | None]:
    source = rebuilder.cls.source
    lines: list[str] = []
    exact = True
    note = None
    value = tensor.value
    factory = _factory_name(rebuilder.imports, value) if value is not None else None
    if tensor.init_calls and factory in ("empty", None):
        pass  # the nn.init calls below fill it
    elif value is None:
        lines.append(f"# TODO: {target} is created without a visible value; re-initialise it here")
        exact = False
    else:
        in_place = _in_place(rebuilder, value, target, torch_name)
        rebuilder.current_line = tensor.statement.lineno
        rebuilt = rebuilder.rebuild(value) if in_place is None else None
        if in_place is not None:
            lines.extend(in_place[0])
            exact = in_place[1]
        elif rebuilt is not None:
            lines.append(f"{target}.copy_({ast.unparse(rebuilt)})")
            exact = not rebuilder.is_random(rebuilt)
        else:
            text = source.segment(value)
            if tensor.kind == "parameter":
                lines.append(f"{torch_name}.nn.init.normal_({target}, std=0.02)  # TODO: __init__ uses {text}")
            else:
                lines.append(f"{target}.zero_()  # TODO: __init__ uses {text}")
            exact = False
            note = f"`{text}` depends on constructor arguments that are not stored on the module"
    for call in tensor.init_calls:
        rebuilder.current_line = call.lineno
        rebuilt = rebuilder.rebuild(call)
        if rebuilt is None:
            lines.append(f"# TODO: __init__ also calls {source.segment(call)}")
            exact = False
            continue
        lines.append(ast.unparse(rebuilt))
        if rebuilder.is_random(rebuilt):
            exact = False
    return lines, exact, note


def _factory_name(imports: ImportTable, value: ast.expr) -> str | None:
    if isinstance(value, ast.Call):
        qualified = imports.qualify(value.func) or ""
        if qualified.startswith("torch."):
            return qualified.rsplit(".", 1)[-1]
    return None


def _in_place(rebuilder: _Rebuilder, value: ast.expr, target: str, torch_name: str) -> tuple[list[str], bool] | None:
    """Shape-preserving in-place forms for factories whose shape comes from constructor arguments:
    `torch.ones(d) * 0.5` -> `fill_(1.0)` then `mul_(0.5)`."""
    imports = rebuilder.imports
    scale: list[str] = []
    expr = value
    while isinstance(expr, ast.BinOp) and type(expr.op) in _SCALAR_OPS:
        if _is_number(expr.right):
            scale.insert(0, f"{target}.{_SCALAR_OPS[type(expr.op)]}({ast.unparse(expr.right)})")
            expr = expr.left
        elif _is_number(expr.left) and isinstance(expr.op, (ast.Mult, ast.Add)):
            scale.insert(0, f"{target}.{_SCALAR_OPS[type(expr.op)]}({ast.unparse(expr.left)})")
            expr = expr.right
        else:
            return None
    factory = _factory_name(imports, expr)
    if factory is None:
        return None
    if factory in _IN_PLACE_FACTORIES:
        exact = factory in ("zeros", "ones")
        return [_IN_PLACE_FACTORIES[factory].format(t=target), *scale], exact
    if factory == "full" and isinstance(expr, ast.Call) and len(expr.args) >= 2 and _is_number(expr.args[1]):
        return [f"{target}.fill_({ast.unparse(expr.args[1])})", *scale], True
    if factory == "arange" and isinstance(expr, ast.Call) and _arange_from_zero(expr):
        return [
            f"{target}.copy_({torch_name}.arange({target}.numel(), dtype={target}.dtype).view_as({target}))",
            *scale,
        ], True
    if factory == "eye" and isinstance(expr, ast.Call):
        return [f"{target}.copy_({torch_name}.eye({target}.shape[0], {target}.shape[-1]))", *scale], True
    if factory in ("tril", "triu") and isinstance(expr, ast.Call) and expr.args:
        inner = _factory_name(imports, expr.args[0])
        if inner in ("ones", "zeros") and not any(k.arg != "diagonal" for k in expr.keywords):
            like = f"{torch_name}.{inner}_like({target})"
            extra = "".join(f", {ast.unparse(arg)}" for arg in expr.args[1:] if _is_number(arg))
            extra += "".join(f", diagonal={ast.unparse(k.value)}" for k in expr.keywords if _is_number(k.value))
            return [f"{target}.copy_({torch_name}.{factory}({like}{extra}))", *scale], True
    return None


def _arange_from_zero(call: ast.Call) -> bool:
    if call.keywords and any(k.arg in ("start", "step") for k in call.keywords):
        return False
    if len(call.args) == 1:
        return True
    return len(call.args) == 2 and isinstance(call.args[0], ast.Constant) and call.args[0].value == 0


def _is_number(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)


def _self_attr(name: str) -> ast.expr:
    return ast.Attribute(value=ast.Name(id="self", ctx=ast.Load()), attr=name, ctx=ast.Load())


def _copy(expr: ast.expr) -> ast.expr:
    return ast.parse(ast.unparse(expr), mode="eval").body


class _Replacer(ast.NodeTransformer):
    def __init__(self, replacements: dict[int, ast.expr]) -> None:
        self.replacements = replacements

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return self.replacements.get(id(node), node)


def _replace(expr: ast.expr, replacements: dict[int, ast.expr]) -> ast.expr:
    if isinstance(expr, ast.Name) and id(expr) in replacements:
        return replacements[id(expr)]
    return _Replacer(replacements).visit(expr)
