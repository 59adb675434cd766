"""Which way a branch goes: conditions folded from the program's constants, scopes split by a
flag on Fabric's configuration, and what was decided.

A mixin of `flow.Solver`: the interpreter (flow.py) calls these methods; they read and write the
solver's tables through it."""

from __future__ import annotations

import ast

from fabric_lsp.analysis import ir
from fabric_lsp.analysis.flow_state import _case_value, _Frame, _site_key
from fabric_lsp.analysis.libraries.torch_facts import wrapper_attributes
from fabric_lsp.analysis.values import (
    Bound, Class, ConfigNode, Const, const, Container, FabricValue, Function, Instance, JUST_UNKNOWN, Lib, Module, NOTHING, Partial,
    Super, UNKNOWN, Wrapped, WrappedMethod,
)


class PythonBranches:
    """Which way a branch goes: conditions folded from the program's constants, scopes split by a
    flag on Fabric's configuration, and what was decided."""

    def _may_split(self, path: str) -> bool:
        """Does the file name anything a split could keep apart (a Fabric, a strategy, the meta
        device)? Files that do not are never split (the text is fixed while the program is)."""
        known = self._split_files.get(path)
        if known is None:
            source = getattr(self.program, "sources", {}).get(path)
            text = source.text if source is not None else ""
            known = self._split_files[path] = any(token in text for token in _SPLIT_TOKENS)
        return known

    # -- decided branches ------------------------------------------------------------------------------
    def _decide(self, test, node, frame: _Frame) -> bool | None:
        """Evaluate a branch's test; the branch taken when it is decided: by constants of the program
        (module constants, literals: the same on every run of the program), or by the case of the
        scope's split this run follows. None: both branches."""
        values = self._last_test_values = self.ev(test, frame)
        if frame.scope.name == "__init__":  # what the values say, read after the solve (Solver.branch_taken)
            constants = frozenset(v for v in values if isinstance(v, Const))
            if constants:
                self.write(("test", node), constants if len(constants) == len(values) else constants | JUST_UNKNOWN)
        static = self._static(test, frame)
        if static is not _NO:
            return bool(static)
        decider = frame.decider
        if decider is not None:
            core, polarity = _strip_not(test)
            if _condition_key(core) == decider.key:
                found = self.ev(core, frame) if core is not test else values
                kept = frozenset(v for v in found if isinstance(v, Const))
                if kept:
                    self.write(("cond", decider.node), kept if len(kept) == len(found) else kept | JUST_UNKNOWN)
                elif found:
                    self.write(("cond", decider.node), JUST_UNKNOWN)
                return _case_value(frame.variant, decider.node) == polarity
        return self.known_truth(values)

    # -- truth of the program's values ---------------------------------------------------------------------
    def known_truth(self, values: frozenset) -> bool | None:
        """The truth value every value of a test has (`self.fabric is None` where each instance got a
        Fabric; a parameter whose every caller leaves its default False; `hasattr(model, "x")` on a class
        without `x`), or None: both ways. Empty is None too: not known yet, or never known (an attribute
        only set where the analysis cannot see), so both branches are followed as before."""
        if not values:
            return None
        found = None
        for value in values:
            truth = self.truth_of(value)
            if truth is None or (found is not None and truth != found):
                return None
            found = truth
        return found

    def truth_of(self, value) -> bool | None:
        """`bool(value)` when the value says it: a constant, or an object whose class defines neither
        `__bool__` nor `__len__` (a Fabric, a wrapped model, a function, a class, a module, an instance of
        a project class whose bases are all read); None otherwise."""
        if isinstance(value, Const):
            return bool(value.value)
        if isinstance(value, _ALWAYS_TRUE):
            return True
        if isinstance(value, Instance) and isinstance(value.cls, Class) and not value.cls.external:
            return True if self._plain_truth(value.cls) else None
        if isinstance(value, ConfigNode):
            return self.config_truth(value)
        return None

    def _plain_truth(self, cls: Class) -> bool:
        """Is every instance of `cls` true: its MRO is known and no class of it defines `__bool__` or
        `__len__` (nn.Sequential and nn.ModuleList do: an empty one is false)?"""
        if not self._mro_complete(cls):
            return False
        for ref in self.mro(cls):
            if isinstance(ref, Class):
                if ref.external:
                    return False
                if self._ask("class_binds", ref, "__bool__") or self._ask("class_binds", ref, "__len__"):
                    return False
            elif not (isinstance(ref, Lib) and ref.qualified in _TRUE_BASES):
                return False
        return True

    # -- the program's Fabric-less mode -------------------------------------------------------------------
    def fabric_absent_arm(self, test: tuple, frame: _Frame) -> bool | None:
        """Which arm of a test on an optional Fabric runs without it: `if self.fabric is None:`, `if not fabric:`,
        `... if self.fabric is None else self.fabric.backward(loss)` (True: the true arm, False: the false arm,
        None: not such a test). A value that is a Fabric on some ways and None on others is the program's
        Fabric-less mode: the objects built without a Fabric take that arm, and which models they are given
        (one summary per class and function) cannot be told, so a wrapped model there is unknown."""
        kind, polarity = test[0], True
        while kind == "not":
            test, polarity, kind = test[1], not polarity, test[1][0]
        if not self._names_fabric(frame.scope.path):
            return None
        if kind == "compare" and len(test[2]) == 1 and test[2][0][1] == ("const", None) and test[2][0][0] in ("Is", "IsNot"):
            operand, none_arm = test[1], (test[2][0][0] == "Is") == polarity
        elif kind in ("attr", "name"):
            operand, none_arm = test, not polarity
        else:
            return None
        if not _pure_chain(operand):
            return None
        values = self.ev(operand, frame)
        if _NONE_VALUE in values and any(isinstance(v, FabricValue) for v in values) \
                and all(isinstance(v, FabricValue) or v == _NONE_VALUE for v in values):
            return none_arm
        return None

    def _names_fabric(self, path: str) -> bool:
        """Does the file's text name a Fabric at all (`fabric`, `Fabric`, `LightningLite`)? Only there can a
        test be on an optional Fabric."""
        known = self.__dict__.setdefault("_fabric_files", {})
        found = known.get(path)
        if found is None:
            source = getattr(self.program, "sources", {}).get(path)
            text = source.text if source is not None else ""
            found = known[path] = "abric" in text or "Lite" in text
        return found

    def has_attribute(self, value, name: str) -> bool | None:
        """`hasattr(value, name)`: True or False when the program says, None when it cannot be told.
        On a Fabric-wrapped model the name is looked up on the wrapper, then on the original module
        (Lightning's `_FabricModule.__getattr__`): False for a name the model's class lacks."""
        if isinstance(value, Wrapped):
            if name in _WRAPPER_NAMES or name in wrapper_attributes():
                return True
            inner = self.read(("setup_module", _site_key(value.site, value.variant)))
            return self.known_truth(frozenset(const(has) if has is not None else UNKNOWN
                                              for has in (self.has_attribute(v, name) for v in inner)))
        if not (isinstance(value, Instance) and isinstance(value.cls, Class) and not value.cls.external):
            return None
        cls = value.cls
        owner, _ = self.lookup_class_attribute(cls, name)
        if owner is not None:
            return True
        if any(self.read(("field", ref, name)) for ref in self.mro(cls) if isinstance(ref, Class)):
            return True
        if self._ask("attribute_assigned", name) or not self._mro_complete(cls):
            return None  # set somewhere on an object the analysis may not place (`obj.x = ...`, `setattr`)
        for ref in self.mro(cls):
            if isinstance(ref, Class) and ref.external:
                return None
            if isinstance(ref, Lib) and not _attributes_known(ref.qualified):
                return None
        return False

    def _static(self, expr, frame: _Frame):
        """The value of an expression made of literals and module constants (names bound once, to a
        literal, and never rebound anywhere in the program: `program.module_constant`), or _NO."""
        kind = expr[0]
        if kind == "const":
            return expr[1]
        if kind == "name":
            path = self._global_path(expr[1], frame)
            if path is None:
                return _NO
            found = self._ask("module_constant", path, expr[1])
            return found[0] if found is not None else _NO
        if kind == "not":
            inner = self._static(expr[1], frame)
            return _NO if inner is _NO else (not inner)
        if kind == "unary":
            inner = self._static(expr[2], frame)
            return _NO if inner is _NO else _unary(expr[1], inner)
        if kind == "compare":
            values = [self._static(expr[1], frame)] + [self._static(right, frame) for _, right in expr[2]]
            if any(v is _NO for v in values):
                return _NO
            return _compare_chain(values, [op for op, _ in expr[2]])
        if kind == "boolop":
            passing = expr[1] == "and"
            operands = expr[2]
            for operand in operands[:-1]:
                value = self._static(operand, frame)
                if value is _NO:
                    return _NO
                if bool(value) != passing:
                    return value
            return self._static(operands[-1], frame)
        if kind == "ifexp":
            test = self._static(expr[1], frame)
            if test is _NO:
                return _NO
            return self._static(expr[2] if test else expr[3], frame)
        return _NO

    def _global_path(self, name: str, frame: _Frame) -> str | None:
        """The module whose global `name` a read in this frame means (None: a local or a closure)."""
        scope = frame.scope
        if scope.kind == ir.MODULE:
            return scope.path
        if scope.kind == ir.CLASS:
            if name in frame.env:
                return None
        elif name in scope.declared_global:
            return scope.path
        elif name in scope.assigned:
            return None
        enclosing = scope.parent
        while enclosing is not None and enclosing.kind in (ir.FUNCTION, ir.LAMBDA):
            if name in enclosing.assigned and name not in enclosing.declared_global:
                return None
            enclosing = enclosing.parent
        return scope.path

    def branch_taken(self, node, outcome: bool) -> bool:
        """After the solve: may the test at `node` (in an `__init__`) be `outcome`? False only when
        every value the program gives it is a constant of the other truth value (a flag whose default
        is off)."""
        values = self.peek(("test", node))
        return not values or UNKNOWN in values or any(_truth(v) == outcome for v in values)

    def test_chosen_at_run_time(self, node) -> bool:
        """After the solve: does the test at `node` (in an `__init__`) take a value the program does not
        state (a command-line flag, a config read at run time), or none the solve saw?"""
        values = self.peek(("test", node))
        return not values or UNKNOWN in values

    def feasible(self, variant) -> bool:
        """After the solve: can the program's values take this case of a split? (A case whose
        condition only ever holds constants of the other truth value is a branch never taken.)"""
        for node, outcome in variant or ():
            if not isinstance(outcome, bool):
                continue  # an iteration over literal keys: each of them runs
            values = self.peek(("cond", node))
            if values and UNKNOWN not in values and not any(_truth(v) == outcome for v in values):
                return False
        return True

    def _when(self, variant, path: str | None) -> str:
        """"when `args.distributed` is true": the flag of a case chosen at run time, for messages."""
        parts = []
        for node, outcome in variant or ():
            if isinstance(outcome, bool) and self.feasible(((node, not outcome),)) and path is not None:
                core = node
                while isinstance(core, ast.UnaryOp) and isinstance(core.op, ast.Not):
                    core = core.operand  # the case's outcome is the value of the flag itself
                parts.append(f"`{self.program.segment(path, core)}` is {'true' if outcome else 'false'}")
        return ("when " + " and ".join(parts)) if parts else ""

    def chosen_at_run_time(self, variant) -> bool:
        """After the solve: is one of these cases chosen at run time (the program's values can take
        the other outcome of its flag too)?"""
        return any(isinstance(outcome, bool) and self.feasible(((node, not outcome),)) for node, outcome in variant or ())


