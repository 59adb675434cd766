"""torch: wrapped modules' outputs (what backward reaches), meta-device and init contexts,
re-initialization, `torch.compile`, attributes of wrapped models.

A mixin of `flow.Solver`: the interpreter (flow.py) calls these methods; they read and write the
solver's tables through it."""

from __future__ import annotations

import ast

from fabric_lsp.analysis import ir
from fabric_lsp.analysis.flow_state import _Call, _chain, _Frame, _site_key, MADE, MetaTag
from fabric_lsp.analysis.libraries.torch_facts import wrapper_attributes
from fabric_lsp.analysis.values import (
    Class,
    const,
    Container,
    FabricValue,
    Instance,
    JUST_UNKNOWN,
    NOTHING,
    Lib,
    Output,
    Special,
    Tuple,
    Wrapped,
    WrappedMethod,
)

_RETURNS_SELF = frozenset(
    ("eval", "train", "to", "cuda", "cpu", "float", "half", "double", "bfloat16", "requires_grad_", "apply",
     "to_empty", "share_memory", "type", "xpu")
)
_UNWRAPPING_ATTRIBUTES = frozenset(("module", "_original_module", "_forward_module"))
_REINIT_METHODS = frozenset(("reset_parameters", "apply", "load_state_dict"))
_REINIT_OR_LOAD = _REINIT_METHODS | {"load", "load_raw"}
# What a tensor computed from a wrapped model's output gives without the autograd graph (the backward
# hook cannot fire through it): these attributes end an Output.
_OUTPUT_DETACHING = frozenset((
    "detach", "detach_", "item", "tolist", "numpy", "data", "shape", "size", "dim", "numel", "dtype", "device",
    "argmax", "argmin", "requires_grad", "grad", "grad_fn", "is_leaf", "ndim",
))
# torch functions whose result holds no gradient of their tensor arguments.
_NO_GRAD_FUNCTIONS = frozenset(("argmax", "argmin", "argsort", "isnan", "isinf", "isfinite", "equal", "eq", "ne",
                                "numel", "is_tensor", "no_grad", "inference_mode", "zeros_like", "ones_like",
                                "empty_like", "randn_like", "rand_like", "full_like"))
_FSDP_CLASSES = frozenset((
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
))


