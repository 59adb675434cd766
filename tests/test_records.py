"""Knowledge base: loading and validating records, matching runtime messages, rendering."""

from __future__ import annotations

import ast
import copy
import hashlib
import importlib.util
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fabric_lsp.records import (
    MAX_MESSAGE_CHARS,
    RULES,
    default_records,
    load_records,
    pattern_risk,
    render_markdown,
    render_text,
)
from fabric_lsp.findings import Finding, Position, Severity, Span
from fabric_lsp.records.loader import DATA_DIR, PATHS_FILE, load_shipped

SEEDS_DIR = Path(__file__).resolve().parents[2] / "shared" / "seeds"  # shared/ sits beside the clone
FAB001_ID, FAB002_ID, FAB003_ID = "af391673c4dd180e", "ac5b68eddc82d846", "ce209f7f268e625f"
FAB004_ID = "5cc4a68dd37501f7"
FAB005_ID = "232fae503d8e4e1d"
FAB006_ID = "1530a0a419e77f8e"
FAB007_ID = "aa5948b33c548d53"
FAB008_ID = "7affc520177ccdfc"
FAB009_ID = "613222fb39e35191"
ALL_IDS = [FAB001_ID, FAB002_ID, FAB003_ID, FAB004_ID, FAB005_ID, FAB006_ID, FAB007_ID, FAB008_ID, FAB009_ID]
# the project's own records (not seeds)
OWN_IDS = [FAB003_ID, FAB004_ID, FAB005_ID, FAB006_ID, FAB007_ID, FAB008_ID, FAB009_ID]
COMMIT = "9fed5c27d2a62ff0efd6c3573599921d6ff67c14"
# FAB009's error is torch's own (DistributedDataParallel.__init__): its record points at torch 2.13.0's source.
TORCH_COMMIT = "cf30153c4c131c8164ee7798e5022d810682e2cb"

# Printed by Lightning 2.6.6 (see test_patterns_match_messages_lightning_prints, which regenerates them).
FAB001_MESSAGE = (
    "You are calling the method `M.gen()` from outside the model. To avoid issues with the currently selected"
    " strategy, explicitly mark it as a forward method with `fabric_model.mark_forward_method('gen')` after"
    " `fabric.setup()`."
)
FAB002_MESSAGE = (
    "Materialization requires that the `Scale.reset_parameters` method is implemented. This method is used to"
    " initialize any children parameters or buffers in this module."
)
FAB003_MESSAGE = "Expected a method or a string, but got: function"
FAB004_MESSAGE = (
    "You marked 'genrate' as a forward method, but `TinyLM.genrate` does not exist or is not a method."
)
FAB004_FORWARD_MESSAGE = "You cannot mark the forward method itself as a forward method."
FSDP_MESSAGE = "'Block' object has no attribute 'reset_parameters'"
FSDP_WARNING = (
    "Unable to call `reset_parameters()` for module on meta device with error 'Block' object has no attribute"
    " 'reset_parameters'. Please ensure that your module oftype <class '__main__.Block'> implements a"
    " `reset_parameters()` method."
)
MODEL_PARALLEL_WARNING = (
    "Parameter initialization incomplete. The following modules have parameters or buffers with uninitialized"
    " memory because they don't define a `reset_parameters()` method for re-initialization: Block, Scale"
)


def _fab003_document() -> dict:
    return json.loads((DATA_DIR / f"{FAB003_ID}.json").read_text(encoding="utf-8"))


def _write(directory: Path, name: str, document) -> Path:
    path = directory / name
    path.write_text(document if isinstance(document, str) else json.dumps(document), encoding="utf-8")
    return path


# --- shipped records ---------------------------------------------------------------------------------


def test_shipped_records_load_without_problems():
    records = default_records()
    assert records.problems == ()
    assert [r.id for r in records.records] == ALL_IDS
    assert records.by_code("FAB001").id == FAB001_ID
    assert records.by_code("fab002").id == FAB002_ID
    assert records.by_code("FAB003").id == FAB003_ID
    assert records.by_code("mark-forward-method-bound").id == FAB003_ID
    assert records.by_code("FAB004").id == FAB004_ID
    assert records.by_code("mark-forward-method-invalid-name").id == FAB004_ID
    assert records.by_code("FAB999") is None
    assert records.by_id(FAB002_ID).error_class == "TypeError"
    assert records.by_id(FAB004_ID).error_class == "AttributeError"
    assert records.by_id("0000000000000000") is None
    assert [records.by_id(r.id).code for r in records.records] == ["FAB001", "FAB002", "FAB003", "FAB004", "FAB005",
                                                                    "FAB006", "FAB007", "FAB008", "FAB009"]
    # the other runtime paths of records/paths.json, attached to their records
    assert [p.name for p in records.by_id(FAB002_ID).paths] == ["fsdp", "model_parallel"]
    assert [p.name for p in records.by_id(FAB004_ID).paths] == ["forward"]
    assert records.by_id(FAB001_ID).paths == () and records.by_id(FAB003_ID).paths == ()


def test_default_records_are_loaded_once():
    assert default_records() is default_records()
    assert load_records() is default_records()


def test_rules_table_names_codes_and_existing_records():
    assert [(rule.code, rule.name) for rule in RULES] == [
        ("FAB001", "unmarked-forward-method"),
        ("FAB002", "missing-reset-parameters"),
        ("FAB003", "mark-forward-method-bound"),
        ("FAB004", "mark-forward-method-invalid-name"),
        ("FAB005", "missing-launch"),
        ("FAB006", "loss-backward-on-wrapped-output"),
        ("FAB007", "setup-misuse"),
        ("FAB008", "launch-misuse"),
        ("FAB009", "frozen-module-setup"),
    ]
    assert [rule.record_id for rule in RULES] == ALL_IDS
    for rule in RULES:
        assert default_records().by_id(rule.record_id) is not None, rule
        assert rule.summary and "\n" not in rule.summary