# Objects that are true whatever they hold: their classes define neither __bool__ nor __len__.
_ALWAYS_TRUE = (FabricValue, Wrapped, WrappedMethod, Function, Bound, Class, Module, Partial, Super)
# Library bases that add no __bool__/__len__ to a project class.
_TRUE_BASES = frozenset((
    "builtins.object", "torch.nn.Module", "torch.nn.modules.module.Module", "abc.ABC", "typing.Generic",
    "lightning.LightningModule", "lightning.pytorch.LightningModule", "lightning.pytorch.core.module.LightningModule",
    "pytorch_lightning.LightningModule",
))
_WRAPPER_NAMES = frozenset(("module", "_original_module", "_forward_module", "mark_forward_method", "forward"))


_NONE_VALUE = const(None)


def _pure_chain(expr: tuple) -> bool:
    """A name or an attribute chain on one (`self.fabric`): evaluating it again reads, and runs nothing."""
    while expr[0] == "attr":
        expr = expr[1]
    return expr[0] == "name"


def _attributes_known(qualified: str) -> bool:
    """Does library_defines know every attribute of this library class (so a name it lacks is missing)?"""
    return qualified in _TRUE_BASES or qualified.startswith(("torch.nn.", "torchmetrics"))


_NO = object()  # Solver._static: not a constant of the program
_MAX_FOLDED = 64  # combinations of operand values folded at one comparison


