"""Hostile record files (extend-records can come from an unvetted repository's pyproject.toml).

tests/test_records.py covers malformed files field by field, exponential patterns and megabyte
messages against the shipped patterns. Here: patterns that backtrack *polynomially* (they pass a
nested-quantifier check, yet `\\w*\\w*\\w*x` against 4000 characters runs for hours), files that
are huge, deeply nested, binary or not files at all, and a record set that must keep working
whatever else is in the directory.
"""

from __future__ import annotations

import faulthandler
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fabric_lsp.records import MAX_MESSAGE_CHARS, default_records, load_records, pattern_risk
from fabric_lsp.records.loader import DATA_DIR, MATCH_STEPS

from robustness_support import SERVER_DIR, record_figure

FAB003_ID = "ce209f7f268e625f"
FAB001_MESSAGE_HEAD = "You are calling the method `"


def _document(record_id: str, pattern: str, message: str) -> dict:
    document = json.loads((DATA_DIR / f"{FAB003_ID}.json").read_text(encoding="utf-8"))
    record = document["record"]
    record["id"], record["messagePattern"], record["errorMessage"] = record_id, pattern, message
    return document


# Each is accepted by a nested-quantifier check and matches its own sample message, but takes
# super-linear time on a near miss of MAX_MESSAGE_CHARS characters.
POLYNOMIAL = [
    (r"(\w*)(\w*)(\w*)x", "aaax"),
    (r"a*a*a*a*b", "aab"),
    (r"\s*\s*\s*\s*end", "  end"),
    (r".*a.*a.*a.*b", "aaab"),
    (r"(?:x+)(?:x+)(?:x+)y", "xxxy"),
]
NEAR_MISSES = ["a" * MAX_MESSAGE_CHARS, " " * MAX_MESSAGE_CHARS, "x" * MAX_MESSAGE_CHARS]


@pytest.mark.parametrize("pattern, message", POLYNOMIAL)
def test_polynomially_backtracking_patterns_are_rejected_or_bounded(tmp_path, pattern, message):
    """Either the loader rejects the pattern with a clear problem, or matching it is cut off in
    bounded time; in both cases the shipped records still match. Run in a child process with a
    timeout so that a regression is a failure, not a hung suite."""
    (tmp_path / "hostile.json").write_text(json.dumps(_document("badbadbadbadbad1", pattern, message)), encoding="utf-8")
    script = f"""
import json, sys
from fabric_lsp.records import load_records
from fabric_lsp.records.patterns import BoundedPattern
records = load_records([{str(tmp_path)!r}])
spent = [0]
search_counted = BoundedPattern.search_counted
def counted(self, text, budget):
    try:
        found, steps = search_counted(self, text, budget)
    except Exception:
        spent[0] += budget  # ran out: the whole budget was spent
        raise
    spent[0] += steps
    return found, steps
BoundedPattern.search_counted = counted
worst = 0
for text in {NEAR_MISSES!r}:
    spent[0] = 0
    records.match_message(text)
    worst = max(worst, spent[0])
fab003 = records.match_message("TypeError: Expected a method or a string, but got: function")
print(json.dumps({{"problems": list(records.problems), "ids": [r.id for r in records.records],
                  "worst": worst, "fab003": fab003.record.id if fab003 else None}}))
"""
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                               env={**os.environ, "PYTHONPATH": str(SERVER_DIR)})
    assert completed.returncode == 0, completed.stderr[-2000:]
    result = json.loads(completed.stdout)
    record_figure("hostile_pattern", pattern, steps=result["worst"], rejected=bool(result["problems"]))
    assert result["fab003"] == FAB003_ID
    # Counted, not timed: one near miss against every record costs at most MATCH_STEPS matcher steps.
    assert result["worst"] <= MATCH_STEPS, result
    if result["problems"]:
        [problem] = result["problems"]
        assert "hostile.json: field 'messagePattern'" in problem and "backtrack" in problem, problem
        assert "badbadbadbadbad1" not in result["ids"]


