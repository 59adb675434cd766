"""Values chosen when the program is started: command-line options (argparse), environment variables,
and what the program computes from them; and which branches such a value guards.

The severity policy (DESIGN.md, Severity) tells a path the default run takes (no option given, no
variable set: an error when the strategy stated in the code raises there) from a path taken only under
a run-time choice (a warning that names the choice: "when run with `--sample`"). So a value read from
`args.sample` or `os.environ.get("USE_DDP")` is a `Choice`: it carries its default run's value and how to
name it, and it always travels with UNKNOWN, so that every other question still sees "unknown".

A branch whose test is made of choices (and constants) has a default arm, which the default run takes,
and an arm taken only under the choice: the frame carries that choice's phrase into the arm (`_Frame.guards`)
and every event made there records it; a call made there records it on its "enter" event, so that a
function called only under a choice is known to run only then (facts.py, `RunChoiceReach`).

A mixin of `flow.Solver`: the interpreter (flow.py) calls these methods; they read and write the
solver's tables through it."""

from __future__ import annotations

import ast

from fabric_lsp.analysis.flow_state import _Call
from fabric_lsp.analysis.values import Choice, Const, const, Container, JUST_UNKNOWN, NOTHING, Special, UNKNOWN, Unknown

_COMPARISONS = frozenset(("Eq", "NotEq", "Lt", "LtE", "Gt", "GtE", "In", "NotIn", "Is", "IsNot"))
_NEGATED = {"Eq": "NotEq", "NotEq": "Eq", "Lt": "GtE", "GtE": "Lt", "Gt": "LtE", "LtE": "Gt", "In": "NotIn",
            "NotIn": "In", "Is": "IsNot", "IsNot": "Is"}
_SYMBOLS = {"Lt": "<", "LtE": "<=", "Gt": ">", "GtE": ">="}
_CONVERSIONS = {"builtins.int": int, "builtins.float": float, "builtins.str": str, "builtins.bool": bool}
_STRING_METHODS = frozenset(("lower", "upper", "strip", "casefold"))
_ENVIRONMENT_GETTERS = frozenset(("os.environ.get", "os.getenv", "os.environ.setdefault"))
_PARSER_GROUPS = frozenset(("add_argument_group", "add_mutually_exclusive_group"))
# argparse actions that store a constant when the option is given: (the default when none is given).
_SWITCHES = {"store_true": False, "store_false": True}
_MAX_OPS = 4  # operations recorded on one choice (`int(os.environ.get("X", "0")) == 1` is two)


