"""Time and peak memory of analysing one file as it grows: N = 1k, 2k, 4k, 8k `fabric.setup()`
statements, files of 0.5, 1 and 2 MB (of the same statements), and a class of N one-line methods
each called on the wrapped model (the seconds tests/security/test_bounds_linear.py and
test_bounds_methods.py no longer assert: they count the work instead). A ratio near 2 per doubling
shows the analysis is linear in the file's size. Each measurement runs in a fresh process so that
its peak RSS is its own.

    PYTHONPATH=server python benchmarks/bounds_bench.py
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from check_bench import as_installed

REPO = Path(__file__).resolve().parents[1]
CASE = REPO / "fixtures" / "cases" / "fab001_call_before_mark.py"

# Runs in the child: analyse the file named by argv[1], print "<seconds> <peak RSS in KiB>".
_CHILD = """
import resource, sys, time
from fabric_lsp.settings.config import Config
from fabric_lsp.engine import check_source
text = open(sys.argv[1], encoding="utf-8").read()
started = time.perf_counter()
check_source(sys.argv[1], text, Config())
elapsed = time.perf_counter() - started
print(f"{elapsed:.3f} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}")
"""


def statement(i: int) -> str:
    return f"m{i}, o{i} = fabric.setup(Policy(), optimizer)\nm{i}.act(obs)\n"


def source_with_setups(count: int) -> str:
    return CASE.read_text() + "".join(statement(i) for i in range(count))


def class_with_methods(count: int) -> str:
    """tests/security/test_bounds_methods.py's shape: every call and the mark look a name up on the class."""
    methods = "".join(f"    def m{i}(self, x): return x\n" for i in range(count))
    called = "".join(f"model.m{i}(1)\n" for i in range(count))
    return ("import torch.nn as nn\nfrom lightning.fabric import Fabric\n\n"
            "class LM(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            f"        self.head = nn.Linear(4, 4)\n{methods}\n"
            'fabric = Fabric(strategy="ddp"); fabric.launch()\nmodel = fabric.setup(LM())\n'
            f'model.mark_forward_method("missing_name")\n{called}')


def source_of_size(size: int) -> str:
    parts = [CASE.read_text()]
    total = len(parts[0])
    i = 0
    while total < size:
        parts.append(statement(i))
        total += len(parts[-1])
        i += 1
    return "".join(parts)


def measure(path: Path) -> tuple[float, int]:
    env = {**as_installed(dict(os.environ)), "PYTHONPATH": os.pathsep.join(p for p in (str(REPO / "server"), os.environ.get("PYTHONPATH")) if p)}
    completed = subprocess.run([sys.executable, "-c", _CHILD, str(path)], env=env, capture_output=True,
                               text=True, timeout=1800, check=True)
    seconds, rss_kib = completed.stdout.split()
    return float(seconds), int(rss_kib)


def report(label: str, rows: list[tuple[str, str]], work: Path) -> None:
    print(f"{label:<18} {'bytes':>9} {'seconds':>8} {'ratio':>6} {'peak RSS MiB':>13}")
    previous = None
    for name, text in rows:
        path = work / f"{name}.py"
        path.write_text(text, encoding="utf-8")
        seconds, rss = measure(path)
        ratio = f"{seconds / previous:.2f}" if previous else "-"
        print(f"{name:<18} {len(text.encode()):>9} {seconds:>8.2f} {ratio:>6} {rss / 1024:>13.0f}")
        previous = seconds


def main() -> None:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="fabric-lsp-bounds-") as folder:
        work = Path(folder)
        report("setup statements", [(f"{n} setups", source_with_setups(n)) for n in (1000, 2000, 4000, 8000)], work)
        print()
        report("file size", [(f"{mb} MB", source_of_size(int(mb * 1024 * 1024))) for mb in (0.5, 1, 2, 4)], work)
        print()
        report("class methods", [(f"{n} methods", class_with_methods(n)) for n in (750, 1500, 3000, 6000)], work)


if __name__ == "__main__":
    main()