def _truth(value) -> bool | None:
    """The truth value of a constant (None for anything else: it may be either)."""
    if isinstance(value, Const):
        return bool(value.value)
    return None


def _fold(operands: list, compute) -> frozenset:
    """An operation on sets of values, value by value: constants give the constant computed (when the
    operation is defined on them), anything else is unknown. Empty stays empty (nothing yet)."""
    if any(not values for values in operands):
        return NOTHING
    for values in operands:  # an operand with no constant: every combination is unknown
        if not any(type(value) is Const for value in values):
            return JUST_UNKNOWN
    count = 1
    for values in operands:
        count *= len(values)
    if count > _MAX_FOLDED:
        return JUST_UNKNOWN
    found = set()
    combinations = [[]]
    for values in operands:
        combinations = [chosen + [value] for chosen in combinations for value in values]
    for chosen in combinations:
        if not all(isinstance(value, Const) for value in chosen):
            found.add(UNKNOWN)
            continue
        result = compute([value.value for value in chosen])
        found.add(UNKNOWN if result is _NO else const(result))
    return frozenset(found)


_SINGLETONS = (None, True, False)


def _compare(op: str, left, right):
    try:
        if op == "Eq":
            return left == right
        if op == "NotEq":
            return left != right
        if op in ("Is", "IsNot"):
            if left in _SINGLETONS and type(left) is not int or right in _SINGLETONS and type(right) is not int:
                same = left is right
                return same if op == "Is" else not same
            return _NO
        if op in ("In", "NotIn"):
            if isinstance(right, str) and isinstance(left, str):
                return (left in right) if op == "In" else (left not in right)
            return _NO
        if isinstance(left, (int, float)) and isinstance(right, (int, float)) or isinstance(left, str) and isinstance(right, str):
            return {"Lt": left < right, "LtE": left <= right, "Gt": left > right, "GtE": left >= right}.get(op, _NO)
    except Exception:  # noqa: BLE001 - a comparison the program would fail on: not a constant
        return _NO
    return _NO


