"""A raw LSP client over the server's stdio, for robustness tests.

Deliberately independent of pygls/pytest-lsp: it can send malformed bytes, floods without waiting,
and sees every message the server writes. Requests from the server (workspace/configuration,
client/registerCapability, ...) are answered automatically (configuration: null for each item,
i.e. "not set"; everything else: a null result).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

from robustness_support import SERVER_DIR


def server_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SERVER_DIR)
    env.pop("VIRTUAL_ENV", None)
    env.pop("FABRIC_LSP_TEST_ANALYSIS_DELAY", None)
    env.update(extra)
    return env


def frame(payload: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(payload) + payload


class RawServer:
    def __init__(self, cwd: Path, *, env: dict[str, str] | None = None, argv: list[str] | None = None,
                 stderr_path: Path | None = None, preexec_fn=None) -> None:
        self.stderr_path = stderr_path or Path(cwd) / ".server-stderr.txt"
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(
            argv or [sys.executable, "-m", "fabric_lsp", "serve"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
            cwd=str(cwd), env=env or server_env(), preexec_fn=preexec_fn,
        )
        self.messages: list[dict[str, Any]] = []
        self.garbage: list[bytes] = []  # output that is not a well-formed LSP message
        self._cond = threading.Condition()
        self._write_lock = threading.Lock()
        self._next_id = 0
        self.closed = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    # -- output ---------------------------------------------------------------------------------
    def _read(self) -> None:
        stream = self.proc.stdout
        try:
            while True:
                headers = {}
                while True:
                    line = stream.readline()
                    if not line:
                        return
                    if line in (b"\r\n", b"\n"):
                        break
                    name, _, value = line.decode("ascii", "replace").partition(":")
                    headers[name.strip().lower()] = value.strip()
                if "content-length" not in headers:
                    self.garbage.append(b"headers without Content-Length: %r" % headers)
                    continue
                body = stream.read(int(headers["content-length"]))
                try:
                    message = json.loads(body)
                except ValueError:
                    self.garbage.append(body)
                    continue
                if "method" in message and "id" in message:
                    self._answer(message)
                with self._cond:
                    self.messages.append(message)
                    self._cond.notify_all()
        finally:
            with self._cond:
                self.closed = True
                self._cond.notify_all()

    def _answer(self, request: dict[str, Any]) -> None:
        result: Any = None
        if request["method"] == "workspace/configuration":
            result = [None for _ in request.get("params", {}).get("items", [])]
        try:
            self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})
        except OSError:
            pass

    def wait_for(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 30.0, start: int = 0):
        """The first message (from index `start`) matching predicate; AssertionError on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for message in self.messages[start:]:
                    if predicate(message):
                        return message
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.closed:
                    for message in self.messages[start:]:  # one last look after close
                        if predicate(message):
                            return message
                    last = [(m.get("method"), m.get("id"), str(m.get("error") or m.get("params", ""))[:120])
                            for m in self.messages[-4:]]
                    raise AssertionError(
                        f"no matching message within {timeout} s (closed={self.closed}); "
                        f"last (method, id, detail): {last!r}; stderr tail: {self.stderr_tail(600)}"
                    )
                self._cond.wait(min(remaining, 0.5))

    def response(self, request_id: int, timeout: float = 30.0) -> dict[str, Any]:
        return self.wait_for(lambda m: m.get("id") == request_id and "method" not in m, timeout)

    def diagnostics(self, uri: str, start: int = 0, timeout: float = 30.0, version: int | None = None):
        def matches(m):
            if m.get("method") != "textDocument/publishDiagnostics" or m["params"]["uri"] != uri:
                return False
            return version is None or m["params"].get("version") == version
        return self.wait_for(matches, timeout, start)["params"]

    def last_diagnostics(self, uri: str):
        with self._cond:
            published = [m for m in self.messages if m.get("method") == "textDocument/publishDiagnostics"
                         and m["params"]["uri"] == uri]
        return published[-1]["params"] if published else None

    def stderr_tail(self, chars: int = 3000) -> str:
        try:
            self._stderr.flush()
            return self.stderr_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    # -- input ----------------------------------------------------------------------------------
    def send_bytes(self, data: bytes) -> None:
        with self._write_lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_bytes(frame(json.dumps(message).encode("utf-8")))

    def request(self, method: str, params: Any = None) -> int:
        with self._write_lock:
            self._next_id += 1
            request_id = self._next_id
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return request_id

    def notify(self, method: str, params: Any = None) -> None:
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def call(self, method: str, params: Any = None, timeout: float = 30.0) -> dict[str, Any]:
        return self.response(self.request(method, params), timeout)

    # -- session --------------------------------------------------------------------------------
    def initialize(self, root: Path, options: dict[str, Any] | None = None, capabilities=None,
                   process_id: int | None = None) -> dict[str, Any]:
        reply = self.call("initialize", {
            "processId": process_id if process_id is not None else os.getpid(),
            "rootUri": Path(root).as_uri(),
            "workspaceFolders": [{"uri": Path(root).as_uri(), "name": Path(root).name}],
            "capabilities": capabilities if capabilities is not None else {
                "textDocument": {"publishDiagnostics": {"versionSupport": True}},
                "workspace": {"configuration": True},
            },
            "initializationOptions": options or {},
        }, timeout=60)
        assert "result" in reply, reply
        self.notify("initialized", {})
        return reply["result"]

    def open(self, path: Path, text: str | None = None, version: int = 1) -> str:
        uri = Path(path).as_uri()
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": version,
            "text": Path(path).read_text(encoding="utf-8") if text is None else text,
        }})
        return uri

    def shutdown_and_exit(self, timeout: float = 30.0) -> int:
        if self.proc.poll() is None:
            reply = self.call("shutdown", None, timeout)
            assert "error" not in reply, reply
            self.notify("exit")
        try:
            return self.proc.wait(timeout)
        finally:
            self.close()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        self._stderr.close()

    def rss_mb(self) -> float | None:
        """Current resident memory of the server process (Linux /proc)."""
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            return None
        return None

    def peak_rss_mb(self) -> float | None:
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            return None
        return None
