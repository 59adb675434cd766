"""The whole-program solve's work grows with the program, not with the product of its parts.

Shapes taken from real repositories (Lightning's own test suite: 124 files, 4,156 scopes, hundreds
of test functions each defining a local subclass of a shared model). Steps are counted, so these
tests say the same on a loaded machine."""

from __future__ import annotations

from pathlib import Path

from fabric_lsp.analysis.program import build_programs, solve
from fabric_lsp.settings.config import Config
from fabric_lsp.engine import check_source

LOCAL_CLASSES = 300
METHODS = 20


def suite_with_local_subclasses() -> str:
    methods = "".join(f"    def m{i}(self):\n        return self.head\n" for i in range(METHODS))
    tests = "".join(
        f"def test_{i}():\n    class Local{i}(Plugin):\n        pass\n    return Local{i}()\n\n" for i in range(LOCAL_CLASSES)
    )
    return (
        "import torch.nn as nn\n"
        "from lightning.fabric import Fabric\n\n"
        "class Base(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.head = nn.Linear(2, 2)\n"
        "    def generate(self, x):\n"
        "        return self.head(x)\n"
        f"{methods}\n"
        "class Plugin:\n"
        "    def connect(self):\n"
        "        return self\n\n"
        "def train(model):\n"
        '    fabric = Fabric(strategy="ddp"); fabric.launch()\n'
        "    wrapped = fabric.setup(model)\n"
        "    return wrapped.generate(None)\n\n"
        "train(Base())\n\n"
        f"{tests}"
    )


def test_local_subclasses_do_not_rerun_every_method(tmp_path: Path):
    # Each local class statement runs when its test function does, after the methods ran once. A
    # method's `self` (instances of its class and of every subclass) used to be computed from every
    # class's bases, so each of the 300 class statements woke every method of every class again: on
    # Lightning's tests that spent the step bound (250,360 steps, 305 s, 17.5 GB) and dropped every
    # flow finding. Now only methods of a class that gained a subclass run again.
    path = tmp_path / "test_suite.py"
    path.write_text(suite_with_local_subclasses())
    [program], _ = build_programs(str(tmp_path), [str(path)], {}, lambda: ())
    solver = solve(program)
    assert solver.bound_hit is None
    assert solver.steps <= 3 * len(program.scopes), f"{solver.steps} steps for {len(program.scopes)} scopes"


def test_local_subclasses_keep_the_finding(tmp_path: Path):
    path = tmp_path / "test_suite.py"
    text = suite_with_local_subclasses()
    findings = check_source(str(path), text, Config(root=str(tmp_path)))
    assert [(f.code, f.span.start.line) for f in findings] == [("FAB001", text.splitlines().index(
        "    return wrapped.generate(None)"))]
