"""The server's log (stderr) under bad requests: one line per invalid params or failing handler, never a
Python traceback (unless FABRIC_LSP_DEBUG=1), and the server keeps answering.

The real server process over raw stdio: a hostile or buggy client sends what it likes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SERVER_COMMAND = [sys.executable, "-m", "fabric_lsp", "serve"]
TIMEOUT = 30.0
CASE = REPO / "fixtures" / "cases" / "fab001_call_before_mark.py"
MAX_LINE_CHARS = 1200  # the server bounds a message at 1000 characters, plus time, level and logger


def frame(payload: dict) -> bytes:
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class StdioServer:
    def __init__(self, tmp_path: Path, debug: bool = False) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "server"), env.get("PYTHONPATH")) if p)
        env.pop("FABRIC_LSP_DEBUG", None)
        if debug:
            env["FABRIC_LSP_DEBUG"] = "1"
        self.stderr_path = tmp_path / "server-stderr.txt"
        self.process = subprocess.Popen(
            SERVER_COMMAND, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.stderr_path.open("wb"),
        )
        self.responses: dict[int, dict] = {}
        self.notifications: list[dict] = []
        self.arrived = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            message = json.loads(stream.read(length))
            if "id" in message and "method" not in message:
                with self.arrived:
                    self.responses[message["id"]] = message
                    self.arrived.notify_all()
            elif "id" in message:  # a request of the server's (workspace/configuration, ...)
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": [None]})
            else:
                with self.arrived:
                    self.notifications.append(message)

    def send(self, payload: dict) -> None:
        self.process.stdin.write(frame(payload))
        self.process.stdin.flush()

    def request(self, msg_id: int, method: str, params) -> dict:
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        deadline = time.monotonic() + TIMEOUT
        with self.arrived:
            while msg_id not in self.responses:
                left = deadline - time.monotonic()
                assert left > 0, f"no answer to {method} (id {msg_id})"
                self.arrived.wait(left)
            return self.responses[msg_id]

    def notify(self, method: str, params) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def stop(self) -> str:
        try:
            self.request(10_000, "shutdown", None)
            self.notify("exit", None)
            self.process.wait(TIMEOUT)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")


def abuse(server: StdioServer, tmp_path: Path) -> None:
    """Bad params and requests whose handlers fail, each followed by proof that the server answers."""
    source = tmp_path / "model.py"
    source.write_text(CASE.read_text())
    uri = source.as_uri()
    server.request(1, "initialize", {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}})
    server.notify("initialized", {})
    server.notify("textDocument/didOpen", {
        "textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": source.read_text()}
    })
    position = {"line": 0, "character": 0}
    huge = {"line": 2**31 - 1, "character": 2**31 - 1}
    bad_params = [
        ("textDocument/hover", {"textDocument": 5, "position": position}),
        ("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": "x\n2026-01-01 ERROR fabric_lsp.lsp: forged"}}),
        ("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": None, "context": {}}),
        ("textDocument/codeAction", [1, 2, 3]),
    ]
    failing = [  # well-typed, but naming what the server cannot serve
        ("textDocument/hover", {"textDocument": {"uri": "file:///%ZZ\x00nul"}, "position": huge}),
        ("textDocument/hover", {"textDocument": {"uri": uri}, "position": huge}),
        ("textDocument/codeAction", {
            "textDocument": {"uri": uri}, "range": {"start": huge, "end": position},
            "context": {"diagnostics": [{"range": {"start": huge, "end": huge}, "message": "x" * 100_000,
                                         "code": "FAB001", "source": "fabric-lsp", "data": {"a": [1, {"b": None}]}}]},
        }),
        ("workspace/executeCommand", {"command": "fabric-lsp.explain", "arguments": [{"x": 1}] * 3}),
    ]
    msg_id = 100
    for method, params in bad_params + failing:
        msg_id += 1
        answer = server.request(msg_id, method, params)
        assert "result" in answer or "error" in answer
        if (method, params) in bad_params:
            assert answer["error"]["code"] == -32602
    server.notify("textDocument/didChange", {"textDocument": {"uri": uri}, "contentChanges": "nope"})
    server.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 2},
        "contentChanges": [{"range": {"start": huge, "end": position}, "text": "x\n" * 10}],
    })
    server.notify("textDocument/didChange", {
        "textDocument": {"uri": "file:///never/opened.py", "version": 2}, "contentChanges": [{"text": "y"}],
    })
    hover = server.request(900, "textDocument/hover", {"textDocument": {"uri": uri}, "position": position})
    assert "result" in hover  # still serving the document


def test_bad_params_and_failing_handlers_are_one_line_each(tmp_path):
    server = StdioServer(tmp_path)
    try:
        abuse(server, tmp_path)
    finally:
        stderr = server.stop()
    assert server.process.returncode == 0
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert lines, "the bad requests left no log line"
    assert all(len(line) <= MAX_LINE_CHARS for line in lines), max(lines, key=len)[:200]
    for msg_id in (101, 102, 103, 104):  # each rejected request: exactly one line
        assert sum(f"(id {msg_id})" in line for line in lines) == 1, msg_id
    assert sum("didChange" in line and "invalid params" in line for line in lines) == 1
    # Every line is a log record (time, level, logger): no continuation line a client could forge.
    assert all(line[:4].isdigit() and " fabric_lsp" in line or " pygls" in line or " asyncio" in line
               for line in lines), lines


def test_debug_env_brings_the_traceback_back(tmp_path):
    server = StdioServer(tmp_path, debug=True)
    try:
        abuse(server, tmp_path)
    finally:
        stderr = server.stop()
    assert "invalid params" in stderr
    assert "Traceback (most recent call last)" in stderr


def test_failing_handler_is_one_line_and_answers_its_default(monkeypatch):
    """No client message is known to make a handler raise, so a handler that does is wrapped with the
    server's own `guarded` and logged through the server's stderr formatter."""
    import io
    import logging

    sys.path.insert(0, str(REPO / "server"))
    from fabric_lsp.lsp.logs import OneLineFormatter
    from fabric_lsp.lsp.server import guarded

    def hover(params):
        raise KeyError("line one\n2026-01-01 ERROR fabric_lsp.lsp: forged second line")

    for debug in (False, True):
        if debug:
            monkeypatch.setenv("FABRIC_LSP_DEBUG", "1")
        else:
            monkeypatch.delenv("FABRIC_LSP_DEBUG", raising=False)
        stream = io.StringIO()
        handler = logging.StreamHandler(stream)
        handler.setFormatter(OneLineFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger = logging.getLogger("fabric_lsp.lsp")
        logger.addHandler(handler)
        try:
            assert guarded(default="fallback")(hover)(None) == "fallback"
        finally:
            logger.removeHandler(handler)
        text = stream.getvalue()
        if debug:
            assert "Traceback (most recent call last)" in text
        else:
            [line] = text.splitlines()
            assert "hover failed: KeyError:" in line and "Traceback" not in line


ESCAPES = "\x1b]0;owned\x07\x1b[2J\u202e"


def test_control_characters_from_the_workspace_are_escaped_in_log_and_messages(tmp_path):
    """A repository's record (extend-records) and a client's params carry terminal escapes: the
    server's stderr log and its window/showMessage text show them as `\\x1b`, never raw."""
    data_dir = REPO / "server" / "fabric_lsp" / "records" / "data"
    record = json.loads(next(data_dir.glob("*.json")).read_text(encoding="utf-8"))
    record["record"]["id"] = "0123456789abcdef"
    record["record"]["documentation"] = f"Planted {ESCAPES} documentation."
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "added.json").write_text(json.dumps(record), encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text('[tool.fabric-lsp]\nextend-records = ["kb"]\n')
    server = StdioServer(tmp_path)
    try:
        server.request(1, "initialize", {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}})
        server.notify("initialized", {})
        answer = server.request(2, "workspace/executeCommand",
                                {"command": "fabric-lsp.explain", "arguments": ["0123456789abcdef"]})
        assert answer.get("result"), answer  # the record was found and explained
        bad = server.request(3, "textDocument/hover", {"textDocument": {"uri": f"file:///{ESCAPES}.py"},
                                                       "position": {"line": ESCAPES, "character": 0}})
        assert bad["error"]["code"] == -32602
    finally:
        stderr = server.stop()
    shown = [n["params"]["message"] for n in server.notifications if n.get("method") == "window/showMessage"]
    explained = [m for m in shown if "Planted" in m]
    assert explained, shown
    raw = ("\x1b", "\x07", "\u202e")
    for text in explained + [stderr]:
        assert not any(c in text for c in raw), repr(text)[:300]
    assert "\\x1b]0;owned\\x07" in explained[0]
    assert "(id 3)" in stderr
