"""Recursive shapes in the analysed code: cyclic class hierarchies (in one file and across files),
self-referential assignments, mutually recursive methods and functions, modules that contain
themselves, import cycles. The analysis terminates within a bounded amount of work (counted: the
value-flow solver's steps per scope and the lines of the analysis executed, never seconds), raises
nothing, and still reports what it can prove in the same file.

A watchdog ends the worker with a traceback if an analysis hangs, instead of stalling the suite.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import textwrap

import pytest

from fabric_lsp.settings.config import Config
from fabric_lsp.engine import check_source

from robustness_support import record_figure

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from tests.support.work import counted  # noqa: E402

# The work a recursive shape may cost. The solver stops by itself at STEPS_PER_SCOPE (60) runs per
# scope (`bound_hit`); these cases need far fewer (measured at most ~4 per scope): a cycle that made
# scopes wake each other up without end would reach the solver's bound and fail here. LINES: the
# lines of the analysis one check runs (measured below 4 M with the library tables read; a case of
# these sizes that ran away would cost far more). The 300-class chain is bounded by its depth.
STEPS_PER_SCOPE_BOUND = 10
LINES_BOUND = 1_000_000


def assert_bounded(work) -> None:
    for solver in work.solvers:
        assert solver.bound_hit is None, solver.bound_hit
        assert solver.steps <= STEPS_PER_SCOPE_BOUND * max(1, len(solver.scopes)), (solver.steps, len(solver.scopes))
    assert work.lines <= LINES_BOUND, work.lines


@pytest.fixture(autouse=True)
def watchdog():
    faulthandler.dump_traceback_later(120, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def check(tmp_path, files: dict[str, str], entry: str = "main.py") -> list[tuple[str, str, int]]:
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text), encoding="utf-8")
    path = tmp_path / entry
    with counted() as work:
        findings = check_source(str(path), path.read_text(encoding="utf-8"), Config(root=str(tmp_path), hints=True))
    record_figure("recursion_case_work", work.lines, steps=work.steps, entry=entry, files=len(files))
    assert_bounded(work)
    return [(f.code, f.severity.value, f.span.start.line + 1) for f in findings if f.span.path == str(path)]


# A class the analysis can always prove things about: its FAB001 must survive next to the cycles.
CONTROL = '''
class Control(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(1, 1)

    def generate(self, x):
        return self.layer(x)
'''


def _line_of(text: str, needle: str) -> int:
    return textwrap.dedent(text).splitlines().index(needle) + 1


def test_class_hierarchy_cycle_across_files(tmp_path):
    a = """
        from torch import nn
        from b import B


        class A(B):
            def generate(self, x):
                return self.layer(x)
        """
    b = """
        from a import A


        class B(A):
            def helper(self, x):
                return self.generate(x)
        """
    main = """
        import torch
        import lightning as L
        from torch import nn
        from a import A
        from b import B
        """ + textwrap.indent(CONTROL, " " * 8) + """

        fabric = L.Fabric(strategy="ddp")
        model = fabric.setup(A())
        model.generate(1)
        other = fabric.setup(B())
        other.helper(1)
        with torch.device("meta"):
            meta = A()
        meta = L.Fabric(strategy="fsdp").setup(meta)
        control = fabric.setup(Control())
        control.generate(1)
        """
    found = check(tmp_path, {"a.py": a, "b.py": b, "main.py": main})
    assert ("FAB001", "error", _line_of(main, "control.generate(1)")) in found


def test_cycles_self_references_and_mutual_recursion_in_one_file(tmp_path):
    main = """
        import torch
        from torch import nn
        import lightning as L


        class A(B):
            def generate(self, x):
                return self.helper(x)

            def helper(self, x):
                return self.generate(x) if x else self.layer(x)


        class B(A):
            pass


        class C(C):
            def generate(self, x):
                return self.generate(x)


        class D(nn.Module):
            def __init__(self):
                super().__init__()
                self.layer = nn.Linear(1, 1)
                self.layer = self.layer
                self.me = self

            def ping(self, x):
                return self.pong(x)

            def pong(self, x):
                return self.ping(x) if x else self.layer(x)

            def spin(self, x):
                return self.spin(x)

            def loop(self, x):
                return self.me.loop(x)


        def build():
            return build()


        def even(n):
            return odd(n - 1)


        def odd(n):
            return even(n - 1)


        model = model
        a = b
        b = a
        fabric = L.Fabric(strategy="ddp")
        fabric = fabric
        model = fabric.setup(A())
        model = model
        model.generate(1)
        c = fabric.setup(C())
        c.generate(1)
        d = fabric.setup(D())
        d.ping(1)
        d.spin(1)
        d.loop(1)
        e = fabric.setup(build())
        f = fabric.setup(even(3))
        g = fabric.setup(a)
        g.generate(1)
        """
    found = check(tmp_path, {"main.py": main})
    assert ("FAB001", "error", _line_of(main, "d.ping(1)")) in found  # through the recursion, a layer runs
    assert not any(line == _line_of(main, "d.spin(1)") for _, _, line in found)  # recursion alone runs nothing


def test_modules_that_contain_themselves_and_meta_materialization(tmp_path):
    main = """
        import torch
        from torch import nn
        import lightning as L


        class Tree(nn.Module):
            def __init__(self, depth=3):
                super().__init__()
                self.scale = nn.Parameter(torch.ones(1))
                self.child = Tree(depth - 1) if depth else None


        class Ping(nn.Module):
            def __init__(self):
                super().__init__()
                self.pong = Pong()


        class Pong(nn.Module):
            def __init__(self):
                super().__init__()
                self.ping = Ping()
                self.bias = nn.Parameter(torch.zeros(1))


        class Alias(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.ones(1))

            _init = reset_parameters = None
            reset_parameters = reset_parameters


        with torch.device("meta"):
            tree = Tree()
            pair = Ping()
            alias = Alias()
        fabric = L.Fabric(strategy="fsdp")
        tree, pair, alias = fabric.setup(tree), fabric.setup(pair), fabric.setup(alias)
        """
    found = check(tmp_path, {"main.py": main})
    assert ("FAB002", "error", _line_of(main, "class Tree(nn.Module):")) in found


def test_import_cycles_and_star_imports(tmp_path):
    models = """
        from torch import nn
        from main import *
        from models import *
        import models


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.layer = nn.Linear(1, 1)

            def generate(self, x):
                return self.layer(x)


        Alias = models.Alias
        """
    main = """
        import lightning as L
        from models import *
        from main import *
        import main

        fabric = L.Fabric(strategy="ddp")
        model = fabric.setup(Net())
        model.generate(1)
        alias = fabric.setup(Alias())
        alias.generate(1)
        """
    found = check(tmp_path, {"models.py": models, "main.py": main})
    # Net is found through the cycle of star imports; Alias (models.Alias = models.Alias) stays unknown.
    assert ("FAB001", "error", _line_of(main, "model.generate(1)")) in found
    assert not any(severity == "error" and line == _line_of(main, "alias.generate(1)") for _, severity, line in found)
    check(tmp_path, {"models.py": models, "main.py": main}, entry="models.py")


def chain_of_classes(depth: int) -> str:
    chain = "".join(f"class C{i + 1}(C{i}):\n    pass\n\n\n" for i in range(depth))
    return (
        "import lightning as L\nfrom torch import nn\n\n\n"
        "class C0(nn.Module):\n    def generate(self, x):\n        return self.layer(x)\n\n\n"
        + chain
        + f"fabric = L.Fabric(strategy='ddp')\nmodel = fabric.setup(C{depth}())\nmodel.generate(1)\n"
    )


def test_inheritance_deeper_than_the_analysis_follows(tmp_path):
    cost = {}
    for depth in (150, 300):
        main = chain_of_classes(depth)
        (tmp_path / "main.py").write_text(main, encoding="utf-8")
        with counted() as work:
            findings = check_source(str(tmp_path / "main.py"), main, Config(root=str(tmp_path), hints=True))
        steps_only = type(work)(lines=0, solvers=work.solvers)
        assert_bounded(steps_only)
        cost[depth] = work.lines
        # Past the followed depth the class is unknown: at most an uncertain finding, never an error.
        assert all(f.severity.value != "error" for f in findings)
    # Twice the chain, twice the work (measured 2.0x): each class's bases are read once, not the
    # whole chain above it for each class.
    assert cost[300] <= 2.5 * cost[150], cost
