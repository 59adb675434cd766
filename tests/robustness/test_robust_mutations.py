"""Half-typed code: random mutations of every fixture never make the engine raise or run away (its
work is counted: the lines of the analysis executed per byte of the text, and the value-flow
solver ends below its step bound), and leave nothing behind in its caches (the unmutated text gives the same findings afterwards).

Caches that could be poisoned: `engine.workspace_for` keeps one Workspace per (root, python) with
jedi answers keyed by the checked text's hash; `analysis.source.parse_file` keeps other modules by
file identity; jedi/parso keep their own parse trees by path.
"""

from __future__ import annotations

import ast
import os
import faulthandler
import shutil
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import pytest

from fabric_lsp.settings.config import Config
from fabric_lsp.engine import check_source

from robustness_support import ROOT, fixture_files, peak_rss_mb, record_figure, span_problems

sys.path.insert(0, str(ROOT))
from tests.support.work import counted  # noqa: E402

FILES = fixture_files()
# Work one mutated text may cost: lines of the analysis executed, per byte of the text plus a constant
# (the rules' imports and tables read on first use). Measured on the fixtures: at most 363k lines for one text (below 80 per byte past 4 kB); a
# mutation that made the analysis run away (a scan that went quadratic, a loop that does not end
# before the solver's bound) costs many times that. Counted, so the same on a loaded machine.
WORK_PER_BYTE = 100
WORK_CONSTANT = 3_000_000
# Only a hang guard: the worker ends with a traceback instead of stalling the suite.
HANG_GUARD_S = 1800
EXAMPLES = int(os.environ.get("FABRIC_LSP_FUZZ_EXAMPLES", "400"))
DISK_EXAMPLES = int(os.environ.get("FABRIC_LSP_FUZZ_DISK_EXAMPLES", "60"))

# Pieces a half-typed edit or a bad paste leaves behind.
PIECES = [
    "(", ")", "[", "]", "{", "}", ":", ",", ".", "=", "\\", "#", "@", "'", '"', '"""', "f'{",
    "\t", "\x00", "\r", "\r\n", "\x0c", "\x1c", "\u2028", "\ufeff", "\ud800", "é", "漢字", "𝔘𝔫𝔦", "a\u0301",
    "lambda", "async ", "await ", "yield", "return", "del ", "global x\n", "nonlocal x\n", "    ", "\n",
    "fabric.setup(", "fabric.setup_module(", ".mark_forward_method(", ".mark_forward_method(model.generate)\n",
    "with torch.device('meta'):\n", "with fabric.init_module(empty_init=True):\n",
    "class A(A):\n    pass\n", "class B(C):\n    pass\nclass C(B):\n    pass\n", "model = model\n",
    "def f(self):\n    return self.f()\n", "self.x = nn.Parameter(", "match x:\n    case 1:\n",
    "model = fabric.setup(model)\nmodel.generate(1)\n", "x = [" * 50, "if x:\n" * 30,
]


def _at(text: str, fraction: float) -> int:
    return int(fraction * len(text))


def apply(text: str, mutation: tuple) -> str:
    kind, where, *rest = mutation
    i = _at(text, where)
    if kind == "truncate":
        return text[:i]
    if kind == "delete":
        return text[:i] + text[i + rest[0] :]
    if kind == "insert":
        return text[:i] + rest[0] + text[i:]
    if kind == "tabs":  # indentation turned into tabs over a region (mixed tabs and spaces)
        return text[:i] + text[i : i + rest[0]].replace("    ", "\t") + text[i + rest[0] :]
    if kind == "long_line":
        unit, count = rest
        return text[:i] + unit * count + text[i:]
    if kind == "duplicate":
        return text[:i] + text[i : i + rest[0]] + text[i:]
    if kind == "drop_line":  # a statement deleted or cut: the rest usually still parses
        lines = text.split("\n")
        del lines[int(where * (len(lines) - 1))]
        return "\n".join(lines)
    if kind == "rename":  # an identifier or string half-retyped
        old, new = rest
        index = text.find(old, i)
        return text if index < 0 else text[:index] + new + text[index + len(old) :]
    if kind == "swap_lines":
        lines = text.split("\n")
        a, b = int(where * (len(lines) - 1)), int(rest[0] * (len(lines) - 1))
        lines[a], lines[b] = lines[b], lines[a]
        return "\n".join(lines)
    raise AssertionError(kind)


fraction = st.floats(0, 1, allow_nan=False)
mutations = st.one_of(
    st.tuples(st.just("truncate"), fraction),
    st.tuples(st.just("delete"), fraction, st.integers(1, 400)),
    st.tuples(st.just("insert"), fraction, st.one_of(st.sampled_from(PIECES), st.text(max_size=12))),
    st.tuples(st.just("tabs"), fraction, st.integers(1, 3000)),
    st.tuples(st.just("long_line"), fraction, st.sampled_from(["x", "a+", "(", "'", "é", " "]), st.integers(500, 60_000)),
    st.tuples(st.just("duplicate"), fraction, st.integers(1, 600)),
    st.tuples(st.just("swap_lines"), fraction, fraction),
    st.tuples(st.just("drop_line"), fraction),
    st.tuples(st.just("drop_line"), fraction),
    st.tuples(
        st.just("rename"),
        fraction,
        st.sampled_from(["self", "model", "fabric", "setup", "nn.Module", "super()", "forward", "def ", "class ",
                         "reset_parameters", "mark_forward_method", '"ddp"', "'meta'", "nn.Parameter", "import "]),
        st.sampled_from(["", "x", "self", "model", "fabric", "mark_forward_method", "reset_parameters", "forward",
                         '"fsdp"', "'cpu'", "1", "model.module", "(", "None", "object", "nn.Module"]),
    ),
)

