"""The labels of fixtures/cases and fixtures/library_cases are facts: each case runs under real Lightning on the
CPU and must fail exactly where its labels say (fixtures/README.md), in every mode of the README table that
applies. Library cases (`# ground-truth: libs`) run with the pinned libraries' interpreter (.venv-libs, see
support/libs.py): skipped without it, failed without it when FABRIC_LSP_REQUIRE_LIBS=1.

The second half checks the harness itself with tiny programs that raise the rules' messages without
Lightning (fast), so a harness that cannot fail would be caught.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from support.cases import (
    MODE_ENV,
    LibsMissing,
    applicable_modes,
    discover_cases,
    expected_outcome_problems,
    parse_traceback,
    run_case,
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
    result = run_case(case, MODE_ENV[mode])
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