def test_seed_files_are_shipped_unchanged_but_for_the_documented_errata():
    if not SEEDS_DIR.is_dir():
        pytest.skip("the seed directory exists only on the project's build machines")
    errata = json.loads((DATA_DIR.parent / "errata.json").read_text(encoding="utf-8"))
    for seed in SEEDS_DIR.glob("*.txt"):
        original = json.loads(seed.read_text(encoding="utf-8"))
        record_id = original["record"]["id"]
        shipped = json.loads((DATA_DIR / f"{record_id}.json").read_text(encoding="utf-8"))
        for field, correction in errata.get(record_id, {}).items():
            assert original["record"][field] == correction["was"], "the seed changed: review the erratum"
            assert shipped["record"][field] == correction["now"]
            original["record"][field] = correction["now"]
        assert shipped == original


@pytest.mark.parametrize("record_id", OWN_IDS)
def test_own_records_have_every_seed_field_in_the_seed_order(record_id):
    seed_keys = list(json.loads((DATA_DIR / f"{FAB001_ID}.json").read_text())["record"])
    document = json.loads((DATA_DIR / f"{record_id}.json").read_text(encoding="utf-8"))
    assert list(document) == ["record", "datasetVersion"]
    assert list(document["record"]) == seed_keys
    record = document["record"]
    assert record["schemaVersion"] == 2
    if record["repo"] == "pytorch/pytorch":
        assert record["filePath"] == "torch/nn/parallel/distributed.py"
        assert record["analyzedSha"] == TORCH_COMMIT
        assert record["githubUrl"] == (
            f"https://github.com/pytorch/pytorch/blob/{TORCH_COMMIT}/{record['filePath']}"
            f"#L{record['sourceCodeStart']}-L{record['sourceCodeEnd']}"
        )
    else:
        assert record["filePath"] in ("src/lightning/fabric/wrappers.py", "src/lightning/fabric/fabric.py")
        assert record["analyzedSha"] == COMMIT
        assert record["githubUrl"] == (
            f"https://github.com/Lightning-AI/pytorch-lightning/blob/{COMMIT}/{record['filePath']}"
            f"#L{record['sourceCodeStart']}-L{record['sourceCodeEnd']}"
        )
    # the id convention written in records/rules_table.py
    key = f"{record['repo']}\n{record['filePath']}\n{record['errorMessage']}"
    assert record["id"] == hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
    assert default_records().by_id(record_id).source == str(DATA_DIR / f"{record_id}.json")


def test_fab004_record_says_what_lightning_accepts_and_refuses():
    record = default_records().by_code("FAB004")
    assert record.error_message == (
        "You marked '{name}' as a forward method, but `{type(self._original_module).__name__}.{name}` does not"
        " exist or is not a method."
    )
    documentation = record["documentation"]
    for refused in ("typo", "plain attribute", "`@property`", "`@staticmethod`", "`functools.partialmethod`"):
        assert refused in documentation, refused
    for accepted in ("classmethods", "`self.decode = self._greedy`"):
        assert accepted in documentation, accepted
    assert "ValueError: You cannot mark the forward method itself as a forward method." in documentation
    assert "does not depend on the strategy" in documentation


def test_fab003_record_covers_the_class_function_and_torch_compile_on_one_device():
    record = default_records().by_code("FAB003")
    documentation = record["documentation"]
    assert "`Model.generate`" in documentation and "on every strategy, a single device included" in documentation
    assert "`torch.compile`d before `fabric.setup()`" in documentation and "`Fabric(devices=1)`" in documentation
    assert "TinyLM.generate" in record["exampleFix"]
    summary = next(rule.summary for rule in RULES if rule.code == "FAB003")
    assert "torch.compile" in summary and "Cls.m: on every strategy" in summary


