"""The labels of fixtures/cases and fixtures/library_cases are facts: each case runs under real Lightning on the
CPU and must fail exactly where its labels say (fixtures/README.md), in every mode of the README table that
applies. Library cases (`# ground-truth: libs`) run with the pinned libraries' interpreter (.venv-libs, see
support/libs.py): skipped without it, failed without it when FABRIC_LSP_REQUIRE_LIBS=1.

The second half checks the harness itself with tiny programs that raise the rules' messages without
Lightning (fast), so a harness that cannot fail would be caught.
"""

from __future__ import annotations

import json
import os
import re
import textwrap
from pathlib import Path

import pytest

from support import cases as harness
from support.cases import (
    MODE_ENV,
    LibsMissing,
    applicable_modes,
    discover_cases,
    expected_outcome_problems,
    parse_traceback,
    run_case,
    run_mode,
)
from support.libs import LIBS_PYTHON_ENV, REQUIRE_LIBS_ENV, require_libs_python

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CASES_DIR = FIXTURES / "cases"
LIBRARY_CASES_DIR = FIXTURES / "library_cases"
CASES = discover_cases(CASES_DIR) + discover_cases(LIBRARY_CASES_DIR)


def _case_mode_params():
    for case in CASES:
        for mode in applicable_modes(case):
            marks = [pytest.mark.skip(reason=f"ground-truth: skip {case.skip_reason}")] if case.skip_reason else []
            yield pytest.param(case, mode, id=f"{case.name}-{mode}", marks=marks)


def test_cases_are_discovered_with_unique_names():
    names = [case.name for case in CASES]
    assert names, f"no cases under {CASES_DIR}"
    assert len(names) == len(set(names))


def test_library_cases_and_only_they_run_with_the_libraries():
    # fixtures/cases is analysed and run with the main test environment only (other tests compare its
    # findings with its labels as a whole); everything that imports the pinned libraries sits apart.
    library_cases = discover_cases(LIBRARY_CASES_DIR)
    assert len(library_cases) >= 25
    assert [case.name for case in library_cases if not case.libs] == []
    assert [case.name for case in discover_cases(CASES_DIR) if case.libs] == []
    assert all(case.name.startswith("lib_") for case in library_cases)


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_case_labels_are_well_formed(case):
    # Also covers skipped cases, which are never run.
    assert list(case.label_errors) == []


@pytest.mark.ground_truth
@pytest.mark.parametrize(("case", "mode"), list(_case_mode_params()))
def test_case_runs_as_labelled(case, mode):
    if case.libs:
        require_libs_python()
    result = run_mode(case, mode)  # MODE_ENV[mode], and in "choice" the case's own arguments and variables
    assert expected_outcome_problems(case, result, mode) == []


# --------------------------------------------------------------------------- the harness itself

FAB001_RAISE = (
    'raise RuntimeError("You are calling the method `Net.{m}()` from outside the model. To avoid issues with'
    " the currently selected strategy, explicitly mark it as a forward method with"
    " `fabric_model.mark_forward_method('{m}')` after `fabric.setup()`.\")"
)

# A stand-in for a wrapped model: custom methods raise FAB001's message, `.module` is the unwrapped one.
# Compiled under another file name so that, as with Lightning, the innermost case frame is the call.
FAKE_WRAPPER_SOURCE = f"""\
import types
class Plain:
    width = 4
    def encode(self, x):
        return x
    def decode(self, x):
        return x
    def forward(self, x):
        return x
class Wrapped:
    module = Plain()
    def encode(self, x):
        {FAB001_RAISE.format(m="encode")}
    def decode(self, x):
        {FAB001_RAISE.format(m="decode")}
    def mark_forward_method(self, method):  # Lightning's checks, in its order
        if not isinstance(method, (types.MethodType, str)):
            raise TypeError(f"Expected a method or a string, but got: {{type(method).__name__}}")
        name = method if isinstance(method, str) else method.__name__
        if name == "forward":
            raise ValueError("You cannot mark the forward method itself as a forward method.")
        if not isinstance(getattr(self.module, name, None), types.MethodType):
            raise AttributeError(
                f"You marked '{{name}}' as a forward method, but `Plain.{{name}}` does not exist or is not a method."
            )
"""
FAKE_WRAPPER = f"exec(compile({FAKE_WRAPPER_SOURCE!r}, '/elsewhere/wrappers.py', 'exec'))\nmodel = Wrapped()\n"