def test_adjacent_repetitions_are_named_in_the_problem():
    assert pattern_risk(r"\w*\w*x") is not None
    assert pattern_risk(r"(\w+)(\d+)") is not None
    # the shipped patterns and ordinary ones still pass
    for record in default_records().records:
        for compiled in record.patterns:
            assert pattern_risk(compiled.pattern) is None
    assert pattern_risk(r"(\w+)\.(\w+)\(\)") is None
    assert pattern_risk(r"got: (\w{1,100})") is None


def test_a_pattern_that_outruns_its_steps_is_cut_off_and_the_next_record_still_matches(tmp_path, monkeypatch):
    """Whatever slips through the structural check: a search stops after SEARCH_STEPS steps of the
    matcher, counted (records/patterns.py), in any thread; the pattern is left unmatched, one notice
    says so, and the records after it still match."""
    from fabric_lsp.records import loader, patterns

    monkeypatch.setattr(loader, "pattern_risk", lambda pattern: None)  # let it through
    (tmp_path / "aaa_hostile.json").write_text(
        json.dumps(_document("aaaaaaaaaaaaaaa1", r"(\w*)(\w*)(\w*)(\w*)x", "aaaax")), encoding="utf-8"
    )
    records = load_records([str(tmp_path)])
    assert records.problems == ()
    notices: list[str] = []
    spent: list[int] = []
    search = patterns._Search.spend

    def counted(run, steps):
        spent.append(steps)
        return search(run, steps)

    monkeypatch.setattr(patterns._Search, "spend", counted)
    assert records.match_message("a" * MAX_MESSAGE_CHARS, notices) is None
    # Counted, not timed: the hostile pattern's search stopped at SEARCH_STEPS, the message's at MATCH_STEPS.
    assert 0 < sum(spent) <= MATCH_STEPS + patterns.SEARCH_STEPS, sum(spent)
    [notice] = notices
    assert "aaa_hostile.json" in notice and "ran out of steps" in notice and str(patterns.SEARCH_STEPS) in notice
    match = records.match_message("Expected a method or a string, but got: function")
    assert match is not None and match.record.id == FAB003_ID


@pytest.mark.parametrize(
    "name, content, reason",
    [
        ("deep.json", "[" * 100_000 + "]" * 100_000, "invalid JSON"),
        ("huge.json", '{"record": {}, "datasetVersion": "' + "x" * 1_100_000 + '"}', "larger than"),
        ("binary.json", b"\x00\x01\x02\xff\xfe", "not UTF-8"),
        ("utf16.json", json.dumps({"record": {}}).encode("utf-16"), "not UTF-8"),
        ("nan.json", '{"record": NaN, "datasetVersion": "1"}', "record"),
        ("dupkeys.json", '{"record": {}, "record": [], "datasetVersion": "1"}', "record"),
        ("empty.json", "", "invalid JSON"),
        ("bigint.json", '{"record": {"lineNumber": ' + "9" * 5000 + '}, "datasetVersion": "1"}', "invalid JSON"),
    ],
)
def test_hostile_files_are_rejected_with_a_reason_and_the_rest_load(tmp_path, name, content, reason):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    records = load_records([str(tmp_path)])
    [problem] = records.problems
    assert problem.startswith(f"{path}: ") and reason in problem, problem
    assert {r.id for r in default_records().records} <= {r.id for r in records.records}


def test_entries_that_are_not_regular_files_are_reported_not_fatal(tmp_path):
    # A FIFO blocked the loader forever before it opened files non-blocking: end the worker
    # with a traceback instead of hanging the suite if that comes back.
    faulthandler.dump_traceback_later(60, exit=True)
    try:
        _check_not_regular_files(tmp_path)
    finally:
        faulthandler.cancel_dump_traceback_later()


def _check_not_regular_files(tmp_path):
    (tmp_path / "dir.json").mkdir()
    (tmp_path / "loop.json").symlink_to("loop.json")
    (tmp_path / "dangling.json").symlink_to(tmp_path / "nowhere.json")
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "fifo.json")  # reading it would block forever
    records = load_records([str(tmp_path)])
    assert len(records.records) == len(default_records().records)
    reported = {Path(p.split(": ")[0]).name for p in records.problems}
    assert {"loop.json", "dangling.json"} <= reported, records.problems
    if hasattr(os, "mkfifo"):
        assert "fifo.json" in reported, records.problems
