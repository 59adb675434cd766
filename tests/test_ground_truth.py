"""The labels of fixtures/cases are facts: each case runs under real Lightning on the CPU and must fail
exactly where its labels say (fixtures/README.md), in every mode of the README table that applies.

The second half checks the harness itself with tiny programs that raise the rules' messages without
Lightning (fast), so a harness that cannot fail would be caught.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from support.cases import (
    MODE_ENV,
    applicable_modes,
    discover_cases,
    expected_outcome_problems,
    parse_traceback,
    run_case,
)

CASES_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "cases"
CASES = discover_cases(CASES_DIR)


def _case_mode_params():
    for case in CASES:
        for mode in applicable_modes(case):
            marks = [pytest.mark.skip(reason=f"ground-truth: skip {case.skip_reason}")] if case.skip_reason else []
            yield pytest.param(case, mode, id=f"{case.name}-{mode}", marks=marks)


def test_cases_are_discovered_with_unique_names():
    names = [case.name for case in CASES]
    assert names, f"no cases under {CASES_DIR}"
    assert len(names) == len(set(names))


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_case_labels_are_well_formed(case):
    # Also covers skipped cases, which are never run.
    assert list(case.label_errors) == []


@pytest.mark.ground_truth
@pytest.mark.parametrize(("case", "mode"), list(_case_mode_params()))
def test_case_runs_as_labelled(case, mode):
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
class Plain:
    def encode(self, x):
        return x
    def decode(self, x):
        return x
class Wrapped:
    module = Plain()
    def encode(self, x):
        {FAB001_RAISE.format(m="encode")}
    def decode(self, x):
        {FAB001_RAISE.format(m="decode")}
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