def _compare_chain(values: list, ops: list):
    """`a < b < c` on constants: True, False, or _NO when one comparison is not defined on them."""
    result = True
    for op, left, right in zip(ops, values, values[1:]):
        step = _compare(op, left, right)
        if step is _NO:
            return _NO
        if not step:
            return False
    return result


def _unary(op: str, value):
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if op == "USub":
            return -value
        if op == "UAdd":
            return value
        if op == "Invert" and isinstance(value, int):
            return ~value
    if op == "Not":
        return not value
    return _NO


def _strip_not(test: tuple) -> tuple[tuple, bool]:
    """(the test without its leading `not`s, whether the branch is taken when that is true)."""
    polarity = True
    while test[0] == "not":
        test = test[1]
        polarity = not polarity
    return test, polarity


def _condition_key(expr: tuple):
    """A structural key for a test that reads the same value wherever it is written in one scope:
    a name, an attribute chain or a literal subscript of one (`args.model_parallel`, `cfg["fsdp"]`),
    or a comparison of these with literals; None for anything else (calls may differ each time)."""
    kind = expr[0]
    if kind == "name":
        return ("name", expr[1])
    if kind == "const":
        return ("const", type(expr[1]).__name__, expr[1])
    if kind == "attr":
        inner = _condition_key(expr[1])
        return None if inner is None or inner[0] == "const" else ("attr", inner, expr[2])
    if kind == "sub":
        inner, index = _condition_key(expr[1]), _condition_key(expr[2])
        if inner is None or inner[0] == "const" or index is None or index[0] != "const":
            return None
        return ("sub", inner, index)
    if kind == "compare":
        parts = [_condition_key(expr[1])] + [_condition_key(right) for _, right in expr[2]]
        if any(part is None for part in parts) or all(part[0] == "const" for part in parts):
            return None
        return ("compare", tuple(parts), tuple(op for op, _ in expr[2]))
    return None


