"""Python calls: what a call returns (project functions bound to their arguments, builtins,
partials, container methods) and what it does to the objects it is given.

A mixin of `flow.Solver`: the interpreter (flow.py) calls these methods; they read and write the
solver's tables through it."""

from __future__ import annotations

import ast
import re

from fabric_lsp.analysis import ir
from fabric_lsp.analysis.flow_state import (
    _Call,
    _Frame,
    _keyword_names,
    _NONE,
    _site_key,
    _sort_key,
    _TRUE,
    ANY_KEY,
    class_key,
    MAX_CALL_VALUES,
    MAX_ORDERED_WRAPS,
    MAX_PARTIAL_DEPTH,
)
from fabric_lsp.analysis.imports import FABRIC_CLASS_NAMES
from fabric_lsp.analysis.libraries import models as library_models
from fabric_lsp.analysis.semantics.torch import _REINIT_OR_LOAD
from fabric_lsp.analysis.values import (
    ConfigNode,
    Bound,
    Class,
    Const,
    const,
    Container,
    Function,
    Instance,
    JUST_UNKNOWN,
    Lib,
    Marked,
    NOTHING,
    Output,
    Partial,
    Special,
    Super,
    UNKNOWN,
    Unknown,
    Wrapped,
    WrappedMethod,
)

_BUILTINS = frozenset((
    "super", "getattr", "setattr", "hasattr", "dict", "list", "tuple", "set", "iter", "next", "enumerate", "zip",
    "reversed", "sorted", "isinstance", "len", "print", "range", "map", "filter", "type", "vars", "callable",
    "open", "int", "float", "str", "bool",
))