class TorchSemantics:
    """torch: wrapped modules' outputs (what backward reaches), meta-device and init contexts,
    re-initialization, `torch.compile`, attributes of wrapped models."""

    # -- frozen modules (FAB009) ------------------------------------------------------------------------
    def _requires_grad_call(self, special: Special, call: "_Call") -> frozenset:
        """`m.requires_grad_(False)`: the module with every parameter frozen (Instance.frozen: where), returned
        and, when the call names a local variable (`vae.requires_grad_(False)`), bound to it from here on."""
        flags = call.positional(0) | call.keyword("requires_grad") or frozenset({const(True)})
        inst = special.receiver
        found = set()
        for flag in flags:
            if flag == const(False):
                found.add(self._frozen_variant(inst, (call.frame.scope.path, call.node)))
            elif flag == const(True):
                found.add(inst._replace(frozen=None))
            else:
                found.update((inst._replace(frozen=None), self._frozen_variant(inst, (call.frame.scope.path, call.node))))
        result = frozenset(found)
        func = call.func_expr
        if func is not None and func[0] == "attr":
            self._rebind_frozen(func[1], frozenset({inst}), result, call.frame)
        return result

    def _rebind_frozen(self, expr: tuple, before: frozenset, after: frozenset, frame: _Frame) -> None:
        """A local variable (or an attribute of the object `__init__` builds) that held `before` holds
        `after` from here on: freezing changes the object in place."""
        if expr[0] == "name":
            name = expr[1]
            held = frame.env.get(name)
            if held is not None and frame.scope.kind in (ir.FUNCTION, ir.LAMBDA, ir.MODULE) \
                    and name not in frame.scope.declared_global and name not in frame.scope.declared_nonlocal:
                frame.env[name] = (held - before) | after if held & before else held
        elif expr[0] == "attr":
            chain = _chain(expr)
            if chain is not None and ("var", chain[0]) in frame.fresh:
                key = ("path", chain[0], chain[1])
                held = frame.written.get(key)
                if held is not None and held & before:
                    frame.written[key] = (held - before) | after
                    self.store_attribute(self.ev(expr[1], frame), expr[2], after)

    def _frozen_variant(self, inst: Instance, where: tuple) -> Instance:
        """The instance frozen at `where` (kept in the solve's set of frozen values, which `_thaw` looks for)."""
        frozen = inst._replace(frozen=where)
        self._frozen_values.add(frozen)
        return frozen

    def _thaw(self, expr: tuple, frame: _Frame) -> None:
        """A frozen module that code may change (a trainable layer attached after the freeze, parameters switched
        back on, a helper given it): from here on it is not known to be frozen (FAB009 needs it certain)."""
        name = _root_name(expr)
        held = frame.env.get(name) if name is not None and self._frozen_values else None
        if held and not held.isdisjoint(self._frozen_values):
            frame.env[name] = frozenset(v._replace(frozen=None) if isinstance(v, Instance) and v.frozen is not None
                                        else v for v in held)

    def _thaw_passed(self, frame: _Frame, func_expr: tuple, arg_exprs, kwarg_exprs, callees: frozenset) -> None:
        """Thaw the frozen locals a call may change: given to it, or the receiver of a method that is not one of
        the module API's reading or moving ones."""
        frozen = self._frozen_values
        if not frozen:
            return  # nothing frozen in this solve (the common case)
        env = frame.env
        if func_expr[0] == "attr" and func_expr[2] == "requires_grad_" and func_expr[1][0] in ("attr", "sub") \
                and not _all_false(arg_exprs, kwarg_exprs):
            # `model.fc.requires_grad_(True)` after `model.requires_grad_(False)`: part of it trains again
            self._thaw(func_expr[1], frame)
            return
        exprs = [argument[1] if argument[0] == "star" else argument for argument in arg_exprs]
        exprs += [argument for _, argument in kwarg_exprs]
        if func_expr[0] == "attr" and func_expr[2] not in _NOT_THAWING_METHODS:
            exprs.append(func_expr[1])
        targets = [e for e in exprs if not env.get(_root_name(e), NOTHING).isdisjoint(frozen)]
        if not targets:
            return
        if callees and all(isinstance(c, Special) and c.kind in _NOT_THAWING_SPECIALS or isinstance(c, Lib)
                           and c.qualified.startswith(_NOT_THAWING_LIBRARY) for c in callees):
            return
        for expr in targets:
            self._thaw(expr, frame)

    def _freezing_loop(self, statement, iterable: frozenset, frame: _Frame) -> None:
        """`for p in m.parameters(): p.requires_grad = False` (or `p.requires_grad_(False)`), unconditionally
        in the loop's body: after the loop, `m` is frozen."""
        target, source, body = statement[1], statement[2], statement[3]
        if source[0] != "call" or source[1][0] != "attr" or source[1][2] not in ("parameters", "named_parameters"):
            return
        name = _loop_variable(target)
        if name is not None and self._frozen_values and any(unfreezes(each, name) for each in body):
            # `for n, p in model.named_parameters(): if "lora" in n: p.requires_grad = True`: some train again
            self._thaw(source[1][1], frame)
            return
        if name is None or not any(_freezes_name(each, name) for each in body):
            return
        modules = self.ev(source[1][1], frame)
        before = frozenset(v for v in modules if isinstance(v, Instance))
        if before:
            node = source[4]
            self._rebind_frozen(source[1][1], before,
                                frozenset(self._frozen_variant(v, (frame.scope.path, node)) for v in before), frame)

    def _frozen_by_callee(self, scope: ir.Scope, call: "_Call") -> None:
        """`freeze(ema)` where `def freeze(model): model.requires_grad_(False)` (or the loop over its
        parameters) at the top of the body: the argument's variable is frozen after the call."""
        indices = _freezing_parameters(scope)
        if not indices:
            return
        for index in indices:
            if index < len(call.arg_exprs) and call.arg_exprs[index][0] != "star":
                values = call.positional(index)
                before = frozenset(v for v in values if isinstance(v, Instance))
                if before:
                    self._rebind_frozen(call.arg_exprs[index], before,
                                        frozenset(self._frozen_variant(v, (call.frame.scope.path, call.node))
                                                  for v in before), call.frame)

    def _meta_context(self, values: frozenset, node: ast.AST, frame: _Frame) -> MetaTag | None:
        fabrics = set()
        init_call = None
        meta_device = False
        for value in values:
            if isinstance(value, Special):
                if value.kind == "meta_device":
                    meta_device = True
                elif value.kind == "init_module":
                    fabrics.add(value.receiver)
                    init_call = value.extra
        path = frame.scope.path
        if meta_device:
            return MetaTag(("meta_device", node, None, path, frozenset(), None, frame.variant))
        if fabrics:
            return MetaTag(("init_module", node, None, path, frozenset(fabrics), init_call, frame.variant))
        return None

    def _outputs_in(self, expr, frame) -> set:
        """The wrapped model's outputs an operand holds. Names, attributes and items of them are read
        without asking for what else they are (each read is a dependency that can make the solver run a
        scope again: arithmetic is everywhere, outputs rarely); calls and the rest are evaluated as before."""
        kind = expr[0]
        if kind == "const":
            return set()
        if kind == "name":
            return {v for v in self._lookup(expr[1], frame) if isinstance(v, Output)}
        if kind == "attr":
            base = self._outputs_in(expr[1], frame)
            return base if expr[2] not in _OUTPUT_DETACHING else set()
        if kind == "sub":
            if expr[2][0] not in ("const", "name"):
                self.ev(expr[2], frame)  # an index with calls in it
            return self._outputs_in(expr[1], frame)
        if kind == "unary":
            return self._outputs_in(expr[2], frame)
        if kind == "arith":
            found = set()
            for inner in expr[1]:
                found.update(self._outputs_in(inner, frame))
            return found
        return {v for v in self.ev(expr, frame) if isinstance(v, Output)}

    def _reinit_event(self, method: str, call: "_Call") -> None:
        """Calls that give a model's weights values after Fabric's setup: `model.reset_parameters()`,
        `model.apply(init_fn)`, `model.load_state_dict(...)`, `fabric.load(path, {"model": model})`,
        `fabric.load_raw(path, model)`. What ModelParallel leaves uninitialised is then overwritten
        (FAB002 reads these events after the solve)."""
        if method in _REINIT_METHODS:
            values = frozenset(v for v in call.receivers if isinstance(v, (Wrapped, Instance)))
        elif method in ("load", "load_raw") and any(isinstance(v, FabricValue) for v in call.receivers):
            values = set()
            for given in (call.positional(1), call.keyword("state"), call.keyword("obj")):
                for value in given:
                    if isinstance(value, Container):
                        values.update(self.read(("elements", value.site)))
                    else:
                        values.add(value)
            values = frozenset(v for v in values if isinstance(v, (Wrapped, Instance)))
        else:
            return
        if values:
            self._event("reinit", call, values=values, method=method)

    def _wrapped_attribute(self, wrapped: Wrapped, name: str) -> frozenset:
        if name in _UNWRAPPING_ATTRIBUTES:
            return self.read(("setup_module", _site_key(wrapped.site, wrapped.variant)))
        if name == "mark_forward_method":
            return frozenset({Special("mark", wrapped)})
        if name in ("forward", "__call__"):
            return frozenset({Special("wrapped_forward", wrapped)})
        if name in _RETURNS_SELF:
            return frozenset({Special("returns_receiver", wrapped)})
        if name in wrapper_attributes():
            return frozenset({Special("lib_method", wrapped, name)})
        found = {WrappedMethod(wrapped, name)}
        for inner in self.read(("setup_module", _site_key(wrapped.site, wrapped.variant))):
            if isinstance(inner, Instance) and isinstance(inner.cls, Class):
                found.update(self.read(("field", inner.cls, name)))
        return frozenset(found)

    def _derived_output(self, call: "_Call") -> frozenset:
        """What a library call computes from tensors: it carries the wrapped model's outputs among its
        arguments (also inside a list or tuple display: `torch.stack([a, b])`), else nothing known."""
        found = set()
        for values in [v for _, v in call.args] + [v for _, v in call.kwargs]:
            for value in values:
                if isinstance(value, Output):
                    found.add(value)
                elif isinstance(value, Container):
                    found.update(v for v in self.read(("elements", value.site)) if isinstance(v, Output))
        return frozenset(found) | JUST_UNKNOWN

    def _tagged(self, values: frozenset, call: "_Call") -> frozenset:
        """Instances a call returns while a meta-device context is active were made on the meta device."""
        meta = call.frame.meta or call.frame.default_meta
        if meta is None or not any(isinstance(v, Instance) and v.meta is None for v in values):
            return values
        tagged = frozenset(
            value._replace(meta=self._meta_for(meta, call)) if isinstance(value, Instance) and value.meta is None else value
            for value in values
        )
        self._event("meta_build", call, values=frozenset(v for v in tagged if isinstance(v, Instance) and v.meta is not None))
        return tagged

    def _meta_for(self, context: MetaTag, call: "_Call") -> MetaTag:
        return MetaTag((context[0], context[1], call.node, call.frame.scope.path, context[4], context[5], context[6]))

    def _makes_output(self, frame: _Frame | None) -> None:
        if frame is not None and frame.scope.kind in (ir.FUNCTION, ir.LAMBDA):
            self.write(("makes_output", frame.scope), MADE)

    def _outputs_for_this_call(self, scope: ir.Scope, result: frozenset, bound: dict, frame) -> frozenset:
        """A function's return summary joins all its calls: a loss helper given the wrapped model's
        output in training and a plain tensor in a test returns an Output to both. The Output reaches
        this call only when the function (or one it calls) runs the wrapped model itself, or this
        call hands it an output (directly or in a container or tuple)."""
        if self.read(("makes_output", scope)):
            self._makes_output(frame)  # so the caller's callers get it too
            return result
        if any(self._carries_output(v) for vs in bound.values() for v in vs):
            return result  # handed back what this call gave (the caller's own callers decide again)
        return frozenset(v for v in result if not isinstance(v, Output))

    def output_reaches(self, scope: ir.Scope) -> bool:
        """After the solve: can an output of a wrapped model be in this scope on one of its own runs?
        Only when it (or a function it calls) runs the wrapped model, or its callers hand it one. (Its
        values alone cannot tell: a helper's summary joins every call.) Module code: always."""
        if scope.kind not in (ir.FUNCTION, ir.LAMBDA) or self.peek(("makes_output", scope)):
            return True
        return any(self._carries_output(v, peek=True) for param in scope.params
                   for v in self.peek(("param", scope, param.name)))

    def _carries_output(self, value, peek: bool = False) -> bool:
        if isinstance(value, Output):
            return True
        if isinstance(value, Container):
            elements = (self.peek if peek else self.read)(("elements", value.site))
            return any(isinstance(v, Output) for v in elements)
        if isinstance(value, Tuple):
            return any(isinstance(v, Output) for element in value.elements for v in element)
        return False