def _write_case(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "fab001_probe.py"
    path.write_text(FAKE_WRAPPER + textwrap.dedent(body), encoding="utf-8")
    return path


def _problems(tmp_path: Path, body: str, mode: str = "plain") -> list[str]:
    _write_case(tmp_path, body)
    (case,) = discover_cases(tmp_path)
    return expected_outcome_problems(case, run_case(case, MODE_ENV[mode], timeout=30), mode)


def test_harness_accepts_a_label_on_the_failing_line(tmp_path):
    assert _problems(tmp_path, "model.encode(1)  # expect: FAB001 error\n") == []


def test_harness_proves_every_label_by_fixing_and_rerunning(tmp_path):
    body = "model.encode(1)  # expect: FAB001 error\nmodel.decode(2)  # expect: FAB001 error\n"
    assert _problems(tmp_path, body) == []


def test_harness_rejects_a_label_on_the_wrong_line(tmp_path):
    problems = _problems(tmp_path, "x = 1  # expect: FAB001 error\nmodel.encode(1)\n")
    assert any("no FAB001 label" in p for p in problems), problems
    assert any("did not fire" in p for p in problems), problems


def test_harness_proves_an_after_label_once_the_earlier_error_is_fixed(tmp_path):
    # The misspelt mark stops the program; with it dropped, the call it was meant for raises: `after`.
    body = 'model.mark_forward_method("encdoe")  # expect: FAB004 error\nmodel.encode(1)  # expect: FAB001 after\n'
    assert _problems(tmp_path, body) == []


def test_harness_rejects_an_after_label_that_fires_first(tmp_path):
    problems = _problems(tmp_path, "model.encode(1)  # expect: FAB001 after\n")
    assert any("before any earlier label was fixed" in p for p in problems), problems


def test_harness_rejects_an_after_label_that_never_fires(tmp_path):
    body = 'model.mark_forward_method("encdoe")  # expect: FAB004 error\nmodel.module.encode(1)  # expect: FAB001 after\n'
    problems = _problems(tmp_path, body)
    assert any("did not fire" in p for p in problems), problems


def test_harness_rejects_an_unlabelled_failure(tmp_path):
    problems = _problems(tmp_path, "model.encode(1)  # expect: FAB001 error\nmodel.decode(2)\n")
    assert len(problems) == 1 and "fab001_probe.py:" in problems[0], problems


def test_harness_rejects_an_error_label_that_does_not_fire(tmp_path):
    problems = _problems(tmp_path, "model.module.encode(1)  # expect: FAB001 error\n")
    assert len(problems) == 1 and "did not fire" in problems[0] and "ran clean" in problems[0], problems


def test_harness_rejects_a_hint_that_fires_in_the_plain_run(tmp_path):
    problems = _problems(tmp_path, "model.encode(1)  # expect: FAB001 hint\n", mode="plain")
    assert len(problems) == 1 and "must not fire" in problems[0], problems


def test_harness_rejects_another_exception_on_the_labelled_line(tmp_path):
    problems = _problems(tmp_path, "model.encode(1 / 0)  # expect: FAB001 error\n")
    assert any("ZeroDivisionError" in p for p in problems), problems


def test_harness_reports_malformed_labels(tmp_path):
    _write_case(tmp_path, "model.module.encode(1)  # expect: FAB001 eror\n# expect: FAB001 error\n")
    (case,) = discover_cases(tmp_path)
    assert len(case.label_errors) == 2, case.label_errors


def test_traceback_parser_reads_rank_prefixed_and_chained_tracebacks():
    stderr = textwrap.dedent(
        """\
        Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/1
        [rank0]: Traceback (most recent call last):
        [rank0]:   File "/tmp/a/main.py", line 3, in <module>
        [rank0]:     f()
        [rank0]: ValueError: first
        [rank0]:
        [rank0]: During handling of the above exception, another exception occurred:
        [rank0]:
        [rank0]: Traceback (most recent call last):
        [rank0]:   File "/tmp/a/main.py", line 7, in <module>
        [rank0]:     out = model.generate(x)
        [rank0]:           ^^^^^^^^^^^^^^^^^
        [rank1]: Traceback (most recent call last):
        [rank1]:   File "/tmp/a/main.py", line 9, in <module>
        [rank1]: ValueError: rank 1 fails elsewhere
        [rank0]:   File "/venv/lightning/fabric/wrappers.py", line 219, in _wrapped_method
        [rank0]:     raise RuntimeError(
        [rank0]: RuntimeError: You are calling the method `Net.generate()` from outside the model.
        [W1202 17:00:00.000] process group has NOT been destroyed
        """
    )
    exc_class, message, frames = parse_traceback(stderr)
    assert exc_class == "RuntimeError"
    assert message == "You are calling the method `Net.generate()` from outside the model."
    assert frames == [("/tmp/a/main.py", 7), ("/venv/lightning/fabric/wrappers.py", 219)]


def test_rule_of_maps_every_form_of_every_rule():
    from support.cases import rule_of

    typeerror = "Materialization requires that the `Block.reset_parameters` method is implemented."
    assert rule_of("TypeError", typeerror)[1]["cls"] == "Block"
    fsdp = "'Block' object has no attribute 'reset_parameters'. Did you mean: 'get_parameter'?"
    assert rule_of("AttributeError", fsdp)[0] == "FAB002" and rule_of("AttributeError", fsdp)[1]["cls"] == "Block"
    typo = "You marked 'genrate' as a forward method, but `Net.genrate` does not exist or is not a method."
    fab004 = rule_of("AttributeError", typo)
    assert fab004[0] == "FAB004" and fab004[1]["method"] == "genrate" and fab004[1]["cls"] == "Net"
    assert rule_of("ValueError", typo) is None
    assert rule_of("ValueError", "You cannot mark the forward method itself as a forward method.")[0] == "FAB004"
    assert rule_of("TypeError", "Expected a method or a string, but got: function")[0] == "FAB003"
    assert rule_of("AttributeError", "'Block' object has no attribute 'weight'") is None


def test_harness_proves_fab004_labels_by_dropping_the_mark(tmp_path):
    body = (
        'model.mark_forward_method("encdoe")  # expect: FAB004 error\n'
        'model.mark_forward_method("width")  # expect: FAB004 error\n'
        'model.mark_forward_method("forward")  # expect: FAB004 error\n'
        'model.mark_forward_method("decode")\n'
    )
    assert _problems(tmp_path, body) == []


def test_harness_rejects_an_unlabelled_fab004(tmp_path):
    problems = _problems(tmp_path, 'model.mark_forward_method("encdoe")\n')
    assert len(problems) == 1 and "FAB004 fired where no FAB004 label says so" in problems[0], problems


def test_harness_fixes_fab003_on_a_class_attribute(tmp_path):
    # mark_forward_method(Cls.m) -> mark_forward_method("m"), then the rest must run clean.
    body = "model.mark_forward_method(Plain.encode)  # expect: FAB003 error\nmodel.module.encode(1)\n"
    assert _problems(tmp_path, body) == []
    problems = _problems(tmp_path, "model.mark_forward_method(Plain.encode)  # expect: FAB003 error\nmodel.encode(1)\n")
    assert len(problems) == 1 and "fab001_probe.py:" in problems[0] and "FAB001" in problems[0], problems


# torch FSDP materializes a meta module by calling reset_parameters() on every module with own tensors.
FAKE_FSDP = (
    "exec(compile('def materialize(m):\\n    m.reset_parameters()\\n',"
    " '/elsewhere/site-packages/torch/distributed/fsdp/_init_utils.py', 'exec'))\n"
)


def test_harness_accepts_fsdp_attribute_error_naming_the_labelled_class(tmp_path):
    body = FAKE_FSDP + "class Block:  # expect: FAB002 error\n    pass\nmaterialize(Block())\n"
    assert _problems(tmp_path, body) == []


def test_harness_rejects_fsdp_attribute_error_naming_another_class(tmp_path):
    body = FAKE_FSDP + "class Block:  # expect: FAB002 error\n    pass\nclass Head:\n    pass\nmaterialize(Head())\n"
    problems = _problems(tmp_path, body)
    assert any("FAB002 fired where no FAB002 label" in p for p in problems), problems
    assert any("did not fire" in p for p in problems), problems


def test_harness_ignores_a_missing_reset_parameters_outside_fsdp(tmp_path):
    body = "class Block:  # expect: FAB002 error\n    pass\nBlock().reset_parameters()\n"
    problems = _problems(tmp_path, body)
    assert any("no labelled finding" in p and "AttributeError" in p for p in problems), problems


MODEL_PARALLEL_WARNING = (
    'import sys\nprint("/venv/lightning/fabric/utilities/init.py:101: Parameter initialization incomplete.'
    " The following modules have parameters or buffers with uninitialized memory because they don't define a"
    ' `reset_parameters()` method for re-initialization: {names}", file=sys.stderr)\n'
)


def test_harness_accepts_the_model_parallel_warning_for_a_labelled_class(tmp_path):
    body = "class Block:  # expect: FAB002 error\n    pass\n" + MODEL_PARALLEL_WARNING.format(names="Block")
    assert _problems(tmp_path, body) == []
    body = "model = None  # expect: FAB002 warning class=Block\n" + MODEL_PARALLEL_WARNING.format(names="Block")
    assert _problems(tmp_path, body, mode="ddp") == []


def test_harness_proves_a_run_plain_warning_by_the_model_parallel_warning_of_the_plain_run(tmp_path):
    # ModelParallel raises nothing and LT_STRATEGY=ddp replaces it: its warning is proven by the plain run.
    body = "model = None  # expect: FAB002 warning class=Block run=plain\n" + MODEL_PARALLEL_WARNING.format(names="Block")
    _write_case(tmp_path, body)
    (case,) = discover_cases(tmp_path)
    assert applicable_modes(case) == ["plain"]
    assert _problems(tmp_path, body, mode="plain") == []
    problems = _problems(tmp_path, "model = None  # expect: FAB002 warning class=Block run=plain\n", mode="plain")
    assert len(problems) == 1 and "did not fire in the plain run" in problems[0], problems


def test_harness_accepts_the_model_parallel_warning_of_a_reinitialised_case_that_runs_clean(tmp_path):
    # The program gives the weights values after setup and checks them: Lightning's warning is then no finding.
    marker = "# ground-truth: reinitialised the program calls model.reset_parameters() after setup\n"
    path = tmp_path / "fab002_probe.py"
    path.write_text(marker + MODEL_PARALLEL_WARNING.format(names="Block"), encoding="utf-8")
    (case,) = discover_cases(tmp_path)
    assert case.reinitialised and applicable_modes(case) == ["plain"]
    assert expected_outcome_problems(case, run_case(case, MODE_ENV["plain"], timeout=30), "plain") == []
    # ... but a run that fails (its own check of the weights) is a problem, and so is the warning without the marker
    path.write_text(marker + MODEL_PARALLEL_WARNING.format(names="Block") + "raise AssertionError('uninitialised')\n",
                    encoding="utf-8")
    (case,) = discover_cases(tmp_path)
    problems = expected_outcome_problems(case, run_case(case, MODE_ENV["plain"], timeout=30), "plain")
    assert any("no FAB002 label" in p for p in problems), problems
    path.write_text(MODEL_PARALLEL_WARNING.format(names="Block"), encoding="utf-8")
    (case,) = discover_cases(tmp_path)
    problems = expected_outcome_problems(case, run_case(case, MODE_ENV["plain"], timeout=30), "plain")
    assert len(problems) == 1 and "no FAB002 label" in problems[0], problems


def test_harness_rejects_run_plain_outside_a_fab002_warning(tmp_path):
    _write_case(tmp_path, "model.encode(1)  # expect: FAB001 error run=plain\n")
    (case,) = discover_cases(tmp_path)
    assert any("run=plain is only for a FAB002 warning" in e for e in case.label_errors), case.label_errors


def test_harness_rejects_the_model_parallel_warning_in_an_unlabelled_case(tmp_path):
    problems = _problems(tmp_path, MODEL_PARALLEL_WARNING.format(names="Block"))
    assert len(problems) == 1 and "no FAB002 label" in problems[0] and "Block" in problems[0], problems


def test_harness_rejects_the_model_parallel_warning_naming_an_unlabelled_class(tmp_path):
    body = "class Block:  # expect: FAB002 error\n    pass\n" + MODEL_PARALLEL_WARNING.format(names="Block, Head")
    problems = _problems(tmp_path, body)
    assert len(problems) == 1 and "no FAB002 label" in problems[0] and "Head" in problems[0], problems
    problems = _problems(tmp_path, "class Block:  # expect: FAB002 error\n    pass\n")
    assert len(problems) == 1 and "did not fire" in problems[0], problems


def test_harness_rejects_the_model_parallel_warning_for_a_hint_in_the_plain_run(tmp_path):
    body = "model = None  # expect: FAB002 hint class=Block\n" + MODEL_PARALLEL_WARNING.format(names="Block")
    problems = _problems(tmp_path, body, mode="plain")
    assert len(problems) == 1 and "must not fire" in problems[0], problems


def test_harness_fix_keeps_a_helper_working_for_the_unwrapped_model(tmp_path):
    # The fixed call site is also reached with `model.module`: the fix must not turn that into `.module.module`.
    body = "def helper(m):\n    return m.encode(1)  # expect: FAB001 error\nhelper(model)\nhelper(model.module)\n"
    assert _problems(tmp_path, body) == []


def test_harness_fix_of_a_call_valued_receiver_unwraps_once(tmp_path):
    body = "def get():\n    return model\nget().encode(1)  # expect: FAB001 error\n"
    assert _problems(tmp_path, body) == []


def test_harness_fixes_a_method_name_computed_at_run_time(tmp_path):
    # getattr(w, name)(...) -> getattr(getattr(w, "module", w), name)(...): both names of the loop are proven.
    body = 'for stage in ("en", "de"):\n    getattr(model, f"{stage}code")(1)  # expect: FAB001 error\n'
    assert _problems(tmp_path, body) == []


def test_harness_rejects_a_getattr_call_that_stays_unlabelled(tmp_path):
    body = 'getattr(model, "encode")(1)  # expect: FAB001 error\ngetattr(model, "decode")(2)\n'
    problems = _problems(tmp_path, body)
    assert len(problems) == 1 and "fab001_probe.py:" in problems[0], problems


# --------------------------------------------------------------------------- library cases

LIBS_PROBE = (
    "# ground-truth: libs\n"
    '"""Runs only where the pinned libraries are installed."""\n'
    "import os, sys\n"
    "import lightning  # so the run goes through the fork server, as the library cases' runs do\n"
    "import transformers\n"
    'print(sys.executable, os.environ.get("HF_HUB_OFFLINE"))\n'
) + FAKE_WRAPPER


def test_harness_runs_a_libs_case_with_the_libraries_interpreter(tmp_path):
    python = require_libs_python()
    (tmp_path / "libs_probe.py").write_text(LIBS_PROBE + "model.encode(1)  # expect: FAB001 error\n", encoding="utf-8")
    (case,) = discover_cases(tmp_path)
    assert case.libs and case.label_errors == ()
    result = run_case(case, MODE_ENV["plain"], timeout=120)
    assert expected_outcome_problems(case, result, "plain") == []
    assert len(result.steps) == 2  # failed at the label, fixed, ran clean
    for step in result.steps:
        executable, offline = step.stdout.split()[:2]
        assert os.path.realpath(executable) == os.path.realpath(python) and offline == "1"
    assert result.steps[0].via == "fork-server", result.steps[0].stderr[-2000:]


def test_harness_names_a_missing_libraries_interpreter(tmp_path, monkeypatch):
    (tmp_path / "libs_probe.py").write_text(LIBS_PROBE, encoding="utf-8")
    (case,) = discover_cases(tmp_path)
    monkeypatch.setenv(LIBS_PYTHON_ENV, str(tmp_path / "no-such-venv" / "bin" / "python"))
    with pytest.raises(LibsMissing, match=r"libs_probe is a '# ground-truth: libs' case, but .*make libs"):
        run_case(case, MODE_ENV["plain"])
    monkeypatch.delenv(REQUIRE_LIBS_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="no-such-venv"):
        require_libs_python()
    monkeypatch.setenv(REQUIRE_LIBS_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match=f"{REQUIRE_LIBS_ENV}=1"):
        require_libs_python()


def test_harness_reports_misplaced_and_malformed_libs_markers(tmp_path):
    (tmp_path / "a.py").write_text("# ground-truth: lib\nimport lightning\n", encoding="utf-8")
    (tmp_path / "b.py").write_text("import lightning\n# ground-truth: libs\n", encoding="utf-8")
    project = tmp_path / "c"
    project.mkdir()
    (project / "main.py").write_text("# ground-truth: libs\nimport helper\n", encoding="utf-8")
    (project / "helper.py").write_text("# ground-truth: libs\n", encoding="utf-8")
    a, b, c = discover_cases(tmp_path)
    assert not a.libs and any("malformed marker" in e for e in a.label_errors), a.label_errors
    assert not b.libs and any("leading comment block" in e for e in b.label_errors), b.label_errors
    assert c.libs and any("must sit once" in e for e in c.label_errors), c.label_errors


# Lightning's launch checks (Fabric.launch, Fabric._validate_launched), without Lightning.
FAKE_FABRIC = '''import inspect


class Fabric:
    def __init__(self, **kwargs):
        self.launched = False

    def launch(self, function=None):
        if function is not None:
            if not callable(function):
                raise TypeError(f"`Fabric.launch(...)` needs to be a callable, but got {function}. HINT: do x")
            if not inspect.signature(function).parameters:
                raise TypeError(f"`Fabric.launch(function={function})` needs to take at least one argument. The x")
        self.launched = True
        return function(self) if function is not None else None

    def setup(self, module):
        if not self.launched:
            raise RuntimeError("To use Fabric with more than one device, you must call `.launch()` or use the CLI: x")
        return module


'''


def _launch_problems(tmp_path: Path, body: str, mode: str = "plain") -> list[str]:
    # Compiled under a file name outside the case, as Lightning's own frames are.
    fake = f"exec(compile({FAKE_FABRIC!r}, '/elsewhere/site-packages/lightning/fabric/fabric.py', 'exec'))\n"
    (tmp_path / "fab005_probe.py").write_text(fake + textwrap.dedent(body), encoding="utf-8")
    (case,) = discover_cases(tmp_path)
    return expected_outcome_problems(case, run_case(case, MODE_ENV[mode], timeout=30), mode)


def test_harness_proves_fab005_by_launching_after_the_constructor(tmp_path):
    body = "fabric = Fabric(strategy='ddp')\nmodel = fabric.setup(1)  # expect: FAB005 error\nprint(model)\n"
    assert _launch_problems(tmp_path, body) == []
    problems = _launch_problems(tmp_path, body.replace("  # expect: FAB005 error", ""))
    assert len(problems) == 1 and "FAB005 fired where no FAB005 label says so" in problems[0], problems


def test_harness_proves_fab008_by_passing_the_function_and_adding_its_parameter(tmp_path):
    called = "def train(fabric):\n    return 1\n\nfabric = Fabric()\nfabric.launch(train(fabric))  # expect: FAB008 error\n"
    assert _launch_problems(tmp_path, called) == []
    bare = "def train():\n    return 1\n\nfabric = Fabric()\nfabric.launch(train)  # expect: FAB008 error\n"
    assert _launch_problems(tmp_path, bare) == []
    problems = _launch_problems(tmp_path, bare.replace("  # expect: FAB008 error", ""))
    assert len(problems) == 1 and "FAB008 fired where no FAB008 label says so" in problems[0], problems


def test_a_fabric_run_case_is_a_trap(tmp_path):
    (tmp_path / "probe.py").write_text(
        "# ground-truth: fabric-run\nx = 1\nprint(x)  # expect: FAB005 warning\n", encoding="utf-8")
    (case,) = discover_cases(tmp_path)
    assert case.fabric_run and "must have no labels" in " ".join(case.label_errors)


def test_rule_of_maps_fab006_and_fab007():
    from support.cases import rule_of

    backward = ("The current strategy and precision selection requires you to call `fabric.backward(loss)` instead of"
                " `loss.backward()`.")
    assert rule_of("RuntimeError", backward)[0] == "FAB006"
    assert rule_of("ValueError", "A model should be passed only once to the `setup_module` method.")[0] == "FAB007"
    sync = "You need to set up the model first before you can call `fabric.no_backward_sync()`: `model = ...`"
    assert rule_of("TypeError", sync)[0] == "FAB007"
    assert rule_of("TypeError", "Only PyTorch DataLoader are currently supported in `setup_dataloaders`.")[0] == "FAB007"
    jointly = ("The `DeepSpeedStrategy` requires the model and optimizer(s) to be set up jointly through"
               " `.setup(model, optimizer, ...)`.")
    assert rule_of("RuntimeError", jointly)[0] == "FAB007"
    assert rule_of("ValueError", "An optimizer should be passed only once to the `setup` method.") is None


def test_harness_proves_every_fab006_and_fab007_label_under_real_lightning(tmp_path):
    """Each failure is fixed on its line and the case runs again: a list of loaders, a model set up twice,
    no_backward_sync on the original module and loss.backward() under bf16-mixed are all proven in one case."""
    (tmp_path / "fab007_probe.py").write_text(textwrap.dedent('''\
        import torch
        from torch import nn
        from torch.utils.data import DataLoader, TensorDataset
        from lightning.fabric import Fabric

        fabric = Fabric(accelerator="cpu", devices=1, precision="bf16-mixed")
        data = TensorDataset(torch.randn(4, 2))
        train, val = fabric.setup_dataloaders([DataLoader(data), DataLoader(data)])  # expect: FAB007 error
        net = nn.Linear(2, 1)
        model = fabric.setup(net)
        model = fabric.setup(model)  # expect: FAB007 error
        with fabric.no_backward_sync(net):  # expect: FAB007 error
            model(torch.randn(3, 2)).sum().backward()  # expect: FAB006 error
        '''), encoding="utf-8")
    (case,) = discover_cases(tmp_path)
    result = run_case(case, MODE_ENV["plain"], timeout=60)
    assert expected_outcome_problems(case, result, "plain") == []
    assert len(result.steps) == 5  # four failures, each fixed, then a clean run


# --------------------------------------------------------------------------- run-time choices ("choice" mode)


def _choice_case(tmp_path: Path, markers: str, body: str):
    """A case whose leading comment block holds `markers` (`# ground-truth: choice ...` lines) before the fake
    wrapper; `body` runs after it."""
    (tmp_path / "fab001_probe.py").write_text(markers + FAKE_WRAPPER + textwrap.dedent(body), encoding="utf-8")
    (case,) = discover_cases(tmp_path)
    return case


def _choice_problems(tmp_path: Path, markers: str, body: str, mode: str) -> list[str]:
    case = _choice_case(tmp_path, markers, body)
    assert case.label_errors == ()
    return expected_outcome_problems(case, run_mode(case, mode, timeout=30), mode)


FLAG = "# ground-truth: choice --sample --steps '3 4'\n"
FLAGGED = 'import sys\nif sys.argv[1:] == ["--sample", "--steps", "3 4"]:\n    model.encode(1)  # expect: FAB001 warning run=choice\n'


def test_harness_proves_a_run_choice_label_by_the_choice_run_and_the_default_runs(tmp_path):
    case = _choice_case(tmp_path, FLAG, FLAGGED)
    assert case.choice_args == ("--sample", "--steps", "3 4") and case.choice_env == {}
    assert applicable_modes(case) == ["plain", "ddp", "choice"]
    for mode in ("plain", "ddp", "choice"):
        assert _choice_problems(tmp_path, FLAG, FLAGGED, mode) == [], mode
    result = run_mode(case, "choice", timeout=30)
    assert [step.returncode for step in result.steps] == [1, 0]  # fired, fixed, then the choice runs clean
    assert result.args == case.choice_args


def test_harness_rejects_a_run_choice_label_that_fires_without_the_choice(tmp_path):
    body = "model.encode(1)  # expect: FAB001 warning run=choice\n"  # the default run reaches it too: an error
    for mode in ("plain", "ddp"):
        problems = _choice_problems(tmp_path, FLAG, body, mode)
        assert len(problems) == 1 and "run=choice label" in problems[0] and "must not fire" in problems[0], problems
    assert _choice_problems(tmp_path, FLAG, body, "choice") == []


def test_harness_rejects_a_run_choice_label_that_does_not_fire_with_the_choice(tmp_path):
    body = 'import sys\nif "--samples" in sys.argv:\n    model.encode(1)  # expect: FAB001 warning run=choice\n'
    problems = _choice_problems(tmp_path, FLAG, body, "choice")
    assert len(problems) == 1 and "did not fire in the choice run" in problems[0] and "ran clean" in problems[0], problems


def test_harness_rejects_a_choice_run_made_without_the_choice(tmp_path):
    # MODE_ENV["choice"] alone is not the case's choice run: it must not pass for one.
    case = _choice_case(tmp_path, FLAG, FLAGGED)
    problems = expected_outcome_problems(case, run_case(case, MODE_ENV["choice"], timeout=30), "choice")
    assert any("use run_mode(case, 'choice')" in p for p in problems), problems
    assert any("did not fire in the choice run" in p for p in problems), problems
    # ... nor is a default run that was given it
    problems = expected_outcome_problems(case, run_case(case, {}, timeout=30, args=case.choice_args), "plain")
    assert any("use run_mode(case, 'plain')" in p for p in problems), problems


def test_harness_rejects_an_unlabelled_failure_of_the_choice_run(tmp_path):
    # A choice marker without a run=choice label is a clean twin: the choice must not raise.
    body = FLAGGED.replace("  # expect: FAB001 warning run=choice", "")
    problems = _choice_problems(tmp_path, FLAG, body, "choice")
    assert len(problems) == 1 and "FAB001 fired where no FAB001 label says so" in problems[0], problems
    assert _choice_problems(tmp_path, FLAG, body, "plain") == []
    twin = 'import sys\nif "--sample" in sys.argv:\n    model.module.encode(1)\n'
    case = _choice_case(tmp_path, FLAG, twin)
    assert applicable_modes(case) == ["plain", "ddp", "choice"]
    assert _choice_problems(tmp_path, FLAG, twin, "choice") == []
    problems = _choice_problems(tmp_path, FLAG, 'import sys\nif "--sample" in sys.argv:\n    1 / 0\n', "choice")
    assert len(problems) == 1 and "ZeroDivisionError" in problems[0], problems


def test_harness_lets_error_labels_fire_in_the_choice_run_but_not_hints(tmp_path):
    body = "model.decode(2)  # expect: FAB001 error\n" + FLAGGED
    for mode in ("plain", "choice"):
        assert _choice_problems(tmp_path, FLAG, body, mode) == [], mode
    hinted = "model.decode(2)  # expect: FAB001 hint\n" + FLAGGED
    problems = _choice_problems(tmp_path, FLAG, hinted, "choice")
    assert len(problems) == 1 and "a hint label must not fire" in problems[0], problems


def test_choice_env_reaches_the_program(tmp_path):
    markers = "# ground-truth: choice-env EVAL=1 'NOTE=two words'\n"
    body = (
        "import os\n"
        'if os.environ.get("EVAL") == "1" and os.environ.get("NOTE") == "two words":\n'
        "    model.encode(1)  # expect: FAB001 warning run=choice\n"
    )
    case = _choice_case(tmp_path, markers, body)
    assert case.choice_env == {"EVAL": "1", "NOTE": "two words"} and case.choice_args == ()
    assert applicable_modes(case) == ["plain", "ddp", "choice"]
    for mode in ("plain", "ddp", "choice"):
        assert _choice_problems(tmp_path, markers, body, mode) == [], mode
    # both markers: arguments and variables together
    both = FLAG + markers
    body = (
        "import os, sys\n"
        'if os.environ.get("EVAL") == "1" and sys.argv[1:] == ["--sample", "--steps", "3 4"]:\n'
        "    model.encode(1)  # expect: FAB001 warning run=choice\n"
    )
    assert _choice_problems(tmp_path, both, body, "choice") == []


ARGV_PROBE = (
    "import json, os, sys\n"
    "import lightning  # so that the run goes through the fork server\n"
    'print(json.dumps([sys.argv, sys.orig_argv[1:], os.path.realpath(sys.executable) == os.path.realpath(sys.orig_argv[0]),'
    ' os.environ.get("EVAL"), os.environ.get("HYDRA_FULL_ERROR")]))\n'
)


@pytest.mark.parametrize("fork_server", [False, True], ids=["cold", "fork-server"])
def test_choice_arguments_reach_the_program(tmp_path, monkeypatch, fork_server):
    monkeypatch.setattr(harness, "USE_FORK_SERVER", fork_server)
    case = _choice_case(tmp_path, FLAG + "# ground-truth: choice-env EVAL=1\n", ARGV_PROBE + FLAGGED)
    result = run_mode(case, "choice", timeout=120)
    assert expected_outcome_problems(case, result, "choice") == []
    assert [step.via for step in result.steps] == ["fork-server" if fork_server else "subprocess"] * 2, (
        result.steps[0].stderr[-2000:])
    argv = ["fab001_probe.py", "--sample", "--steps", "3 4"]
    for step in result.steps:
        assert json.loads(step.stdout.splitlines()[0]) == [argv, argv, True, "1", "1"]
    plain = run_mode(case, "plain", timeout=120)
    assert json.loads(plain.stdout.splitlines()[0]) == [["fab001_probe.py"], ["fab001_probe.py"], True, None, "1"]


TWO_DEVICES_ARGV = '''\
# ground-truth: choice --sample
import sys
from lightning.fabric import Fabric

fabric = Fabric(strategy="ddp", accelerator="cpu", devices=2)
fabric.launch()  # rank 1 is `python <abs main.py> --sample`, started by Lightning's _SubprocessScriptLauncher
sys.stdout.write(f"<rank {fabric.global_rank}: {sys.argv[1:]}>\\n")  # one write: the ranks share the pipe
fabric.barrier()
'''


@pytest.mark.ground_truth
def test_choice_arguments_reach_every_ddp_process(tmp_path):
    (tmp_path / "probe.py").write_text(TWO_DEVICES_ARGV, encoding="utf-8")
    (case,) = discover_cases(tmp_path)
    result = run_mode(case, "choice", timeout=120)
    assert expected_outcome_problems(case, result, "choice") == []
    assert result.steps[0].via == "fork-server" or harness.USE_FORK_SERVER is False
    assert sorted(re.findall(r"<(rank \d: .*?)>", result.stdout)) == [
        "rank 0: ['--sample']", "rank 1: ['--sample']"], result.stdout + result.stderr[-2000:]


HYDRA_APP = '''\
# ground-truth: choice sample=true model=small
"""A hydra app: an error raised inside the task function is located at the labelled line."""
import hydra
{lightning}
{wrapper}

@hydra.main(version_base=None, config_path="conf", config_name="config")
def main(cfg):
    if cfg.sample and cfg.model.name == "small":
        model.encode(1)  # expect: FAB001 warning run=choice
    model.decode(2)  # expect: FAB001 error


if __name__ == "__main__":
    main()
'''


@pytest.mark.parametrize("fork_server", [False, True], ids=["cold", "fork-server"])
def test_a_hydra_apps_error_is_located_at_the_labelled_line(tmp_path, monkeypatch, fork_server):
    monkeypatch.setattr(harness, "USE_FORK_SERVER", fork_server)
    project = tmp_path / "hydra_probe"
    (project / "conf" / "model").mkdir(parents=True)
    (project / "conf" / "config.yaml").write_text("defaults:\n  - model: big\n  - _self_\nsample: false\n")
    (project / "conf" / "model" / "big.yaml").write_text("name: big\n")
    (project / "conf" / "model" / "small.yaml").write_text("name: small\n")
    lightning = "import lightning  # so that the run goes through the fork server" if fork_server else ""
    (project / "main.py").write_text(HYDRA_APP.format(lightning=lightning, wrapper=FAKE_WRAPPER), encoding="utf-8")
    (case,) = discover_cases(tmp_path)
    assert case.choice_args == ("sample=true", "model=small") and case.label_errors == ()
    assert applicable_modes(case) == ["plain", "ddp", "choice"]
    for mode in applicable_modes(case):
        result = run_mode(case, mode, timeout=120)
        assert expected_outcome_problems(case, result, mode) == [], mode
        assert {step.via for step in result.steps} == {"fork-server" if fork_server else "subprocess"}
    sample, decode = sorted(label.line for label in case.labels)
    choice = run_mode(case, "choice", timeout=120)
    first = choice.steps[0]
    assert first.location == ("main.py", sample) and first.exc_class == "RuntimeError", first.stderr[-3000:]
    # HYDRA_FULL_ERROR=1: hydra re-raises, so the traceback is the interpreter's, through hydra's own frames
    assert any("/hydra/" in path for path, _ in first.frames), first.frames
    assert [step.location for step in choice.steps] == [("main.py", sample), ("main.py", decode), None]
    # a label one line off is caught
    (project / "main.py").write_text(
        HYDRA_APP.format(lightning=lightning, wrapper=FAKE_WRAPPER).replace(
            "        model.encode(1)  # expect: FAB001 warning run=choice\n",
            "        x = 1  # expect: FAB001 warning run=choice\n        model.encode(x)\n"),
        encoding="utf-8")
    (case,) = discover_cases(tmp_path)
    problems = expected_outcome_problems(case, run_mode(case, "choice", timeout=120), "choice")
    assert any(f"main.py:{sample + 1}" in p and "no FAB001 label" in p for p in problems), problems
    assert any(f"main.py:{sample} FAB001 warning run=choice did not fire" in p for p in problems), problems


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ("# ground-truth: choice\nx = 1\n", "needs the command-line arguments"),
        ("# ground-truth: choice --name 'unclosed\nx = 1\n", "No closing quotation"),
        ("# ground-truth: choice-env EVAL\nx = 1\n", "'EVAL' is no NAME=VALUE assignment"),
        ("# ground-truth: choice-env 1X=2\nx = 1\n", "'1X=2' is no NAME=VALUE assignment"),
        ("# ground-truth: choice-env\nx = 1\n", "needs NAME=VALUE assignments"),
        ("# ground-truth: choice-env EVAL=1 EVAL=2\nx = 1\n", "EVAL is assigned twice"),
        ("# ground-truth: choice-env LT_STRATEGY=ddp\nx = 1\n", "set or scrubbed by the harness"),
        ("# ground-truth: choice-env HYDRA_FULL_ERROR=0\nx = 1\n", "set or scrubbed by the harness"),
        ("# ground-truth: choice --a\n# ground-truth: choice --b\nx = 1\n", "'# ground-truth: choice' must sit once"),
        ("x = 1\n# ground-truth: choice --a\n", "'# ground-truth: choice' must sit once"),
        ("# ground-truth: choice-env A=1\n# ground-truth: choice-env B=1\nx = 1\n", "'# ground-truth: choice-env' must sit once"),
        ("# ground-truth: choices --a\nx = 1\n", "malformed marker"),
        ("x = 1  # expect: FAB001 warning run=choice\n", "run=choice needs a run-time choice"),
        ("# ground-truth: choice --a\nx = 1  # expect: FAB001 error run=choice\n", "run=choice is only for a warning"),
        ("# ground-truth: choice --a\nx = 1  # expect: FAB001 hint run=choice\n", "run=choice is only for a warning"),
        ("# ground-truth: choice --a\nx = 1  # expect: FAB001 warning run=chioce\n", "unknown run=chioce"),
    ],
)
def test_harness_reports_malformed_choice_markers_and_labels(tmp_path, source, error):
    (tmp_path / "probe.py").write_text(source, encoding="utf-8")
    (case,) = discover_cases(tmp_path)
    assert any(error in e for e in case.label_errors), case.label_errors
    if "must sit once" not in error and "malformed marker" not in error and "run=" not in error:
        assert not case.has_choice and "choice" not in applicable_modes(case)


