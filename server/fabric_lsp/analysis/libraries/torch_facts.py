"""Facts about torch / lightning library classes, from the tables generated from real torch
(`scripts/generate_torch_tables.py`), so answers are the same whether or not torch is installed."""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass

from fabric_lsp.analysis.libraries.torch_tables import NnModuleFacts, tables


@dataclass(frozen=True)
class LibraryModuleFacts:
    has_reset_parameters: bool
    attributes: frozenset[str]  # names every instance has (nn.Module API)
    table: NnModuleFacts | None  # None for torch.nn.Module itself

    @property
    def always_owns_tensors(self) -> bool:
        return self.table is not None and self.table.owns_tensors == "always"

    def owns_tensors(self, call: ast.Call | None) -> bool:
        """Does an instance built by this constructor call own a tensor directly?"""
        if self.table is None:
            return False
        if call is None:
            return self.always_owns_tensors
        tensor_args: set[str] = set()
        true_flags: set[str] = set()
        named = [(self.table.positional_params[i], value) for i, value in enumerate(call.args)
                 if i < len(self.table.positional_params)]
        named += [(keyword.arg, keyword.value) for keyword in call.keywords if keyword.arg]
        for name, value in named:
            if isinstance(value, ast.Constant):
                if value.value is True:
                    true_flags.add(name)
                continue  # None / numbers / strings are not tensors
            tensor_args.add(name)
        return bool(self.table.owns_tensors_when(tensor_args, true_flags))


@functools.lru_cache(maxsize=1)
def nn_module_attributes() -> frozenset[str]:
    return frozenset(tables().nn_module_attributes)


@functools.lru_cache(maxsize=1)
def wrapper_attributes() -> frozenset[str]:
    """Names found on Fabric's module wrapper itself: calling them never reaches the user's method."""
    return frozenset(tables().fabric_module_attributes) | frozenset(tables().step_methods)


@functools.lru_cache(maxsize=512)
def library_module_facts(qualified: str) -> LibraryModuleFacts | None:
    if qualified == "torch.nn.Module":
        return LibraryModuleFacts(False, nn_module_attributes(), None)
    if not qualified.startswith("torch.nn."):
        return None
    entry = tables().nn_module(qualified) or tables().nn_module(qualified.rsplit(".", 1)[-1])
    if entry is None or entry.unknown:
        return None
    return LibraryModuleFacts(entry.has_reset_parameters, nn_module_attributes(), entry)


def strategy_wraps(name: str) -> bool | None:
    """Does Fabric wrap the module under this strategy (a registry string or a class name)?"""
    return tables().strategy_wraps(name)
