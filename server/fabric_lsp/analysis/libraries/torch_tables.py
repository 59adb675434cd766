"""Facts about torch and Lightning for when they are not installed in the analysed interpreter.

The facts live in `data/torch_tables.json`, generated from a real torch + lightning install by
`scripts/generate_torch_tables.py` (see the `notes` in the JSON for what each field means). This
module only reads that file: it never imports torch or lightning.

    from fabric_lsp.analysis.libraries.torch_tables import tables
    facts = tables().nn_module("torch.nn.modules.linear.Linear")   # or "Linear"
    tables().strategy_wraps("ddp")                                  # True
    "mark_forward_method" in tables().fabric_module_attributes      # True
"""

from __future__ import annotations

import functools
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Any, Literal

OwnsTensors = Literal["always", "never", "with_kwargs"]


@dataclass(frozen=True)
class NnModuleFacts:
    """A `torch.nn.<name>` class, as measured by constructing it on the meta device."""

    name: str
    qualified_names: tuple[str, ...]
    has_reset_parameters: bool
    # "always": owns a parameter/buffer directly with the default arguments; "with_kwargs": only
    # when a tensor_kwargs argument is given a tensor, a flag_kwargs argument is True, or (with
    # owns_added_parameters) a Parameter is put into it; None when it could not be constructed.
    owns_tensors: OwnsTensors | None
    tensor_kwargs: tuple[str, ...]
    flag_kwargs: tuple[str, ...]
    positional_params: tuple[str, ...]
    container: bool
    owns_added_parameters: bool
    unknown: bool
    unresettable_descendants: tuple[str, ...] = ()

    def argument_position(self, param: str) -> int | None:
        """Index at which `param` may be passed positionally to the constructor, if it can be."""
        try:
            return self.positional_params.index(param)
        except ValueError:
            return None

    def owns_tensors_when(self, tensor_args: Collection[str] = (), true_flags: Collection[str] = ()) -> bool | None:
        """Whether an instance owns tensors directly, given the constructor parameters that received
        a (non-None) tensor/parameters and the flags passed as True (positional ones mapped to names
        with `argument_position`). None for an unknown class. For ParameterList/ParameterDict this
        covers the constructor only; Parameters appended or assigned later count too."""
        if self.owns_tensors is None:
            return None
        if self.owns_tensors == "always":
            return True
        return any(arg in self.tensor_kwargs for arg in tensor_args) or any(
            flag in self.flag_kwargs for flag in true_flags
        )


@dataclass(frozen=True)
class StrategyFacts:
    """A Fabric strategy class and whether `Fabric.setup` under it wraps the module."""

    name: str
    qualified_names: tuple[str, ...]
    # True: setup_module returns a wrapper (DDP, FSDP, ...), so `_FabricModule.__getattr__` guards
    # methods called on the setup result; False: the module itself; None: a base class.
    wraps_module: bool | None
    wraps_module_reason: str
    # Whether `init_module(empty_init=True)` builds on the meta device under it (module_init_context
    # enters torch.device("meta"): FSDP, ModelParallel), so setup materializes; False: _EmptyInit.
    empty_init_meta: bool = False


