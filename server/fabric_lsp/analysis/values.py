"""The abstract values the value-flow analysis follows (`flow.py`).

Values are small hashable tuples. A variable, a parameter or an attribute holds a frozenset of
them; UNKNOWN in a set means "and possibly something we cannot see". Sites are AST nodes (compared
by identity): a setup call, a Fabric(...) call, a list display; `path` says which file they are in.
Each kind ends with a tag field `t`, so that two kinds with equal fields never compare equal.
"""

from __future__ import annotations

from typing import NamedTuple


class Unknown(NamedTuple):
    tag: str = "unknown"


UNKNOWN = Unknown()
NOTHING: frozenset = frozenset()
JUST_UNKNOWN = frozenset({UNKNOWN})


class Const(NamedTuple):
    kind: str  # type name: True == 1 as tuples, so the type is part of the value
    value: object
    t: str = "const"


def const(value: object) -> Const:
    kind = type(value)
    if kind not in SHARED_CONST_KINDS:
        return Const(kind.__name__, value)
    key = (kind, value)  # the type in the key: True == 1
    found = _shared_consts.get(key)
    if found is None:
        found = Const(kind.__name__, value)
        if len(_shared_consts) < _MAX_SHARED_CONSTS and _small(kind, value):
            _shared_consts[key] = found
    return found


def _small(kind: type, value) -> bool:
    return len(value) <= 200 if kind is str else -2**63 <= value < 2**63 if kind is int else True


# The constants of a program's literals, made once per process (bounded: a count, short strings): the
# solver evaluates each literal on every run of its scope. Only kinds whose equal values print the
# same (not floats: 0.0 == -0.0).
SHARED_CONST_KINDS = frozenset((str, int, bool, type(None)))
_MAX_SHARED_CONSTS = 8192
_shared_consts: dict = {}


class Choice(NamedTuple):
    """A value chosen when the program is started: a command-line option (`args.sample`), an environment
    variable (`os.environ.get("USE_DDP")`), a value of a config file the program reads (`cfg.strategy`),
    or what the program computes from one (`args.mode == "sample"`: `ops` records the steps). It always
    travels with UNKNOWN, so every question that reads values as before sees "unknown"; what reads it
    on purpose (branches, messages) learns the value of the default run and how to name the choice."""

    source: str  # "flag" | "env" | "config"
    name: str  # "--sample", "USE_DDP", "model.name" (a key path of a config file)
    default: object  # the default run's value as a Const; None when there is none (a required option)
    where: str = ""  # config: the file it is read from (relative to the project), for messages
    ops: tuple = ()  # what was computed from it: ("Eq", value), ("not",), ("int",), ... in order
    t: str = "choice"


class ConfigNode(NamedTuple):
    """A mapping or list of a configuration the program loads (`yaml.safe_load(open("train.yaml"))`,
    `OmegaConf.load(path)`, hydra's composed `cfg`, `json.loads("...")` of text written in the program),
    at a key path. The document is the program's answer to `config_document(document)` (read as data,
    bounded); its scalars are constants when the text is written in the program (`known`), and run-time
    choices (Choice, with the file's value as the default run's) when it comes from a file."""

    document: tuple  # ("file", kind, path) | ("text", kind, text, path, line) | ("hydra", folder, name)
    keys: tuple = ()  # the key path from the document's root
    known: bool = False
    t: str = "confignode"


class Lib(NamedTuple):
    """A name inside a library we answer for from tables (torch, lightning, torchmetrics, functools, builtins)."""

    qualified: str
    t: str = "lib"


class Module(NamedTuple):
    """A module of the project, or one outside it that is read but not interpreted (external)."""

    path: str  # the .py file, or the folder of a namespace package
    external: bool = False
    t: str = "module"


class Class(NamedTuple):
    """A class statement: its file, qualified name and, for project classes, how many classes of
    that name come before it in the file (no line number: the identity survives lines moving above
    it); for classes in library files, the line of the `class` statement."""

    path: str
    qualname: str
    line: int  # project classes: the ordinal; library classes: the line
    external: bool = False
    t: str = "class"


class Function(NamedTuple):
    """A function of the project (interpreted), by its Scope; or an external one (not interpreted)."""

    scope: object  # ir.Scope, or for external functions (path, qualname)
    external: bool = False
    t: str = "function"


class Bound(NamedTuple):
    """A function bound to a receiver (a method of an instance; a classmethod of its class)."""

    function: Function
    receiver: object  # one value
    t: str = "bound"


class Instance(NamedTuple):
    """An instance of a class (Class or a Lib class). `meta`: created on the meta device, as
    (context value, constructor call node, path) — see `flow.py`; `compiled`: torch.compile'd."""

    cls: object  # Class | Lib
    meta: object = None
    compiled: object = False  # True, or the run-time choice it was compiled under ("when run with `--compile`")
    t: str = "instance"
    # For a library object that is not a module (a PeftConfig): its constructor's literal keywords,
    # ((name, value), ...), which a library factory may choose by (peft's task_type).
    keywords: tuple = ()
    # Known only from an annotation (`teacher: PPOModel = instantiate(...)`): (path, annotation node,
    # what it annotates as a phrase). The object may be of a subclass: a name missing here is unknown.
    declared: object = None
    # Every parameter made not to require a gradient (`m.requires_grad_(False)`, `for p in m.parameters():
    # p.requires_grad = False`), by the call or loop at (path, node): DDP refuses to wrap it (FAB009).
    frozen: object = None