def test_a_choice_marker_in_another_file_of_a_project_is_misplaced(tmp_path):
    project = tmp_path / "p"
    project.mkdir()
    (project / "main.py").write_text("# ground-truth: choice --a\nimport helper\n", encoding="utf-8")
    (project / "helper.py").write_text("# ground-truth: choice-env A=1\n", encoding="utf-8")
    (case,) = discover_cases(tmp_path)
    assert case.choice_args == ("--a",) and case.choice_env == {}
    assert case.label_errors == ("'# ground-truth: choice-env' must sit once in the leading comment block of the entry file",)


def test_markers_may_sit_right_after_the_module_docstring(tmp_path):
    # The leading comment block is the comments before the first statement; a module docstring is none.
    doc = '"""A case.\n\nIts docstring."""\n'
    (tmp_path / "a.py").write_text(doc + "# ground-truth: choice --sample\n# ground-truth: choice-env EVAL=1\nimport os\n")
    (tmp_path / "b.py").write_text(doc + "import os\n# ground-truth: choice --sample\n")
    (tmp_path / "c.py").write_text("# ground-truth: skip no GPU\n" + doc + "# ground-truth: libs\nimport os\n")
    a, b, c = discover_cases(tmp_path)
    assert a.choice_args == ("--sample",) and a.choice_env == {"EVAL": "1"} and a.label_errors == ()
    assert b.choice_args == () and any("must sit once" in e for e in b.label_errors), b.label_errors
    assert c.skip_reason == "no GPU" and c.libs and c.label_errors == ()
