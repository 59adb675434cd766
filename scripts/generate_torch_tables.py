#!/usr/bin/env python
"""Generate the torch/Lightning fallback tables used by the analysis.

The analysis never imports torch or lightning. When they are not installed in the analysed
interpreter it falls back to ``server/fabric_lsp/analysis/libraries/data/torch_tables.json``, which this
script derives from a real torch + lightning installation: nn modules are constructed on the meta
device, the Fabric wrapper is built with a real ``Fabric``, names are checked by importing them.

    python scripts/generate_torch_tables.py           # (re)write the JSON
    python scripts/generate_torch_tables.py --check   # exit 1 if the committed JSON differs

Regenerating with the same torch/lightning versions gives the same bytes.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import itertools
import json
import sys
import warnings
from pathlib import Path
from typing import Any, Callable

REPO_ROOT = Path(__file__).resolve().parent.parent
TABLES_PATH = REPO_ROOT / "server" / "fabric_lsp" / "analysis" / "libraries" / "data" / "torch_tables.json"
GENERATION_COMMAND = "python scripts/generate_torch_tables.py"

# Constructor arguments for classes whose required arguments cannot be derived from the signature
# (no annotations, *args-only signatures, values that must satisfy each other). Values are
# callables so tensors/modules are created inside the meta-device context.
CONSTRUCTOR_OVERRIDES: dict[str, Callable[[], dict[str, Any]]] = {
    "AdaptiveLogSoftmaxWithLoss": lambda: {"in_features": 4, "n_classes": 8, "cutoffs": [2]},
    "DataParallel": lambda: {"module": _torch().nn.Identity()},
    "FractionalMaxPool2d": lambda: {"kernel_size": 2, "output_size": 2},
    "FractionalMaxPool3d": lambda: {"kernel_size": 2, "output_size": 2},
    "GRU": lambda: {"input_size": 4, "hidden_size": 4},
    "LSTM": lambda: {"input_size": 4, "hidden_size": 4},
    "MultiheadAttention": lambda: {"embed_dim": 4, "num_heads": 2},
    "RNN": lambda: {"input_size": 4, "hidden_size": 4},
    "RNNBase": lambda: {"mode": "LSTM", "input_size": 4, "hidden_size": 4},
    "TransformerDecoder": lambda: {
        "decoder_layer": _torch().nn.TransformerDecoderLayer(d_model=4, nhead=2),
        "num_layers": 1,
    },
    "TransformerEncoder": lambda: {
        "encoder_layer": _torch().nn.TransformerEncoderLayer(d_model=4, nhead=2),
        "num_layers": 1,
    },
    "Unflatten": lambda: {"dim": 1, "unflattened_size": (2, 2)},
}

# Container classes (they hold other modules/parameters rather than computing with their own).
CONTAINER_BASE_NAMES = ("Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict")

# Whether `strategy.setup_module(module)` returns a different object than it was given, i.e.
# whether `_FabricModule._forward_module is not _original_module` after `fabric.setup` (the
# condition under which `_FabricModule.__getattr__` guards and redirects methods). Established by
# reading each strategy's `setup_module` in lightning 2.6.6; the CPU-runnable ones are confirmed
# at runtime by tests/test_torch_tables.py. A new strategy class makes this script fail until
# it is added here.
STRATEGY_WRAPS: dict[str, tuple[bool | None, str]] = {
    "Strategy": (None, "base class: Strategy.setup_module returns the module; a subclass decides"),
    "ParallelStrategy": (None, "abstract base class: a subclass's setup_module decides"),
    "SingleDeviceStrategy": (False, "does not override Strategy.setup_module, which returns the module"),
    "SingleDeviceXLAStrategy": (False, "subclass of SingleDeviceStrategy; setup_module not overridden"),
    "SingleTPUStrategy": (False, "deprecated alias of SingleDeviceXLAStrategy"),
    "XLAStrategy": (False, "setup_module only broadcasts parameters and returns the module itself"),
    "ModelParallelStrategy": (
        False,
        "setup_module returns what the user's parallelize_fn returns; FSDP2 fully_shard/"
        "parallelize_module modify the module in place and return it",
    ),
    "DDPStrategy": (True, "setup_module returns DistributedDataParallel(module)"),
    "DataParallelStrategy": (True, "setup_module returns DataParallel(module); 'dp' on CPU falls back to DDP"),
    "DeepSpeedStrategy": (True, "setup_module(_and_optimizers) returns a DeepSpeedEngine around the module"),
    "FSDPStrategy": (
        True,
        "setup_module returns FullyShardedDataParallel(module), except when the model already "
        "contains FSDP-wrapped submodules: then the root is returned unwrapped",
    ),
    "XLAFSDPStrategy": (True, "setup_module returns XlaFullyShardedDataParallel(module) unless already one"),
}

# What `Fabric.init_module(empty_init=True)` does under each strategy, keyed by the function that
# defines `module_init_context` for it (read in lightning 2.6.6): True when it enters
# `torch.device("meta")` (setup then materializes the meta tensors), False when it enters `_EmptyInit`
# (uninitialised memory on the real device, nothing on meta). The script checks each entry against the
# function's source and fails on a function it does not list.
MODULE_INIT_META: dict[str, tuple[bool, str]] = {
    "Strategy.module_init_context": (False, "_EmptyInit(enabled=bool(empty_init)) on the root device"),
    "FSDPStrategy.module_init_context": (True, "enters torch.device('meta') when empty_init; setup_module materializes"),
    "ModelParallelStrategy.module_init_context": (
        True,
        "enters torch.device('meta') when empty_init; setup_module materializes",
    ),
    "XLAFSDPStrategy.module_init_context": (
        False,
        "_EmptyInit(enabled=bool(empty_init)), no meta device; setup_module only wraps in XlaFullyShardedDataParallel",
    ),
    "DeepSpeedStrategy.module_init_context": (
        False,
        "Strategy.module_init_context (_EmptyInit) below ZeRO-3; deepspeed.zero.Init (partitioned tensors) for ZeRO-3",
    ),
}

LIGHTNING_FABRIC_NOTE = (
    "lightning_fabric.* are the spellings of the standalone lightning-fabric package (the same code "
    "as lightning.fabric.*, a documented alternative import); they are derived from the "
    "lightning.fabric.* names and import-checked only when lightning_fabric is installed"
)


def _torch() -> Any:
    import torch

    return torch


# ---------------------------------------------------------------------------------------------
# torch.nn modules


def _public_nn_module_classes() -> dict[str, type]:
    torch = _torch()
    classes = {}
    for name in dir(torch.nn):
        obj = getattr(torch.nn, name)
        if not name.startswith("_") and inspect.isclass(obj) and issubclass(obj, torch.nn.Module):
            classes[name] = obj
    return classes


def _qualified_names(obj: object, name: str, module_names: list[str]) -> list[str]:
    """Every `module.name` among `module_names` (plus where obj is defined) that resolves to obj."""
    found = set()
    for module_name in [*module_names, obj.__module__]:
        module = importlib.import_module(module_name)
        if getattr(module, name, None) is obj:
            found.add(f"{module_name}.{name}")
    found.add(f"{obj.__module__}.{obj.__qualname__}")
    return sorted(found)


def _annotation_text(annotation: Any) -> str:
    if annotation is inspect.Parameter.empty:
        return ""
    return annotation if isinstance(annotation, str) else repr(annotation)


def _value_for_annotation(annotation: Any) -> Any:
    """A small valid value for a required constructor argument, from its annotation."""
    text = _annotation_text(annotation)
    if annotation is bool:
        return False
    if annotation is float:
        return 2.0
    if annotation is str:
        raise LookupError("no generic value for a str argument")
    if annotation is int or "int" in text:
        if text.startswith(("collections.abc.Sequence", "typing.Sequence", "list[int]")):
            return [2]
        return 4
    raise LookupError(f"no generic value for annotation {text or '<none>'}")


def _constructor_kwargs(name: str, cls: type) -> dict[str, Any]:
    if name in CONSTRUCTOR_OVERRIDES:
        return CONSTRUCTOR_OVERRIDES[name]()
    kwargs = {}
    for param in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or param.default is not param.empty:
            continue
        kwargs[param.name] = _value_for_annotation(param.annotation)
    return kwargs


def _owns_meta_tensors(module: Any) -> bool:
    """Lightning's own test (`_has_meta_device_parameters_or_buffers(module, recurse=False)`)."""
    return any(
        tensor.is_meta for tensor in itertools.chain(module.parameters(recurse=False), module.buffers(recurse=False))
    )


