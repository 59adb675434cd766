"""`serve --tcp`: loopback only, a token in `initialize`, anything else closed without being served.

Each test starts the real server process and talks to it over real sockets, as a web page (through
the browser) or another local user could."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SERVER_COMMAND = [sys.executable, "-m", "fabric_lsp", "serve"]
TOKEN = "a-token-only-the-editor-knows"
TIMEOUT = 30.0


def server_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "server"), env.get("PYTHONPATH")) if p)
    env.pop("FABRIC_LSP_TOKEN", None)
    env.update(extra)
    return env


def frame(payload: dict) -> bytes:
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def initialize(root: Path, options: dict | None, msg_id: int = 1) -> bytes:
    params = {"processId": None, "rootUri": root.as_uri(), "capabilities": {}}
    if options is not None:
        params["initializationOptions"] = options
    return frame({"jsonrpc": "2.0", "id": msg_id, "method": "initialize", "params": params})


def read_frame(stream) -> dict:
    length = None
    while True:
        line = stream.readline()
        if not line:
            raise AssertionError("connection closed")
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    return json.loads(stream.read(length))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class TcpServer:
    def __init__(self, tmp_path: Path) -> None:
        self.port = free_port()
        self.stderr_path = tmp_path / "server-stderr.txt"
        self.process = subprocess.Popen(
            [*SERVER_COMMAND, "--tcp", f"127.0.0.1:{self.port}"],
            env=server_env(FABRIC_LSP_TOKEN=TOKEN),
            stdout=subprocess.DEVNULL,
            stderr=self.stderr_path.open("wb"),
        )

    def connect(self, timeout: float = TIMEOUT) -> socket.socket:
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                return socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise
                time.sleep(0.1)

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


def closed_without_answer(connection: socket.socket) -> tuple[bool, float]:
    """(the server closed the connection without sending a byte, seconds it took)."""
    started = time.monotonic()
    received = b""
    try:
        while chunk := connection.recv(65536):
            received += chunk
    except (ConnectionResetError, socket.timeout):
        pass
    return received == b"", time.monotonic() - started


def serves_the_real_client(server: TcpServer, root: Path) -> None:
    """The right token still gets a full session, after whatever was refused before."""
    with server.connect() as connection, connection.makefile("rb") as stream:
        connection.sendall(initialize(root, {"token": TOKEN}))
        response = read_frame(stream)
        assert response["id"] == 1 and response["result"]["serverInfo"]["name"] == "fabric-lsp"
        connection.sendall(frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        assert read_frame(stream)["id"] == 2
        connection.sendall(frame({"jsonrpc": "2.0", "method": "exit"}))
        assert server.process.wait(TIMEOUT) == 0


def test_non_loopback_host_and_missing_token_are_refused():
    for address in ("0.0.0.0:2087", "192.0.2.7:2087", "[::]:2087", "example.com:2087"):
        completed = subprocess.run(
            [*SERVER_COMMAND, "--tcp", address, "--token", TOKEN],
            env=server_env(), capture_output=True, text=True, timeout=TIMEOUT,
        )
        assert completed.returncode == 2, address
        assert "not a loopback address" in completed.stderr
        assert len(completed.stderr.strip().splitlines()) == 1 and "Traceback" not in completed.stderr
    completed = subprocess.run(
        [*SERVER_COMMAND, "--tcp", f"127.0.0.1:{free_port()}"],
        env=server_env(), capture_output=True, text=True, timeout=TIMEOUT,
    )
    assert completed.returncode == 2
    assert "needs a token" in completed.stderr and "Traceback" not in completed.stderr


def test_http_request_and_oversized_frame_closed_without_reading_a_body(tmp_path):
    server = TcpServer(tmp_path)
    try:
        # A browser's cross-site POST: headers only, the announced body never comes. Closed at once,
        # so the server did not wait for (or parse) a body.
        with server.connect(timeout=10) as connection:
            connection.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5000\r\n\r\n")
            closed, seconds = closed_without_answer(connection)
            assert closed and seconds < 5
        # An LSP header announcing a huge body: closed before any of it is sent.
        with server.connect(timeout=10) as connection:
            connection.sendall(b"Content-Length: 900000000\r\n\r\n")
            closed, seconds = closed_without_answer(connection)
            assert closed and seconds < 5
        serves_the_real_client(server, tmp_path)
        stderr = server.stderr()
        assert "not an LSP frame" in stderr and "Traceback" not in stderr
    finally:
        server.stop()


def test_wrong_or_missing_token_closes_the_connection(tmp_path):
    server = TcpServer(tmp_path)
    try:
        refused = [
            initialize(tmp_path, None),
            initialize(tmp_path, {"token": "guess"}),
            initialize(tmp_path, {"token": TOKEN[:-1]}),
            initialize(tmp_path, {"token": 12345}),
            frame({"jsonrpc": "2.0", "id": 1, "method": "shutdown"}),  # not an initialize at all
        ]
        for message in refused:
            with server.connect(timeout=10) as connection:
                connection.sendall(message)
                closed, seconds = closed_without_answer(connection)
                assert closed and seconds < 5, message
        serves_the_real_client(server, tmp_path)
        stderr = server.stderr()
        assert stderr.count("not an initialize with the right token") == len(refused)
        assert TOKEN not in stderr and "Traceback" not in stderr
    finally:
        server.stop()


def test_silent_connection_closed_after_30_seconds(tmp_path):
    server = TcpServer(tmp_path)
    try:
        with server.connect(timeout=60) as connection:
            connection.sendall(b"Content-Len")  # starts like a frame, never finishes
            closed, seconds = closed_without_answer(connection)
            assert closed and 25 < seconds < 45, seconds
        serves_the_real_client(server, tmp_path)
        assert "within 30 s" in server.stderr()
    finally:
        server.stop()
