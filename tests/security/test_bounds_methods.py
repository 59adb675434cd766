"""Looking a name up on a class or a library module costs the same whatever its size: a class's
methods and attributes, and a module's or class's binding statements, are indexed once, not read
again for each name (a class of 10,000 one-line methods and a `mark_forward_method` of a missing
name took 27-46 s; 40,000 more than 300 s). FAB004's closest-name suggestion compares at most
MAX_SUGGESTION_CANDIDATES methods; a larger class gets no suggestion (the same on every run) and a
notice. Scaling is counted as work (tests/support/work.py: lines of the analysis executed), as
test_bounds_linear.py does, never timed."""

from __future__ import annotations

import itertools
import os
import json
from pathlib import Path

from fabric_lsp.settings.config import Config
from fabric_lsp.engine import check_paths, check_source
from fabric_lsp.rules.fab004_mark_forward_method_invalid_name import MAX_SUGGESTION_CANDIDATES

from tests.security.measure import run_cli as measured_cli
from tests.support.work import lines_of


def run_cli(*argv: str, cwd: Path, stdin: bytes | None = None):
    """The CLI measured (tests/security/measure.py), with the test environment less VIRTUAL_ENV."""
    env = {key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"}
    return measured_cli(cwd, env, *argv, stdin=stdin)

RUN = itertools.count()


def class_with_methods(count: int, mark: str = "missing_name", calls: bool = True, extra: str = "") -> str:
    """A module of `count` one-line methods, the wrapped model marking `mark` and (with `calls`)
    calling each method: every call and the mark look a name up on the class."""
    methods = "".join(f"    def m{i}(self, x): return x\n" for i in range(count))
    called = "".join(f"model.m{i}(1)\n" for i in range(count)) if calls else ""
    # The run number makes every text new, so no memo of an earlier analysis answers instead.
    return (f"# run {next(RUN)}\nimport torch.nn as nn\nfrom lightning.fabric import Fabric\n\n"
            "class LM(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            f"        self.head = nn.Linear(4, 4)\n{extra}{methods}\n"
            'fabric = Fabric(strategy="ddp"); fabric.launch()\nmodel = fabric.setup(LM())\n'
            f'model.mark_forward_method("{mark}")\n{called}')


def analysis_work(tmp_path: Path, count: int, calls: bool = True) -> int:
    path = str(tmp_path / f"methods_{count}.py")
    found, work = lines_of(check_source, path, class_with_methods(count, calls=calls), Config())
    assert [f.code for f in found] == ["FAB004"]
    return work.lines


def test_method_lookups_are_linear_in_the_class_size(tmp_path):
    analysis_work(tmp_path, 20)  # warm up: imports, library tables
    base = analysis_work(tmp_path, 0)
    small = analysis_work(tmp_path, 250) - base
    large = analysis_work(tmp_path, 2000) - base
    # 8x the methods (and calls): linear is 8x; methods() rebuilt per lookup grows with n^2.
    assert large <= 9 * small, f"250 methods: {small} lines, 2000 methods: {large} lines: {large / small:.2f}x"


def test_ten_thousand_methods_and_a_missing_name_are_checked_within_a_bound(tmp_path):
    (tmp_path / "model.py").write_text(class_with_methods(10_000, calls=False))
    result = run_cli("check", "--no-cache", "--format", "json", "model.py", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    [finding] = json.loads(result.stdout)
    assert finding["code"] == "FAB004" and "`LM.missing_name` does not exist" in finding["message"]
    assert finding["location"]["row"] == 10_000 + 12
    # Counted in process: the missing name costs as much per method with 10,000 methods as with
    # 1,000 (it was 27-46 s: each lookup read the whole class, and every method was a suggestion).
    analysis_work(tmp_path, 20, calls=False)  # warm up
    base = analysis_work(tmp_path, 0, calls=False)
    small = analysis_work(tmp_path, 1000, calls=False) - base
    large = analysis_work(tmp_path, 10_000, calls=False) - base
    assert large <= 11 * small, f"1k methods: {small} lines, 10k methods: {large} lines: {large / small:.2f}x"


def test_the_closest_method_is_suggested_below_the_bound_and_not_searched_above_it(tmp_path):
    generate = "    def generate(self, x):\n        return self.head(x)\n"
    below = class_with_methods(MAX_SUGGESTION_CANDIDATES - 1, mark="genrate", calls=False, extra=generate)
    [finding] = check_source(str(tmp_path / "below.py"), below, Config())
    assert finding.code == "FAB004" and finding.full_message.endswith('did you mean "generate"?')
    assert finding.fix is not None and finding.fix.title == 'Mark "generate" instead'

    above = class_with_methods(MAX_SUGGESTION_CANDIDATES, mark="genrate", calls=False, extra=generate)
    path = str(tmp_path / "above.py")
    found, _, notices, _ = check_paths({path: above}, Config())
    [finding] = found[path]
    # The name is certainly missing (an error), but which one was meant is not searched for: no
    # suggestion, and no removal offered in place of a rename; said once.
    assert finding.code == "FAB004" and "does not exist" in finding.message and "did you mean" not in finding.full_message
    assert finding.fix is None
    said = [n for n in notices if f"more than {MAX_SUGGESTION_CANDIDATES} methods" in n]
    assert said == [f'{path}: `LM` has more than {MAX_SUGGESTION_CANDIDATES} methods: FAB004 suggests no method '
                    'name for `mark_forward_method("genrate")`']
    assert [f.full_message for f in check_source(path, above, Config())] == [finding.full_message]  # same on every run


def library_project(root: Path, count: int) -> tuple[Path, str]:
    """A repository whose .venv holds a module of `count` functions and `count` assigned names, all
    imported and called by a new file of the project: each is a name looked up in the module. (One
    repository for every run: its interpreter is probed once; each run has a module of its own.)"""
    site = root / ".venv" / "lib" / "python3.11" / "site-packages"
    if not site.is_dir():
        site.mkdir(parents=True)
        (root / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\ninclude-system-site-packages = false\n"
                                                   "version = 3.11.7\n")
    run = next(RUN)
    (site / f"biglib{run}.py").write_text(
        "def make():\n    return 1\n" + "".join(f"def f{i}(x):\n    return x\nA{i} = make()\n" for i in range(count)))
    names = ", ".join(f"f{i}, A{i}" for i in range(count))
    text = (f"import torch\nfrom lightning.fabric import Fabric\nfrom biglib{run} import ({names})\n"
            "fabric = Fabric(strategy='ddp'); fabric.launch()\nmodel = fabric.setup(torch.nn.Linear(2, 2))\n"
            + "".join(f"f{i}(model)\nA{i}(model)\n" for i in range(count)))
    return root / f"main{run}.py", text


def library_work(root: Path, count: int) -> int:
    path, text = library_project(root, count)
    _, work = lines_of(check_source, str(path), text, Config(root=str(root)))
    return work.lines


def test_library_module_names_are_looked_up_in_linear_time(tmp_path):
    library_work(tmp_path, 20)  # warm up: the interpreter's probe, imports
    base = library_work(tmp_path, 0)
    small = library_work(tmp_path, 250) - base
    large = library_work(tmp_path, 2000) - base
    # 8x the names: 8x; each lookup reading the whole module cost n^2 (1,000 names 5 s, 2,000 30 s).
    assert large <= 9 * small, f"250 names: {small} lines, 2000 names: {large} lines: {large / small:.2f}x"