def _construct_on_meta(cls: type, kwargs: dict[str, Any] | Callable[[], dict[str, Any]]) -> Any:
    torch = _torch()
    with torch.device("meta"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(**(kwargs() if callable(kwargs) else kwargs))


def _kwarg_candidates(cls: type) -> tuple[list[str], list[str]]:
    """Constructor parameters that may add a tensor: (defaulting to None and annotated with a
    Tensor type, defaulting to False)."""
    tensor_params, flag_params = [], []
    for param in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        if param.default is None and "Tensor" in _annotation_text(param.annotation):
            tensor_params.append(param.name)
        elif param.default is False:
            flag_params.append(param.name)
    return tensor_params, flag_params


def _positional_params(cls: type) -> list[str]:
    return [
        param.name
        for param in list(inspect.signature(cls.__init__).parameters.values())[1:]
        if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD)
    ]


def _parameter_container_facts(cls: type) -> tuple[list[str], bool]:
    """For containers: the constructor argument that, given Parameters, makes the container own
    them directly, and whether a Parameter added later (append / item assignment) is owned too."""
    torch = _torch()

    def parameter() -> Any:
        return torch.nn.Parameter(torch.ones(1))

    ctor_kwargs = []
    first_param = next(iter(_positional_params(cls)), None)
    if first_param is not None:
        for filled in (lambda: [parameter()], lambda: {"p": parameter()}):
            try:
                instance = _construct_on_meta(cls, lambda filled=filled: {first_param: filled()})
            except (TypeError, ValueError, AttributeError):
                continue  # e.g. ModuleList rejects a Parameter
            if _owns_meta_tensors(instance):
                ctor_kwargs.append(first_param)
                break

    torch_device = torch.device("meta")
    for add in (lambda m: m.append(parameter()), lambda m: m.__setitem__("p", parameter())):
        instance = _construct_on_meta(cls, {})
        try:
            with torch_device:
                add(instance)
        except (TypeError, ValueError, AttributeError, KeyError):
            continue
        if _owns_meta_tensors(instance):
            return ctor_kwargs, True
    return ctor_kwargs, False