class RunChoices:
    """Command-line options, environment variables and the branches they guard."""

    # -- argparse ----------------------------------------------------------------------------------------
    def _run_choice_call(self, name: str, call: _Call) -> frozenset | None:
        """What a library call returns when it makes or reads a run-time choice; None: not one of them."""
        if name == "argparse.ArgumentParser":
            return frozenset({Special("argparser", None, call.node)})
        if name in _ENVIRONMENT_GETTERS:
            return self._environment_value(call.positional(0) | call.keyword("key"),
                                           call.positional(1) | call.keyword("default") if len(call.args) > 1
                                           or call.keyword("default") else frozenset({const(None)}))
        if name in _CONVERSIONS and len(call.args) == 1 and not call.kwargs:
            values = call.positional(0)
            if any(isinstance(v, Choice) for v in values):
                convert = _CONVERSIONS[name]
                return frozenset(_derived(v, (name.rsplit(".", 1)[1],), lambda d: convert(d)) if isinstance(v, Choice)
                                 else _converted(v, convert) for v in values) | JUST_UNKNOWN
        return None

    def _environment_value(self, keys: frozenset, defaults: frozenset) -> frozenset:
        found = set()
        for key in keys:
            if not (isinstance(key, Const) and key.kind == "str"):
                found.add(UNKNOWN)
                continue
            for default in defaults or frozenset({const(None)}):
                found.add(Choice("env", key.value, default if isinstance(default, Const) else None))
        return frozenset(found) | JUST_UNKNOWN

    def environment_item(self, keys: frozenset) -> frozenset:
        """`os.environ["X"]`: the variable's value (no default: a run without it raises KeyError)."""
        return frozenset(Choice("env", k.value, None) if isinstance(k, Const) and k.kind == "str" else UNKNOWN
                         for k in keys) | JUST_UNKNOWN

    def _run_choice_attribute(self, obj: Special, name: str) -> frozenset | None:
        """Attributes of the objects argparse makes: the parser's methods, the parsed options."""
        if obj.kind == "argparser":
            return frozenset({Special("argparser_method", obj, name)})
        if obj.kind == "namespace":
            site = obj.extra
            found = self.read(("argument", site, name)) | self.read(("namespace_field", site, name))
            defaults = self.read(("argument_default", site, name))
            if defaults:
                found = frozenset(v._replace(default=d) if isinstance(v, Choice) else v
                                  for v in found for d in defaults) | defaults
            return found | JUST_UNKNOWN
        if obj.kind == "choice_method" and name in _STRING_METHODS:
            return frozenset({Special("choice_method", obj.receiver, name)})
        return None

    def choice_attribute(self, choice: Choice, name: str) -> frozenset:
        if name in _STRING_METHODS:
            return frozenset({Special("choice_method", choice, name)})
        return JUST_UNKNOWN

    def _run_choice_special_call(self, special: Special, call: _Call) -> frozenset | None:
        kind = special.kind
        if kind == "choice_method":
            method = special.extra
            return frozenset({_derived(special.receiver, (method,), lambda d: getattr(d, method)())}) | JUST_UNKNOWN
        if kind != "argparser_method":
            return None
        parser, method = special.receiver, special.extra
        site = parser.extra
        if method == "add_argument":
            self._add_argument(site, call)
            return JUST_UNKNOWN
        if method in _PARSER_GROUPS:
            return frozenset({parser})  # a group's options are the parser's
        if method == "set_defaults":
            for key, values in call.kwargs:
                if key is not None:
                    self.write(("argument_default", site, key),
                               frozenset(v for v in values if isinstance(v, Const)) or JUST_UNKNOWN)
            return frozenset({const(None)})
        if method == "parse_args":
            return frozenset({Special("namespace", None, site)})
        if method == "parse_known_args":
            pair = Container(("parse_known_args", call.node), call.frame.scope.path)
            self.write(("element", pair.site, const(0)), frozenset({Special("namespace", None, site)}))
            self.write(("element", pair.site, const(1)), JUST_UNKNOWN)
            self.write(("elements", pair.site), frozenset({Special("namespace", None, site), UNKNOWN}))
            return frozenset({pair})
        return JUST_UNKNOWN

    def _add_argument(self, site, call: _Call) -> None:
        node = call.node
        if not isinstance(node, ast.Call):
            return
        flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if not flags or len(flags) != len(node.args):
            return
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        dest_node = keywords.get("dest")
        if isinstance(dest_node, ast.Constant) and isinstance(dest_node.value, str):
            dest = dest_node.value
        else:
            long = next((f for f in flags if f.startswith("--")), None)
            first = long or flags[0]
            dest = first.lstrip("-").replace("-", "_")
        positional = not flags[0].startswith("-")
        action = _literal(keywords.get("action"))
        action_name = getattr(keywords.get("action"), "attr", None)
        shown = next((f for f in flags if f.startswith("--")), flags[0])
        if action in _SWITCHES:
            default = call.keyword("default") or frozenset({const(_SWITCHES[action])})
            kind = action
        elif action_name == "BooleanOptionalAction":
            default = call.keyword("default") or frozenset({const(None)})
            kind = "boolean_optional"
        elif action in ("store_const", "count", "append", "append_const", "extend"):
            default = call.keyword("default") or frozenset({const(None)})
            kind = "value"
        else:
            required = _literal(keywords.get("required")) is True or positional and _literal(keywords.get("nargs")) not in ("?", "*")
            default = NOTHING if required else (call.keyword("default") or frozenset({const(None)}))
            kind = "value"
            convert = _CONVERSIONS.get("builtins." + getattr(keywords.get("type"), "id", ""))
            if convert is not None and default:
                default = frozenset(_converted(v, convert) if isinstance(v, Const) and isinstance(v.value, str) else v
                                    for v in default)
        found = set()
        for value in default or frozenset({None}):
            known = value if isinstance(value, Const) else None
            found.add(Choice("flag", shown, known, kind))
        self.write(("argument", site, dest), frozenset(found))

    def store_namespace_field(self, namespace: Special, name: str, values: frozenset) -> None:
        """`args.device = torch.device(...)` after parsing: read back with the option (joined)."""
        self.write(("namespace_field", namespace.extra, name), values)

    # -- operations on choices -----------------------------------------------------------------------------
    def choice_compare(self, operands: list, op: str) -> frozenset | None:
        """`args.mode == "sample"`, `os.environ.get("X") is None`, `args.strategy in ("ddp", "fsdp")`: a
        choice with the comparison recorded, its default compared; None when no choice takes part."""
        left, right = operands
        if not any(isinstance(v, Choice) for v in left | right):
            return None
        found = set()
        for side, other, flipped in ((left, right, False), (right, left, True)):
            for value in side:
                if not isinstance(value, Choice):
                    continue
                for operand in other:
                    literal = self._comparable(operand)
                    if literal is _UNCOMPARABLE:
                        found.add(UNKNOWN)
                        continue
                    step = _flipped(op) if flipped else op
                    if step is None:
                        found.add(UNKNOWN)
                        continue
                    found.add(_derived(value, (step, literal), lambda d: _compare(step, d, literal)))
        return frozenset(found) | JUST_UNKNOWN

    def _comparable(self, value):
        if isinstance(value, Const):
            return value.value
        if isinstance(value, Container) and isinstance(value.site, (ast.Tuple, ast.List, ast.Set)):
            items = []
            for element in value.site.elts:
                if not isinstance(element, ast.Constant):
                    return _UNCOMPARABLE
                items.append(element.value)
            return tuple(items)
        return _UNCOMPARABLE

    @staticmethod
    def choice_not(values: frozenset) -> frozenset:
        return frozenset(_derived(v, ("not",), lambda d: not d) if isinstance(v, Choice) else v for v in values)

    # -- branches guarded by choices ------------------------------------------------------------------------
    def choice_condition(self, test: tuple, values: frozenset) -> "_Condition | None":
        """What a branch's test says about run-time choices: its value on the default run and how to name
        the choice that takes the other way; None when the test is not made of choices."""
        kind = test[0]
        if kind == "not" and test[1][0] == "boolop":
            inner = self.choice_condition(test[1], NOTHING)
            return inner.negated() if inner is not None else None
        if kind == "boolop":
            parts = self._test_parts.get(id(test))
            if parts is None or len(parts) != len(test[2]):
                return None
            conditions = [self.choice_condition(part, part_values) for part, part_values in zip(test[2], parts)]
            if all(c is None for c in conditions):
                return None
            return _Condition.joined(test[1], conditions)
        return _Condition.of(values)

    def arm_guards(self, test: tuple, values: frozenset, frame=None) -> tuple[str, str]:
        """The choice each arm of a branch is taken under ("" for the default run's arm, or where the test
        is not made of choices): (when true, when false)."""
        condition = self.choice_condition(test, values)
        if condition is None and frame is not None and frame.none_when:
            condition = _none_test(test, frame.none_when)
        if condition is None:
            return "", ""
        return condition.guard(True), condition.guard(False)


