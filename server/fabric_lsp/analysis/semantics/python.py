"""Python statements: assignment and unpacking, names and scopes, narrowing, loops, `with`, `try`,
definitions and imports.

A mixin of `flow.Solver`: the interpreter (flow.py) calls these methods; they read and write the
solver's tables through it."""

from __future__ import annotations

import ast
from typing import Callable

from fabric_lsp.analysis import ir
from fabric_lsp.analysis.flow_state import (
    _Call,
    _chain,
    _Frame,
    _last_name,
    _may_be_none,
    _NONE,
    _NONE_CONST,
    _site_key,
    _TRUE,
    ANY_KEY,
    class_key,
    MAX_LOOP_PASSES,
    TRANSPARENT_DECORATORS,
)
from fabric_lsp.analysis.imports import FABRIC_CLASS_NAMES, normalize_torch_name
from fabric_lsp.analysis.libraries import models as library_models
from fabric_lsp.analysis.semantics.python_calls import _BUILTINS
from fabric_lsp.analysis.values import (
    Bound,
    Class,
    Const,
    const,
    Container,
    FabricValue,
    Function,
    Instance,
    JUST_UNKNOWN,
    Lib,
    Module,
    NOTHING,
    Output,
    Special,
    Tuple,
    UNKNOWN,
    Wrapped,
    WrappedMethod,
)