def _module_kwarg_effects(name: str, cls: type) -> tuple[list[str], list[str]]:
    """Which single keyword makes an instance that owns nothing by default own a tensor directly:
    tensor-valued kwargs (given ``torch.ones(4)``) and boolean flags (given ``True``)."""
    torch = _torch()
    tensor_params, flag_params = _kwarg_candidates(cls)
    owning_tensor_kwargs, owning_flag_kwargs = [], []
    for kwarg_names, value, owning in (
        (tensor_params, lambda: torch.ones(4), owning_tensor_kwargs),
        (flag_params, lambda: True, owning_flag_kwargs),
    ):
        for kwarg in kwarg_names:

            def kwargs(kwarg: str = kwarg, value: Callable[[], Any] = value) -> dict[str, Any]:
                return {**_constructor_kwargs(name, cls), kwarg: value()}

            try:
                instance = _construct_on_meta(cls, kwargs)
            except (TypeError, ValueError, AssertionError, RuntimeError):
                continue  # the flag needs other arguments too; not a single-kwarg switch
            if _owns_meta_tensors(instance):
                owning.append(kwarg)
    return owning_tensor_kwargs, owning_flag_kwargs


def nn_module_facts() -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Facts per ``torch.nn.<Name>`` module class, and the names that could not be constructed."""
    torch = _torch()
    container_bases = tuple(getattr(torch.nn, base) for base in CONTAINER_BASE_NAMES)
    facts: dict[str, dict[str, Any]] = {}
    unknown: list[str] = []
    for name, cls in sorted(_public_nn_module_classes().items()):
        entry: dict[str, Any] = {
            "qualified_names": _qualified_names(cls, name, ["torch.nn", "torch.nn.modules", "torch.nn.parallel"]),
            "has_reset_parameters": hasattr(cls, "reset_parameters"),
            "container": issubclass(cls, container_bases),
            "positional_params": _positional_params(cls),
            "owns_added_parameters": False,
            "tensor_kwargs": [],
            "flag_kwargs": [],
            "unknown": False,
            "unresettable_descendants": [],
        }
        facts[name] = entry
        try:
            instance = _construct_on_meta(cls, lambda: _constructor_kwargs(name, cls))
            owns_by_default = _owns_meta_tensors(instance)
        except Exception as error:  # cannot construct it: record that, never guess
            entry.update(unknown=True, owns_tensors=None, unknown_reason=f"{type(error).__name__}: {error}")
            unknown.append(name)
            continue
        # Built-ins built from other built-ins (TransformerEncoderLayer holds a MultiheadAttention):
        # the classes below them that materialization would reject.
        entry["unresettable_descendants"] = sorted(
            {
                type(child).__name__
                for child in instance.modules()
                if child is not instance and _owns_meta_tensors(child) and not hasattr(child, "reset_parameters")
            }
        )
        if owns_by_default:
            entry["owns_tensors"] = "always"
            continue
        tensor_kwargs, flag_kwargs = _module_kwarg_effects(name, cls)
        if entry["container"]:
            ctor_kwargs, entry["owns_added_parameters"] = _parameter_container_facts(cls)
            tensor_kwargs.extend(ctor_kwargs)
        entry["tensor_kwargs"] = sorted(tensor_kwargs)
        entry["flag_kwargs"] = sorted(flag_kwargs)
        owns_sometimes = tensor_kwargs or flag_kwargs or entry["owns_added_parameters"]
        entry["owns_tensors"] = "with_kwargs" if owns_sometimes else "never"
    return facts, unknown


# ---------------------------------------------------------------------------------------------
# Lightning Fabric


def _lightning_fabric_spellings(names: list[str]) -> list[str]:
    """The standalone package's spelling of every ``lightning.fabric.*`` name."""
    prefix = "lightning.fabric."
    return [f"lightning_fabric.{name[len(prefix):]}" for name in names if name.startswith(prefix)]


