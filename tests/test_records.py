"""Knowledge base: loading and validating records, matching runtime messages, rendering."""

from __future__ import annotations

import ast
import copy
import importlib.util
import json
import re
import subprocess
import sys
import textwrap
import time
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
from fabric_lsp.records.loader import DATA_DIR

SEEDS_DIR = Path(__file__).resolve().parents[2] / "shared" / "seeds"  # shared/ sits beside the clone
FAB001_ID, FAB002_ID, FAB003_ID = "af391673c4dd180e", "ac5b68eddc82d846", "ce209f7f268e625f"
COMMIT = "9fed5c27d2a62ff0efd6c3573599921d6ff67c14"

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
    assert [r.id for r in records.records] == [FAB001_ID, FAB002_ID, FAB003_ID]
    assert records.by_code("FAB001").id == FAB001_ID
    assert records.by_code("fab002").id == FAB002_ID
    assert records.by_code("FAB003").id == FAB003_ID
    assert records.by_code("mark-forward-method-bound").id == FAB003_ID
    assert records.by_code("FAB999") is None
    assert records.by_id(FAB002_ID).error_class == "TypeError"
    assert records.by_id("0000000000000000") is None
    assert [records.by_id(r.id).code for r in records.records] == ["FAB001", "FAB002", "FAB003"]


def test_default_records_are_loaded_once():
    assert default_records() is default_records()
    assert load_records() is default_records()


def test_rules_table_names_codes_and_existing_records():
    assert [(rule.code, rule.name) for rule in RULES] == [
        ("FAB001", "unmarked-forward-method"),
        ("FAB002", "missing-reset-parameters"),
        ("FAB003", "mark-forward-method-bound"),
    ]
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


def test_fab003_record_has_every_seed_field_in_the_seed_order():
    seed_keys = list(json.loads((DATA_DIR / f"{FAB001_ID}.json").read_text())["record"])
    document = _fab003_document()
    assert list(document) == ["record", "datasetVersion"]
    assert list(document["record"]) == seed_keys
    record = document["record"]
    assert record["analyzedSha"] == COMMIT
    assert record["githubUrl"] == (
        f"https://github.com/Lightning-AI/pytorch-lightning/blob/{COMMIT}/src/lightning/fabric/wrappers.py"
        f"#L{record['sourceCodeStart']}-L{record['sourceCodeEnd']}"
    )


def _installed_lightning_file(relative: str) -> Path:
    spec = importlib.util.find_spec("lightning")  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("lightning is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / relative


@pytest.mark.parametrize(
    ("record_id", "raise_text"),
    [
        (FAB001_ID, "raise RuntimeError("),
        (FAB002_ID, "raise TypeError("),
        (FAB003_ID, 'raise TypeError(f"Expected a method or a string, but got: {type(method).__name__}")'),
    ],
)
def test_record_source_lines_are_the_installed_lightning_lines(record_id, raise_text):
    record = default_records().by_id(record_id)
    path = _installed_lightning_file(record["filePath"].removeprefix("src/lightning/"))
    lines = path.read_text(encoding="utf-8").split("\n")
    assert raise_text in lines[record["lineNumber"] - 1]
    assert "\n".join(lines[record["sourceCodeStart"] - 1 : record["sourceCodeEnd"]]) == record["sourceCode"]


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
    assert {FAB001_ID, FAB002_ID, FAB003_ID} <= {r.id for r in records.records}
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
    assert len(records.records) == 3


# --- extend-records ----------------------------------------------------------------------------------


def test_extra_directory_record_overrides_the_shipped_one_with_the_same_id(tmp_path):
    document = json.loads((DATA_DIR / f"{FAB001_ID}.json").read_text(encoding="utf-8"))
    document["record"]["documentation"] = "Team note: mark generate() right after setup."
    path = _write(tmp_path, "ours.json", document)

    records = load_records([str(tmp_path)])

    assert records.by_code("FAB001")["documentation"] == "Team note: mark generate() right after setup."
    assert records.by_code("FAB001").source == str(path)
    assert len(records.records) == 3
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
    assert load_records([str(first), str(second)]).by_code("FAB003")["documentation"] == "second"


# --- message matching --------------------------------------------------------------------------------


def test_fab001_message_matches_with_names():
    found = default_records().match_message(FAB001_MESSAGE)
    assert found is not None
    record, groups = found
    assert record.id == FAB001_ID
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


def test_torch_fsdp_and_model_parallel_messages_match_fab002():
    fsdp = default_records().match_message("AttributeError: 'Block' object has no attribute 'reset_parameters'")
    assert fsdp.record.id == FAB002_ID and fsdp.context == {"class": "Block"}
    warning = (
        "Parameter initialization incomplete. The following modules have parameters or buffers with uninitialized"
        " memory because they don't define a `reset_parameters()` method for re-initialization: Block, Scale"
    )
    assert default_records().match_message(warning).context == {"class": "Block, Scale"}


@pytest.mark.parametrize(
    "text",
    [
        "",
        "RuntimeError: CUDA out of memory.",
        "You are calling the method `M.gen()` from inside the model.",
        "Materialization requires that the reset_parameters method is implemented.",
        "'Block' object has no attribute 'forward'",
    ],
)
def test_other_text_does_not_match(text):
    assert default_records().match_message(text) is None


def test_megabyte_messages_are_searched_in_bounded_time():
    near_misses = [
        "x" * 1_000_000,
        "You are calling the method `" + "a." * 500_000,
        ("You are calling the method `A.b()` from outside the model. " + "." * 40) * 10_000,
    ]
    for message in near_misses:
        started = time.perf_counter()
        assert default_records().match_message(message) is None
        assert time.perf_counter() - started < 2.0
    started = time.perf_counter()
    assert default_records().match_message("log line\n" * 100_000 + FAB001_MESSAGE).record.id == FAB001_ID
    assert time.perf_counter() - started < 2.0
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


@pytest.mark.parametrize("code", ["FAB001", "FAB002", "FAB003"])
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


@pytest.mark.parametrize("code", ["FAB001", "FAB002", "FAB003"])
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


def test_record_without_a_rule_is_titled_by_its_error(tmp_path):
    document = _fab003_document()
    document["record"]["id"] = "fedcba9876543210"
    _write(tmp_path, "own.json", document)
    record = load_records([str(tmp_path)]).by_id("fedcba9876543210")
    assert record.code is None
    assert render_markdown(record).startswith("### TypeError: expected-a-method-or-a-string-but-got-type-method\n")
    assert render_text(record, code="FAB003").startswith("FAB003 mark-forward-method-bound\n")
