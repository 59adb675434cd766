"""Run a fixed case and compare what materialization produced with an eagerly built module.

Usage: python verify_reset.py ENTRY CLASS [CLASS ...]

Every nn.Module records its constructor arguments (through a `__new__` installed on nn.Module).
The three places that materialize a meta-device module are wrapped: Lightning's
`_materialize_meta_tensors` (fabric.setup), Lightning's `_materialize_distributed_module`
(ModelParallelStrategy) and torch FSDP's `_materialize_meta_module`. After one ran, each module of a
named class in the materialized tree is compared, tensor by tensor (its own parameters and buffers
only; a DTensor as its full tensor), with `CLASS(*args, **kwargs)` built eagerly on the CPU under the
same seed.
Prints one JSON line: {"compared": N, "mismatches": [...]}.
"""

from __future__ import annotations

import json
import os
import runpy
import sys

import torch
from lightning.fabric.strategies import model_parallel
from lightning.fabric.utilities import init as fabric_init
from torch.distributed.fsdp import _init_utils as fsdp_init

constructors: dict[int, tuple[type, tuple, dict]] = {}


def recording_new(cls, *args, **kwargs):
    instance = object.__new__(cls)
    constructors[id(instance)] = (cls, args, kwargs)
    return instance


def full(tensor: torch.Tensor) -> torch.Tensor:
    tensor = tensor.detach()
    if hasattr(tensor, "full_tensor"):  # a DTensor (ModelParallel, FSDP2)
        tensor = tensor.full_tensor()
    return tensor.cpu()


def main() -> int:
    entry, class_names = sys.argv[1], set(sys.argv[2:])
    report: dict = {"compared": 0, "mismatches": []}

    def compare(module):
        for child in module.modules():
            if type(child).__name__ not in class_names or id(child) not in constructors:
                continue
            cls, args, kwargs = constructors[id(child)]
            torch.manual_seed(0)
            with torch.device("cpu"):
                eager = cls(*args, **kwargs)
            theirs = dict(eager.named_parameters(recurse=False)) | dict(eager.named_buffers(recurse=False))
            mine = dict(child.named_parameters(recurse=False)) | dict(child.named_buffers(recurse=False))
            for name, tensor in mine.items():
                report["compared"] += 1
                if name not in theirs or not torch.equal(full(tensor), theirs[name].detach()):
                    report["mismatches"].append(f"{type(child).__name__}.{name}")

    def wrapped(materialize):
        def materialize_and_compare(module, *args, **kwargs):
            result = materialize(module, *args, **kwargs)
            compare(module)
            return result
        return materialize_and_compare

    fabric_init._materialize_meta_tensors = wrapped(fabric_init._materialize_meta_tensors)
    fabric_init._materialize_distributed_module = wrapped(fabric_init._materialize_distributed_module)
    model_parallel._materialize_distributed_module = fabric_init._materialize_distributed_module
    fsdp_init._materialize_meta_module = wrapped(fsdp_init._materialize_meta_module)
    torch.nn.Module.__new__ = recording_new
    sys.path.insert(0, os.path.dirname(os.path.abspath(entry)))  # as `python main.py` would
    sys.argv = [entry]  # the case parses its own command line (argparse): it gets none, as in the plain run
    runpy.run_path(entry, run_name="__main__")
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