def _import_checks(qualified_name: str) -> object | None:
    module_name, _, attribute = qualified_name.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    return getattr(module, attribute, None)


def _module_aliases(obj: object) -> list[str]:
    """Names under which obj's defining module is registered in sys.modules (Lightning's graveyard
    registers deprecated module paths as aliases of the module that now defines the class)."""
    defining = sys.modules[obj.__module__]
    return sorted(name for name, module in list(sys.modules.items()) if module is defining)


def _with_standalone_spellings(verified: list[str], obj: object) -> list[str]:
    """Add the lightning_fabric spellings. They are listed whether or not lightning_fabric is
    installed (so the output does not depend on it) and import-checked when it is."""
    spellings = _lightning_fabric_spellings(verified)
    if importlib.util.find_spec("lightning_fabric") is not None:
        for spelling in spellings:
            found = _import_checks(spelling)
            if getattr(found, "__qualname__", None) != getattr(obj, "__qualname__", None):
                raise RuntimeError(f"{spelling} does not resolve to the standalone copy of {obj.__qualname__}")
    return sorted({*verified, *spellings})


def fabric_facts() -> dict[str, Any]:
    import lightning
    import lightning.fabric.strategies as strategies_package
    import lightning.fabric.utilities.init as init_module
    from lightning.fabric import Fabric
    from lightning.fabric.strategies import STRATEGY_REGISTRY, Strategy
    from lightning.fabric.wrappers import _LIGHTNING_MODULE_STEP_METHODS, _FabricModule

    torch = _torch()
    fabric_names = _qualified_names(Fabric, "Fabric", ["lightning", "lightning.fabric", "lightning.fabric.fabric"])
    fabric_names = _with_standalone_spellings(fabric_names, Fabric)

    # The wrapper as users get it: a real single-device Fabric's setup(). Its names come from the
    # class, its instance __dict__ and its own _parameters/_modules/_buffers (nn.Module.__dir__);
    # everything else is looked up on the wrapped module by _FabricModule.__getattr__.
    class ModelWithCustomNames(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(2, 2)
            self.scale = torch.nn.Parameter(torch.ones(1))
            self.register_buffer("running", torch.zeros(1))

        def generate(self) -> Any:
            return self.layer(torch.ones(2))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wrapped = Fabric(accelerator="cpu", devices=1).setup(ModelWithCustomNames())
    wrapper_names = set(dir(wrapped))
    directly_built = _FabricModule(torch.nn.Identity(), strategy=strategies_package.SingleDeviceStrategy("cpu"))
    if wrapper_names != set(dir(directly_built)):
        raise RuntimeError("_FabricModule's names depend on the wrapped module; the table cannot be static")
    leaked = wrapper_names & {"layer", "scale", "running", "generate", "weight", "bias"}
    if leaked:
        raise RuntimeError(f"names of the wrapped module appear on the wrapper: {sorted(leaked)}")
    if not set(dir(_FabricModule)) <= wrapper_names:
        raise RuntimeError("dir(_FabricModule) is not a subset of the wrapper instance's names")

    strategy_classes: dict[str, type] = {}
    for attribute in dir(strategies_package):
        obj = getattr(strategies_package, attribute)
        if inspect.isclass(obj) and issubclass(obj, Strategy):
            strategy_classes[obj.__name__] = obj
    for key in STRATEGY_REGISTRY:
        cls = STRATEGY_REGISTRY[key]["strategy"]
        strategy_classes[cls.__name__] = cls
    missing = sorted(set(strategy_classes) - set(STRATEGY_WRAPS))
    stale = sorted(set(STRATEGY_WRAPS) - set(strategy_classes))
    if missing or stale:
        raise RuntimeError(f"update STRATEGY_WRAPS: unknown strategy classes {missing}, no longer present {stale}")

    strategies = {}
    for class_name, cls in sorted(strategy_classes.items()):
        wraps_module, reason = STRATEGY_WRAPS[class_name]
        init_function = cls.module_init_context
        if init_function.__qualname__ not in MODULE_INIT_META:
            raise RuntimeError(f"update MODULE_INIT_META: {init_function.__qualname__} is not listed")
        meta_init, meta_init_reason = MODULE_INIT_META[init_function.__qualname__]
        if ('torch.device("meta")' in inspect.getsource(init_function)) is not meta_init:
            raise RuntimeError(f"MODULE_INIT_META[{init_function.__qualname__!r}] disagrees with its source")
        names = _qualified_names(
            cls, class_name, ["lightning.fabric", "lightning.fabric.strategies", *_module_aliases(cls)]
        )
        strategies[class_name] = {
            "qualified_names": _with_standalone_spellings(names, cls),
            "wraps_module": wraps_module,
            "wraps_module_reason": reason,
            "empty_init_meta": meta_init,
            "empty_init_meta_reason": f"{init_function.__qualname__}: {meta_init_reason}",
        }

    strategy_strings = {}
    for key in sorted(STRATEGY_REGISTRY):
        class_name = STRATEGY_REGISTRY[key]["strategy"].__name__
        strategy_strings[key] = {"strategy": class_name, "wraps_module": strategies[class_name]["wraps_module"]}

    materialize_functions = []
    for function in (init_module._materialize_meta_tensors, init_module._materialize_distributed_module):
        name = f"{function.__module__}.{function.__qualname__}"
        if _import_checks(name) is not function:
            raise RuntimeError(f"{name} does not resolve to the function")
        materialize_functions.extend(_with_standalone_spellings([name], function))

    return {
        "lightning_version": lightning.__version__,
        "fabric_qualified_names": fabric_names,
        "fabric_module_attributes": sorted(wrapper_names),
        "step_methods": list(_LIGHTNING_MODULE_STEP_METHODS),
        "strategies": strategies,
        "strategy_strings": strategy_strings,
        "materialize_functions": sorted(materialize_functions),
    }


# ---------------------------------------------------------------------------------------------

NOTES = {
    "owns_tensors": (
        "whether an instance directly (recurse=False) owns a parameter or non-None buffer when built "
        "inside `with torch.device('meta')`, the test lightning's _materialize_meta_tensors applies: "
        "'always' with the default arguments (some have flags that turn it off, e.g. "
        "LayerNorm(elementwise_affine=False)), 'with_kwargs' only when one of tensor_kwargs is given a "
        "tensor or one of flag_kwargs is True (or, with owns_added_parameters, once any Parameter is "
        "added), 'never' otherwise; null when the class could not be constructed (unknown)"
    ),
    "positional_params": "constructor parameters that can be passed positionally, in order",
    "owns_added_parameters": "ParameterList/ParameterDict own every Parameter given to them or added later",
    "unresettable_descendants": (
        "classes of submodules (built with the default arguments) that own meta tensors but have no "
        "reset_parameters, e.g. the MultiheadAttention inside TransformerEncoderLayer"
    ),
    "fabric_module_attributes": (
        "names _FabricModule finds without forwarding to the wrapped module: dir() of a wrapper "
        "returned by a real Fabric.setup (class attributes, instance attributes, its own "
        "_modules: _forward_module and _original_module)"
    ),
    "wraps_module": (
        "whether the strategy's setup_module returns a wrapper (so _forward_module is not "
        "_original_module); null for base classes whose subclasses decide"
    ),
    "empty_init_meta": (
        "whether init_module(empty_init=True) builds the module on the meta device under the strategy "
        "(its module_init_context enters torch.device('meta'); setup then materializes it); False: "
        "_EmptyInit, uninitialised memory on the real device"
    ),
    "strategy_strings": (
        "keys of lightning.fabric.strategies.STRATEGY_REGISTRY (Fabric lower-cases strategy=); 'auto' "
        "is not a key: it selects a single-device strategy unless devices>1 or num_nodes>1 (then 'ddp')"
    ),
    "lightning_fabric": LIGHTNING_FABRIC_NOTE,
}


def build_tables() -> dict[str, Any]:
    torch = _torch()
    nn_modules, unknown = nn_module_facts()
    tables = {
        "generated_by": GENERATION_COMMAND,
        "torch_version": torch.__version__,
        "nn_modules": nn_modules,
        "unknown_nn_modules": unknown,
        "nn_module_attributes": sorted(dir(torch.nn.Module)),
        "notes": NOTES,
    }
    tables.update(fabric_facts())
    return tables


def render(tables: dict[str, Any]) -> str:
    return json.dumps(tables, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed tables differ")
    parser.add_argument("--output", type=Path, default=TABLES_PATH, help="where to write (default: %(default)s)")
    args = parser.parse_args(argv)

    tables = build_tables()
    text = render(tables)
    owning = sum(1 for facts in tables["nn_modules"].values() if facts["owns_tensors"] == "always")
    print(
        f"torch {tables['torch_version']}, lightning {tables['lightning_version']}: "
        f"{len(tables['nn_modules'])} torch.nn modules ({owning} always own tensors), "
        f"{len(tables['fabric_module_attributes'])} wrapper attributes, {len(tables['strategies'])} strategies",
        file=sys.stderr,
    )
    if tables["unknown_nn_modules"]:
        print(f"could not construct (recorded as unknown): {', '.join(tables['unknown_nn_modules'])}", file=sys.stderr)
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else None
        if current != text:
            print(f"{args.output} is out of date; run: {GENERATION_COMMAND}", file=sys.stderr)
            return 1
        print(f"{args.output} is up to date", file=sys.stderr)
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
