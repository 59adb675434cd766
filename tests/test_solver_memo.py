"""The solver's memoised attribute lookups (issue 36): an attribute of an instance or a class is
computed once per (object, name) and version of what it read (its MRO, the field and class-body
entries), not once per lookup on every run of every scope. Counted, never timed; and the memo
changes nothing: the tables and events are those of a solve without it."""

from __future__ import annotations

from pathlib import Path

from fabric_lsp.analysis import flow
from fabric_lsp.analysis.flow_state import describe
from fabric_lsp.analysis.program import build_programs, solve
from fabric_lsp.analysis.semantics.python_classes import PythonClasses
from fabric_lsp.analysis.values import Instance, Lib
from fabric_lsp.analysis import program as program_module

DEPTH = 8  # classes in the chain Base <- Level1 <- ... <- Level8
METHODS = 12
CALLERS = 30


def deep_hierarchy() -> str:
    """A chain of subclasses whose methods read `self.<attribute>`s bound far up the MRO, called
    from many functions that each run several times (their arguments grow call by call)."""
    methods = "".join(
        f"    def m{i}(self, x):\n"
        f"        y = self.head(x)\n"
        f"        return self.helper(y) if self.scale else self.m{(i + 1) % METHODS}(y)\n"
        for i in range(METHODS)
    )
    levels = "".join(f"class Level{i}({f'Level{i - 1}' if i > 1 else 'Base'}):\n    depth = {i}\n\n"
                     for i in range(1, DEPTH + 1))
    callers = "".join(
        f"def use_{i}(model, x):\n"
        f"    for step in range(3):\n"
        f"        x = model.m{i % METHODS}(x)\n"
        f"        x = model.helper(x)\n"
        f"    return use_{(i + 1) % CALLERS}(model, x) if model.scale else x\n\n"
        for i in range(CALLERS)
    )
    return (
        "import torch.nn as nn\n"
        "from lightning.fabric import Fabric\n\n"
        "class Base(nn.Module):\n"
        "    scale = 2\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.head = nn.Linear(2, 2)\n"
        "    def helper(self, x):\n"
        "        return self.head(x)\n"
        f"{methods}\n"
        f"{levels}"
        f"{callers}"
        'fabric = Fabric(strategy="ddp")\n'
        f"use_0(fabric.setup(Level{DEPTH}()), None)\n"
        f"use_0(Level{DEPTH}(), None)\n"
        "use_1(Level3(), None)\n"
    )


def _program(tmp_path: Path):
    path = tmp_path / "deep.py"
    path.write_text(deep_hierarchy())
    [program], _ = build_programs(str(tmp_path), [str(path)], {}, lambda: ())
    return program


def _counting(monkeypatch, owner, name: str) -> list:
    calls = [0]
    original = getattr(owner, name)

    def counted(*args, **kwargs):
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def test_attribute_lookups_are_computed_once_per_version(tmp_path: Path, monkeypatch):
    program = _program(tmp_path)
    computed = _counting(monkeypatch, PythonClasses, "_instance_attribute")
    asked = _counting(monkeypatch, program_module.Program, "class_binding")
    lookups = [0]
    original_attribute_of = PythonClasses.attribute_of

    def attribute_of(self, obj, name, frame):
        if isinstance(obj, Instance) and not isinstance(obj.cls, Lib):
            lookups[0] += 1
        return original_attribute_of(self, obj, name, frame)

    monkeypatch.setattr(PythonClasses, "attribute_of", attribute_of)
    solver = solve(program, record=False)  # `check`: nothing replays the runs
    assert solver.bound_hit is None
    assert solver.steps > len(program.scopes), "the program should make scopes run again"
    # Without the memo every lookup computed (lookups == computed) and asked the program which class
    # binds the name (hashing the whole MRO): here each (instance, name) is computed again only when
    # an entry it read changed.
    assert lookups[0] >= 500, lookups[0]
    assert computed[0] * 4 <= lookups[0], f"{computed[0]} computations for {lookups[0]} lookups"
    assert asked[0] * 4 <= lookups[0], f"{asked[0]} class_binding questions for {lookups[0]} lookups"


def _outcome(solver) -> tuple:
    tables = sorted(describe(key) + " = " + describe(values) for key, values in solver.tables.items())
    events = sorted(" ".join((event.kind, describe(event.node), describe(event.scope), describe(event.variant),
                              describe(sorted((k, describe(v)) for k, v in event.data.items()))))
                    for event in solver.all_events())
    return tables, events, solver.steps


def test_memo_changes_no_table_and_no_event(tmp_path: Path, monkeypatch):
    memoised = _outcome(solve(_program(tmp_path), record=False))
    recorded = _outcome(solve(_program(tmp_path), record=True))  # a recorded run never reuses a memo
    monkeypatch.setattr(flow.Solver, "_memoised", lambda self, memo, key, compute, *args: compute(*args))
    plain = _outcome(solve(_program(tmp_path), record=False))
    assert memoised == plain
    assert recorded == plain