def _condition_roots(key) -> set[str]:
    if key[0] == "name":
        return {key[1]}
    if key[0] in ("attr", "sub"):
        return _condition_roots(key[1])
    if key[0] == "compare":
        return set().union(*(_condition_roots(part) for part in key[1] if part[0] != "const"))
    return set()


# Calls and literals that make a branch matter to the rules: it builds a Fabric or a strategy,
# chooses a device, the meta device or `empty_init`, sets a model up or marks a method.
_RELEVANT_CALLS = frozenset((
    "init_module", "device", "set_default_device", "setup", "setup_module", "mark_forward_method", "compile",
    "_materialize_meta_tensors", "_materialize_distributed_module", "FullyShardedDataParallel",
))
_SPLIT_TOKENS = ("Fabric", "Lite", "Strategy", "strategy", "init_module", "meta", "set_default_device", "materialize")
_RELEVANT_KEYWORDS = frozenset(("strategy", "devices", "num_nodes", "empty_init", "accelerator"))
_RELEVANT_STRINGS = frozenset((
    "ddp", "ddp_spawn", "ddp_fork", "ddp_notebook", "fsdp", "deepspeed", "dp", "model_parallel", "xla", "xla_fsdp",
    "meta", "single_device", "auto", "cpu", "cuda", "gpu",
))


class _Decider(tuple):
    """The condition one scope's interpretation is split on: (structural key, its first test node,
    the condition as an expression)."""

    __slots__ = ()
    key = property(lambda self: self[0])
    node = property(lambda self: self[1])
    expression = property(lambda self: self[2])