def _none_test(test: tuple, none_when: dict) -> "_Condition | None":
    """`scaler is not None` / `scaler is None` / `if scaler:` where `scaler = GradScaler() if <choice> else None`."""
    polarity = True
    while test[0] == "not":
        test, polarity = test[1], not polarity
    if test[0] == "name":
        name, set_when = test[1], True
    elif test[0] == "compare" and len(test[2]) == 1 and test[2][0][1] == ("const", None) and test[1][0] == "name" \
            and test[2][0][0] in ("Is", "IsNot"):
        name, set_when = test[1][1], test[2][0][0] == "IsNot"
    else:
        return None
    condition = none_when.get(name)
    if condition is None:
        return None
    return condition if set_when == polarity else condition.negated()


_UNCOMPARABLE = object()


class _Condition:
    """A test made of choices: `default` (its truth on the default run; None: no default tells) and
    `phrase(outcome)` ("when run with `--sample`"); `pure`: every part of it is a choice or a constant
    (only then is an arm without a default still known to be a choice)."""

    __slots__ = ("default", "phrases", "pure")

    def __init__(self, default, phrases: dict, pure: bool) -> None:
        self.default = default
        self.phrases = phrases  # outcome -> phrase
        self.pure = pure

    @classmethod
    def of(cls, values: frozenset) -> "_Condition | None":
        choices = [v for v in values if isinstance(v, Choice)]
        if not choices:
            return None
        if any(not isinstance(v, (Choice, Const, Unknown)) for v in values):
            return None  # an object or a value of the program besides the choice: not a choice test
        truths = {_truth(v.default) if isinstance(v, Choice) else bool(v.value) for v in values if not isinstance(v, Unknown)}
        default = truths.pop() if len(truths) == 1 and None not in truths else None
        ordered = sorted(choices, key=lambda c: repr(tuple(c)))
        phrases = {}
        for outcome in (True, False):
            parts = [choice_phrase(c, outcome) for c in ordered if _truth(c.default) != outcome]
            phrases[outcome] = " or ".join(dict.fromkeys(p for p in parts if p))
        return cls(default, phrases, True)

    @classmethod
    def joined(cls, op: str, conditions: list) -> "_Condition":
        defaults = [c.default if c is not None else None for c in conditions]
        pure = all(c is not None and c.pure for c in conditions)
        if op == "and":
            default = False if False in defaults else True if all(d is True for d in defaults) else None
        else:
            default = True if True in defaults else False if all(d is False for d in defaults) else None
        phrases = {}
        for outcome in (True, False):
            joiner = " and " if (op == "and") == outcome else " or "
            parts = [c.phrases[outcome] for c in conditions if c is not None and c.default != outcome and c.phrases[outcome]]
            phrases[outcome] = joiner.join(dict.fromkeys(parts))
        return cls(default, phrases, pure)

    def negated(self) -> "_Condition":
        return _Condition(None if self.default is None else not self.default,
                          {True: self.phrases[False], False: self.phrases[True]}, self.pure)

    def guard(self, outcome: bool) -> str:
        """The phrase an arm is taken under, or "" for the default run's arm (or one that cannot be told)."""
        if self.default is None:
            return self.phrases[outcome] if self.pure else ""
        return self.phrases[outcome] if self.default != outcome else ""


