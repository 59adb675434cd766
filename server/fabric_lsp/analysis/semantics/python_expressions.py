"""Python expressions: constants, names, attributes, subscripts, containers, operators,
comprehensions, f-strings; iteration over values.

A mixin of `flow.Solver`: the interpreter (flow.py) calls these methods; they read and write the
solver's tables through it."""

from __future__ import annotations

import ast

from fabric_lsp.analysis.flow_state import _chain, _dict_site, _NONE_CONST, ANY_KEY, MAX_CONSTANTS
from fabric_lsp.analysis.semantics.python import _MAX_UNROLLED
from fabric_lsp.analysis.semantics.python_branches import _compare_chain, _fold, _NO, _truth, _unary
from fabric_lsp.analysis.semantics.python_classes import _is_generic_class
from fabric_lsp.analysis.values import (
    Choice,
    Class,
    ConfigNode,
    Const,
    const,
    SHARED_CONST_KINDS,
    Container,
    Function,
    JUST_UNKNOWN,
    Lib,
    NOTHING,
    Output,
    Special,
    UNKNOWN,
    Unknown,
)


def _none_identity(operands: list, op: str) -> frozenset | None:
    """`x is None` / `x is not None` where x holds objects as well as constants: an object of the program
    (an instance, a Fabric, a wrapped model, a function...) is never None. None when it does not apply
    (no `None` side, or values that may be None: unknown, a library name)."""
    left, right = operands
    if right == _NONE_SET:
        values = left
    elif left == _NONE_SET:
        values = right
    else:
        return None
    if not values or all(type(v) is Const for v in values):
        return None  # constants alone: _fold says
    found = set()
    for value in values:
        if type(value) is Const:
            same = value.value is None
        elif isinstance(value, (Unknown, Lib, Choice)):
            return None
        else:
            same = False
        found.add(const(same if op == "Is" else not same))
    return frozenset(found)


_NONE_SET = frozenset({_NONE_CONST})
_ENVIRON_LIB = Lib("os.environ")
_ENVIRON = frozenset({_ENVIRON_LIB})