def _installed_lightning_file(relative: str) -> Path:
    spec = importlib.util.find_spec("lightning")  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("lightning is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / relative


def test_fab009_record_lines_are_the_installed_torch_lines():
    record = default_records().by_id(FAB009_ID)
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("torch is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / record["filePath"].removeprefix("torch/")
    lines = path.read_text(encoding="utf-8").split("\n")
    assert "self._log_and_throw(" in lines[record["lineNumber"] - 1]
    assert "\n".join(lines[record["sourceCodeStart"] - 1 : record["sourceCodeEnd"]]) == record["sourceCode"]
    import torch

    assert torch.version.git_version == TORCH_COMMIT


@pytest.mark.parametrize(
    ("record_id", "raise_text"),
    [
        (FAB001_ID, "raise RuntimeError("),
        (FAB002_ID, "raise TypeError("),
        (FAB003_ID, 'raise TypeError(f"Expected a method or a string, but got: {type(method).__name__}")'),
        (FAB004_ID, "raise AttributeError("),
        (FAB006_ID, "raise RuntimeError("),
        (FAB007_ID, 'raise ValueError("A model should be passed only once to the `setup` method.")'),
    ],
)
def test_record_source_lines_are_the_installed_lightning_lines(record_id, raise_text):
    record = default_records().by_id(record_id)
    path = _installed_lightning_file(record["filePath"].removeprefix("src/lightning/"))
    lines = path.read_text(encoding="utf-8").split("\n")
    assert raise_text in lines[record["lineNumber"] - 1]
    assert "\n".join(lines[record["sourceCodeStart"] - 1 : record["sourceCodeEnd"]]) == record["sourceCode"]


@pytest.mark.parametrize(
    ("record_id", "name", "line_text"),
    [
        (FAB002_ID, "fsdp", "module.reset_parameters()"),
        (FAB002_ID, "model_parallel", "rank_zero_warn("),
        (FAB004_ID, "forward", 'raise ValueError("You cannot mark the forward method itself as a forward method.")'),
        (FAB007_ID, "no_backward_sync", "raise TypeError("),
        (FAB007_ID, "dataloaders", 'raise TypeError("Only PyTorch DataLoader are currently supported'),
        (FAB007_ID, "jointly", "raise RuntimeError("),
    ],
)
def test_path_source_lines_are_the_installed_lines(record_id, name, line_text):
    path = next(p for p in default_records().by_id(record_id).paths if p.name == name)
    if path.file_path.startswith("torch/"):
        spec = importlib.util.find_spec("torch")
        if spec is None or not spec.submodule_search_locations:
            pytest.skip("torch is not installed")
        import torch  # the version the line number refers to

        assert path.version == f"torch {torch.__version__.split('+')[0]}"
        file = Path(next(iter(spec.submodule_search_locations))) / path.file_path.removeprefix("torch/")
    else:
        file = _installed_lightning_file(path.file_path.removeprefix("src/lightning/"))
        assert path.version == "Lightning 2.6.6"
    assert line_text in file.read_text(encoding="utf-8").split("\n")[path.line_number - 1]


# --- malformed files ---------------------------------------------------------------------------------


def _bad_documents() -> dict[str, tuple[object, str]]:
    """file name -> (content, the field its problem must name)."""
    good = _fab003_document()

    def changed(**fields):
        document = copy.deepcopy(good)
        document["record"]["id"] = "badbadbadbadbad0"
        for name, value in fields.items():
            if value is _DELETE:
                del document["record"][name]
            else:
                document["record"][name] = value
        return document

    no_wrapper = copy.deepcopy(good)
    del no_wrapper["datasetVersion"]
    return {
        "bad_json.json": ('{"record": {"id": "x",', "file"),
        "missing_field.json": (changed(documentation=_DELETE), "field 'documentation'"),
        "wrong_type.json": (changed(lineNumber="168"), "field 'lineNumber'"),
        "bool_for_int.json": (changed(sourceCodeStart=True), "field 'sourceCodeStart'"),
        "null_not_allowed.json": (changed(errorClass=None), "field 'errorClass'"),
        "list_item.json": (changed(solutions=["ok", 3]), "field 'solutions[1]'"),
        "wrong_schema.json": (changed(schemaVersion=3), "field 'schemaVersion'"),
        "bad_regex.json": (changed(messagePattern="Expected a method (or"), "field 'messagePattern'"),
        "catastrophic.json": (
            changed(messagePattern=r"Expected a method or a string, but got: (\w+)+$"),
            "field 'messagePattern'",
        ),
        "pattern_misses_message.json": (changed(messagePattern="Something else entirely"), "field 'messagePattern'"),
        "line_outside_source.json": (changed(lineNumber=1), "field 'lineNumber'"),
        "no_dataset_version.json": (no_wrapper, "field 'datasetVersion'"),
        "not_an_object.json": ("[1, 2]", "file"),
    }


_DELETE = object()


def test_each_malformed_file_is_reported_by_file_and_field_and_the_rest_load(tmp_path):
    bad = _bad_documents()
    for name, (content, _) in bad.items():
        _write(tmp_path, name, content)
    good = _fab003_document()
    good["record"]["id"] = "0123456789abcdef"
    _write(tmp_path, "zz_good.json", good)

    records = load_records([str(tmp_path)])

    assert len(records.problems) == len(bad)
    for name, (_, field) in bad.items():
        [problem] = [p for p in records.problems if p.startswith(f"{tmp_path / name}: ")]
        assert f": {field}: " in problem, problem
    assert records.by_id("0123456789abcdef") is not None
    assert set(ALL_IDS) <= {r.id for r in records.records}
    assert "badbadbadbadbad0" not in {r.id for r in records.records}


def test_problem_messages_say_what_is_wrong(tmp_path):
    bad = _bad_documents()
    for name in ("wrong_type.json", "wrong_schema.json", "catastrophic.json", "bad_json.json"):
        _write(tmp_path, name, bad[name][0])
    problems = "\n".join(load_records([str(tmp_path)]).problems)
    assert "field 'lineNumber': expected integer, got string" in problems
    assert "field 'schemaVersion': expected 2, got 3" in problems
    assert "may backtrack catastrophically" in problems
    assert "bad_json.json: file: invalid JSON at line 1" in problems


def test_missing_extra_directory_is_a_problem_not_a_crash(tmp_path):
    records = load_records([str(tmp_path / "nowhere")])
    assert records.problems == (f"{tmp_path / 'nowhere'}: record directory not found",)
    assert len(records.records) == len(ALL_IDS)


# --- extend-records ----------------------------------------------------------------------------------


def test_extra_directory_record_overrides_the_shipped_one_with_the_same_id(tmp_path):
    document = json.loads((DATA_DIR / f"{FAB001_ID}.json").read_text(encoding="utf-8"))
    document["record"]["documentation"] = "Team note: mark generate() right after setup."
    path = _write(tmp_path, "ours.json", document)

    # replace_builtin: the user config's `replace-records = true` (tests/security/test_records_replace.py)
    records = load_records([str(tmp_path)], replace_builtin=True)

    assert records.by_code("FAB001")["documentation"] == "Team note: mark generate() right after setup."
    assert records.by_code("FAB001").source == str(path)
    assert len(records.records) == len(ALL_IDS)
    assert records.notices == (f"{path}: record {FAB001_ID} overrides the one from {DATA_DIR / (FAB001_ID + '.json')}",)
    # the cached default set is untouched
    assert default_records().by_code("FAB001")["documentation"] != "Team note: mark generate() right after setup."


def test_later_extra_directory_wins(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir(), second.mkdir()
    document = _fab003_document()
    document["record"]["documentation"] = "first"
    _write(first, "x.json", document)
    document["record"]["documentation"] = "second"
    _write(second, "x.json", document)
    assert load_records([str(first), str(second)], replace_builtin=True).by_code("FAB003")["documentation"] == "second"


# --- message matching --------------------------------------------------------------------------------


def test_fab001_message_matches_with_names():
    found = default_records().match_message(FAB001_MESSAGE)
    assert found is not None
    record, groups, path = found
    assert record.id == FAB001_ID and path is None
    assert groups == ("M", "gen", "'gen'")
    assert found.context == {"class": "M", "method": "gen"}


def test_messages_inside_a_traceback_match():
    traceback = (
        'Traceback (most recent call last):\n  File "train.py", line 12, in <module>\n'
        "    out = model.gen(x)\n"
        f"RuntimeError: {FAB001_MESSAGE}\n[rank0]: exiting"
    )
    assert default_records().match_message(traceback).record.id == FAB001_ID


def test_fab002_and_fab003_messages_match():
    fab002 = default_records().match_message(f"TypeError: {FAB002_MESSAGE}")
    assert fab002.record.id == FAB002_ID and fab002.context == {"class": "Scale"}
    fab003 = default_records().match_message(FAB003_MESSAGE)
    assert fab003.record.id == FAB003_ID and fab003.context == {"argument_type": "function"}


def test_fab004_messages_match_with_names_and_the_forward_path():
    found = default_records().match_message(f"AttributeError: {FAB004_MESSAGE}")
    assert found.record.id == FAB004_ID and found.path is None
    assert found.context == {"class": "TinyLM", "method": "genrate"}
    # Lightning prints an empty name as is
    empty = default_records().match_message(
        "You marked '' as a forward method, but `TinyLM.` does not exist or is not a method."
    )
    assert empty.record.id == FAB004_ID and empty.context == {"class": "TinyLM", "method": ""}
    forward = default_records().match_message(f"ValueError: {FAB004_FORWARD_MESSAGE}")
    assert forward.record.id == FAB004_ID and forward.path.name == "forward"
    assert forward.context == {"method": "forward"}


def test_torch_fsdp_and_model_parallel_messages_match_fab002_with_their_path():
    fsdp = default_records().match_message(f"AttributeError: {FSDP_MESSAGE}")
    assert fsdp.record.id == FAB002_ID and fsdp.path.name == "fsdp"
    assert fsdp.context == {"class": "Block", "path": "fsdp"}
    warned = default_records().match_message(f"UserWarning: {FSDP_WARNING}")  # torch warns before it raises
    assert warned.record.id == FAB002_ID and warned.context == {"class": "Block", "path": "fsdp"}
    parallel = default_records().match_message(f"UserWarning: {MODEL_PARALLEL_WARNING}")
    assert parallel.record.id == FAB002_ID and parallel.path.name == "model_parallel"
    assert parallel.context == {"class": "Block, Scale", "path": "model_parallel"}
    own = default_records().match_message(FAB002_MESSAGE)
    assert own.path is None and own.context == {"class": "Scale"}


@pytest.mark.parametrize(
    "text",
    [
        "",
        "RuntimeError: CUDA out of memory.",
        "You are calling the method `M.gen()` from inside the model.",
        "Materialization requires that the reset_parameters method is implemented.",
        "'Block' object has no attribute 'forward'",
        "You marked 'gen' as a forward method.",
        "You cannot mark the forward method.",
    ],
)
def test_other_text_does_not_match(text):
    assert default_records().match_message(text) is None


def test_megabyte_messages_are_searched_in_bounded_work(monkeypatch):
    """Counted, not timed: only the head and tail windows of a long message are searched (at most
    MAX_MESSAGE_CHARS characters each), and all the searches of one message together take at most
    MATCH_STEPS steps of the matcher (records/patterns.py counts them)."""
    from fabric_lsp.records import loader
    from fabric_lsp.records.patterns import BoundedPattern

    searched: list[tuple[int, int]] = []  # (characters searched, steps taken) per search
    search_counted = BoundedPattern.search_counted

    def counted(self, text, budget=loader.SEARCH_STEPS):
        found, steps = search_counted(self, text, budget)
        searched.append((len(text), steps))
        return found, steps

    monkeypatch.setattr(BoundedPattern, "search_counted", counted)
    near_misses = [
        "x" * 1_000_000,
        "You are calling the method `" + "a." * 500_000,
        ("You are calling the method `A.b()` from outside the model. " + "." * 40) * 10_000,
    ]
    for message in [*near_misses, "log line\n" * 100_000 + FAB001_MESSAGE]:
        searched.clear()
        found = default_records().match_message(message)
        assert (found.record.id == FAB001_ID) if message.endswith(FAB001_MESSAGE) else found is None
        assert searched and max(size for size, _ in searched) <= MAX_MESSAGE_CHARS, max(searched)
        assert sum(steps for _, steps in searched) <= loader.MATCH_STEPS, sum(steps for _, steps in searched)
    assert len(FAB001_MESSAGE) < MAX_MESSAGE_CHARS // 2  # the tail window holds a whole message


def test_patterns_match_messages_lightning_prints(tmp_path):
    """Ground truth: the messages come from running Lightning 2.6.6 (DDP, one CPU process)."""
    if importlib.util.find_spec("lightning") is None:
        pytest.skip("lightning is not installed")
    script = textwrap.dedent(
        """
        import json, torch, torch.nn as nn
        from lightning.fabric import Fabric
        from lightning.fabric.utilities.init import _materialize_meta_tensors

        class TinyLM(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(2, 2)
            def generate(self, x):
                return self.lin(x)

        class Scale(nn.Module):
            def __init__(self):
                super().__init__()
                self.weight = nn.Parameter(torch.ones(2))

        messages = {}
        fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp")
        fabric.launch()
        model = fabric.setup(TinyLM())
        for code, call in [
            ("FAB001", lambda: model.generate(torch.zeros(1, 2))),
            ("FAB003", lambda: model.mark_forward_method(model.generate)),
            ("FAB004", lambda: model.mark_forward_method("genrate")),
            ("FAB004-forward", lambda: model.mark_forward_method("forward")),
        ]:
            try:
                call()
            except Exception as error:
                messages[code] = f"{type(error).__name__}: {error}"
        with torch.device("meta"):
            scale = Scale()
        try:
            _materialize_meta_tensors(scale, "cpu")
        except Exception as error:
            messages["FAB002"] = f"{type(error).__name__}: {error}"
        try:
            Scale().reset_parameters  # what torch FSDP runs on a module without it
        except Exception as error:
            messages["FAB002-fsdp"] = f"{type(error).__name__}: {error}"
        print("MESSAGES=" + json.dumps(messages))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    messages = json.loads(done.stdout.split("MESSAGES=", 1)[1])
    records = default_records()
    assert records.match_message(messages["FAB001"]).context == {"class": "TinyLM", "method": "generate"}
    assert records.match_message(messages["FAB001"]).record.code == "FAB001"
    assert records.match_message(messages["FAB002"]).context == {"class": "Scale"}
    assert records.match_message(messages["FAB002"]).record.code == "FAB002"
    assert records.match_message(messages["FAB002-fsdp"]).record.code == "FAB002"
    assert messages["FAB003"] == f"TypeError: {FAB003_MESSAGE}"
    assert records.match_message(messages["FAB003"]).record.code == "FAB003"
    assert messages["FAB004"] == f"AttributeError: {FAB004_MESSAGE}"
    assert records.match_message(messages["FAB004"]).context == {"class": "TinyLM", "method": "genrate"}
    assert messages["FAB004-forward"] == f"ValueError: {FAB004_FORWARD_MESSAGE}"
    assert records.match_message(messages["FAB004-forward"]).path.name == "forward"


_MARK_SCRIPT = """
import functools, json, sys, warnings, torch, torch.nn as nn
warnings.filterwarnings("ignore")
from lightning.fabric import Fabric

class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.temperature = 0.7
        self.decode = self._greedy
    def forward(self, x):
        return self.lin(x)
    def generate(self, x):
        return self.lin(x)
    def _greedy(self, x):
        return self.lin(x)
    @property
    def prop(self):
        return self.lin.weight
    @staticmethod
    def helper(x):
        return x
    @classmethod
    def build(cls):
        return cls()
    sample = functools.partialmethod(_greedy)

kwargs = {"accelerator": "cpu", "devices": 1}
if sys.argv[1] != "single":
    kwargs["strategy"] = sys.argv[1]
fabric = Fabric(**kwargs)
fabric.launch()
results = {}
for compiled in (False, True):
    module = TinyLM()
    model = fabric.setup(torch.compile(module) if compiled else module)
    names = ("genrate", "temperature", "lin", "prop", "helper", "sample", "forward", "build", "decode", "generate")
    arguments = {name: name for name in names}
    arguments["TinyLM.generate"] = TinyLM.generate
    arguments["model.generate"] = model.generate
    arguments["model.module.generate"] = model.module.generate
    for label, argument in arguments.items():
        try:
            model.mark_forward_method(argument)
            results[f"{compiled}:{label}"] = "ok"
        except Exception as error:
            results[f"{compiled}:{label}"] = f"{type(error).__name__}: {error}"
print("RESULTS=" + json.dumps(results))
"""


@pytest.mark.parametrize("strategy", ["single", "ddp"])
def test_mark_forward_method_behaves_as_the_fab003_and_fab004_records_say(tmp_path, strategy):
    """Ground truth for FAB003/FAB004: Lightning 2.6.6 on one CPU device and under DDP (one process),
    with and without torch.compile before setup."""
    if importlib.util.find_spec("lightning") is None:
        pytest.skip("lightning is not installed")
    done = subprocess.run([sys.executable, "-c", _MARK_SCRIPT, strategy], capture_output=True, text=True,
                          timeout=240, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout.split("RESULTS=", 1)[1])
    records = default_records()
    for compiled in (False, True):
        def result(label):
            return results[f"{compiled}:{label}"]

        for name in ("genrate", "temperature", "lin", "prop", "helper", "sample"):  # FAB004, every strategy
            assert result(name) == (
                f"AttributeError: You marked '{name}' as a forward method, but `TinyLM.{name}` does not exist or is"
                " not a method."
            )
            match = records.match_message(result(name))
            assert match.record.code == "FAB004" and match.context == {"class": "TinyLM", "method": name}
        assert result("forward") == f"ValueError: {FAB004_FORWARD_MESSAGE}"
        assert records.match_message(result("forward")).path.name == "forward"
        for accepted in ("build", "decode", "generate", "model.module.generate"):  # classmethod, bound attribute
            assert result(accepted) == "ok", accepted
        # FAB003: the class's function on every strategy; the wrapper's attribute when it wraps methods
        assert result("TinyLM.generate") == f"TypeError: {FAB003_MESSAGE}"
        wraps = strategy != "single" or compiled
        assert result("model.generate") == (f"TypeError: {FAB003_MESSAGE}" if wraps else "ok")
        assert records.match_message(result("TinyLM.generate")).record.code == "FAB003"


_PATHS_SCRIPT = """
import json, warnings, torch, torch.nn as nn
from lightning.fabric import Fabric
from lightning.fabric.strategies import ModelParallelStrategy
from torch.distributed.fsdp import FullyShardedDataParallel

class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(4))

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.scale = Scale()
        self.bias = nn.Parameter(torch.zeros(4))

out = {}
# ModelParallelStrategy runs on the CPU; its launch also makes the one-process gloo group FSDP needs.
fabric = Fabric(accelerator="cpu", devices=1, strategy=ModelParallelStrategy(parallelize_fn=lambda m, mesh: m))
fabric.launch()
with fabric.init_module(empty_init=True):
    block = Block()
out["meta"] = block.scale.weight.is_meta
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    model = fabric.setup(block)
out["mp_warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught if "initialization" in str(w.message)]
out["mp_scale_is_ones"] = bool(torch.equal(model.module.scale.weight.detach().cpu(), torch.ones(4)))
out["mp_lin_is_finite"] = bool(torch.isfinite(model.module.lin.weight.detach()).all())
# torch FSDP on a meta-device model: what FSDPStrategy.setup_module does after init_module(empty_init=True)
with torch.device("meta"):
    block = Block()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        FullyShardedDataParallel(block, device_id=torch.device("cpu"))
        out["fsdp_error"] = None
    except Exception as error:
        out["fsdp_error"] = f"{type(error).__name__}: {error}"
out["fsdp_warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught if "reset_parameters" in str(w.message)]
print("OUT=" + json.dumps(out))
"""


def test_fab002_paths_produce_what_paths_json_says(tmp_path):
    """Ground truth for records/paths.json: torch FSDP raises AttributeError after a UserWarning;
    ModelParallelStrategy only warns and leaves the module's tensors uninitialised."""
    if importlib.util.find_spec("lightning") is None:
        pytest.skip("lightning is not installed")
    done = subprocess.run([sys.executable, "-c", _PATHS_SCRIPT], capture_output=True, text=True, timeout=240,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.split("OUT=", 1)[1])
    records = default_records()
    fab002 = records.by_code("FAB002")
    fsdp, model_parallel = fab002.paths
    assert out["meta"] is True
    # torch FSDP
    assert out["fsdp_error"] == f"{fsdp.error_class}: {FSDP_MESSAGE}" == "AttributeError: " + FSDP_MESSAGE
    assert records.match_message(out["fsdp_error"]).context == {"class": "Block", "path": "fsdp"}
    [warning] = out["fsdp_warnings"]
    assert warning.startswith("UserWarning: Unable to call `reset_parameters()` for module on meta device")
    assert warning == "UserWarning: " + FSDP_WARNING
    assert FSDP_WARNING.split(". Please")[0].split(" with error ")[0] in fsdp.documentation
    # ModelParallel: a warning naming both modules (a set: either order), no exception, garbage weights
    [warning] = out["mp_warnings"]
    assert warning in ("UserWarning: " + MODEL_PARALLEL_WARNING, "UserWarning: " + MODEL_PARALLEL_WARNING.replace(
        "Block, Scale", "Scale, Block"))
    assert model_parallel.raises is False and model_parallel.error_class == "UserWarning"
    assert records.match_message(warning).path is model_parallel
    assert out["mp_scale_is_ones"] is False  # Scale's __init__ wrote ones; materialization left raw memory
    assert out["mp_lin_is_finite"] is True  # nn.Linear has reset_parameters: initialised


# --- catastrophic patterns ---------------------------------------------------------------------------


@pytest.mark.parametrize("pattern", [r"(a+)+b", r"(\w+\s?)*$", r"(?:x+y)*z", r"(a|ab)*c", r"((ab){2,})+"])
def test_patterns_that_can_backtrack_exponentially_are_rejected(pattern):
    assert pattern_risk(pattern) is not None


@pytest.mark.parametrize("pattern", [r"\w+\s+\d+", r"(ab)+c", r"(?:a|b)+", r"x(y+)?z", r"(foo|bar) baz+"])
def test_simple_patterns_are_accepted(pattern):
    assert pattern_risk(pattern) is None


def test_shipped_patterns_pass_the_check():
    for record in default_records().records:
        for pattern in record.patterns:
            assert pattern_risk(pattern.pattern) is None, pattern.pattern


# --- rendering ---------------------------------------------------------------------------------------


def _python_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)\n```$", markdown, flags=re.S | re.M)


def test_markdown_fills_the_names_of_the_occurrence():
    records = default_records()
    context = {"class": "TinyLM", "method": "generate"}
    fab001 = render_markdown(records.by_code("FAB001"), context)
    assert fab001.startswith("### FAB001 unmarked-forward-method\n")
    assert "RuntimeError: You are calling the method `TinyLM.generate()` from outside the model." in fab001
    assert "`fabric_model.mark_forward_method('generate')`" in fab001
    assert "TinyLM.reset_parameters" in render_markdown(records.by_code("FAB002"), context)
    assert "TypeError: Expected a method or a string, but got: function" in render_markdown(records.by_code("FAB003"))


def test_unknown_names_stay_readable_placeholders():
    text = render_markdown(default_records().by_code("FAB001"))
    assert "`<class>.<method>()`" in text
    assert "mark_forward_method('<method>')" in text
    assert "{" not in text.split("\n\n")[1]  # no raw f-string template in the message block


@pytest.mark.parametrize("code", ["FAB001", "FAB002", "FAB003", "FAB004", "FAB006", "FAB007"])
def test_markdown_has_every_section_and_compilable_python(code):
    record = default_records().by_code(code)
    markdown = render_markdown(record, {"class": "TinyLM", "method": "generate"})
    for piece in [
        record["documentation"],
        record["triggerScenarios"],
        record["commonSituations"],
        *record["solutions"],
        *record["preventionTips"],
        record.github_url,
    ]:
        assert piece in markdown
    [block] = _python_blocks(markdown)
    compile(block, f"<{code} exampleFix>", "exec")
    assert "# before" in block and "# after" in block
    assert "//" not in block


def test_markdown_message_block_survives_backticks_in_the_message():
    markdown = render_markdown(default_records().by_code("FAB001"), {"class": "M", "method": "gen"})
    message_block = markdown.split("\n\n")[1]
    assert message_block.startswith("```text\n") and message_block.endswith("\n```")
    assert message_block.count("```") == 2


@pytest.mark.parametrize("code", ["FAB001", "FAB002", "FAB003", "FAB004", "FAB006", "FAB007"])
def test_text_rendering_has_the_sections_and_the_filled_message(code):
    record = default_records().by_code(code)
    text = render_text(record, {"class": "TinyLM", "method": "generate"})
    rule = next(rule for rule in RULES if rule.code == code)
    assert text.startswith(f"{code} {rule.name}\n")
    for heading in ["When it is raised:", "Common situations:", "How to fix:", "Example fix:", "Prevention:"]:
        assert f"\n{heading}\n" in text
    assert record.github_url in text
    assert "```" not in text
    example = text.split("Example fix:\n", 1)[1].split("\n\nPrevention:", 1)[0]
    ast.parse(textwrap.dedent(example))
    if code == "FAB001":
        assert "`TinyLM.generate()`" in text
    if code == "FAB004":
        assert "You marked 'generate' as a forward method, but `TinyLM.generate` does not exist" in text


def test_record_without_a_rule_is_titled_by_its_error(tmp_path):
    document = _fab003_document()
    document["record"]["id"] = "fedcba9876543210"
    _write(tmp_path, "own.json", document)
    record = load_records([str(tmp_path)]).by_id("fedcba9876543210")
    assert record.code is None
    assert render_markdown(record).startswith("### TypeError: expected-a-method-or-a-string-but-got-type-method\n")
    assert render_text(record, code="FAB003").startswith("FAB003 mark-forward-method-bound\n")


# --- rendering a runtime path (records/paths.json) -----------------------------------------------------


def _message_block(markdown: str) -> str:
    block = markdown.split("\n\n")[1]
    assert block.startswith("```text\n") and block.endswith("\n```")
    return block


@pytest.mark.parametrize("context", [{"class": "Block"}, {"class": "Block", "path": "materialize"}])
def test_fab002_without_a_path_or_materialize_renders_the_records_typeerror(context):
    markdown = render_markdown(default_records().by_code("FAB002"), context)
    assert "TypeError: Materialization requires that the `Block.reset_parameters` method" in _message_block(markdown)
    # the other two paths are listed with their own messages
    others = markdown.split("**The same root cause on other paths**", 1)[1]
    assert "Under torch FSDP" in others
    assert "AttributeError: 'Block' object has no attribute 'reset_parameters'" in others
    assert "Under ModelParallelStrategy" in others and "re-initialization: Block" in others


def test_fab002_fsdp_path_renders_torchs_attributeerror():
    record = default_records().by_code("FAB002")
    context = {"class": "Block", "path": "fsdp"}
    markdown = render_markdown(record, context)
    block = _message_block(markdown)
    assert block == "```text\nAttributeError: 'Block' object has no attribute 'reset_parameters'\n```"
    assert "TypeError" not in block
    assert "**Under torch FSDP (`strategy=\"fsdp\"`).** The model is materialized by torch's" in markdown
    assert "`Block.reset_parameters()`" in markdown
    assert "Unable to call `reset_parameters()` for module on meta device" in markdown  # the UserWarning
    own = "With Lightning's `_materialize_meta_tensors`: `` TypeError: Materialization requires that the `Block"
    assert own in markdown
    assert "This path: `torch/distributed/fsdp/_init_utils.py` line 944 (torch 2.13.0)" in markdown
    text = render_text(record, context)
    assert text.split("\n\n")[1] == "AttributeError: 'Block' object has no attribute 'reset_parameters'"
    assert "```" not in text


def test_fab002_model_parallel_path_renders_no_exception_and_garbage_weights():
    record = default_records().by_code("FAB002")
    context = {"class": "Block", "path": "model_parallel"}
    block = _message_block(render_markdown(record, context))
    assert block.startswith("```text\nUserWarning: Parameter initialization incomplete.")
    assert "re-initialization: Block\n(a warning, not an exception: the run goes on)" in block
    text = render_text(record, context)
    assert "No exception" in text and "garbage weights" in " ".join(text.split())
    assert "Error:" not in text.split("\n\n")[1]


def test_fab004_forward_renders_the_valueerror():
    record = default_records().by_code("FAB004")
    # the rule's own context for "forward", and what a pasted ValueError gives
    for context in ({"class": "TinyLM", "method": "forward", "error": "ValueError"}, {"method": "forward"}):
        block = _message_block(render_markdown(record, context))
        assert block == "```text\nValueError: You cannot mark the forward method itself as a forward method.\n```"
    typo = _message_block(render_markdown(record, {"class": "TinyLM", "method": "genrate"}))
    assert "AttributeError: You marked 'genrate' as a forward method, but `TinyLM.genrate` does not exist" in typo


def test_hover_on_a_fab002_finding_on_the_fsdp_path_shows_the_attributeerror():
    from lsprotocol import types

    from fabric_lsp.lsp.hover import hover
    from fabric_lsp.lsp.positions import LineIndex

    text = "class Block(nn.Module):\n    pass\n"
    path = "/project/models.py"
    finding = Finding(
        code="FAB002",
        severity=Severity.ERROR,
        span=Span(path, Position(0, 6), Position(0, 11)),
        message="`Block` has no reset_parameters",
        record_id=FAB002_ID,
        context={"class": "Block", "path": "fsdp"},
    )
    for markdown in (True, False):
        found = hover((finding,), path, LineIndex(text), types.Position(line=0, character=8), "utf-16",
                      default_records(), markdown)
        value = found.contents.value
        assert "AttributeError: 'Block' object has no attribute 'reset_parameters'" in value
        assert "Under torch FSDP" in value
        assert "TypeError: Materialization requires" in value  # listed as the other path, not as the message
        first_block = value.split("\n\n")[1]
        assert "TypeError" not in first_block


# --- paths.json: loading and validation ---------------------------------------------------------------


def _paths_document() -> dict:
    return json.loads(PATHS_FILE.read_text(encoding="utf-8"))


def test_paths_file_is_shipped_as_package_data():
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    assert '"records/paths.json"' in pyproject
    assert PATHS_FILE.parent == DATA_DIR.parent


def test_a_broken_paths_file_is_one_problem_and_the_records_still_work(tmp_path):
    broken = _write(tmp_path, "paths.json", '{"records": {')
    records, paths = load_shipped(DATA_DIR, broken)
    [problem] = records.problems
    assert problem.startswith(f"{broken}: file: invalid JSON at line 1") and "no other runtime paths" in problem
    assert paths == {} and [r.id for r in records.records] == ALL_IDS
    assert records.match_message(FAB002_MESSAGE).record.id == FAB002_ID
    assert records.match_message(FSDP_MESSAGE) is None  # only the paths knew it
    assert "TypeError" in render_markdown(records.by_code("FAB002"), {"class": "Block", "path": "fsdp"})
    missing, _ = load_shipped(DATA_DIR, tmp_path / "nowhere.json")
    assert missing.problems[0].startswith(f"{tmp_path / 'nowhere.json'}: file: cannot read")


def _bad_path_entries() -> dict[str, tuple[object, str]]:
    """path name -> (entry, the field its problem must name)."""
    good = _paths_document()["records"][FAB002_ID]["paths"]["fsdp"]

    def changed(**fields):
        entry = copy.deepcopy(good)
        for name, value in fields.items():
            if value is _DELETE:
                del entry[name]
            else:
                entry[name] = value
        return entry

    return {
        "no_label": (changed(label=_DELETE), "field 'label'"),
        "raises_string": (changed(raises="yes"), "field 'raises'"),
        "line_bool": (changed(lineNumber=True), "field 'lineNumber'"),
        "line_zero": (changed(lineNumber=0), "field 'lineNumber'"),
        "empty_class": (changed(errorClass=" "), "field 'errorClass'"),
        "empty_when": (changed(when={}), "field 'when'"),
        "when_number": (changed(when={"path": 3}), "field 'when.path'"),
        "bad_regex": (changed(messagePattern="object has (no"), "field 'messagePattern'"),
        "catastrophic": (changed(messagePattern=r"'((\w+)+)' object has no attribute 'reset_parameters'"),
                         "field 'messagePattern'"),
        "misses_message": (changed(messagePattern="something else"), "field 'messagePattern'"),
        "groups_mismatch": (changed(messagePattern=r"'\w{1,200}' object has no attribute 'reset_parameters'"),
                            "field 'messagePattern'"),
        "typo_field": (changed(sumary="x"), "field 'sumary'"),
        "Bad-Name": (changed(), "entry"),
        "not_an_object": ([1, 2], "entry"),
    }


def test_each_bad_path_is_reported_by_name_and_field_and_the_rest_load(tmp_path):
    document = _paths_document()
    bad = _bad_path_entries()
    document["records"][FAB002_ID]["paths"].update({name: entry for name, (entry, _) in bad.items()})
    document["records"]["0000000000000000"] = document["records"][FAB004_ID]
    document["records"]["badbadbadbadbad0"] = "not an object"
    paths_file = _write(tmp_path, "paths.json", document)

    records, _ = load_shipped(DATA_DIR, paths_file)

    for name, (_, field) in bad.items():
        [problem] = [p for p in records.problems if f": path '{FAB002_ID}/{name}': " in p]
        assert problem.startswith(f"{paths_file}: path '{FAB002_ID}/{name}': {field}: "), problem
        assert problem.endswith("; left out")
    assert f"{paths_file}: record 'badbadbadbadbad0': expected an object" in "\n".join(records.problems)
    assert f"{paths_file}: record '0000000000000000': no such record is loaded" in "\n".join(records.problems)
    assert len(records.problems) == len(bad) + 2
    # the good paths and every record still work
    assert [p.name for p in records.by_id(FAB002_ID).paths] == ["fsdp", "model_parallel"]
    assert records.match_message(FSDP_MESSAGE).path.name == "fsdp"
    assert records.match_message(FAB004_FORWARD_MESSAGE).path.name == "forward"
    assert [r.id for r in records.records] == ALL_IDS


def test_path_problem_messages_say_what_is_wrong(tmp_path):
    document = _paths_document()
    bad = _bad_path_entries()
    document["records"][FAB002_ID]["paths"] = {name: bad[name][0] for name in
                                               ("raises_string", "empty_when", "groups_mismatch", "catastrophic")}
    records, _ = load_shipped(DATA_DIR, _write(tmp_path, "paths.json", document))
    problems = "\n".join(records.problems)
    assert "field 'raises': expected boolean, got string" in problems
    assert "field 'when': must name at least one context key" in problems
    assert "field 'messagePattern': has 0 groups, errorMessage has 1 placeholders" in problems
    assert "may backtrack catastrophically" in problems
    assert records.by_id(FAB002_ID).paths == ()


def test_a_record_that_overrides_a_shipped_one_keeps_its_paths(tmp_path):
    document = json.loads((DATA_DIR / f"{FAB002_ID}.json").read_text(encoding="utf-8"))
    document["record"]["documentation"] = "Team note: every module needs reset_parameters."
    _write(tmp_path, "ours.json", document)
    records = load_records([str(tmp_path)], replace_builtin=True)
    assert records.by_code("FAB002")["documentation"].startswith("Team note")
    assert records.match_message(FSDP_MESSAGE).record is records.by_code("FAB002")
    assert "AttributeError" in render_markdown(records.by_code("FAB002"), {"path": "fsdp"}).split("\n\n")[1]