def _truth(value) -> bool | None:
    return bool(value.value) if isinstance(value, Const) else None


def _literal(node):
    return node.value if isinstance(node, ast.Constant) else None


def _converted(value, convert):
    if isinstance(value, Const):
        try:
            return const(convert(value.value))
        except (TypeError, ValueError, OverflowError):
            return UNKNOWN
    return UNKNOWN


def _derived(choice: Choice, op: tuple, compute) -> object:
    """The choice after one more operation; its default computed too (None when it cannot be)."""
    if len(choice.ops) >= _MAX_OPS:
        return UNKNOWN
    default = None
    if choice.default is not None:
        try:
            result = compute(choice.default.value)
            default = const(result) if result is not _NO_RESULT else None
        except Exception:  # noqa: BLE001 - what the program would fail on: no default to tell
            default = None
    return choice._replace(ops=choice.ops + (op,), default=default)


_NO_RESULT = object()


def _compare(op: str, left, right):
    if op == "Eq":
        return left == right
    if op == "NotEq":
        return left != right
    if op == "Is":
        return left is right if right is None or left is None or isinstance(right, bool) else _NO_RESULT
    if op == "IsNot":
        return left is not right if right is None or left is None or isinstance(right, bool) else _NO_RESULT
    if op in ("In", "NotIn"):
        inside = left in right if isinstance(right, (tuple, str)) else _NO_RESULT
        return inside if inside is _NO_RESULT or op == "In" else not inside
    return {"Lt": lambda: left < right, "LtE": lambda: left <= right, "Gt": lambda: left > right,
            "GtE": lambda: left >= right}[op]()


def _flipped(op: str) -> str | None:
    """The comparison with its sides swapped (`"1" == x` is `x == "1"`); None where it is not one."""
    return {"Eq": "Eq", "NotEq": "NotEq", "Lt": "Gt", "Gt": "Lt", "LtE": "GtE", "GtE": "LtE", "Is": "Is",
            "IsNot": "IsNot"}.get(op)


# -- how a choice is named -----------------------------------------------------------------------------------
def choice_phrase(choice: Choice, outcome: bool) -> str:
    """The condition under which the choice's value (after its operations) has the truth `outcome`, as a
    user would set it: "when run with `--sample`", "when `USE_DDP=1`", "when `sample: true` (train.yaml)"."""
    truth = outcome
    comparison = None
    for op in reversed(choice.ops):
        if op[0] == "not":
            truth = not truth
        elif op[0] in _COMPARISONS:
            comparison = op
            break
    if comparison is not None:
        step, value = comparison
        if not truth:
            step = _NEGATED[step]
        return _compared(choice, step, value)
    return _truthy(choice, truth)