SETTINGS = dict(
    deadline=None,  # never timed: the work per text is counted (_check_counted)
    database=None,  # no .hypothesis folder in the tree
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


def _config(root) -> Config:
    return Config(root=str(root), hints=True)


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _check_counted(path, text, root):
    """The findings and the work they took (lines of the analysis executed)."""
    with counted() as work:
        findings = check_source(str(path), text, _config(root))
    for solver in work.solvers:
        assert solver.bound_hit is None, f"{path.name}: {solver.bound_hit}"
    assert work.lines <= WORK_PER_BYTE * len(text.encode("utf-8", "surrogatepass")) + WORK_CONSTANT, (
        f"{path.name}: {work.lines} lines of analysis for {len(text)} characters")
    return findings, work.lines


@pytest.fixture(autouse=True)
def hang_guard():
    faulthandler.dump_traceback_later(HANG_GUARD_S, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def test_mutated_fixtures_never_raise_stay_in_budget_and_leave_no_trace():
    baseline = {str(path): check_source(str(path), path.read_text(encoding="utf-8"), _config(root)) for root, path in FILES}
    assert sum(map(len, baseline.values())) > 50  # the fixtures do have findings to lose
    worst = {"lines": 0, "file": None, "size": 0}
    tried = {"edits": 0, "texts": 0, "parsed": 0, "with_findings": 0, "of_files_with_findings": 0}

    @settings(max_examples=EXAMPLES, **SETTINGS)
    @given(st.sampled_from(FILES), st.lists(mutations, min_size=1, max_size=5))
    def mutated(file, edits):
        root, path = file
        text = path.read_text(encoding="utf-8")
        for edit in edits:
            text = apply(text, edit)
        findings, lines = _check_counted(path, text, root)
        tried["edits"] += len(edits)
        tried["texts"] += 1
        tried["parsed"] += _parses(text)
        tried["with_findings"] += bool(findings)
        tried["of_files_with_findings"] += bool(baseline[str(path)])
        if lines > worst["lines"]:
            worst.update(lines=lines, file=path.name, size=len(text), edits=repr(edits)[:400])
        assert span_problems(findings, str(path), text) == []

    mutated()

    after = {str(path): check_source(str(path), path.read_text(encoding="utf-8"), _config(root)) for root, path in FILES}
    # Most half-typed texts do not parse; enough of them must, or the analysis was not exercised.
    assert tried["parsed"] >= tried["texts"] // 5, tried
    # Many fixtures are clean (negative cases): count against the texts made from files with findings.
    assert tried["with_findings"] >= tried["of_files_with_findings"] // 10, tried
    changed = [name for name in baseline if after[name] != baseline[name]]
    assert changed == [], f"findings of the unmutated text changed after the mutations: {changed}"
    record_figure("mutation_texts", tried["texts"], edits=tried["edits"], files=len(FILES),
                  parsed=tried["parsed"], with_findings=tried["with_findings"])
    record_figure("mutation_worst_lines", worst["lines"], file=worst["file"], chars=worst["size"],
                  edits=worst.get("edits"))
    record_figure("mutation_peak_rss_mb", round(peak_rss_mb()))


MULTI_FILE = [(root, path) for root, path in FILES if path.name == "main.py"]


def test_mutating_imported_modules_on_disk_then_restoring_them_restores_the_findings(tmp_path):
    """The other modules of a project are read from disk: an editor saves a broken version, the
    entry file is checked, the good version comes back; the findings (in every file of the project:
    a helper's finding depends on its callers) must come back with it."""
    projects = []
    for root, main in MULTI_FILE:
        copy = tmp_path / root.name
        shutil.copytree(root, copy)
        files = sorted(copy.rglob("*.py"))
        others = [p for p in files if p.name != "main.py"]
        if others:  # (a project case whose other files are configuration, not modules, has nothing to mutate here)
            projects.append((copy, copy / "main.py", others, files))

    def findings_of(copy, files):
        return {str(path): check_source(str(path), path.read_text(encoding="utf-8"), _config(copy)) for path in files}

    baseline = {str(main): findings_of(copy, files) for copy, main, _, files in projects}
    # most have a finding that depends on another file; the negative ones must not gain one
    with_findings = sum(1 for found in baseline.values() if any(found.values()))
    assert with_findings >= len(baseline) - 4, with_findings
    tried = {"texts": 0}

    @settings(max_examples=DISK_EXAMPLES, **SETTINGS)
    @given(st.sampled_from(projects), st.data())
    def broken_then_restored(project, data):
        copy, main, others, files = project
        other = data.draw(st.sampled_from(others))
        original = other.read_text(encoding="utf-8")
        broken = original
        for edit in data.draw(st.lists(mutations, min_size=1, max_size=3)):
            broken = apply(broken, edit)
        main_text = main.read_text(encoding="utf-8")
        try:
            other.write_text(broken, encoding="utf-8", errors="surrogatepass")
            _check_counted(main, main_text, copy)
        finally:
            other.write_text(original, encoding="utf-8")
        tried["texts"] += 1
        assert findings_of(copy, files) == baseline[str(main)], (
            f"{copy.name}: {other.name} broken then restored, findings differ"
        )
    broken_then_restored()
    record_figure("disk_mutation_texts", tried["texts"], projects=len(projects))