def _decider(scope: ir.Scope):
    """The condition that decides the most branches of `scope` (two or more) of which one matters
    to the rules (`if use_model_parallel:` that chooses the strategy, then the meta device), or None. Read from
    the scope's own statements (not nested scopes), so it is the same on every run: the split is
    static and the interpretation stays monotone. A condition whose names are bound again after
    its first test, or inside a loop, is not one value and is not split on."""
    cached = scope.__dict__.get("_fabric_lsp_decider", False)
    if cached is not False:
        return cached
    tests: dict = {}  # key -> [count, first position, first node, relevant, expression]
    bindings: list[tuple[int, str, bool]] = []  # (position, root name, inside a loop)
    position = [0]

    def bind(pattern, in_loop: bool) -> None:
        kind = pattern[0]
        if kind == "name":
            bindings.append((position[0], pattern[1], in_loop))
        elif kind in ("attr", "sub"):
            root = pattern[1]
            while root[0] in ("attr", "sub"):
                root = root[1]
            if root[0] == "name":
                bindings.append((position[0], root[1], in_loop))
        elif kind in ("tuple",):
            for inner in pattern[1]:
                bind(inner, in_loop)
        elif kind == "star":
            bind(pattern[1], in_loop)

    def test(expr, node, branches, in_loop) -> None:
        core, _ = _strip_not(expr)
        key = _condition_key(core)
        if key is None or key[0] == "const" or any(name.startswith("__") for name in _condition_roots(key)):
            return  # `if __name__ == "__main__":` chooses nothing the rules read
        entry = tests.setdefault(key, [0, position[0], node, [], core])
        entry[0] += 1
        entry[3].extend(branches)  # whether one of them matters is read only for conditions tested twice

    def walk_expr(expr, in_loop) -> None:
        # Conditional expressions where a statement writes them (`x = a if c else b`, `return ...`)
        # or as an argument (`Fabric(strategy="ddp" if c else "auto")`): a shallow look, not a
        # walk of every expression (this runs for every scope of the program).
        position[0] += 1
        kind = expr[0]
        if kind == "ifexp":
            test(expr[1], expr[4], (expr[2], expr[3]), in_loop)
        elif kind == "walrus":
            bindings.append((position[0], expr[1], in_loop))
        elif kind == "call":
            for argument in expr[2]:
                if argument[0] == "ifexp":
                    test(argument[1], argument[4], (argument[2], argument[3]), in_loop)
            for _, argument in expr[3]:
                if argument[0] == "ifexp":
                    test(argument[1], argument[4], (argument[2], argument[3]), in_loop)

    def walk(statements, in_loop: bool) -> None:
        for statement in statements:
            position[0] += 1
            kind = statement[0]
            if kind == "assign":
                walk_expr(statement[2], in_loop)
                for target in statement[1]:
                    bind(target, in_loop)
            elif kind == "aug":
                walk_expr(statement[2], in_loop)
                bind(statement[1], in_loop)
            elif kind in ("expr", "return"):
                if statement[1] is not None:
                    walk_expr(statement[1], in_loop)
            elif kind == "if":
                walk_expr(statement[1], in_loop)
                test(statement[1], statement[4], (statement[2], statement[3]), in_loop)
                walk(statement[2], in_loop)
                walk(statement[3], in_loop)
            elif kind in ("for", "while"):
                walk_expr(statement[2] if kind == "for" else statement[1], in_loop)
                if kind == "for":
                    bind(statement[1], True)
                walk(statement[3] if kind == "for" else statement[2], True)
                walk(statement[4] if kind == "for" else statement[3], in_loop)
            elif kind == "with":
                for context, target in statement[1]:
                    walk_expr(context, in_loop)
                    if target is not None:
                        bind(target, in_loop)
                walk(statement[2], in_loop)
            elif kind == "try":
                walk(statement[1], in_loop)
                for name, body in statement[2]:
                    if name:
                        bindings.append((position[0], name, in_loop))
                    walk(body, in_loop)
                walk(statement[3], in_loop)
                walk(statement[4], in_loop)
            elif kind == "match":
                walk_expr(statement[1], in_loop)
                for body in statement[2]:
                    walk(body, in_loop)
            elif kind in ("def", "class"):
                bindings.append((position[0], statement[1], in_loop))
            elif kind == "import":
                for dotted, asname in statement[1]:
                    bindings.append((position[0], asname or dotted.split(".")[0], in_loop))
            elif kind == "from":
                for name, asname in statement[3]:
                    bindings.append((position[0], asname or name, in_loop))

    walk(scope.body, False)
    best = None
    for key, (count, first, node, branches, core) in tests.items():
        if count < 2:
            continue  # one branch alone keeps nothing apart: the cases only matter when it decides two
        roots = _condition_roots(key)
        if any(name in roots and (in_loop or where > first) for where, name, in_loop in bindings):
            continue
        if not any(_relevant(branch) for branch in branches):
            continue
        rank = (-count, first)
        if best is None or rank < best[0]:
            best = (rank, _Decider((key, node, core)))
    found = best[1] if best is not None else None
    scope.__dict__["_fabric_lsp_decider"] = found
    return found


def _relevant(branch) -> bool:
    """Does a branch (statements or an expression) build or choose something the rules read?"""
    pending = [branch]
    seen = 0
    while pending and seen < 5000:
        seen += 1
        item = pending.pop()
        if isinstance(item, ir.Scope) or isinstance(item, ast.AST) or not isinstance(item, (tuple, list)):
            continue
        if isinstance(item, tuple) and item and isinstance(item[0], str):
            kind = item[0]
            if kind == "call":
                func = item[1]
                name = func[2] if func[0] == "attr" else func[1] if func[0] == "name" else ""
                if isinstance(name, str) and (name in _RELEVANT_CALLS or name.endswith(("Strategy", "Fabric"))
                                              or name == "LightningLite"):
                    return True
                if any(keyword in _RELEVANT_KEYWORDS for keyword, _ in item[3]):
                    return True
            elif kind == "const" and isinstance(item[1], str):
                if item[1] in _RELEVANT_STRINGS or item[1].startswith(("ddp_", "fsdp_", "deepspeed_")):
                    return True
                continue
            elif kind in ("def", "class", "lambda"):
                continue
        pending.extend(item)
    return False
