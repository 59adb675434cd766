"""Run a fixed case and compare what materialization produced with an eagerly built module.

Usage: python verify_reset.py ENTRY CLASS [CLASS ...]

Every nn.Module records its constructor arguments (through a `__new__` installed on nn.Module).
Lightning's `_materialize_meta_tensors` is wrapped: after it ran, each module of a named class in the
materialized tree is compared, tensor by tensor (its own parameters and buffers only), with
`CLASS(*args, **kwargs)` built eagerly on the CPU under the same seed.
Prints one JSON line: {"compared": N, "mismatches": [...]}.
"""

from __future__ import annotations

import json
import os
import runpy
import sys

import torch
from lightning.fabric.utilities import init as fabric_init

constructors: dict[int, tuple[type, tuple, dict]] = {}


def recording_new(cls, *args, **kwargs):
    instance = object.__new__(cls)
    constructors[id(instance)] = (cls, args, kwargs)
    return instance


def main() -> int:
    entry, class_names = sys.argv[1], set(sys.argv[2:])
    report: dict = {"compared": 0, "mismatches": []}
    materialize_meta_tensors = fabric_init._materialize_meta_tensors

    def materialize_and_compare(module, device):
        materialize_meta_tensors(module, device)
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
                if name not in theirs or not torch.equal(tensor.detach().cpu(), theirs[name].detach()):
                    report["mismatches"].append(f"{type(child).__name__}.{name}")

    torch.nn.Module.__new__ = recording_new
    fabric_init._materialize_meta_tensors = materialize_and_compare
    sys.path.insert(0, os.path.dirname(os.path.abspath(entry)))  # as `python main.py` would
    runpy.run_path(entry, run_name="__main__")
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