def _compiled(value, how=True):
    """`torch.compile(model)`: the model compiled (`how`: True, or the run-time choice it was compiled under)."""
    if isinstance(value, Instance) and value.compiled is not True:
        return value._replace(compiled=how if how is True or not value.compiled else value.compiled)
    return value


def _all_false(arg_exprs, kwarg_exprs) -> bool:
    """`requires_grad_(False)` / `requires_grad_(requires_grad=False)` as written."""
    given = [argument for argument in arg_exprs] + [argument for name, argument in kwarg_exprs if name == "requires_grad"]
    return given == [("const", False)]


def _root_name(expr: tuple) -> str | None:
    """`model` for `model`, `model.head`, `model.layers[0]`, `get_layer(model)`... no: the name an expression
    reads first (`a.b[c].d` -> `a`); None when it starts elsewhere."""
    while expr[0] in ("attr", "sub"):
        expr = expr[1]
    return expr[1] if expr[0] == "name" else None


def _freezes_name(statement, name: str) -> bool:
    """Does this loop-body statement set `name.requires_grad = False` or call `name.requires_grad_(False)`?"""
    if statement[0] == "assign" and statement[2] == ("const", False):
        return any(t[0] == "attr" and t[1] == ("name", name) and t[2] == "requires_grad" for t in statement[1])
    if statement[0] == "expr":
        expr = statement[1]
        return expr[0] == "call" and expr[1][0] == "attr" and expr[1][1] == ("name", name) \
            and expr[1][2] == "requires_grad_" and list(expr[2]) == [("const", False)]
    return False