@dataclass(frozen=True)
class TorchTables:
    torch_version: str
    lightning_version: str
    generated_by: str
    nn_modules: Mapping[str, NnModuleFacts]
    # Names `_FabricModule` resolves itself; any other attribute is forwarded to the wrapped module.
    fabric_module_attributes: frozenset[str]
    # Methods the wrapper routes through forward under a wrapping strategy (never raise FAB001).
    step_methods: tuple[str, ...]
    nn_module_attributes: frozenset[str]
    fabric_qualified_names: frozenset[str]
    strategies: Mapping[str, StrategyFacts]
    # strategy= string (registry key, lower case) -> strategy class name
    strategy_strings: Mapping[str, str]
    materialize_functions: frozenset[str]
    _nn_by_qualified_name: Mapping[str, NnModuleFacts]
    _strategy_by_qualified_name: Mapping[str, StrategyFacts]

    def nn_module(self, name: str) -> NnModuleFacts | None:
        """Facts for `Linear`, `torch.nn.Linear`, `torch.nn.modules.linear.Linear`, ...; None if not a
        public torch.nn module."""
        return self.nn_modules.get(name) or self._nn_by_qualified_name.get(name)

    def is_fabric_class(self, qualified_name: str) -> bool:
        return qualified_name in self.fabric_qualified_names

    def is_materialize_function(self, qualified_name: str) -> bool:
        return qualified_name in self.materialize_functions

    def strategy(self, name_or_class: str) -> StrategyFacts | None:
        """Facts for a `strategy=` string (`"ddp"`, case-insensitive like Fabric), a strategy class name
        (`"DDPStrategy"`) or its qualified name; None if unknown (including `"auto"`)."""
        if name_or_class in self.strategies:
            return self.strategies[name_or_class]
        if name_or_class in self._strategy_by_qualified_name:
            return self._strategy_by_qualified_name[name_or_class]
        class_name = self.strategy_strings.get(name_or_class.lower())
        return self.strategies[class_name] if class_name is not None else None

    def strategy_wraps(self, name_or_class: str) -> bool | None:
        """Whether setup under this strategy wraps the module; None when unknown or a base class."""
        facts = self.strategy(name_or_class)
        return facts.wraps_module if facts is not None else None


def _nn_module_facts(name: str, raw: Mapping[str, Any]) -> NnModuleFacts:
    return NnModuleFacts(
        name=name,
        qualified_names=tuple(raw["qualified_names"]),
        has_reset_parameters=raw["has_reset_parameters"],
        owns_tensors=raw["owns_tensors"],
        tensor_kwargs=tuple(raw["tensor_kwargs"]),
        flag_kwargs=tuple(raw["flag_kwargs"]),
        positional_params=tuple(raw["positional_params"]),
        container=raw["container"],
        owns_added_parameters=raw["owns_added_parameters"],
        unknown=raw["unknown"],
        unresettable_descendants=tuple(raw.get("unresettable_descendants", ())),
    )


def parse_tables(raw: Mapping[str, Any]) -> TorchTables:
    """Build the accessors from the JSON document (as loaded by `json.loads`)."""
    nn_modules = {name: _nn_module_facts(name, facts) for name, facts in raw["nn_modules"].items()}
    strategies = {
        name: StrategyFacts(
            name=name,
            qualified_names=tuple(facts["qualified_names"]),
            wraps_module=facts["wraps_module"],
            wraps_module_reason=facts["wraps_module_reason"],
            empty_init_meta=facts.get("empty_init_meta", False),
        )
        for name, facts in raw["strategies"].items()
    }
    return TorchTables(
        torch_version=raw["torch_version"],
        lightning_version=raw["lightning_version"],
        generated_by=raw["generated_by"],
        nn_modules=MappingProxyType(nn_modules),
        fabric_module_attributes=frozenset(raw["fabric_module_attributes"]),
        step_methods=tuple(raw["step_methods"]),
        nn_module_attributes=frozenset(raw["nn_module_attributes"]),
        fabric_qualified_names=frozenset(raw["fabric_qualified_names"]),
        strategies=MappingProxyType(strategies),
        strategy_strings=MappingProxyType({key: entry["strategy"] for key, entry in raw["strategy_strings"].items()}),
        materialize_functions=frozenset(raw["materialize_functions"]),
        _nn_by_qualified_name=MappingProxyType(
            {qualified: facts for facts in nn_modules.values() for qualified in facts.qualified_names}
        ),
        _strategy_by_qualified_name=MappingProxyType(
            {qualified: facts for facts in strategies.values() for qualified in facts.qualified_names}
        ),
    )


def load_raw() -> dict[str, Any]:
    """The JSON document shipped in the package."""
    text = (resources.files("fabric_lsp.analysis.libraries") / "data" / "torch_tables.json").read_text(encoding="utf-8")
    return json.loads(text)


@functools.cache
def tables() -> TorchTables:
    return parse_tables(load_raw())