class PythonStatements:
    """Python statements: assignment and unpacking, names and scopes, narrowing, loops, `with`, `try`,
    definitions and imports."""

    def _may_unroll(self, body) -> bool:
        """Is a loop over a literal display worth following key by key: does its body (IR) name
        `mark_forward_method`, `getattr`/`setattr` or a Fabric setup? A table of 200 configurations
        built in loops is not: followed once per element it cost a third more of the whole solve."""
        known = self._unroll_bodies.get(id(body))
        if known is None:
            known = self._unroll_bodies[id(body)] = (_names_unroll_reason(body), body)
        return known[0]

    # -- parameters ------------------------------------------------------------------------------
    def _bind_parameters(self, frame: _Frame) -> None:
        scope = frame.scope
        entry = self._ask("is_entry", scope) or bool(self.read(("escaped", scope)))
        method = scope.class_scope is not None and scope.kind == ir.FUNCTION
        kind = scope.method_kind if method else None
        for index, param in enumerate(scope.params):
            values = self.read(("param", scope, param.name))
            if index == 0 and method and kind in ("method", "property"):
                selves = self._self_values(scope.class_scope)
                values = values | selves
                frame.self_values = values
                if scope.name == "__init__":
                    # The object being built: what `__init__` stores in it and reads back (`self.encoder =
                    # Encoder()`, then `Critic(self.encoder)`) is that value, not every value the class's
                    # attribute ever holds (a wrapper assigned to it later, from outside).
                    frame.fresh = frame.fresh | {("var", param.name)}
            elif index == 0 and self.read(("hydra_config", scope)):
                values = self.read(("hydra_config", scope))  # `@hydra.main(...) def main(cfg)`: hydra calls it
            elif index == 0 and method and kind == "classmethod":
                values = values | frozenset(self._subclasses(class_key(scope.class_scope)))
                frame.self_values = values
            else:
                if entry or UNKNOWN in values:
                    values = values | self._annotation_values(scope, param.name, param.annotation_node,
                                                              f"the parameter `{param.name}`")
                listed = _parametrized(scope, param.name) if entry and not values else None
                if listed is not None and self._ask("is_entry", scope):
                    # A test only pytest calls (nothing names it; its decorators are what it escapes
                    # through): the values its parametrize lists.
                    values = values | listed
                elif entry:
                    values = values | self.read(("default", scope, param.name)) | JUST_UNKNOWN
            if param.kind == "varargs" and not values:
                values = JUST_UNKNOWN
            frame.env[param.name] = values
            if param.name in scope.cellvars:
                frame.cells[param.name] = frame.cells.get(param.name, NOTHING) | values

    def _annotation_values(self, scope: ir.Scope, name: str, node, what: str) -> frozenset:
        """What the annotation of a parameter (or of the return, name "return") of `scope` declares."""
        return self._declared(self.read(("annotation", scope, name)), scope.path, node, what,
                              f"a Fabric passed in as `{name}`" if name != "return" else f"a Fabric returned by `{scope.name}`")

    def _declared(self, annotated: frozenset, path: str, node, what: str, fabric_origin: str | None = None) -> frozenset:
        """Instances of the classes an annotation names, marked as known only from it (Instance.declared);
        Fabric objects of unknown origin for a Fabric class."""
        found = set()
        for value in annotated:
            if isinstance(value, Lib) and value.qualified in FABRIC_CLASS_NAMES:
                found.add(FabricValue(None, None, None, fabric_origin or f"a Fabric declared as {what}"))
            elif isinstance(value, Class):
                if self.is_fabric_class(value):
                    found.add(FabricValue(None, None, value, fabric_origin or f"a Fabric declared as {what}"))
                else:
                    found.add(Instance(value, declared=(path, node, what) if node is not None else None))
            elif isinstance(value, Lib) and normalize_torch_name(value.qualified).startswith(("torch.nn.", "torchmetrics.")):
                found.add(Instance(Lib(normalize_torch_name(value.qualified)), declared=(path, node, what)))
            elif isinstance(value, Lib) and library_models.is_library_name(value.qualified) \
                    and library_models.is_class(value.qualified):
                found.add(Instance(value, declared=(path, node, what)))
        return frozenset(found)

    def _s_declare(self, statement, frame: _Frame) -> None:
        """`actor: PPOActor` in a class body: the declared type of the attribute on its instances."""
        if frame.scope.kind != ir.CLASS:
            return
        _, name, annotation, node = statement
        key = class_key(frame.scope)
        self.write(("declared", key, name), self._declared(self.ev(annotation, frame), frame.scope.path, node,
                                                           f"`{key.qualname}.{name}`"))

    def _s_assign(self, statement, frame: _Frame) -> None:
        frame.statement = statement[3]
        frame.constructed = None
        value = statement[2]
        self._none_condition = None
        values = self.ev(value, frame)
        none_condition = self._none_condition if value[0] == "ifexp" else None
        # `cfg = TrainConfig()` here, outside loops: an object only this run holds (until it is passed on)
        made_here = value[0] == "call" and frame.constructed is value[4] and not frame.in_loop
        for target in statement[1]:
            self.assign(target, values, frame)
            if target[0] == "name" and made_here:
                frame.fresh = frame.fresh | {("var", target[1])}
            if target[0] == "name" and none_condition is not None:
                frame.none_when = {**frame.none_when, target[1]: none_condition}

    def _s_aug(self, statement, frame: _Frame) -> None:
        values = self.ev(statement[2], frame)
        target = statement[1]
        if target[0] == "name":
            current = self._lookup(target[1], frame)
            self.assign(target, current | values, frame)

    def _s_expr(self, statement, frame: _Frame) -> None:
        self.ev(statement[1], frame)

    def _s_return(self, statement, frame: _Frame) -> None:
        frame.statement = statement[2]
        values = self.ev(statement[1], frame) if statement[1] is not None else frozenset({const(None)})
        scope = frame.scope
        if UNKNOWN in values and scope.returns is not None:
            declared = self._annotation_values(scope, "return", scope.returns_node, f"what `{scope.name}` returns")
            if declared:
                values = (values - JUST_UNKNOWN) | declared
        if frame.scope.kind in (ir.FUNCTION, ir.LAMBDA):
            self.write(("return", frame.scope), values)

    def _s_if(self, statement, frame: _Frame) -> None:
        taken = self._decide(statement[1], statement[4], frame)
        if taken is not None:  # a constant of the program, or the case this run follows
            self._exec(statement[2] if taken else statement[3], frame)
            return
        guards, excluded = frame.guards, frame.excluded
        when_true, when_false = self.arm_guards(statement[1], self._last_test_values, frame)
        absent = self.fabric_absent_arm(statement[1], frame)
        other = frame.fork()
        if when_true:
            frame.guards = guards + (when_true,)
        if when_false:
            other.guards = guards + (when_false,)
        if absent is not None:
            (frame if absent else other).excluded = True
        self._narrow(statement[1], frame, True)
        self._narrow(statement[1], other, False)
        self._exec(statement[2], frame)
        self._exec(statement[3], other)
        body_guards, else_guards = frame.guards, other.guards
        frame.merge(other)
        # After `if not args.sample: return`, the rest runs only when the other arm is taken.
        node = statement[5]
        ends_body, ends_else = _ends(node.body), _ends(node.orelse)
        frame.guards = else_guards if ends_body and not ends_else else body_guards if ends_else and not ends_body \
            else guards
        frame.excluded = excluded

    def _narrow(self, test: tuple, frame: _Frame, holds: bool) -> None:
        """What a branch's condition says about a local name: `isinstance(x, C)` (C classes of the
        project), `x is None`, `x is not None`, through `not` and `and`/`or`. Values the condition
        rules out do not enter the branch (a helper `if isinstance(m, Wrapper): return m` returns
        no bound method). Only the certain is dropped: an unknown value or class keeps everything."""
        kind = test[0]
        if kind == "not":
            self._narrow(test[1], frame, not holds)
        elif kind == "boolop":
            if (test[1] == "and") == holds:  # `a and b` holds, `a or b` fails: each part does
                for part in test[2]:
                    self._narrow(part, frame, holds)
        elif kind == "compare" and len(test[2]) == 1 and test[2][0][1] == ("const", None):
            op = test[2][0][0]
            if op in ("Is", "IsNot"):
                self._narrow_local(test[1], frame, lambda v: _may_be_none(v) if (op == "Is") == holds
                                   else v != _NONE_CONST)
        elif kind == "call" and holds and test[1] == ("name", "isinstance") and len(test[2]) == 2 and not test[3]:
            classes = self._isinstance_classes(self.ev(test[2][1], frame))
            if classes:
                self._narrow_local(test[2][0], frame, lambda v: self._may_be_instance(v, classes))

    def _narrow_local(self, target: tuple, frame: _Frame, keep: Callable[[object], bool]) -> None:
        scope = frame.scope
        if target[0] != "name" or scope.kind not in (ir.FUNCTION, ir.LAMBDA):
            return
        name = target[1]
        values = frame.env.get(name)
        if values is None or name in scope.declared_global or name in scope.declared_nonlocal:
            return
        kept = frozenset(v for v in values if keep(v))
        if kept != values:
            frame.env[name] = kept

    def _isinstance_classes(self, values: frozenset) -> frozenset | None:
        """The project classes `isinstance`'s second argument names (a class or a tuple of them);
        None when any of it is something else (a library class, an unknown)."""
        classes = set()
        for value in values:
            parts = [v for element in value.elements for v in element] if isinstance(value, Tuple) else [value]
            for part in parts:
                if not isinstance(part, Class) or part.external:
                    return None
                classes.add(part)
        return frozenset(classes) or None

    def _may_be_instance(self, value, classes: frozenset) -> bool:
        if isinstance(value, Instance):
            cls = value.cls
            if not isinstance(cls, Class) or cls.external or not self._mro_complete(cls):
                return True
            return any(base in classes for base in self.mro(cls))
        # Never an instance of a project class: constants, functions, bound methods, classes,
        # modules, containers. Anything else (unknown, a wrapped model, a library value) is kept.
        return not isinstance(value, (Const, Function, Bound, WrappedMethod, Class, Module, Container, Tuple))

    def _s_match(self, statement, frame: _Frame) -> None:
        self.ev(statement[1], frame)
        start = frame.fork()
        for body in statement[2]:
            branch = start.fork()
            self._exec(body, branch)
            frame.merge(branch)

    def _loop(self, frame: _Frame, body_once: Callable[[_Frame], None], orelse: list) -> None:
        state = frame
        for _ in range(MAX_LOOP_PASSES):
            branch = state.fork()
            branch.in_loop = True
            body_once(branch)
            if not state.merge(branch):
                break
        self._exec(orelse, state)

    def _s_for(self, statement, frame: _Frame) -> None:
        iterable = self.ev(statement[2], frame)
        target, body = statement[1], statement[3]
        iterations = self._literal_iterations(iterable) if self._may_unroll(body) else None
        if iterations is not None:  # `for name, model in {"actor": a, "critic": c}.items():` one key at a time
            outer, in_loop = frame.variant, frame.in_loop
            frame.in_loop = True
            for case, values in iterations:
                frame.variant = (outer or ()) + (case,)
                self.assign(target, values, frame)
                self._exec(body, frame)
            frame.variant, frame.in_loop = outer, in_loop
            self._exec(statement[4], frame)
            return
        iterated = self.iter_values(iterable)

        def once(branch: _Frame) -> None:
            self.assign(target, iterated, branch)
            self._exec(body, branch)

        self._loop(frame, once, statement[4])
        self._freezing_loop(statement, iterable, frame)  # `for p in m.parameters(): p.requires_grad = False`

    def _s_while(self, statement, frame: _Frame) -> None:
        test, body = statement[1], statement[2]

        def once(branch: _Frame) -> None:
            self.ev(test, branch)
            self._exec(body, branch)

        self.ev(test, frame)
        self._loop(frame, once, statement[3])

    def _s_with(self, statement, frame: _Frame) -> None:
        node = statement[3]
        frame.statement = node
        outer_meta = frame.meta
        outer_expecting = frame.expecting
        if any(_expects_error(item.context_expr) for item in getattr(node, "items", ())):
            frame.expecting = True
        for context_expr, target in statement[1]:
            values = self.ev(context_expr, frame)
            tag = self._meta_context(values, node, frame)
            if tag is not None:
                frame.meta = tag
            if target is not None:
                opened = frozenset(v for v in values if isinstance(v, Special) and v.kind == "open_file")
                self.assign(target, opened | JUST_UNKNOWN if opened else JUST_UNKNOWN, frame)
        self._exec(statement[2], frame)
        frame.meta = outer_meta
        frame.expecting = outer_expecting

    def _s_try(self, statement, frame: _Frame) -> None:
        start = frame.fork()
        self._exec(statement[1], frame)
        for name, body in statement[2]:
            branch = start.fork()
            branch.merge(frame)
            if name:
                branch.env[name] = JUST_UNKNOWN
            self._exec(body, branch)
            frame.merge(branch)
        self._exec(statement[3], frame)
        self._exec(statement[4], frame)

    def _s_def(self, statement, frame: _Frame) -> None:
        _, name, child, decorators, node = statement
        frame.statement = node
        function = frozenset({Function(child)})
        for decorator, decorator_node in zip(decorators, node.decorator_list):
            values = self.ev(decorator, frame)
            if _last_name(decorator_node) in TRANSPARENT_DECORATORS:
                continue
            for value in values:
                if isinstance(value, Special) and value.kind == "hydra_main":
                    self.write(("hydra_config", child), self.hydra_config(value, frame.scope.path))
            # The decorator gets the function: a project decorator is followed (it may call it or
            # keep it); anything else (a registry, a CLI framework) may call it with anything.
            call = _Call(decorator_node, decorator, [(False, function)], [], frame)
            for value in self.ordered(values):
                if isinstance(value, Function) and not value.external:
                    self.call_value(value, call)
                else:
                    self._escape(function)
        self._define(child, frame)
        if any(_last_name(d) in ("setter", "deleter") for d in node.decorator_list):
            # `@x.setter def x(...)`: the property keeps its getter too
            function = function | self._lookup(name, frame)
        self.assign(("name", name), function, frame)

    def _escape(self, values: frozenset) -> None:
        """Functions reaching code the analysis does not follow (a library call, an unknown object):
        they may be called from there with anything, so their parameters take what annotations say."""
        for value in values:
            if isinstance(value, Function) and not value.external:
                self.write(("escaped", value.scope), _TRUE)
            elif isinstance(value, Bound) and not value.function.external:
                self.write(("escaped", value.function.scope), _TRUE)

    def _define(self, child: ir.Scope, frame: _Frame) -> None:
        for param in child.params:
            if param.default is not None:
                self.write(("default", child, param.name), self.ev(param.default, frame))
            if param.annotation is not None:
                self.write(("annotation", child, param.name), self.ev(param.annotation, frame))
        if child.returns is not None:
            self.write(("annotation", child, "return"), self.ev(child.returns, frame))

    def _s_class(self, statement, frame: _Frame) -> None:
        _, name, child, bases, keywords, decorators, node = statement
        frame.statement = node
        base_values = tuple(self.ev(base, frame) for base in bases)
        for _, value in keywords:
            self.ev(value, frame)
        key = class_key(child)
        for decorator, decorator_node in zip(decorators, node.decorator_list):
            values = self.ev(decorator, frame)
            if _last_name(decorator_node) in TRANSPARENT_DECORATORS:
                continue
            # A project decorator gets the class (`@register("lm")` puts it into a registry); the
            # name stays bound to the class itself, which is what class decorators return.
            call = _Call(decorator_node, decorator, [(False, frozenset({key}))], [], frame)
            for value in self.ordered(values):
                if isinstance(value, Function) and not value.external:
                    self.call_value(value, call)
        self.write(("bases", key), frozenset({Tuple(base_values)}))
        self.assign(("name", name), frozenset({key}), frame)

    def _s_import(self, statement, frame: _Frame) -> None:
        path = frame.scope.path
        for dotted, asname in statement[1]:
            if asname:
                value = self._ask("resolve_import", dotted, path, 0)
                self.assign(("name", asname), frozenset({value}) if value is not None else JUST_UNKNOWN, frame)
            else:
                top = dotted.split(".")[0]
                value = self._ask("resolve_import", top, path, 0)
                self.assign(("name", top), frozenset({value}) if value is not None else JUST_UNKNOWN, frame)

    def _s_from(self, statement, frame: _Frame) -> None:
        _, module, level, names, node = statement
        path = frame.scope.path
        base = self._ask("resolve_import", module or "", path, level)
        for name, asname in names:
            if name == "*":
                if isinstance(base, Module) and not base.external:
                    for exported in self._ask("module_exports", base.path) or ():
                        # Joined with what the name held: a module's names may not be known yet (a
                        # cycle of star imports, a module importing itself), and "not known yet" must
                        # not erase a binding the fixed point would then never see again.
                        values = self.read(("global", base.path, exported))
                        self.assign(("name", exported), self._lookup(exported, frame) | values, frame)
                continue
            if base is None:
                values = JUST_UNKNOWN
            else:
                values = self.attribute(frozenset({base}), name, None, frame)
            self.assign(("name", asname or name), values, frame)

    def _s_global(self, statement, frame: _Frame) -> None:
        return None

    # -- patterns ----------------------------------------------------------------------------------------
    def assign(self, pattern: tuple, values: frozenset, frame: _Frame) -> None:
        kind = pattern[0]
        if kind == "name":
            name = pattern[1]
            scope = frame.scope
            if frame.written or frame.fresh:
                self._rebound(name, frame)
            if frame.none_when and name in frame.none_when:
                frame.none_when = {k: v for k, v in frame.none_when.items() if k != name}
            if scope.kind == ir.MODULE:
                frame.env[name] = values
            elif name in scope.declared_global:
                frame.env[name] = values
                self.write(("global", scope.path, name), values)
            elif name in scope.declared_nonlocal:
                frame.env[name] = values
                owner = self._enclosing_owner(scope, name)
                if owner is not None:
                    self.write(("closure", owner, name), values)
            else:
                frame.env[name] = values
                if name in scope.cellvars:
                    frame.cells[name] = frame.cells.get(name, NOTHING) | values
        elif kind == "attr":
            objects = self.ev(pattern[1], frame)
            self.store_attribute(objects, pattern[2], values)
            self._thaw(pattern[1], frame)  # `model.head = nn.Linear(...)` after freezing it: it trains again
            chain = _chain(pattern[1])
            if chain is not None:
                self._write_through(frame, ("path", chain[0], chain[1] + (pattern[2],)), values,
                                    ("var", chain[0]) in frame.fresh and len(objects) == 1)
        elif kind == "sub":
            objects = self.ev(pattern[1], frame)
            keys = self.ev(pattern[2], frame)
            self._thaw(pattern[1], frame)
            for obj in objects:
                if isinstance(obj, Container):
                    self._store_element(obj, keys, values)
                    if len(keys) == 1 and isinstance(next(iter(keys)), Const):
                        self._write_through(frame, ("site", obj.site, next(iter(keys))), values,
                                            len(objects) == 1 and ("site", obj.site) in frame.fresh)
                    else:
                        self._forget(frame, lambda key, site=obj.site: key[0] == "site" and key[1] is site)
        elif kind == "tuple":
            self._destructure(pattern[1], values, frame)
        elif kind == "star":
            self.assign(pattern[1], JUST_UNKNOWN, frame)

    def _destructure(self, patterns: tuple, values: frozenset, frame: _Frame) -> None:
        count = len(patterns)
        parts: list[set] = [set() for _ in range(count)]
        star = next((i for i, p in enumerate(patterns) if p[0] == "star"), None)
        if len(values) > 1 and const(None) in values:
            # Unpacking None raises TypeError: no value flows from it (a factory's return values hold
            # None for falling off its end, which would make every target of `a, b = build()` unknown).
            values = values - _NONE
        for value in values:
            if isinstance(value, Container):
                elements = self.read(("elements", value.site))
                anywhere = self.read(("element", value.site, ANY_KEY))
                for index in range(count):
                    if star is not None and index >= star:
                        parts[index].update(elements)  # after a starred target: positions unknown
                        continue
                    item = self.read(("element", value.site, const(index)))
                    parts[index].update(item | anywhere if item else elements)
            else:
                for part in parts:
                    if isinstance(value, Output):
                        part.add(value)  # `logits, loss = model(x)`
                    part.add(UNKNOWN)
        for pattern, part in zip(patterns, parts):
            if pattern[0] == "star":
                self.assign(pattern[1], JUST_UNKNOWN, frame)
            else:
                self.assign(pattern, frozenset(part), frame)

    # -- what this run just wrote -------------------------------------------------------------------------
    # A config the program rewrites before it builds Fabric (`cfg.devices = 1`, `config["strategy"] =
    # "auto"`) holds the new value from there on, while the tables hold every value it ever had. For
    # objects only this run holds (made here, outside loops, not passed on), the run keeps what it
    # wrote last and reads that. It is the same on every interpretation of the run (a function of its
    # statements and of the tables it reads), so the fixed point is unchanged in kind.
    def _write_through(self, frame: _Frame, key: tuple, values: frozenset, strong: bool) -> None:
        if key[0] == "path":  # `cfg.fabric = x` replaces what `cfg.fabric.devices` was
            variable, attributes = key[1], key[2]
            self._forget(frame, lambda other: other[0] == "path" and other[1] == variable
                         and other[2][:len(attributes)] == attributes and other != key)
        if strong:
            frame.written[key] = values
        elif key in frame.written:
            frame.written[key] = frame.written[key] | values

    @staticmethod
    def _forget(frame: _Frame, matches) -> None:
        if frame.written:
            for key in [key for key in frame.written if matches(key)]:
                del frame.written[key]

    def _rebound(self, name: str, frame: _Frame) -> None:
        if ("var", name) in frame.fresh:
            frame.fresh = frame.fresh - {("var", name)}
        if frame.written:
            self._forget(frame, lambda key: key[0] == "path" and key[1] == name)

    def _passed_on(self, frame: _Frame, callees: frozenset, args, kwargs, receivers) -> None:
        """Objects given to code that may change them are no longer only this run's: forget what
        was written into them (at module level anything a function reaches may be a global).
        Library calls that change nothing, and the calls whose effects are modelled (Special), keep them."""
        project = False
        for callee in callees:
            if isinstance(callee, Special):
                continue
            if isinstance(callee, Lib):
                if callee.qualified.startswith(_PURE_LIBRARY) or callee.qualified in FABRIC_CLASS_NAMES:
                    continue
            else:
                project = True
            break
        else:
            return
        if frame.scope.kind == ir.MODULE and project:
            frame.written.clear()
            frame.fresh = frozenset()
            return
        given = set()
        for _, each in args:
            given.update(each)
        for _, each in kwargs:
            given.update(each)
        if receivers is not None:
            given.update(receivers)
        sites = {value.site for value in given if isinstance(value, Container)}
        names = {name for kind, name in ((k[0], k[1]) for k in frame.fresh) if kind == "var"
                 and frame.env.get(name, NOTHING) & given}
        if not sites and not names:
            return
        self._forget(frame, lambda key: key[0] == "site" and key[1] in sites or key[0] == "path" and key[1] in names)
        frame.fresh = frozenset(k for k in frame.fresh if not (k[0] == "site" and k[1] in sites or k[0] == "var" and k[1] in names))

    def _enclosing_owner(self, scope: ir.Scope, name: str) -> ir.Scope | None:
        enclosing = scope.parent
        while enclosing is not None and enclosing.kind in (ir.FUNCTION, ir.LAMBDA):
            if name in enclosing.assigned:
                return enclosing
            enclosing = enclosing.parent
        return None

    def store_attribute(self, objects: frozenset, name: str, values: frozenset) -> None:
        for obj in objects:
            if isinstance(obj, Instance) and isinstance(obj.cls, Class):
                if self._property_setter(obj, name, values):
                    continue
                self.write(("field", obj.cls, name), self._with_declared(obj.cls, name, values))
            elif isinstance(obj, FabricValue) and obj.cls is not None:
                self.write(("field", obj.cls, name), values)
            elif isinstance(obj, Wrapped):
                for inner in self.read(("setup_module", _site_key(obj.site, obj.variant))):
                    if isinstance(inner, Instance) and isinstance(inner.cls, Class):
                        self.write(("field", inner.cls, name), values)
            elif isinstance(obj, Module) and not obj.external:
                self.write(("global", obj.path, name), values)
            elif isinstance(obj, Class) and not obj.external:
                self.write(("classattr", obj, name), values)
            elif isinstance(obj, Special) and obj.kind == "namespace":
                self.store_namespace_field(obj, name, values)

    def _with_declared(self, cls: Class, name: str, values: frozenset) -> frozenset:
        """An unknown value stored in an attribute that a class body along the MRO declares (`actor:
        PPOActor`): an instance of the declared class."""
        if UNKNOWN not in values:
            return values
        for ref in self.mro(cls):
            if isinstance(ref, Class) and not ref.external:
                declared = self.read(("declared", ref, name))
                if declared:
                    return (values - JUST_UNKNOWN) | declared
        return values

    def _property_setter(self, obj: Instance, name: str, values: frozenset) -> bool:
        """`obj.name = values` where the class binds `name` to a property with a setter: the setter
        runs with the values (it stores them where the getter reads them). False when there is none."""
        owner, bound = self.lookup_class_attribute(obj.cls, name)
        if not isinstance(owner, Class) or owner.external:
            return False
        setters = [value for value in bound if isinstance(value, Function) and not value.external
                   and "setter" in value.scope.decorator_names and len(value.scope.params) >= 2]
        for setter in setters:
            self._call_function(setter.scope, [(False, frozenset({obj})), (False, values)], [], None, None)
        return bool(setters)

    def _store_element(self, container: Container, keys: frozenset, values: frozenset) -> None:
        for key in keys:
            if isinstance(key, Const):
                self.write(("element", container.site, key), values)
                self.write(("keys", container.site), frozenset({key}))
            else:
                self.write(("element", container.site, ANY_KEY), values)
        self.write(("elements", container.site), values)

    # -- names ------------------------------------------------------------------------------------------
    def _lookup(self, name: str, frame: _Frame) -> frozenset:
        scope = frame.scope
        kind = scope.kind
        if kind == ir.MODULE:
            found = frame.env.get(name)
            if found is not None:
                return found
            if name in scope.assigned:
                return NOTHING  # bound further down (or on another path): not yet here
            return self._global(scope.path, name)
        if kind == ir.CLASS:
            found = frame.env.get(name)
            if found is not None:
                return found
            return self._free(scope.parent, name, scope.path)
        if name in scope.declared_global:
            return self._global(scope.path, name)
        if name in scope.assigned and name not in scope.declared_nonlocal:
            return frame.env.get(name, NOTHING)
        return self._free(scope.parent, name, scope.path)

    def _free(self, enclosing: ir.Scope | None, name: str, path: str) -> frozenset:
        while enclosing is not None and enclosing.kind in (ir.FUNCTION, ir.LAMBDA):
            if name in enclosing.assigned and name not in enclosing.declared_global:
                return self.read(("closure", enclosing, name))
            enclosing = enclosing.parent
        return self._global(path, name)

    def _global(self, path: str, name: str) -> frozenset:
        found = self.read(("global", path, name))
        if found:
            return found
        if self._ask("module_binds", path, name):
            return NOTHING
        if name in _BUILTINS:
            return frozenset({Lib("builtins." + name)})
        return JUST_UNKNOWN