def _freezing_parameters(scope) -> tuple[int, ...]:
    """The positions of the parameters a function freezes at the top of its body (read from the IR once)."""
    known = scope.__dict__.get("_fabric_lsp_freezes")
    if known is not None:
        return known
    found = []
    names = [param.name for param in scope.params]
    for statement in scope.body or ():
        for index, name in enumerate(names):
            if _freezes_name(statement, name):
                found.append(index)
            elif _freezing_parameter_loop(statement, name) is not None:
                found.append(index)
    known = scope.__dict__["_fabric_lsp_freezes"] = tuple(sorted(set(found)))
    return known


def _loop_variable(target) -> str | None:
    """The parameter's name a loop binds: `p` of `for p in ...` and of `for name, p in ...`."""
    if target[0] == "name":
        return target[1]
    return target[1][-1][1] if target[0] == "tuple" and target[1] and target[1][-1][0] == "name" else None


def _freezing_parameter_loop(statement, name: str):
    """The call node of `for p in <name>.parameters(): p.requires_grad = False` (or `named_parameters()`, or
    `p.requires_grad_(False)`) when the statement is that loop; None otherwise."""
    if statement[0] != "for" or statement[2][0] != "call" or statement[2][1][0] != "attr" \
            or statement[2][1][1] != ("name", name) or statement[2][1][2] not in ("parameters", "named_parameters"):
        return None
    loop_name = _loop_variable(statement[1])
    if loop_name is None or not any(_freezes_name(each, loop_name) for each in statement[3]):
        return None
    return statement[2][4]


