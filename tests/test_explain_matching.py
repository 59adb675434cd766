"""`fabric-lsp explain` on what people paste (issue 14): the first sentence of a runtime error, the
message with its backticks lost by a terminal, the README's own quoted wording, a few words of it;
best match first, with which record matched and why; no match: one clear line, exit 1.

The messages are Lightning's own: every `raise` in the installed lightning/fabric/wrappers.py and
lightning/fabric/utilities/init.py, read from the source as text (nothing is run), plus the
records' errorMessage templates and their runtime paths' (records/paths.json).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from fabric_lsp.cli import main
from fabric_lsp.records import default_records, explain_query
from fabric_lsp.records.messages import sample_message
from fabric_lsp.records.pages import page_url

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _lightning_raises() -> list[tuple[str, str, list[str]]]:
    """(f-string template as written, the message with every name set to Sample, its literal chunks)
    of each `raise X("...")` in Lightning's wrappers.py and utilities/init.py."""
    import importlib.util

    found = []
    for module in ("lightning.fabric.wrappers", "lightning.fabric.utilities.init"):
        spec = importlib.util.find_spec(module)
        assert spec is not None and spec.origin, module
        tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args):
                continue
            argument = node.exc.args[0]
            parts = argument.values if isinstance(argument, ast.JoinedStr) else [argument]
            if not all(isinstance(p, (ast.Constant, ast.FormattedValue)) for p in parts):
                continue
            template = "".join(
                p.value if isinstance(p, ast.Constant)
                else "{" + ast.unparse(p.value) + ("!" + chr(p.conversion) if p.conversion > 0 else "") + "}"
                for p in parts
            )
            sample = "".join(p.value if isinstance(p, ast.Constant) else "Sample" for p in parts)
            chunks = [p.value for p in parts if isinstance(p, ast.Constant)]
            found.append((template, sample, chunks))
    return found


def _expected_code(template: str) -> str | None:
    """The rule whose record (or one of its runtime paths) copies this template from Lightning."""
    for record in default_records().records:
        if template == record.error_message or any(template == p.error_message for p in record.paths):
            return record.code
    return None


RAISES = _lightning_raises()


def test_lightning_raises_were_found():
    codes = {_expected_code(template) for template, _, _ in RAISES}
    assert {"FAB001", "FAB002", "FAB003", "FAB004"} <= codes  # the records copy Lightning's text
    assert None in codes  # and Lightning raises other errors that no record explains


def _words(text: str) -> int:
    return len(re.findall(r"[^\W_]\w*|_\w*", text))


def _first(query: str):
    found = explain_query(default_records(), query)
    return found[0] if found else None


@pytest.mark.parametrize("template, sample, chunks", RAISES, ids=[t[:40] for t, _, _ in RAISES])
def test_lightning_messages_and_their_fragments(template, sample, chunks):
    code = _expected_code(template)
    queries = [sample, sample.replace("`", ""), re.split(r"(?<=\.)\s", sample)[0]]
    queries += [chunk for chunk in chunks if _words(chunk) >= 3]
    for query in queries:
        found = _first(query)
        if code is None:
            assert found is None, (query, found and found.reason)
        else:
            assert found is not None and found.code == code, (query, found and found.reason)


@pytest.mark.parametrize("record", default_records().records, ids=lambda r: r.code or r.id)
def test_each_records_messages_without_backticks_first_sentence_and_five_words(record):
    for path in (None, *record.paths):
        message = sample_message(record.error_message if path is None else path.error_message)
        first_sentence = re.split(r"(?<=\.)\s", message)[0]
        words = re.findall(r"[^\W_]\w*|_\w*", message)
        for query in (message.replace("`", ""), message.replace("`", "'"), first_sentence,
                      " ".join(words[-5:]), " ".join(words[1:6]).upper()):
            found = _first(query)
            assert found is not None and found.record is record, (query, found and found.reason)
            if found.kind == "fragment":
                assert (found.path is path) or (path is None and found.path is None) or found.path is not None


README_QUOTES = [  # the runtime errors as README.md's table quotes them (shortened with "...")
    ("RuntimeError: You are calling the method `TinyLM.generate()` from outside the model...", "FAB001",
     {"class": "TinyLM", "method": "generate"}),
    ("TypeError: Materialization requires that the `Block.reset_parameters` method is implemented...", "FAB002",
     {"class": "Block"}),
    ("AttributeError: 'Block' object has no attribute 'reset_parameters'", "FAB002",
     {"class": "Block", "path": "fsdp"}),
    ("Parameter initialization incomplete", "FAB002", {"path": "model_parallel"}),
    ("TypeError: Expected a method or a string, but got: function", "FAB003", {"argument_type": "function"}),
    ("AttributeError: You marked 'genrate' as a forward method, but `TinyLM.genrate` does not exist or is not a "
     "method.", "FAB004", {"class": "TinyLM", "method": "genrate"}),
    ("ValueError: You cannot mark the forward method itself as a forward method.", "FAB004", {"method": "forward"}),
]


@pytest.mark.parametrize("quote, code, context", README_QUOTES, ids=[q[:30] for q, _, _ in README_QUOTES])
def test_readme_wording(quote, code, context):
    assert quote in README, "keep this list in step with README.md's table"
    found = _first(quote)
    assert found is not None and found.code == code, found and found.reason
    assert found.context == context