_EXPECTING_CALLS = frozenset(("raises", "warns", "assertRaises", "assertRaisesRegex", "assertWarns", "assertWarnsRegex"))


def _ends(statements: list) -> bool:
    """Does this block always leave the enclosing code (its last statement returns, raises, breaks,
    continues or exits the program)? Read from the syntax: the rest of the function after an
    `if ...: return` runs only on the other arm."""
    if not statements:
        return False
    last = statements[-1]
    if isinstance(last, (ast.Return, ast.Raise, ast.Break, ast.Continue)):
        return True
    if isinstance(last, ast.Expr) and isinstance(last.value, ast.Call):
        func = last.value.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        return name in ("exit", "quit", "_exit") and (not isinstance(func, ast.Attribute)
                                                       or getattr(func.value, "id", "") in ("sys", "os"))
    if isinstance(last, ast.If):
        return _ends(last.body) and _ends(last.orelse)
    return False


def _expects_error(expr: ast.AST) -> bool:
    """`pytest.raises(...)`, `pytest.warns(...)`, `self.assertRaises(...)` as a context manager."""
    if not isinstance(expr, ast.Call):
        return False
    func = expr.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name in _EXPECTING_CALLS


_MAX_UNROLLED = 16  # iterations of a loop over a literal display followed one by one
_UNROLL_ATTRIBUTES = frozenset(("mark_forward_method", "setup", "setup_module", "call"))
_UNROLL_NAMES = frozenset(("getattr", "setattr"))