class PythonExpressions:
    """Python expressions: constants, names, attributes, subscripts, containers, operators,
    comprehensions, f-strings; iteration over values."""

    def _e_annotated(self, expr, frame) -> frozenset:
        """`x: T = value`: where the value is unknown, an instance of T (Instance.declared says so)."""
        _, value_expr, annotation, node, target = expr
        values = self.ev(value_expr, frame)
        if UNKNOWN not in values:
            return values
        declared = self._declared(self.ev(annotation, frame), frame.scope.path, node, f"`{target}`")
        return (values - JUST_UNKNOWN) | declared if declared else values

    def _e_const(self, expr, frame) -> frozenset:
        value = expr[1]
        kind = type(value)
        if kind not in SHARED_CONST_KINDS:
            return frozenset({const(value)})
        found = self._const_sets.get((kind, value))
        if found is None:
            found = self._const_sets[(kind, value)] = frozenset({const(value)})
        return found

    def _e_name(self, expr, frame) -> frozenset:
        return self._lookup(expr[1], frame)

    def _e_attr(self, expr, frame) -> frozenset:
        objects = self.ev(expr[1], frame)
        if frame.written:
            chain = _chain(expr)
            if chain is not None:
                written = frame.written.get(("path", chain[0], chain[1]))
                if written is not None:
                    return written
        return self.attribute(objects, expr[2], expr[3], frame)

    def _e_sub(self, expr, frame) -> frozenset:
        objects = self.ev(expr[1], frame)
        keys = self.ev(expr[2], frame)
        if frame.written and len(objects) == 1 and len(keys) == 1:
            (obj,), (key,) = objects, keys
            if isinstance(obj, Container) and isinstance(key, Const):
                written = frame.written.get(("site", obj.site, key))
                if written is not None:
                    return written
        return self.subscript(objects, keys)

    def _e_tuple(self, expr, frame) -> frozenset:
        # A tuple display is a container of its own (keyed by its node): values never embed sets,
        # so they keep their identity while what they hold grows.
        return self._sequence(expr[1], expr[2], frame)

    def _e_list(self, expr, frame) -> frozenset:
        return self._sequence(expr[1], expr[2], frame)

    def _sequence(self, elements, site, frame) -> frozenset:
        container = Container(site, frame.scope.path)
        starred = False
        for index, element in enumerate(elements):
            if element[0] == "star":
                values = self.iter_values(self.ev(element[1], frame))
                self.write(("element", site, ANY_KEY), values)
                self.write(("elements", site), values)
                starred = True
                continue
            values = self.ev(element, frame)
            self.write(("element", site, const(index) if not starred else ANY_KEY), values)
            self.write(("elements", site), values)
        return frozenset({container})

    def _e_dict(self, expr, frame) -> frozenset:
        site = expr[2]
        container = Container(site, frame.scope.path)
        if not frame.in_loop:
            frame.fresh = frame.fresh | {("site", site)}
        for key_expr, value_expr in expr[1]:
            values = self.ev(value_expr, frame)
            if key_expr is None:  # {**other}
                for other in values:
                    if isinstance(other, Container):
                        self.write(("element", site, ANY_KEY), self.read(("elements", other.site)))
                        self.write(("elements", site), self.read(("elements", other.site)))
                continue
            keys = self.ev(key_expr, frame)
            self._store_element(container, keys, values)
        return frozenset({container})

    def _e_ifexp(self, expr, frame) -> frozenset:
        _, test, body, orelse, node = expr
        taken = self._decide(test, node, frame)
        if taken is not None:
            return self.ev(body if taken else orelse, frame)
        guards, excluded = frame.guards, frame.excluded
        when_true, when_false = self.arm_guards(test, self._last_test_values)
        absent = self.fabric_absent_arm(test, frame)
        condition = self.choice_condition(test, self._last_test_values) if when_true or when_false else None
        frame.guards = guards + (when_true,) if when_true else guards
        frame.excluded = excluded or absent is True
        taken = self.ev(body, frame)
        frame.guards = guards + (when_false,) if when_false else guards
        frame.excluded = excluded or absent is False
        other = self.ev(orelse, frame)
        frame.guards, frame.excluded = guards, excluded
        # `GradScaler() if args.amp else None`: what makes the value not None, for a later `if scaler is not None:`
        self._none_condition = (condition if other == _NONE_SET and _NONE_CONST not in taken else
                                condition.negated() if condition is not None and taken == _NONE_SET
                                and _NONE_CONST not in other else None)
        return taken | other

    def _e_boolop(self, expr, frame) -> frozenset:
        """`a or b`, `a and b`: every operand may be the result, except an operand whose constants
        pass evaluation on (a falsy constant before `or`, a truthy one before `and`); a program
        constant that decides the result ends it (`DEBUG and x` with DEBUG = False is False)."""
        _, op, operands, _node = expr
        passing = op == "and"  # the truth value that moves evaluation to the next operand
        found = NOTHING
        last = len(operands) - 1
        parts = []
        for index, operand in enumerate(operands):
            static = self._static(operand, frame)
            values = self.ev(operand, frame)
            parts.append(values)
            if index == last:
                self._test_parts[id(expr)] = parts  # each operand's values, for the branch it decides
                return found | values
            if static is not _NO:
                if bool(static) != passing:
                    return found | values
                continue
            truth = self.known_truth(values)
            if truth is not None and truth != passing:
                return found | values  # `cfg["every"] and step % cfg["every"] == 0` with every = 0: it ends here
            found = found | frozenset(v for v in values if not (isinstance(v, Const) and _truth(v) == passing))
        return found

    def _e_compare(self, expr, frame) -> frozenset:
        _, left, pairs, _node = expr
        operands = [self.ev(left, frame)] + [self.ev(right, frame) for _, right in pairs]
        if len(pairs) == 1:
            op = pairs[0][0]
            if op in ("In", "NotIn") and operands[1] == _ENVIRON:
                # `"X" in os.environ`: set or not is the choice (unset on the default run)
                return frozenset(Choice("env", v.value, const(op == "NotIn"), ops=((("IsNot" if op == "In" else "Is"), None),))
                                 if isinstance(v, Const) and v.kind == "str" else UNKNOWN for v in operands[0]) | JUST_UNKNOWN
            chosen = self.choice_compare(operands, op)
            if chosen is not None:
                return chosen | _fold(operands, lambda values: _compare_chain(values, [op]))
            if op in ("Is", "IsNot"):
                identity = _none_identity(operands, op)
                if identity is not None:
                    return identity
        return _fold(operands, lambda values: _compare_chain(values, [op for op, _ in pairs]))

    def _e_not(self, expr, frame) -> frozenset:
        values = self.ev(expr[1], frame)
        if any(isinstance(v, Choice) for v in values):
            return self.choice_not(values) | _fold([values], lambda values: not values[0])
        truth = self.known_truth(values) if values and not all(type(v) is Const for v in values) else None
        if truth is not None:
            return frozenset({const(not truth)})  # `not self.fabric`: a Fabric is true
        return _fold([values], lambda values: not values[0])

    def _e_unary(self, expr, frame) -> frozenset:
        op = expr[1]
        values = self.ev(expr[2], frame)
        outputs = frozenset(v for v in values if isinstance(v, Output))  # `-log_likelihood`
        found = _fold([values], lambda values: _unary(op, values[0]))
        return found | outputs | JUST_UNKNOWN if outputs else found

    def _e_walrus(self, expr, frame) -> frozenset:
        values = self.ev(expr[2], frame)
        self.assign(("name", expr[1]), values, frame)
        return values

    def _e_lambda(self, expr, frame) -> frozenset:
        child = expr[1]
        self._define(child, frame)
        return frozenset({Function(child)})

    def _e_fstr(self, expr, frame) -> frozenset:
        """The strings an f-string can make from the constants its parts hold (`f"{stage}_fast"` with
        `stage` from a literal tuple); unknown past MAX_CONSTANTS of them or for a part that is not a
        string or an integer constant."""
        texts = {""}
        unknown = False
        for part in expr[1]:
            values = self.ev(part, frame)
            pieces = set()
            for value in values:
                if isinstance(value, Const) and value.kind in ("str", "int"):
                    pieces.add(str(value.value))
                else:
                    unknown = True
            if unknown or not pieces:
                unknown = True
                continue
            texts = {text + piece for text in texts for piece in pieces}
            if len(texts) > MAX_CONSTANTS:
                unknown = True
        if unknown:
            return JUST_UNKNOWN
        return frozenset(const(text) for text in texts)

    def _e_arith(self, expr, frame) -> frozenset:
        """`a + b`, `-a`: unknown, carrying the wrapped model's outputs among the operands."""
        found = set()
        for inner in expr[1]:
            found.update(self._outputs_in(inner, frame))
        return frozenset(found) | JUST_UNKNOWN

    def _e_unknown(self, expr, frame) -> frozenset:
        for inner in expr[1]:
            self.ev(inner, frame)
        return JUST_UNKNOWN

    def _e_comp(self, expr, frame) -> frozenset:
        _, kind, element, generators, node = expr
        if kind == "dict" and len(generators) == 1:
            target, iterable, conditions = generators[0]
            iterated = self.ev(iterable, frame)
            iterations = self._literal_iterations(iterated) if self._may_unroll(element) else None
            if iterations is not None:  # `{name: fabric.setup(m) for name, m in models.items()}`: key by key
                container = Container(node, frame.scope.path)
                for case, values in iterations:
                    inner = frame.fork()
                    inner.variant = (frame.variant or ()) + (case,)
                    self.assign(target, values, inner)
                    for condition in conditions:
                        self.ev(condition, inner)
                    self._store_element(container, self.ev(element[1][0], inner), self.ev(element[1][1], inner))
                    frame.marked = frame.marked | inner.marked
                return frozenset({container})
        inner = frame.fork()
        for target, iterable, conditions in generators:
            self.assign(target, self.iter_values(self.ev(iterable, inner)), inner)
            for condition in conditions:
                self.ev(condition, inner)
        container = Container(node, frame.scope.path)
        if kind == "dict":  # element: ("tuple", (key, value))
            keys = self.ev(element[1][0], inner)
            self._store_element(container, keys, self.ev(element[1][1], inner))
        else:
            values = self.ev(element, inner)
            self.write(("element", node, ANY_KEY), values)
            self.write(("elements", node), values)
        frame.marked = frame.marked | inner.marked
        return frozenset({container})

    # -- subscripts and iteration ---------------------------------------------------------------------------
    def subscript(self, objects: frozenset, keys: frozenset) -> frozenset:
        found = set()
        for obj in objects:
            if isinstance(obj, Class) or (isinstance(obj, Lib) and _is_generic_class(obj.qualified)):
                # `Trainer[PPOConfig]`: a generic alias, which a class statement subclasses and a call
                # instantiates as the class itself (`class PPOTrainer(Trainer[PPOConfig])`).
                found.add(obj)
            elif isinstance(obj, Container):
                for key in keys:
                    if isinstance(key, Const):
                        found.update(self.read(("element", obj.site, key)))
                        found.update(self.read(("element", obj.site, ANY_KEY)))
                    else:
                        found.update(self.read(("elements", obj.site)))
            elif isinstance(obj, ConfigNode):
                found.update(self.config_subscript(obj, keys))
            elif obj == _ENVIRON_LIB:
                found.update(self.environment_item(keys))  # `os.environ["X"]`
            elif obj == _NONE_CONST:
                continue  # `None[k]` raises: nothing flows from it (every function may return None, see `_NONE`)
            else:
                if isinstance(obj, Output):
                    found.add(obj)  # `out[0]`, `out["loss"]`
                found.add(UNKNOWN)
        return frozenset(found)

    def _literal_iterations(self, values: frozenset) -> list[tuple] | None:
        """(the case, what it yields) for each iteration over a display with literal keys, in order: the items of
        `{"actor": a, "critic": c}.items()` as (key, value) pairs, the keys of such a dict, the
        elements of `("student", "teacher")`; None for anything else. A loop over them is followed
        one iteration at a time, so each key keeps its own value (what it writes is what the loop
        over all of them at once writes, key by key: the fixed point only grows)."""
        if len(values) != 1:
            return None
        (value,) = values
        items = isinstance(value, Special) and value.kind == "items" and isinstance(value.receiver, Container)
        container = value.receiver if items else value
        if not isinstance(container, Container):
            return None
        site = container.site
        if self.read(("element", site, ANY_KEY)):
            return None
        if _dict_site(site):
            keys = self.ordered(self.read(("keys", site)))
            if not keys or len(keys) > _MAX_UNROLLED or not all(isinstance(key, Const) for key in keys):
                return None
            if not items:
                return [((site, key), frozenset({key})) for key in keys]
            found = []
            for key in keys:
                pair = (site, "item", key)
                item = self.read(("element", site, key))
                self.write(("element", pair, const(0)), frozenset({key}))
                self.write(("element", pair, const(1)), item)
                self.write(("elements", pair), frozenset({key}) | item)
                found.append(((site, key), frozenset({Container(pair, container.path)})))
            return found
        if items or not isinstance(site, (ast.List, ast.Tuple)) or not site.elts or len(site.elts) > _MAX_UNROLLED \
                or any(isinstance(e, ast.Starred) for e in site.elts):
            return None
        found = [((site, const(index)), self.read(("element", site, const(index)))) for index in range(len(site.elts))]
        return found if all(values for _, values in found) else None

    def iter_values(self, values: frozenset) -> frozenset:
        found = set()
        for value in values:
            if isinstance(value, Container):
                found.update(self.read(("elements", value.site)))
            elif isinstance(value, Special) and value.kind in ("items", "enumerate", "zip"):
                found.add(self._pairs(value))
            else:
                if isinstance(value, Output):
                    found.add(value)
                found.add(UNKNOWN)
        return frozenset(found)

    def _pairs(self, special: Special) -> Container:
        """What iterating `d.items()`, `enumerate(x)`, `zip(a, b)` yields: one tuple per site, whose
        positions hold what the iterated containers hold."""
        site = (special.receiver, special.kind)
        pair = Container(site, special.extra)
        if special.kind == "items":
            parts = [JUST_UNKNOWN, self.read(("elements", special.receiver.site))]
        elif special.kind == "enumerate":
            parts = [JUST_UNKNOWN, self.iter_values(self.read(("iterable", special.receiver, 0)))]
        else:
            count = self.read(("arity", special.receiver))
            width = max((v.value for v in count if isinstance(v, Const)), default=0)
            parts = [self.iter_values(self.read(("iterable", special.receiver, index))) for index in range(width)]
        for index, values in enumerate(parts):
            self.write(("element", site, const(index)), values)
            self.write(("elements", site), values)
        return pair