def self_freeze(scope) -> object:
    """The AST node of the statement by which `__init__` freezes its own module last (`self.requires_grad_(False)`,
    or the loop over `self.parameters()` setting `requires_grad = False`), at the top of its body, with only calls
    of the module API's reading or moving methods on `self` after it; None otherwise (read from the IR once)."""
    known = scope.__dict__.get("_fabric_lsp_self_freeze", 0)
    if known != 0:
        return known
    found = None
    if scope.params and scope.params[0].kind == "positional":
        name = scope.params[0].name
        for statement in scope.body or ():
            if _freezes_name(statement, name):
                found = statement[1][4] if statement[0] == "expr" else None
                continue
            loop = _freezing_parameter_loop(statement, name)
            if loop is not None:
                found = loop
                continue
            if found is not None and not (statement[0] == "expr" and statement[1][0] == "call"
                                          and statement[1][1][0] == "attr" and statement[1][1][1] == ("name", name)
                                          and statement[1][1][2] in _NOT_THAWING_METHODS
                                          and statement[1][1][2] != "requires_grad_"):
                found = None  # a layer attached or a parameter switched on after the freeze
    scope.__dict__["_fabric_lsp_self_freeze"] = found
    return found


def unfreezes(statement, name: str) -> bool:
    """Does this statement (nested ones included) set `name.requires_grad` to anything but a literal False, or
    call `name.requires_grad_(...)` with anything but it (a loop that switches some parameters back on)?"""
    stack = [statement]
    while stack:
        item = stack.pop()
        if not isinstance(item, (tuple, list)):
            continue
        if item and item[0] == "assign" and len(item) > 2 and item[2] != ("const", False) and isinstance(item[1], (list, tuple)) \
                and any(isinstance(t, tuple) and t[:1] == ("attr",) and t[1] == ("name", name) and t[2] == "requires_grad"
                        for t in item[1]):
            return True
        if item and item[0] == "call" and len(item) > 2 and isinstance(item[1], tuple) and item[1][:1] == ("attr",) \
                and item[1][1] == ("name", name) and item[1][2] == "requires_grad_" \
                and list(item[2]) != [("const", False)]:
            return True
        stack.extend(part for part in item if isinstance(part, (tuple, list)))
    return False


# Calls that neither change a module's parameters nor attach layers to it (FAB009 keeps it frozen across them).
_NOT_THAWING_METHODS = frozenset((
    "eval", "train", "to", "cuda", "cpu", "float", "half", "double", "bfloat16", "type", "xpu", "parameters",
    "named_parameters", "buffers", "named_buffers", "modules", "named_modules", "children", "named_children",
    "state_dict", "load_state_dict", "forward", "requires_grad_", "zero_grad", "extra_repr", "__call__",
))
_NOT_THAWING_SPECIALS = frozenset(("fabric_method", "returns_receiver", "requires_grad", "wrapped_forward"))
_NOT_THAWING_LIBRARY = ("builtins.print", "builtins.len", "builtins.isinstance", "builtins.type", "builtins.id",
                        "builtins.str", "builtins.repr", "builtins.sum", "builtins.hasattr", "builtins.getattr",
                        "copy.", "torch.no_grad", "torch.inference_mode", "logging.")