def _names_unroll_reason(ir_node, depth: int = 0) -> bool:
    if depth > 200:
        return True
    if isinstance(ir_node, tuple):
        if len(ir_node) >= 3 and ir_node[0] == "attr" and ir_node[2] in _UNROLL_ATTRIBUTES:
            return True
        if len(ir_node) == 2 and ir_node[0] == "name" and ir_node[1] in _UNROLL_NAMES:
            return True
        return any(_names_unroll_reason(part, depth + 1) for part in ir_node if isinstance(part, (tuple, list)))
    if isinstance(ir_node, list):
        return any(_names_unroll_reason(part, depth + 1) for part in ir_node if isinstance(part, (tuple, list)))
    return False
# Library calls that change none of the objects they are given (Solver._passed_on).
_PURE_LIBRARY = ("dataclasses.asdict", "dataclasses.field", "copy.", "json.dumps", "builtins.print", "builtins.len",
                 "builtins.dict", "builtins.list", "builtins.tuple", "builtins.vars", "builtins.isinstance",
                 "builtins.getattr", "builtins.hasattr", "builtins.sorted", "builtins.str", "builtins.int")


def _parametrized(scope: ir.Scope, name: str) -> frozenset | None:
    """The values `@pytest.mark.parametrize("name", [...])` on the function `scope` gives the parameter
    `name`, when they are all literals (a plain constant or `pytest.param(constant, ...)`); None
    otherwise (several names, `indirect=`, a list built elsewhere)."""
    node = scope.node
    for decorator in getattr(node, "decorator_list", ()):
        if not (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute)
                and decorator.func.attr == "parametrize" and len(decorator.args) >= 2):
            continue
        names, listed = decorator.args[0], decorator.args[1]
        if not (isinstance(names, ast.Constant) and isinstance(names.value, str)) \
                or [n.strip() for n in names.value.split(",")] != [name]:
            continue
        if any(k.arg == "indirect" for k in decorator.keywords) or not isinstance(listed, (ast.List, ast.Tuple)):
            return None
        found = set()
        for element in listed.elts:
            if isinstance(element, ast.Call) and isinstance(element.func, ast.Attribute) \
                    and element.func.attr == "param" and element.args:
                element = element.args[0]
            if not isinstance(element, ast.Constant):
                return None
            found.add(const(element.value))
        return frozenset(found) or None
    return None
