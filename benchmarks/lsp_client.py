"""A small LSP client over stdio for the benchmarks: JSON-RPC framing, a reader thread that stamps
each message with its arrival time, answers to the server's requests, and waiting for the
`publishDiagnostics` of a given document version.

Own code instead of pygls' client so that the timing path is short and visible: the latency of an
edit is (arrival time of the matching publishDiagnostics) - (time just before didChange is written).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any


def path_to_uri(path: str | os.PathLike) -> str:
    return Path(os.path.abspath(path)).as_uri()


class ServerProcess:
    def __init__(self, command: list[str], cwd: str, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            command, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self._next_id = 0
        self._write_lock = threading.Lock()
        self._responses: dict[int, "queue.Queue[dict]"] = {}
        self._responses_lock = threading.Lock()
        self._diagnostics = threading.Condition()
        self.published: list[tuple[float, dict]] = []  # (arrival time, params)
        self.stderr_lines: list[str] = []
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()
        self._stderr_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_reader.start()

    @property
    def pid(self) -> int:
        return self.process.pid

    # -- wire --------------------------------------------------------------------------------
    def _send(self, message: dict) -> None:
        body = json.dumps(message, separators=(",", ":")).encode("utf-8")
        with self._write_lock:
            self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.process.stdin.flush()

    def _read_loop(self) -> None:
        stream = self.process.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    self._wake_all()
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            if length is None:
                continue
            body = stream.read(length)
            arrived = time.perf_counter()
            try:
                message = json.loads(body)
            except ValueError:
                continue
            self._dispatch(message, arrived)

    def _read_stderr(self) -> None:
        for raw in self.process.stderr:
            self.stderr_lines.append(raw.decode("utf-8", "replace").rstrip())
            del self.stderr_lines[:-200]

    def _wake_all(self) -> None:
        with self._diagnostics:
            self._diagnostics.notify_all()
        with self._responses_lock:
            for waiter in self._responses.values():
                waiter.put({"error": {"message": "server exited"}})

    def _dispatch(self, message: dict, arrived: float) -> None:
        if "method" in message and "id" in message:  # a request from the server
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": self._answer(message)})
            return
        if "method" in message:
            if message["method"] == "textDocument/publishDiagnostics":
                with self._diagnostics:
                    self.published.append((arrived, message["params"]))
                    self._diagnostics.notify_all()
            return
        with self._responses_lock:
            waiter = self._responses.get(message.get("id"))
        if waiter is not None:
            waiter.put(message)

    @staticmethod
    def _answer(message: dict) -> Any:
        if message["method"] == "workspace/configuration":
            return [None for _ in message.get("params", {}).get("items", [])]
        return None

    # -- API ---------------------------------------------------------------------------------
    def request(self, method: str, params: Any, timeout: float = 120.0) -> Any:
        self._next_id += 1
        request_id = self._next_id
        waiter: "queue.Queue[dict]" = queue.Queue()
        with self._responses_lock:
            self._responses[request_id] = waiter
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        try:
            response = waiter.get(timeout=timeout)
        finally:
            with self._responses_lock:
                self._responses.pop(request_id, None)
        if "error" in response:
            raise RuntimeError(f"{method}: {response['error']}")
        return response.get("result")

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait_for_diagnostics(self, uri: str, version: int | None, timeout: float = 120.0, after: int = 0) -> tuple[float, dict]:
        """The first publishDiagnostics for `uri` at `version` (any version if None) among the
        messages from index `after` on; returns (arrival time, params)."""
        deadline = time.monotonic() + timeout
        with self._diagnostics:
            index = after
            while True:
                while index < len(self.published):
                    arrived, params = self.published[index]
                    index += 1
                    if params.get("uri") == uri and (version is None or params.get("version") == version):
                        return arrived, params
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.process.poll() is not None:
                    tail = "\n".join(self.stderr_lines[-20:])
                    raise TimeoutError(f"no diagnostics for {uri} version {version}; server stderr:\n{tail}")
                self._diagnostics.wait(remaining)

    def published_count(self) -> int:
        with self._diagnostics:
            return len(self.published)

    def initialize(self, root: str, options: dict | None = None) -> dict:
        result = self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": path_to_uri(root),
                "workspaceFolders": [{"uri": path_to_uri(root), "name": os.path.basename(root)}],
                "capabilities": {
                    "general": {"positionEncodings": ["utf-16"]},
                    "textDocument": {
                        "synchronization": {"didSave": True},
                        "publishDiagnostics": {"versionSupport": True, "relatedInformation": True},
                    },
                    "workspace": {"configuration": True, "workspaceFolders": True},
                },
                "initializationOptions": options or {},
            },
        )
        self.notify("initialized", {})
        return result

    def did_open(self, path: str, text: str, version: int = 1) -> str:
        uri = path_to_uri(path)
        self.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "python", "version": version, "text": text}},
        )
        return uri

    def did_change(self, uri: str, version: int, start: tuple[int, int], end: tuple[int, int], text: str) -> None:
        self.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [
                    {
                        "range": {
                            "start": {"line": start[0], "character": start[1]},
                            "end": {"line": end[0], "character": end[1]},
                        },
                        "text": text,
                    }
                ],
            },
        )

    def rss_bytes(self) -> int:
        with open(f"/proc/{self.pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def shutdown(self) -> None:
        try:
            self.request("shutdown", None, timeout=10)
            self.notify("exit", None)
            self.process.wait(timeout=10)
        except Exception:
            self.process.kill()
            self.process.wait()
