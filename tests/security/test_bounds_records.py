"""A repository's extension record cannot hang record loading (issue 24, item 7).

`.*a.*a.*a.*a.*b` has no nested quantifier and no adjacent repetition, so the structural check
(`pattern_risk`) lets it through; Python's `re` needs hours to search it against its own
400-character errorMessage. Records are matched by a matcher that counts its steps
(records/patterns.py): the record is refused at load time with one notice, `explain` and `check`
answer, and the server publishes diagnostics (the analysis never loads extension records) and
answers hover, saying once why the record was left out. Not timed (issue 36): the notices say the
matcher's counted steps ran out, a check opens no record file (counted by an audit hook), explain's
comparisons are counted; the timeouts only end a hang.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from fabric_lsp.records import pattern_risk

from tests.security.audited import run_cli_audited
from tests.security.hostile import REPO_ROOT, user_config_env

sys.path.insert(0, str(REPO_ROOT / "tests" / "robustness"))
from rpc_client import RawServer, server_env  # noqa: E402

DATA_DIR = REPO_ROOT / "server" / "fabric_lsp" / "records" / "data"
FAB003_ID = "ce209f7f268e625f"
CASE = REPO_ROOT / "fixtures" / "cases" / "fab001_call_before_mark.py"
SLOW_PATTERN = r".*a.*a.*a.*a.*b"
SLOW_MESSAGE = "a" * 400  # no `b`: Python's backtracking tries every split, about n^5 of them


def _hostile_repo(root: Path) -> Path:
    (root / "kb").mkdir(parents=True)
    document = json.loads((DATA_DIR / f"{FAB003_ID}.json").read_text(encoding="utf-8"))
    record = document["record"]
    record["id"], record["messagePattern"], record["errorMessage"] = "5c0115c0115c0115", SLOW_PATTERN, SLOW_MESSAGE
    (root / "kb" / "slow.json").write_text(json.dumps(document), encoding="utf-8")
    (root / "pyproject.toml").write_text('[tool.fabric-lsp]\nextend-records = ["kb"]\n')
    shutil.copy(CASE, root / "train.py")
    return root


def _run(cwd: Path, env: dict[str, str], *argv: str) -> subprocess.CompletedProcess:
    """The CLI's result (the subprocess timeout is only the hang guard: the old code took hours)."""
    env = {**env, "PYTHONPATH": str(REPO_ROOT / "server")}
    return subprocess.run([sys.executable, "-m", "fabric_lsp", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_the_structural_check_lets_the_pattern_through_and_python_re_cannot_finish():
    assert pattern_risk(SLOW_PATTERN) is None
    script = f"import re; re.search({SLOW_PATTERN!r}, {SLOW_MESSAGE!r})"
    try:
        subprocess.run([sys.executable, "-c", script], timeout=2)
    except subprocess.TimeoutExpired:
        return
    raise AssertionError("Python's re searched the pattern in under 2 s: the hostile record is not hostile")


def test_explain_refuses_the_record_once_and_answers(tmp_path):
    repo = _hostile_repo(tmp_path / "repo")
    env = user_config_env(tmp_path)
    for query in ("FAB001", "TypeError: Expected a method or a string, but got: function"):
        completed = _run(repo, env, "explain", query)
        assert completed.returncode == 0, completed.stderr
        assert "Traceback" not in completed.stderr
        # The proof that the search was cut off: the matcher's counted steps ran out (the notice).
        notices = [line for line in completed.stderr.splitlines() if "slow.json" in line]
        assert len(notices) == 1, completed.stderr
        assert "messagePattern" in notices[0] and "steps" in notices[0] and "refused" in notices[0], notices
    assert "Expected a method or a string" in completed.stdout  # FAB003's record, matched by its pattern


def test_check_is_not_affected(tmp_path):
    repo = _hostile_repo(tmp_path / "repo")
    completed, reads = run_cli_audited(repo, user_config_env(tmp_path), "check", "--no-cache", ".")
    assert completed.returncode == 1 and "FAB001" in completed.stdout, completed.stderr
    # Counted, not timed: the analysis never loads extension records, so slow.json is never opened.
    assert str(repo / "kb" / "slow.json") not in reads.opened, [p for p in reads.opened if "kb" in p]


def test_server_publishes_and_hovers_with_one_notice(tmp_path):
    repo = _hostile_repo(tmp_path / "repo")
    env = server_env(FABRIC_LSP_USER_CONFIG=user_config_env(tmp_path)["FABRIC_LSP_USER_CONFIG"])
    server = RawServer(repo, env=env, stderr_path=tmp_path / "server-stderr.txt")
    try:
        server.initialize(repo)
        uri = server.open(repo / "train.py")
        published = server.diagnostics(uri, timeout=60)  # the timeouts here are only hang guards
        assert [d["code"] for d in published["diagnostics"]] == ["FAB001"], server.stderr_tail()
        start = published["diagnostics"][0]["range"]["start"]
        for _ in range(2):  # the second hover uses what the first loaded: no second notice
            reply = server.call("textDocument/hover", {"textDocument": {"uri": uri}, "position": start}, timeout=60)
            assert "mark_forward_method" in json.dumps(reply["result"]), reply
        shown = [m["params"]["message"] for m in server.messages
                 if m.get("method") == "window/showMessage" and "slow.json" in m["params"]["message"]]
        assert len(shown) == 1 and "steps" in shown[0], shown
        assert server.shutdown_and_exit() == 0
    finally:
        server.close()


def test_explain_of_a_long_log_against_many_long_records_is_bounded(tmp_path):
    """Fragment matching compares each record's message with the query word by word: a repository's
    100 records of 250-word messages against a pasted 20 kB log took 21 CPU-s. The comparisons are
    counted (records.matching.MAX_ALIGNMENT_CELLS): the shipped records are compared first, the
    rest until the count is spent, and one notice names those left out."""
    import random

    from fabric_lsp.records.loader import MAX_RECORD_FILES

    repo = tmp_path / "repo"
    (repo / "kb").mkdir(parents=True)
    (repo / "pyproject.toml").write_text('[tool.fabric-lsp]\nextend-records = ["kb"]\n')
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"]
    chosen = random.Random(24)
    document = json.loads((DATA_DIR / f"{FAB003_ID}.json").read_text(encoding="utf-8"))
    for index in range(MAX_RECORD_FILES):
        record = document["record"]
        record["id"] = f"{index:016x}"
        record["errorMessage"] = " ".join(chosen.choice(words) for _ in range(250)) + " omega"
        record["messagePattern"] = "omega"
        (repo / "kb" / f"r{index:03}.json").write_text(json.dumps(document), encoding="utf-8")
    log = "\n".join(" ".join(chosen.choice(words) for _ in range(12)) + "." for _ in range(300))
    (repo / "log.txt").write_text(log)
    env = {**user_config_env(tmp_path), "PYTHONPATH": str(REPO_ROOT / "server")}
    cells = tmp_path / "cells.txt"
    cells.write_text("")
    with open(repo / "log.txt") as stdin:
        completed = subprocess.run([sys.executable, "-c", CELLS_COUNTED_CLI, str(cells), "explain", "-"], cwd=repo,
                                   env=env, stdin=stdin, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in completed.stderr and completed.returncode in (0, 1), completed.stderr[-2000:]
    # Counted, not timed: the alignment tables' cells filled, all comparisons together, stay within
    # MAX_ALIGNMENT_CELLS (before the count: every record compared, 21 CPU-s).
    from fabric_lsp.records.matching import MAX_ALIGNMENT_CELLS

    spent = [int(line) for line in cells.read_text().split()]
    assert spent and sum(spent) <= MAX_ALIGNMENT_CELLS, (len(spent), sum(spent))
    notices = [line for line in completed.stderr.splitlines() if "not compared with the message" in line]
    assert len(notices) == 1, completed.stderr
    assert explain_fab003(repo, env)


# The CLI with every alignment (records.matching._align) counted in cells, query words x template
# words, each written at once (the CLI ends with os._exit).
CELLS_COUNTED_CLI = """
import os, runpy, sys
log = os.open(sys.argv.pop(1), os.O_WRONLY | os.O_APPEND)
from fabric_lsp.records import matching
align = matching._align
def counted(query, template, owners):
    os.write(log, b"%d\\n" % (len(query) * len(template)))
    return align(query, template, owners)
matching._align = counted
sys.argv = ["fabric_lsp", *sys.argv[1:]]
runpy.run_module("fabric_lsp", run_name="__main__", alter_sys=True)
"""


def explain_fab003(repo: Path, env: dict[str, str]) -> bool:
    """The shipped records still answer next to the repository's."""
    completed = subprocess.run([sys.executable, "-m", "fabric_lsp", "explain", "Expected a method or a string"],
                               cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    return completed.returncode == 0 and "Expected a method or a string" in completed.stdout