class Strategy(NamedTuple):
    kind: str  # WRAPPING | SINGLE | UNKNOWN_STRATEGY
    description: str  # 'strategy="ddp"', 'devices=2', 'a strategy chosen at run time (strategy=args.strategy)'
    materializes: object  # True / False / None (unknown): does setup materialize meta tensors (FSDP, ModelParallel)
    # How setup materializes: "fsdp" (torch FSDP: raises without reset_parameters), "model_parallel"
    # (warns, leaves uninitialised memory), "mixed" (a run-time choice between them, or between one
    # of them and a strategy that does not materialize), None (it does not, or it cannot be told).
    how: object = None
    when: str = ""  # for a Fabric made in one case of a split: "when `args.distributed` is true"
    # Whether Fabric must be launched before setup (`Fabric._validate_launched`): LAUNCH_SCRIPT (every
    # strategy but SingleDevice/DataParallel), LAUNCH_SPAWN (the same, and `launch()` needs a function:
    # a spawning launcher), LAUNCH_NONE, LAUNCH_MACHINE (decided by the machine's devices), None (unknown).
    launch: object = None
    t: str = "strategy"


LAUNCH_SCRIPT = "script"
LAUNCH_SPAWN = "spawn"
LAUNCH_NONE = "none"
LAUNCH_MACHINE = "machine"

WRAPPING = "wrapping"
SINGLE = "single"
UNKNOWN_STRATEGY = "unknown"


class FabricValue(NamedTuple):
    """A Fabric object: the call that made it (None: passed in from outside, described by `origin`)
    and its class when it is an instance of a project subclass of Fabric. Its strategy is derived
    after the analysis from the arguments recorded for the site (they may still grow during it)."""

    site: object
    path: str | None
    cls: object = None
    origin: str | None = None
    # Made in one case of a split scope (flow.py): (condition node, outcome); its arguments are kept
    # per case, so that `strategy` chosen by the same flag as the meta device stays with it.
    variant: object = None
    t: str = "fabricvalue"


class Wrapped(NamedTuple):
    """What `fabric.setup(model)` returned at `site` (the call node). What it wraps and under which
    Fabric are in the solver's tables, keyed by the site."""

    site: object
    path: str
    # The cases (flow.py: a split scope's flag, a loop over literal keys) it was set up in: the model
    # given to setup in that case is kept apart (`{"actor": ..., "critic": ...}` set up one by one).
    variant: object = None
    t: str = "wrapped"


class Output(NamedTuple):
    """What calling a Fabric-wrapped model returned (`wrapped(x)`, `wrapped.forward(x)`), or a value
    computed from it (`out.logits`, `out[0]`, `out.sum()`, `out * 2`, `F.cross_entropy(out, y)`): the
    tensors `_FabricModule.forward` registered its backward hook on flow into it. It always travels
    with UNKNOWN (what the value is otherwise is not known), so no other question becomes known by it."""

    wrapped: Wrapped
    t: str = "output"


class WrappedMethod(NamedTuple):
    """`wrapped.name`: on a wrapped module, a method of the original module handed out by the wrapper."""

    wrapped: Wrapped
    name: str
    t: str = "wrappedmethod"


class Special(NamedTuple):
    """A library callable bound to a receiver: `fabric.setup`, `wrapped.mark_forward_method`,
    `model.eval`; or a value with library semantics: `torch.device("meta")`, `fabric.init_module(...)`."""

    kind: str
    receiver: object = None
    extra: object = None
    t: str = "special"


class Container(NamedTuple):
    """A tuple, list or dict display (or comprehension, or `*args`/`**kwargs`, or what
    `fabric.setup(model, optimizer)` returns) at `site`: its elements are in the solver's tables."""

    site: object
    path: str
    t: str = "container"


class Tuple(NamedTuple):
    """The bases of a class statement, by position (tuples in the program are Containers)."""

    elements: tuple  # of frozensets
    open: bool = False
    t: str = "tuple"


class Partial(NamedTuple):
    """functools.partial(function, *args) made at `site`: its function and arguments are in the
    solver's tables, so the value keeps its identity while they grow."""

    site: object
    path: str
    t: str = "partial"


class Super(NamedTuple):
    """`super()` in a method of `cls`, for the receiver `receiver`."""

    cls: Class
    receiver: object
    t: str = "super"


class StrategyObject(NamedTuple):
    """`DDPStrategy(...)`, `FSDPStrategy(...)`: a strategy passed as an object."""

    name: str  # class name as in the tables
    t: str = "strategyobject"


class Marked(NamedTuple):
    """`wrapped.mark_forward_method(name)` was called on the way here (the order of a scope's marks, setups
    and calls: flow.Solver)."""

    wrapped: Wrapped
    name: str
    t: str = "marked"
