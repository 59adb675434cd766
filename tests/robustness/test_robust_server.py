"""The language server under abuse, over a raw stdio connection (no pygls client in between):
storms of didChange, malformed JSON-RPC, unknown documents, impossible positions, invalid params,
files over max-file-size, shutdown/exit per the LSP specification, and the editor process dying.

It must answer every request (an error response is fine), stay up, publish the right result for
the final text, and keep its memory bounded.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from robustness_support import CASES_DIR, record_figure
from rpc_client import RawServer, frame, server_env

CASE = CASES_DIR / "fab001_generate_ddp_literal.py"
PROCESS_EXIT_TIMEOUT = 20


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    shutil.copy(CASE, root / "main.py")
    return root


@pytest.fixture
def server(project, tmp_path):
    instance = RawServer(project, env=server_env(), stderr_path=tmp_path / "server-stderr.txt")
    yield instance
    instance.close()


def summary(diagnostics) -> list[tuple]:
    return sorted((d.get("code"), d["range"]["start"]["line"], d["range"]["start"]["character"],
                   d["range"]["end"]["line"], d["range"]["end"]["character"]) for d in diagnostics)


def open_main(server, project) -> tuple[str, list]:
    server.initialize(project)
    uri = server.open(project / "main.py")
    first = server.diagnostics(uri, timeout=60)
    assert first["diagnostics"], first  # the case has a finding: something to get right later
    return uri, first["diagnostics"]


def assert_alive(server, uri: str, timeout: float = 15) -> None:
    reply = server.call("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}},
                        timeout=timeout)
    assert "result" in reply or "error" in reply


# -- text bookkeeping in UTF-16 code units (the default position encoding) ---------------------


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def lines_of(text: str) -> list[str]:
    return text.split("\n")


def offset_of(text: str, line: int, character: int) -> int:
    lines = lines_of(text)
    offset = sum(len(l) + 1 for l in lines[:line])
    units = 0
    for index, char in enumerate(lines[line]):
        if units >= character:
            return offset + index
        units += utf16_len(char)
    return offset + len(lines[line])


def position_of(text: str, offset: int) -> dict:
    before = text[:offset]
    line = before.count("\n")
    column = utf16_len(before[before.rfind("\n") + 1 :])
    return {"line": line, "character": column}


def random_edit(rng: random.Random, text: str) -> tuple[int, int, str]:
    """(start offset, end offset, new text) at character boundaries."""
    start = rng.randrange(0, len(text) + 1)
    end = min(len(text), start + rng.choice([0, 0, 1, 3, 10, 40]))
    new = rng.choice(["", "x", "(", ")", ":\n    ", "model.", "fabric.setup(", "\t", "é", "𝔘", "\n", "# ",
                      "mark_forward_method", "\"\"\"", "'", "lambda"])
    return start, end, new


def change(uri: str, version: int, text: str, start: int, end: int, new: str) -> dict:
    return {"textDocument": {"uri": uri, "version": version}, "contentChanges": [
        {"range": {"start": position_of(text, start), "end": position_of(text, end)}, "text": new}]}


# -- storm ------------------------------------------------------------------------------------


def test_storm_of_changes_ends_with_the_right_diagnostics_and_bounded_memory(server, project):
    uri, expected = open_main(server, project)
    original = (project / "main.py").read_text(encoding="utf-8")
    rng = random.Random(20241202)
    version = 1
    memory = []
    rounds, edits_per_round = 3, 200
    started = time.perf_counter()
    for round_ in range(rounds):
        text = original
        undo = []
        for _ in range(edits_per_round):  # random edits, sent without waiting...
            start, end, new = random_edit(rng, text)
            version += 1
            server.notify("textDocument/didChange", change(uri, version, text, start, end, new))
            undo.append((start, start + len(new), text[start:end]))
            text = text[:start] + new + text[end:]
            if rng.random() < 0.05:
                server.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": position_of(text, start)})
        for start, end, old in reversed(undo):  # ...then undone one by one, back to the original
            version += 1
            server.notify("textDocument/didChange", change(uri, version, text, start, end, old))
            text = text[:start] + old + text[end:]
        assert text == original
        final = server.diagnostics(uri, timeout=60, version=version)
        assert summary(final["diagnostics"]) == summary(expected), f"round {round_}"
        memory.append(server.rss_mb())
    seconds = time.perf_counter() - started
    requests = [m for m in server.messages if "id" in m and "method" not in m]
    assert all("result" in m or "error" in m for m in requests)
    record_figure("storm_changes", rounds * edits_per_round * 2, seconds=round(seconds, 1),
                  rss_mb=[round(m) for m in memory], peak_rss_mb=round(server.peak_rss_mb() or 0))
    # bounded: the later rounds do not keep growing (first round warms jedi's caches)
    assert memory[-1] - memory[1] < 60, memory
    assert_alive(server, uri)
    assert server.shutdown_and_exit() == 0


# -- malformed messages -----------------------------------------------------------------------


MALFORMED_BODIES = [
    b"{not json", b"[1, 2, 3]", b"42", b'"text"', b"null", b"{}", b"\xff\xfe\x00",
    b'[{"jsonrpc": "2.0", "id": 9001, "method": "shutdown"}]',  # batches are not LSP
    b'{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": 7}}',
    b'{"jsonrpc": "2.0", "method": "textDocument/didChange", "params": null}',
    b'{"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 123456}}',
    b'{"jsonrpc": "2.0", "method": "unknown/notification", "params": {"x": [1, {"y": null}]}}',
    b'{"jsonrpc": "1.0", "method": "initialized"}',
    b'{"jsonrpc": "2.0", "result": 5, "id": 77777}',  # a response to a request never sent
    b'{"jsonrpc": "2.0", "error": {"code": 1, "message": "?"}, "id": "zzz"}',
    b'{"jsonrpc": "2.0", "method": "x", "params": {"deep": ' + b"[" * 20 + b"1" + b"]" * 20 + b"}}",
    b'{"jsonrpc": "2.0", "method": "x", "params": ' + b"[" * 5000 + b"]" * 5000 + b"}",
]


def test_malformed_payloads_leave_the_server_answering(server, project):
    uri, expected = open_main(server, project)
    for body in MALFORMED_BODIES:
        server.send_bytes(frame(body))
    assert_alive(server, uri)
    unknown = server.call("no/such/method", {})
    assert unknown.get("error", {}).get("code") == -32601, unknown
    server.notify("textDocument/didChange", change(uri, 2, "", 0, 0, ""))  # still editable
    assert summary(server.diagnostics(uri, version=2)["diagnostics"]) == summary(expected)
    record_figure("malformed_payloads", len(MALFORMED_BODIES))
    assert not [m for m in server.messages if m.get("method") == "window/showMessage"]  # a log line, not a dialog
    assert server.shutdown_and_exit() == 0


# Bodies that are no JSON-RPC request at all are answered with id null (JSON-RPC 2.0 section 5);
# notifications, valid or not, and responses are never answered.
ANSWERED_WITH_ID_NULL = [
    (b"{not json", -32700), (b"", -32700), (b"\xff\xfe\x00", -32700), (b"[1, 2, 3]", -32600), (b"42", -32600),
    (b"null", -32600), (b"{}", -32600), (b'[{"jsonrpc": "2.0", "id": 9001, "method": "shutdown"}]', -32600),
    (b'{"jsonrpc": "1.0", "method": "initialized"}', -32600), (b'{"jsonrpc": "2.0", "id": [1], "method": "shutdown"}', -32600),
    (b'{"jsonrpc": "2.0", "method": 12, "params": {}}', -32600),
]
ANSWERED_WITH_THEIR_ID = [
    (b'{"jsonrpc": "2.0", "id": "n1", "method": "initialized", "params": {}}', -32600),  # a notification's method
    (b'{"jsonrpc": "1.0", "id": "n2", "method": "textDocument/hover", "params": {}}', -32600),
    (b'{"jsonrpc": "2.0", "id": "n3", "method": "textDocument/hover", "params": []}', -32602),
    (b'{"jsonrpc": "2.0", "id": "n4", "method": "no/such/request"}', -32601),
]
NOT_ANSWERED = [
    b'{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": 7}}',
    b'{"jsonrpc": "2.0", "method": "unknown/notification", "params": {}}',
    b'{"jsonrpc": "2.0", "result": 5, "id": 77777}',
    b'{"jsonrpc": "2.0", "error": {"code": 1, "message": "?"}, "id": "zzz"}',
]


def test_json_rpc_errors_for_what_is_not_a_request(server, project):
    uri, _ = open_main(server, project)
    for body in NOT_ANSWERED:
        server.send_bytes(frame(body))
    for body, code in ANSWERED_WITH_ID_NULL:
        start = len(server.messages)
        server.send_bytes(frame(body))
        reply = server.wait_for(lambda m: "error" in m and "method" not in m, timeout=10, start=start)
        assert reply["id"] is None and reply["error"]["code"] == code, (body, reply)
    for body, code in ANSWERED_WITH_THEIR_ID:
        msg_id = json.loads(body)["id"]
        server.send_bytes(frame(body))
        reply = server.wait_for(lambda m: m.get("id") == msg_id and "method" not in m, timeout=10)
        assert reply.get("error", {}).get("code") == code, (body, reply)
    assert_alive(server, uri)
    answered = [m for m in server.messages if "error" in m and m.get("id") is None]
    assert len(answered) == len(ANSWERED_WITH_ID_NULL), answered  # nothing for the notifications and responses
    assert server.shutdown_and_exit() == 0


def test_requests_before_initialize_are_refused_with_minus_32002(server, project):
    refused = server.call("textDocument/hover", {"textDocument": {"uri": (project / "main.py").as_uri()},
                                                 "position": {"line": 0, "character": 0}}, timeout=10)
    assert refused.get("error", {}).get("code") == -32002, refused
    server.notify("textDocument/didOpen", {"textDocument": {"uri": (project / "main.py").as_uri(), "languageId": "python",
                                                            "version": 1, "text": "x = 1\n"}})  # dropped
    uri, expected = open_main(server, project)  # initialize still works afterwards
    assert expected
    assert server.shutdown_and_exit() == 0


INVALID_PARAMS = [
    ("textDocument/hover", 5),
    ("textDocument/hover", {}),
    ("textDocument/hover", {"textDocument": {"uri": "file:///x.py"}, "position": {"line": -1, "character": 0}}),
    ("textDocument/codeAction", {"textDocument": {"uri": "file:///x.py"}}),
    ("textDocument/codeAction", "range"),
    ("workspace/executeCommand", {"command": 5}),
]


@pytest.mark.parametrize("method, params", INVALID_PARAMS, ids=[f"{m}-{i}" for i, (m, _) in enumerate(INVALID_PARAMS)])
def test_requests_with_invalid_params_get_an_error_response(server, project, method, params):
    """JSON-RPC: a request always gets a response; invalid params -> error -32602. A client that
    gets nothing waits forever (vscode-languageclient keeps the request pending)."""
    uri, _ = open_main(server, project)
    reply = server.call(method, params, timeout=10)
    assert reply.get("error", {}).get("code") == -32602, reply
    assert reply["error"]["message"]  # says what is wrong
    assert_alive(server, uri)


@pytest.mark.parametrize(
    "broken_frame",
    [
        b"Content-Type: application/vscode-jsonrpc\r\n\r\n{}",  # no Content-Length
        b'Content-Length: 5\r\n\r\n{"jsonrpc": "2.0", "method": "x"}',  # too short
        b"Content-Length: nope\r\n\r\n{}",
        b"garbage line without colon\r\n",
    ],
    ids=["no-length", "short-length", "bad-length", "garbage-line"],
)
def test_server_resynchronizes_after_a_broken_frame(server, project, broken_frame):
    """One broken frame may cost that message (and the next); the stream must not stay desynchronized."""
    uri, _ = open_main(server, project)
    server.send_bytes(broken_frame)
    for attempt in range(3):  # the frame after the broken one may be swallowed
        server.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}})
    assert_alive(server, uri, timeout=10)


# -- unknown documents, impossible positions --------------------------------------------------


def test_unknown_documents_and_impossible_positions(server, project):
    uri, expected = open_main(server, project)
    ghost = (project / "not_open.py").as_uri()
    huge = {"line": 2**31 - 1, "character": 2**31 - 1}
    requests = [
        ("textDocument/hover", {"textDocument": {"uri": ghost}, "position": {"line": 0, "character": 0}}),
        ("textDocument/hover", {"textDocument": {"uri": uri}, "position": huge}),
        ("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 3, "character": 10_000}}),
        ("textDocument/codeAction", {"textDocument": {"uri": ghost}, "range": {"start": huge, "end": huge},
                                     "context": {"diagnostics": []}}),
        ("textDocument/codeAction", {"textDocument": {"uri": uri},
                                     "range": {"start": {"line": 40, "character": 5}, "end": {"line": 2, "character": 0}},
                                     "context": {"diagnostics": expected}}),
        ("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": {"start": huge, "end": huge},
                                     "context": {"diagnostics": [{**expected[0], "range": {"start": huge, "end": huge}}]}}),
        ("workspace/executeCommand", {"command": "no.such.command", "arguments": [1, None, {}]}),
    ]
    for method, params in requests:
        reply = server.call(method, params, timeout=15)
        assert "result" in reply or "error" in reply, (method, reply)
    notifications = [
        ("textDocument/didChange", {"textDocument": {"uri": ghost, "version": 3}, "contentChanges": [{"text": "x"}]}),
        ("textDocument/didClose", {"textDocument": {"uri": ghost}}),
        ("textDocument/didSave", {"textDocument": {"uri": ghost}}),
        ("textDocument/didOpen", {"textDocument": {"uri": "untitled:Untitled-1", "languageId": "python", "version": 1,
                                                   "text": "import lightning as L\nf = L.Fabric(strategy='ddp')\n"}}),
        ("textDocument/didOpen", {"textDocument": {"uri": "https://example.com/x.py", "languageId": "python",
                                                   "version": 1, "text": "x = 1\n"}}),
        ("textDocument/didOpen", {"textDocument": {"uri": (project / "sp ace é#?.py").as_uri(), "languageId": "python",
                                                   "version": 1, "text": "fabric.setup(\n"}}),
        ("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
            {"range": {"start": huge, "end": huge}, "text": "\n# appended far away\n"},
            {"range": {"start": {"line": 9, "character": 99}, "end": {"line": 3, "character": 0}}, "text": "?"},
        ]}),
    ]
    for method, params in notifications:
        server.notify(method, params)
    assert_alive(server, uri)
    # A full-text change puts the document back: the diagnostics are those of the original text.
    server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 3},
                                             "contentChanges": [{"text": (project / "main.py").read_text(encoding="utf-8")}]})
    assert summary(server.diagnostics(uri, version=3)["diagnostics"]) == summary(expected)
    record_figure("unknown_documents_and_positions", len(requests) + len(notifications))
    assert server.shutdown_and_exit() == 0


def test_file_over_max_file_size_is_skipped_with_a_notice(server, project):
    (project / "pyproject.toml").write_text("[tool.fabric-lsp]\nmax-file-size = 4096\n", encoding="utf-8")
    server.initialize(project)
    big = project / "big.py"
    big.write_text((project / "main.py").read_text(encoding="utf-8") + "# padding\n" * 1000, encoding="utf-8")
    uri = server.open(big)
    assert server.diagnostics(uri, timeout=60)["diagnostics"] == []
    notice = server.wait_for(lambda m: m.get("method") in ("window/logMessage", "window/showMessage")
                             and "max-file-size" in m["params"]["message"], timeout=10)
    assert "big.py" in notice["params"]["message"]
    small = server.open(project / "main.py")
    assert server.diagnostics(small, timeout=60)["diagnostics"]
    assert server.shutdown_and_exit() == 0


def test_max_file_size_counts_bytes_not_characters(server, project):
    """3,000 characters of 'é' are 6,000 bytes on disk: over a 4,096-byte limit, as the CLI counts it."""
    (project / "pyproject.toml").write_text("[tool.fabric-lsp]\nmax-file-size = 4096\n", encoding="utf-8")
    server.initialize(project)
    text = (project / "main.py").read_text(encoding="utf-8")
    accented = project / "accented.py"
    accented.write_text(text + "# " + "é" * (3000 - len(text)) + "\n", encoding="utf-8")
    assert len(accented.read_text(encoding="utf-8")) < 4096 < accented.stat().st_size
    uri = server.open(accented)
    assert server.diagnostics(uri, timeout=60)["diagnostics"] == []
    notice = server.wait_for(lambda m: m.get("method") == "window/showMessage"
                             and "max-file-size" in m["params"]["message"], timeout=10)
    assert "accented.py" in notice["params"]["message"]
    for version in (2, 3):  # typing on: no new dialog per keystroke
        server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                 "contentChanges": [{"text": accented.read_text(encoding="utf-8") + "#" * version}]})
        server.diagnostics(uri, version=version)
    assert len([m for m in server.messages if m.get("method") == "window/showMessage"]) == 1
    assert server.shutdown_and_exit() == 0


# -- lifecycle --------------------------------------------------------------------------------


def test_shutdown_then_requests_are_refused_and_exit_ends_with_status_0(server, project):
    uri, _ = open_main(server, project)
    assert server.call("shutdown")["result"] is None
    refused = server.call("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}},
                          timeout=10)
    assert refused.get("error", {}).get("code") == -32600, refused  # InvalidRequest after shutdown
    server.notify("exit")
    assert server.proc.wait(PROCESS_EXIT_TIMEOUT) == 0


def test_exit_without_shutdown_ends_with_status_1(server, project):
    open_main(server, project)
    server.notify("exit")
    assert server.proc.wait(PROCESS_EXIT_TIMEOUT) == 1


def test_end_of_input_ends_the_server(server, project):
    open_main(server, project)
    server.proc.stdin.close()
    assert server.proc.wait(PROCESS_EXIT_TIMEOUT) is not None


def test_server_exits_when_the_editor_process_dies(project, tmp_path):
    editor = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    server = RawServer(project, env=server_env(), stderr_path=tmp_path / "stderr.txt")
    try:
        server.initialize(project, process_id=editor.pid)
        server.open(project / "main.py")
        editor.kill()
        editor.wait(10)
        started = time.perf_counter()
        server.proc.wait(PROCESS_EXIT_TIMEOUT)
        record_figure("exit_after_editor_death_seconds", round(time.perf_counter() - started, 1))
    finally:
        if editor.poll() is None:
            editor.kill()
        server.close()


def test_sigterm_ends_the_server(server, project):
    open_main(server, project)
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(PROCESS_EXIT_TIMEOUT) is not None


def test_code_that_makes_jedi_exponential_is_analysed_at_once_in_the_server(server, project):
    """Code on which jedi's inference is exponential (see test_robust_pathological.py): the value
    flow, not jedi, follows the project's values, so the answer comes at once and the server goes on."""
    from test_robust_pathological import EXPONENTIAL_INFERENCE

    uri, expected = open_main(server, project)
    slow = project / "exponential.py"
    slow.write_text(EXPONENTIAL_INFERENCE, encoding="utf-8")
    started = time.monotonic()
    slow_uri = server.open(slow)
    # Only a hang guard (jedi on this code: hours); test_robust_pathological.py counts the work:
    # jedi is asked nothing about the project's values and takes <= 1,000 steps.
    published = server.diagnostics(slow_uri, timeout=60)
    record_figure("exponential_jedi_inference_in_server", round(time.monotonic() - started, 2))
    assert published["diagnostics"] == [], published  # the model's class cannot be seen: no finding
    text = (project / "main.py").read_text(encoding="utf-8")
    server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [{"text": text + "\n# edited\n"}]})
    assert summary(server.diagnostics(uri, version=2)["diagnostics"]) == summary(expected)
    assert server.shutdown_and_exit() == 0