def choice_description(choice: Choice) -> str:
    """How a value chosen at run time is named in a message: "`--strategy`, default "ddp"", "`STRATEGY`",
    "`strategy: ddp` in configs/train.yaml", "`strategy=ddp` by default in conf/config.yaml" (hydra)."""
    if choice.ops:
        return f"`{choice.name}`"
    default = choice.default.value if choice.default is not None else None
    if choice.source == "flag":
        return f"`{choice.name}`" + (f", default {_quoted(default)}" if choice.default is not None else "")
    if choice.source == "env":
        return f"`{choice.name}`" + (f", default {_quoted(default)}" if default is not None else "")
    if choice.source == "hydra":
        return f"`{choice.name}={_shown(default)}` by default" + (f" in {choice.where}" if choice.where else "")
    return f"`{choice.name}: {_shown(default)}`" + (f" in {choice.where}" if choice.where else "")


def _quoted(value) -> str:
    return f'"{value}"' if isinstance(value, str) else _shown(value)


def _shown(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ", ".join(_shown(v) for v in value)
    return str(value)


def _compared(choice: Choice, op: str, value) -> str:
    name = choice.name
    if choice.source == "flag":
        if op == "Eq":
            return f"when run with `{name} {_shown(value)}`"
        if op == "NotEq":
            return f"when run with `{name}` other than `{_shown(value)}`"
        if op in ("In", "NotIn"):
            return f"when run with `{name}` {'one' if op == 'In' else 'none'} of `{_shown(value)}`"
        if op in ("Is", "IsNot") and value is None:
            return f"when run {'without' if op == 'Is' else 'with'} `{name}`"
        if op in _SYMBOLS:
            return f"when run with `{name}` {_SYMBOLS[op]} {_shown(value)}"
    elif choice.source == "env":
        if op == "Eq":
            return f"when `{name}={_shown(value)}`"
        if op == "NotEq":
            return f"when `{name}` is set to other than `{_shown(value)}`"
        if op in ("In", "NotIn"):
            return f"when `{name}` is {'one' if op == 'In' else 'none'} of `{_shown(value)}`"
        if op in ("Is", "IsNot") and value is None:
            return f"when `{name}` is {'not ' if op == 'Is' else ''}set"
        if op in _SYMBOLS:
            return f"when `{name}` {_SYMBOLS[op]} {_shown(value)}"
    elif choice.source == "hydra":  # hydra's command line overrides any value: `python train.py sample=true`
        if op == "Eq":
            return f"when run with `{name}={_shown(value)}`"
        if op == "NotEq":
            return f"when run with `{name}` other than `{_shown(value)}`"
        if op in ("In", "NotIn"):
            return f"when run with `{name}` {'one' if op == 'In' else 'none'} of `{_shown(value)}`"
        if op in ("Is", "IsNot") and value is None:
            return f"when run with `{name}={'null' if op == 'Is' else '...'}`"
        if op in _SYMBOLS:
            return f"when run with `{name}` {_SYMBOLS[op]} {_shown(value)}"
    else:
        where = f" ({choice.where})" if choice.where else ""
        if op == "Eq":
            return f"when `{name}: {_shown(value)}`{where}"
        if op == "NotEq":
            return f"when `{name}` is not `{_shown(value)}`{where}"
        if op in ("In", "NotIn"):
            return f"when `{name}` is {'one' if op == 'In' else 'none'} of `{_shown(value)}`{where}"
        if op in ("Is", "IsNot") and value is None:
            return f"when `{name}` is {'null' if op == 'Is' else 'set'}{where}"
        if op in _SYMBOLS:
            return f"when `{name}` {_SYMBOLS[op]} {_shown(value)}{where}"
    return f"when `{name}` is chosen so"


def _truthy(choice: Choice, truth: bool) -> str:
    name = choice.name
    if choice.source == "flag":
        kind = choice.where
        if kind == "store_true":
            return f"when run with `{name}`" if truth else f"when run without `{name}`"
        if kind == "store_false":
            return f"when run with `{name}`" if not truth else f"when run without `{name}`"
        if kind == "boolean_optional":
            return f"when run with `{name}`" if truth else f"when run with `--no-{name.lstrip('-')}`"
        return f"when run with `{name}`" if truth else f"when run with `{name}` empty or zero"
    if choice.source == "env":
        return f"when `{name}` is set" if truth else f"when `{name}` is unset or empty"
    default = choice.default.value if choice.default is not None else None
    if choice.source == "hydra":
        if isinstance(default, bool) or default is None:
            return f"when run with `{name}={'true' if truth else 'false'}`"
        return f"when run with `{name}` set to a {'true' if truth else 'false'} value"
    where = f" ({choice.where})" if choice.where else ""
    if isinstance(default, bool) or default is None:
        return f"when `{name}: {'true' if truth else 'false'}`{where}"
    return f"when `{name}` is {'set' if truth else 'empty, zero or false'}{where}"