class PythonCalls:
    """Python calls: what a call returns (project functions bound to their arguments, builtins,
    partials, container methods) and what it does to the objects it is given."""

    def _e_call(self, expr, frame) -> frozenset:
        _, func_expr, arg_exprs, kwarg_exprs, node = expr
        receivers = None
        if func_expr[0] == "attr":  # `obj.m(...)`: what `obj` may be is kept for the wcall event
            receivers = self.ev(func_expr[1], frame)
            callees = self.attribute(receivers, func_expr[2], func_expr[3], frame)
        else:
            callees = self.ev(func_expr, frame)
        args: list[tuple[bool, frozenset]] = []
        for arg in arg_exprs:
            if arg[0] == "star":
                args.append((True, self.ev(arg[1], frame)))
            else:
                args.append((False, self.ev(arg, frame)))
        kwargs: list[tuple[str | None, frozenset]] = [(name, self.ev(value, frame)) for name, value in kwarg_exprs]
        call = _Call(node, func_expr, args, kwargs, frame)
        call.receivers = receivers
        call.arg_exprs = arg_exprs
        if receivers is not None and func_expr[2] in _REINIT_OR_LOAD:
            self._reinit_event(func_expr[2], call)
        if frame.written or frame.fresh:
            self._passed_on(frame, callees, args, kwargs, receivers)
        self._thaw_passed(frame, func_expr, arg_exprs, kwarg_exprs, callees)
        opaque = self._opaque_callees.get(callees)
        if opaque is None:  # the same callee sets come back on every run (attribute lookups are memoised)
            opaque = self._opaque_callees[callees] = any(_opaque(callee) for callee in callees)
        if opaque:
            for _, values in args:
                self._escape(values)
            for _, values in kwargs:
                self._escape(values)
        if len(callees) == 1:
            for callee in callees:
                return self.call_value(callee, call)
        result = NOTHING
        for index, callee in enumerate(self._grouped_callees(callees)):
            if index >= MAX_CALL_VALUES:
                result = result | JUST_UNKNOWN
                break
            if isinstance(callee, _Receivers):
                result = result | self._tagged(_built_by_receivers(callee.function.scope, callee.receivers, self._call_function(
                    callee.function.scope, [(False, callee.receivers)] + call.args, call.kwargs, call.node, call.frame
                )), call)
            else:
                result = result | self.call_value(callee, call)
        return result

    def _grouped_callees(self, callees: frozenset) -> list:
        """The callees in a fixed order, a project method bound to several receivers called once
        with all of them as `self` (what the calls one by one would write and read, at once): in a
        base class with hundreds of subclasses, `self.helper()` is one call, not hundreds (nor the
        first MAX_CALL_VALUES of them and an unknown)."""
        ordered = self.ordered(callees)
        receivers: dict[Function, list] = {}
        for callee in ordered:
            if isinstance(callee, Bound) and not callee.function.external:
                receivers.setdefault(callee.function, []).append(callee.receiver)
        if all(len(found) == 1 for found in receivers.values()):
            return ordered
        grouped = []
        for callee in ordered:
            if isinstance(callee, Bound) and not callee.function.external:
                found = receivers.pop(callee.function, None)
                if found is None:
                    continue  # called with its first receiver's group
                grouped.append(_Receivers(callee.function, frozenset(found)) if len(found) > 1 else callee)
            else:
                grouped.append(callee)
        return grouped

    # -- calls --------------------------------------------------------------------------------------------------
    def call_value(self, callee, call: "_Call") -> frozenset:
        if isinstance(callee, Function):
            if callee.external:
                return JUST_UNKNOWN
            result = self._tagged(self._call_function(callee.scope, call.args, call.kwargs, call.node, call.frame), call)
            if call.arg_exprs:
                self._frozen_by_callee(callee.scope, call)  # `freeze(ema)`
            return result
        if isinstance(callee, Bound):
            function = callee.function
            if function.external:
                if isinstance(callee.receiver, Class) and self._ask("external_classmethod_returns_cls", function):
                    return self._tagged(frozenset({Instance(callee.receiver)}), call)
                return JUST_UNKNOWN
            return self._tagged(_built_by_receivers(function.scope, frozenset({callee.receiver}), self._call_function(
                function.scope, [(False, frozenset({callee.receiver}))] + call.args, call.kwargs, call.node, call.frame
            )), call)
        if isinstance(callee, Class):
            return self._construct(callee, call)
        if isinstance(callee, Lib):
            return self._library_call(callee.qualified, call)
        if isinstance(callee, WrappedMethod):
            self._event("wcall", call, wrapped=callee.wrapped, method=callee.name,
                        marked=Marked(callee.wrapped, callee.name) in call.frame.marked, func=call.func_expr,
                        receivers=call.receivers, before=call.frame.marked,
                        arguments=(tuple(None if starred else values for starred, values in call.args),
                                   tuple(call.kwargs)))
            return JUST_UNKNOWN
        if isinstance(callee, Special):
            return self._special_call(callee, call)
        if isinstance(callee, Wrapped):
            self._makes_output(call.frame)
            return frozenset({Output(callee), UNKNOWN})  # `wrapped(x)`: _FabricModule.forward
        if isinstance(callee, Output):
            return frozenset({callee, UNKNOWN})  # `out.sum()`, `out.float()`
        if isinstance(callee, Partial):
            if call.depth >= MAX_PARTIAL_DEPTH:  # partial(partial(...)) or a partial of itself
                return JUST_UNKNOWN
            site = callee.site
            width = max((v.value for v in self.read(("arity", site)) if isinstance(v, Const)), default=0)
            bound = [(False, self.read(("element", site, const(index)))) for index in range(width)]
            keywords = [(name, self.read(("partial_keyword", site, name))) for name in _keyword_names(site)]
            inner = _Call(call.node, call.func_expr, bound + call.args, keywords + call.kwargs, call.frame, call.depth + 1)
            result = NOTHING
            for function in self.ordered(self.read(("partial_function", site))):
                result = result | self.call_value(function, inner)
            return result
        if isinstance(callee, Instance) and isinstance(callee.cls, Class):
            owner, values = self.lookup_class_attribute(callee.cls, "__call__")
            if not isinstance(owner, Class):
                owner, values = self.lookup_class_attribute(callee.cls, "forward")
            if isinstance(owner, Class):
                result = NOTHING
                for value in values:
                    if isinstance(value, Function) and not value.external:
                        result = result | self._call_function(
                            value.scope, [(False, frozenset({callee}))] + call.args, call.kwargs, call.node, call.frame)
                return result
        if isinstance(callee, Instance) and isinstance(callee.cls, Lib):
            return self._derived_output(call)  # `criterion(out, y)` with `criterion = nn.CrossEntropyLoss()`
        return JUST_UNKNOWN

    def _call_function(self, scope: ir.Scope, args, kwargs, node, frame) -> frozenset:
        if node is not None and frame is not None:
            # The order of calls: what was marked and wrapped before this call (analysis._method_calls).
            self._event_at("enter", node, frame, callee=scope, before=frame.marked)
        else:
            self.write(("unordered", scope), _TRUE)  # a property read: where it happens is not recorded
        try:
            return self._bind_call(scope, args, kwargs, node, frame)
        finally:
            if frame is not None:
                made = self.read(("made", scope))
                if made:
                    made = frozenset(v for v in made if isinstance(v, (Marked, Wrapped)))
                    if made:
                        self._carry(frame, made)

    def _carry(self, frame: _Frame, happened: frozenset) -> None:
        """Add marks and wrapped models to what happened on the frame's way (and to what this run made).
        New wrapped models that would take the frame past MAX_ORDERED_WRAPS are all left out (all, not
        some: which ones a set yields first is not fixed); the table ("order_bound",) says so (a table,
        so an incremental run that does not interpret this scope again still knows)."""
        new_wraps = frozenset(v for v in happened if isinstance(v, Wrapped)) - frame.marked
        if new_wraps and len(frame.marked) + len(new_wraps) > MAX_ORDERED_WRAPS:  # (counted only then)
            held = sum(1 for v in frame.marked if isinstance(v, Wrapped))
            if held + len(new_wraps) > MAX_ORDERED_WRAPS:
                self.write(("order_bound",), _TRUE)
                happened = frozenset(v for v in happened if not isinstance(v, Wrapped))
        if happened:
            frame.marked = frame.marked | happened
            self._made.update(happened)

    def _bind_call(self, scope: ir.Scope, args, kwargs, node, frame) -> frozenset:
        params = scope.params
        bound: dict[str, set] = {}
        positional, varargs, varkw, names = scope.signature
        position = 0
        extra: list[frozenset] = []
        spread = False
        for starred, values in args:
            if starred:
                spread = True
                expanded = self._expand_star(values)
                if expanded is not None:
                    for element in expanded:
                        if position < len(positional):
                            bound.setdefault(positional[position].name, set()).update(element)
                            position += 1
                        else:
                            extra.append(element)
                    spread = False
                    continue
                for param in positional[position:]:
                    bound.setdefault(param.name, set()).update(self.iter_values(values))
                break
            if position < len(positional):
                bound.setdefault(positional[position].name, set()).update(values)
                position += 1
            else:
                extra.append(values)
        extra_keywords: list[tuple[str, frozenset]] = []
        for name, values in kwargs:
            if name is None:
                expanded = self._expand_kwargs(values, frame)
                for key, item in expanded:
                    if key is None:
                        for param in params:
                            if param.kind in ("positional", "keyword") and param.name not in bound:
                                bound.setdefault(param.name, set()).update(item)
                    elif key in names:
                        bound.setdefault(key, set()).update(item)
                    else:
                        extra_keywords.append((key, item))
                continue
            if name in names:
                bound.setdefault(name, set()).update(values)
            else:
                extra_keywords.append((name, values))
        for param in params:
            if param.kind in ("positional", "keyword") and param.name not in bound and not spread:
                if param.default is not None:
                    bound[param.name] = set(self.read(("default", scope, param.name)))
                else:
                    bound[param.name] = {UNKNOWN}  # a missing argument: TypeError at run time
        if varargs is not None:
            site = (scope, "*args")
            for index, values in enumerate(extra):
                self.write(("element", site, const(index) if not spread else ANY_KEY), values)
                self.write(("elements", site), values)
            if spread:
                self.write(("elements", site), JUST_UNKNOWN)
            bound[varargs.name] = {Container(site, scope.path)}
        if varkw is not None:
            site = (scope, "**kwargs")
            container = Container(site, scope.path)
            for key, values in extra_keywords:
                self._store_element(container, frozenset({const(key)}), values)
            bound[varkw.name] = {container}
        passed = set()
        for name, values in bound.items():
            values = frozenset(values)
            self.write(("param", scope, name), values)
            for value in values:
                if isinstance(value, Wrapped):
                    passed.add(value.site)
        if passed and node is not None and frame is not None:
            self._event_at("pass", node, frame, callee=scope, sites=frozenset(passed))
        if scope.is_generator:
            return JUST_UNKNOWN
        result = self.read(("return", scope))
        if any(isinstance(v, Output) for v in result):
            result = self._outputs_for_this_call(scope, result, bound, frame)
        returned = {v.site for v in result if isinstance(v, Wrapped)}
        if returned and node is not None and frame is not None:
            self._event_at("returned", node, frame, callee=scope, sites=frozenset(returned))
        return result

    def _expand_star(self, values: frozenset) -> list[frozenset] | None:
        """`f(*args)` with one container of known positions: its elements, in order."""
        if len(values) == 1:
            (value,) = values
            if isinstance(value, Container) and not self.read(("element", value.site, ANY_KEY)):
                found = []
                for index in range(64):
                    item = self.read(("element", value.site, const(index)))
                    if not item:
                        break
                    found.append(item)
                return found
        return None

    def _expand_kwargs(self, values: frozenset, frame: _Frame | None = None) -> list[tuple[str | None, frozenset]]:
        """`f(**kwargs)`: (keyword, values) for the literal keys of dict-like containers; None for the rest.
        What this run just wrote into a dict it holds alone is what that key holds (`_write_through`)."""
        found: list = []
        written = frame.written if frame is not None and len(values) == 1 else {}
        for value in sorted(values, key=_sort_key):
            if isinstance(value, ConfigNode):
                keys = self.config_keys(value)
                if keys is None:
                    found.append((None, JUST_UNKNOWN))
                for key in keys or ():
                    found.append((key, self.config_child(value, key)))
                continue
            if isinstance(value, Container):
                for key in sorted(self.read(("keys", value.site)), key=_sort_key):
                    if isinstance(key, Const) and key.kind == "str":
                        item = written.get(("site", value.site, key)) if written else None
                        found.append((key.value, item if item is not None else self.read(("element", value.site, key))))
                anywhere = self.read(("element", value.site, ANY_KEY))
                if anywhere:
                    found.append((None, anywhere))
            else:
                found.append((None, JUST_UNKNOWN))
        return found

    def _builtin_call(self, name: str, call: "_Call") -> frozenset:
        frame = call.frame
        if name == "super":
            scope = frame.scope
            while scope is not None and scope.class_scope is None and scope.kind == ir.LAMBDA:
                scope = scope.parent
            if scope is None or scope.class_scope is None:
                return JUST_UNKNOWN
            cls = class_key(scope.class_scope)
            receivers = call.positional(1) if len(call.args) >= 2 else frame.self_values
            return frozenset(Super(cls, receiver) for receiver in receivers)
        if name == "getattr":
            names = call.positional(1)
            found = set()
            for attribute in names:
                if isinstance(attribute, Const) and attribute.kind == "str":
                    found.update(self.attribute(call.positional(0), attribute.value, None, frame))
                else:
                    found.add(UNKNOWN)
            if len(call.args) >= 3:
                found.update(call.positional(2))
            return frozenset(found)
        if name == "hasattr" and len(call.args) == 2 and not call.kwargs:
            found = set()
            for attribute in call.positional(1):
                if not (isinstance(attribute, Const) and attribute.kind == "str"):
                    found.add(UNKNOWN)
                    continue
                for obj in call.positional(0):
                    has = self.has_attribute(obj, attribute.value)
                    found.add(UNKNOWN if has is None else const(has))
            return frozenset(found)
        if name == "len" and len(call.args) == 1 and not call.kwargs:
            return frozenset(self._length(value) for value in call.positional(0))
        if name == "setattr":
            for attribute in call.positional(1):
                if isinstance(attribute, Const) and attribute.kind == "str":
                    self.store_attribute(call.positional(0), attribute.value, call.positional(2))
            return frozenset({const(None)})
        if name == "dict":
            site = call.node
            container = Container(site, frame.scope.path)
            for key, values in call.kwargs:
                if key is not None:
                    self._store_element(container, frozenset({const(key)}), values)
            for values in (call.positional(0),) if call.args else ():
                for value in values:
                    if isinstance(value, Container):
                        self.write(("element", site, ANY_KEY), self.read(("elements", value.site)))
                        self.write(("elements", site), self.read(("elements", value.site)))
            return frozenset({container})
        if name in ("list", "tuple", "set", "sorted", "reversed", "iter", "filter"):
            site = call.node
            values = self.iter_values(call.positional(0 if name != "filter" else 1)) if call.args else NOTHING
            self.write(("element", site, ANY_KEY), values)
            self.write(("elements", site), values)
            return frozenset({Container(site, frame.scope.path)})
        if name == "type" and len(call.args) == 1 and not call.kwargs:
            # `type(model.module)`: the class of an instance (so `type(m).generate` is the plain function);
            # of anything else (the Fabric wrapper, a value we cannot see) unknown.
            return frozenset(value.cls if isinstance(value, Instance) else UNKNOWN for value in call.positional(0))
        if name == "next":
            return self.iter_values(call.positional(0))
        if name == "enumerate":
            self.write(("iterable", call.node, 0), call.positional(0))
            return frozenset({Special("enumerate", call.node, frame.scope.path)})
        if name == "zip":
            plain = [values for starred, values in call.args if not starred]
            self.write(("arity", call.node), frozenset({const(len(plain))}))
            for index, values in enumerate(plain):
                self.write(("iterable", call.node, index), values)
            return frozenset({Special("zip", call.node, frame.scope.path)})
        return JUST_UNKNOWN

    def _length(self, value):
        """`len(value)`: of a constant string, or of a list/tuple display that nothing extends
        (`len([0, 1])`, `ids = [0, 1]; devices=len(ids)`); UNKNOWN otherwise."""
        if isinstance(value, Const) and isinstance(value.value, (str, tuple)):
            return const(len(value.value))
        if isinstance(value, Container) and isinstance(value.site, (ast.List, ast.Tuple)) \
                and not any(isinstance(e, ast.Starred) for e in value.site.elts) \
                and not self.read(("element", value.site, ANY_KEY)) \
                and (isinstance(value.site, ast.Tuple) or not self._may_shrink_lists(value.path)):
            return const(len(value.site.elts))
        return UNKNOWN

    def _may_shrink_lists(self, path: str) -> bool:
        """Could a list made in this file lose elements (`pop`, `remove`, `clear`, `del`, slice assignment)?
        Growth is seen in the tables; shrinking is not, so such a file's list lengths are not known."""
        known = self.__dict__.setdefault("_shrinking_files", {})
        found = known.get(path)
        if found is None:
            source = getattr(self.program, "sources", {}).get(path)
            text = source.text if source is not None else ""
            found = known[path] = _SHRINKING.search(text) is not None
        return found

    def _special_call(self, special: Special, call: "_Call") -> frozenset:
        kind = special.kind
        found = self._run_choice_special_call(special, call)
        if found is not None:
            return found
        if kind == "config_method":
            return self._config_method_call(special, call)
        if kind == "requires_grad":
            return self._requires_grad_call(special, call)
        if kind == "scaled_loss":
            return self._derived_output(call)
        if kind == "fabric_method":
            return self._fabric_call(special.receiver, special.extra, call)
        if kind == "fabric_init":
            # A Fabric subclass's own __init__ hands Fabric its arguments: those decide the strategy.
            self._record_fabric_arguments(call)
            if special.receiver.site is not None:
                self.write(("fabric_init", _site_key(special.receiver.site, special.receiver.variant)),
                           frozenset({Special("init_call", call.frame.variant, call.node)}))
            return _NONE
        if kind == "mark":
            self._mark(special.receiver, call)
            return frozenset({const(None)})
        if kind == "returns_receiver":
            return frozenset({special.receiver})
        if kind == "function_get":  # `f.__get__(obj)`, `f.__get__(obj, type(obj))`
            return self._bound_at_run_time(frozenset({special.receiver}), call.positional(0), call)
        if kind == "library_classmethod":
            owner = special.extra.rpartition(".")[0]
            classes = library_models.result_classes(special.extra, self._library_arguments(call))
            if classes == [library_models.known(owner)]:  # the receiver's class (cls)
                return self._tagged(frozenset({Instance(special.receiver)}), call)
            return self._library_results(classes, call)
        if kind == "container_method":
            return self._container_call(special.receiver, special.extra, call)
        if kind == "wrapped_forward":
            self._makes_output(call.frame)
            return frozenset({Output(special.receiver), UNKNOWN})
        if kind == "output_backward":
            self._event("backward", call, output=special.receiver, fabrics=self._fabric_names(call.frame))
            return frozenset({const(None)})
        return JUST_UNKNOWN

    @staticmethod
    def _local_argument(call: "_Call", keyword: str) -> bool:
        """Is the first argument (or `keyword=`) a name whose value here follows the statements in order: a
        local variable or parameter of a function, or a name at module level (not an attribute, whose
        values are read without order, nor a global read from inside a function)?"""
        node = call.node
        if not isinstance(node, ast.Call):
            return False
        argument = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == keyword), None)
        if not isinstance(argument, ast.Name):
            return False
        scope = call.frame.scope
        if scope.kind == ir.MODULE:
            return True
        return argument.id in scope.assigned and argument.id not in scope.declared_global \
            and argument.id not in scope.declared_nonlocal

    def _container_call(self, container: Container, method: str, call: "_Call") -> frozenset:
        site = container.site
        if method in ("append", "add", "insert"):
            values = call.positional(1 if method == "insert" else 0)
            self.write(("element", site, ANY_KEY), values)
            self.write(("elements", site), values)
            return frozenset({const(None)})
        if method == "extend":
            values = self.iter_values(call.positional(0))
            self.write(("element", site, ANY_KEY), values)
            self.write(("elements", site), values)
            return frozenset({const(None)})
        if method == "update":
            frame = call.frame
            fresh = ("site", site) in frame.fresh
            for name, values in call.kwargs:
                if name is not None:
                    self._store_element(container, frozenset({const(name)}), values)
                    self._write_through(frame, ("site", site, const(name)), values, fresh)
                else:
                    self._forget(frame, lambda key: key[0] == "site" and key[1] is site)
            for value in call.positional(0):
                if isinstance(value, Container):
                    self.write(("element", site, ANY_KEY), self.read(("elements", value.site)))
                    self.write(("elements", site), self.read(("elements", value.site)))
                self._forget(frame, lambda key: key[0] == "site" and key[1] is site)
            return frozenset({const(None)})
        if method in ("pop", "clear", "popitem"):
            self._forget(call.frame, lambda key: key[0] == "site" and key[1] is site)
        if method in ("get", "pop", "setdefault"):
            keys = call.positional(0)
            found = set(self.subscript(frozenset({container}), keys))
            if method == "setdefault" and len(call.args) > 1:
                self._store_element(container, keys, call.positional(1))
            if len(call.args) > 1:
                found.update(call.positional(1))
            return frozenset(found)
        if method == "items":
            return frozenset({Special("items", container, container.path)})
        if method in ("values", "copy"):
            return frozenset({container})
        return JUST_UNKNOWN