def test_tracebacks_logs_and_typos():
    traceback = (
        "Traceback (most recent call last):\n"
        '  File "/home/me/train.py", line 41, in <module>\n'
        "    out = model.generate(x)\n"
        "          ^^^^^^^^^^^^^^^^^\n"
        "RuntimeError: You are calling the method `CharLM.generate()` from outside the model.\n"
    )
    found = _first(traceback)
    assert found.code == "FAB001" and found.context == {"class": "CharLM", "method": "generate"}
    assert found.reason == "the record's errorMessage by 9 of 9 words; the message has 30"
    log = "2026-12-03 10:00:01 ERROR [rank0]: RuntimeError: You are calling the method LM.sample() from outside the"
    assert _first(log).code == "FAB001"
    wrapped = ("Materialization requires that the `Scale.reset_parameters`\nmethod is implemented. This method is\n"
               "used to initialize any children parameters")
    assert _first(wrapped).code == "FAB002"
    typo = "You are calling the methd LM.sample() from outside the model"
    assert _first(typo).code == "FAB001"


@pytest.mark.parametrize("query", [
    "forward method",  # two words
    "'Block' object has no attribute 'forward'",  # another AttributeError: the template goes on otherwise
    "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "ValueError: something else entirely",
    "the model is on the wrong device",
])
def test_unrelated_text_matches_nothing(query):
    assert explain_query(default_records(), query) == []


def test_best_match_first_and_why(tmp_path, monkeypatch, capsys):
    found = explain_query(default_records(), "as a forward method, but")
    assert [f.code for f in found][:1] == ["FAB004"]
    found = explain_query(default_records(), "a forward method")  # FAB004's "forward" path and FAB001
    assert {f.code for f in found} == {"FAB001", "FAB004"}
    assert found[0].code == "FAB004" and found[0].path.name == "forward"  # the shorter message: more of it
    monkeypatch.chdir(tmp_path)
    assert main(["explain", "a", "forward", "method"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("FAB004 mark-forward-method-invalid-name\n")
    tail = " ".join(out.split("\nRecord: ")[1].split())
    assert "Matched: the errorMessage of its path 'For `\"forward\"`' by 3 of 3 words; the message has 11." in tail
    assert ("Also matched: FAB001 unmarked-forward-method: the record's errorMessage by 3 of 3 words; the message "
            "has 30. See `fabric-lsp explain FAB001`.") in tail
    assert out.endswith(f"\n\nRule page: {page_url('FAB004')}\n")


def test_cli_fills_in_the_names_and_says_why(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    message = "You are calling the method TinyLM.generate() from outside the model. To avoid issues"
    assert main(["explain", message]) == 0
    out = capsys.readouterr().out
    assert out.split("\n\n")[1] == (
        "RuntimeError: You are calling the method `TinyLM.generate()` from outside the model. To avoid issues with "
        "the currently selected strategy, explicitly mark it as a forward method with "
        "`fabric_model.mark_forward_method('generate')` after `fabric.setup()`."
    )
    assert "Matched: the record's errorMessage by 12 of 12 words; the message has 30." in " ".join(out.split())
    assert main(["explain", "--format", "markdown", message]) == 0
    markdown = capsys.readouterr().out
    assert markdown.startswith("### FAB001 unmarked-forward-method\n")
    assert markdown.endswith(f"\n\nRule page: [FAB001]({page_url('FAB001')})\n")
    # A whole message: its messagePattern says so.
    whole = "TypeError: Expected a method or a string, but got: function"
    assert main(["explain", whole]) == 0
    assert "Matched: the record's messagePattern (the whole message)." in capsys.readouterr().out
    # A code or a record id needs no reason.
    assert main(["explain", "FAB002"]) == 0
    assert "Matched:" not in capsys.readouterr().out


def test_exit_status(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["explain", "CUDA", "out", "of", "memory"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "fabric-lsp: no rule or record matches 'CUDA out of memory': give a rule code (see `fabric-lsp rules`), "
        "a runtime error message, or at least 3 words of one in order\n"
    )
    assert main(["explain", "FAB999"]) == 2  # a code that names no rule: a usage error, as before
    assert "no rule or record matches 'FAB999'" in capsys.readouterr().err


def test_long_pastes_cost_bounded_work():
    """Counted, not timed (tests/support/work.py: lines of fabric_lsp executed): a long traceback and
    100,000 words are read as their windows (MAX_MESSAGE_CHARS) and compared in at most
    MAX_ALIGNMENT_CELLS cells: ten or a hundred times the paste costs about what the window does."""
    from tests.support.work import counted

    def traceback(frames: int) -> str:
        noise = "\n".join(f'  File "/x/y{i}.py", line {i}, in f{i}\n    call_{i}(a, b, c)' for i in range(frames))
        return noise + "\nRuntimeError: You are calling the method `LM.gen()` from outside the model"

    default_records()  # loaded once per process: not the pastes' work
    work = {}
    for frames in (200, 2000):
        with counted() as work[frames]:
            assert _first(traceback(frames)).code == "FAB001"
    for words in (1_000, 100_000):
        with counted() as work[words, "words"]:
            assert explain_query(default_records(), "word " * words) == []
    assert work[2000].lines <= 3 * work[200].lines, (work[2000].lines, work[200].lines)
    assert work[100_000, "words"].lines <= 3 * work[1_000, "words"].lines, (
        work[100_000, "words"].lines, work[1_000, "words"].lines)