def _built_by_receivers(scope: ir.Scope, receivers: frozenset, result: frozenset) -> frozenset:
    """A factory classmethod's summary joins every class it was called on (`cls` holds them all):
    `Base.from_name(...)` returns what `cls(...)` builds for this call's receivers only. Read so only
    when every `return` of the classmethod is `cls(...)` and `cls` is never bound again."""
    if scope.kind != ir.FUNCTION or scope.class_scope is None or scope.method_kind != "classmethod" \
            or not any(isinstance(v, Instance) for v in result) or not _returns_only_cls(scope.node):
        return result
    classes = {receiver for receiver in receivers if isinstance(receiver, Class)}
    if len(classes) != len(receivers):
        return result
    return frozenset(v for v in result if not (isinstance(v, Instance) and isinstance(v.cls, Class) and v.cls not in classes))


def _returns_only_cls(node: ast.AST) -> bool:
    """Is every `return` of this function (not of functions inside it) `return <first parameter>(...)`,
    with that parameter never bound again? Found once per function."""
    cached = node.__dict__.get("_fabric_lsp_returns_only_cls")
    if cached is not None:
        return cached
    found = False
    arguments = getattr(node, "args", None)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and arguments.args:
        first = arguments.args[0].arg
        returns = []
        rebound = False
        pending = list(node.body)
        while pending:
            inner = pending.pop()
            if isinstance(inner, ast.Lambda):
                continue
            if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                rebound = rebound or inner.name == first  # `def cls(...)` binds the name; its body is its own
                continue
            if isinstance(inner, ast.Return):
                returns.append(inner)
            elif isinstance(inner, ast.Name) and inner.id == first and not isinstance(inner.ctx, ast.Load):
                rebound = True
            elif isinstance(inner, (ast.Global, ast.Nonlocal)) and first in inner.names:
                rebound = True
            pending.extend(ast.iter_child_nodes(inner))
        found = bool(returns) and not rebound and all(
            isinstance(r.value, ast.Call) and isinstance(r.value.func, ast.Name) and r.value.func.id == first
            for r in returns)
    node.__dict__["_fabric_lsp_returns_only_cls"] = found
    return found


class _Receivers(tuple):
    """A project method and every receiver it is bound to at one call (Solver._grouped_callees)."""

    __slots__ = ()

    def __new__(cls, function: Function, receivers: frozenset) -> "_Receivers":
        return tuple.__new__(cls, (function, receivers))

    function = property(lambda self: self[0])
    receivers = property(lambda self: self[1])


_MODELED_LIBRARY = ("functools.partial", "builtins.", "types.MethodType")


def _opaque(callee) -> bool:
    """Is this a callee whose body the analysis does not follow (what it does with functions it gets
    is unknown)? Library calls with modelled semantics, project functions and classes are not."""
    if isinstance(callee, Unknown):
        return True
    if isinstance(callee, Function) and callee.external:
        return True
    if isinstance(callee, Bound) and callee.function.external:
        return True
    if isinstance(callee, Lib):
        return not callee.qualified.startswith(_MODELED_LIBRARY) and callee.qualified not in FABRIC_CLASS_NAMES
    if isinstance(callee, Special):
        return callee.kind == "lib_method"
    return False


# What may take elements out of a list: its methods, `del x[i]`, a slice assignment.
_SHRINKING = re.compile(r"\.(pop|remove|clear)\(|(^|[^\w.])del\s|:\s*\]\s*=")
