"""`serve --tcp`: loopback only, a token in `initialize`, anything else closed without being served.

Each test starts the real server process and talks to it over real sockets, as a web page (through
the browser) or another local user could."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SERVER_COMMAND = [sys.executable, "-m", "fabric_lsp", "serve"]
TOKEN = "a-token-only-the-editor-knows"
TIMEOUT = 30.0
# The server with a shorter wait for the token (lsp/session.AUTH_TIMEOUT_SECONDS, read when a connection
# opens), so the idle-connection test does not sit through the shipped 30 s; that default has its own test.
SHORT_AUTH_SERVER = (
    "import runpy, sys\n"
    "import fabric_lsp.lsp.session as session\n"
    "session.AUTH_TIMEOUT_SECONDS = float(sys.argv.pop(1))\n"
    "runpy.run_module('fabric_lsp', run_name='__main__', alter_sys=True)\n"
)


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
    def __init__(self, tmp_path: Path, token: str | None = TOKEN, auth_timeout: float | None = None) -> None:
        self.port = free_port()
        self.stderr_path = tmp_path / "server-stderr.txt"
        command = SERVER_COMMAND
        if auth_timeout is not None:
            command = [sys.executable, "-c", SHORT_AUTH_SERVER, f"{auth_timeout:g}", "serve"]
        self.process = subprocess.Popen(
            [*command, "--tcp", f"127.0.0.1:{self.port}"],
            env=server_env(**({"FABRIC_LSP_TOKEN": token} if token is not None else {})),
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


def closed_without_answer(connection: socket.socket) -> bool:
    """The server closed the connection without sending a byte. Not timed: the socket's timeout is
    only a hang guard, and a connection still open when it runs out was not closed (False)."""
    received = b""
    try:
        while chunk := connection.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    except socket.timeout:
        return False
    return received == b""


def serves_the_real_client(server: TcpServer, root: Path, token: str = TOKEN) -> None:
    """The right token still gets a full session, after whatever was refused before."""
    with server.connect() as connection, connection.makefile("rb") as stream:
        connection.sendall(initialize(root, {"token": token}))
        response = read_frame(stream)
        assert response["id"] == 1 and response["result"]["serverInfo"]["name"] == "fabric-lsp"
        connection.sendall(frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        assert read_frame(stream)["id"] == 2
        connection.sendall(frame({"jsonrpc": "2.0", "method": "exit"}))
        assert server.process.wait(TIMEOUT) == 0


def test_non_loopback_host_is_refused():
    for address in ("0.0.0.0:2087", "192.0.2.7:2087", "[::]:2087", "example.com:2087"):
        completed = subprocess.run(
            [*SERVER_COMMAND, "--tcp", address, "--token", TOKEN],
            env=server_env(), capture_output=True, text=True, timeout=TIMEOUT,
        )
        assert completed.returncode == 2, address
        assert "not a loopback address" in completed.stderr
        assert len(completed.stderr.strip().splitlines()) == 1 and "Traceback" not in completed.stderr


def test_http_request_and_oversized_frame_closed_without_reading_a_body(tmp_path):
    server = TcpServer(tmp_path)
    try:
        # A browser's cross-site POST: headers only, the announced body never comes. Closed, and for
        # its header ("not an LSP frame" below, not the 30 s wait for a token): the server did not
        # wait for (or parse) a body.
        with server.connect(timeout=10) as connection:
            connection.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5000\r\n\r\n")
            assert closed_without_answer(connection)
        # An LSP header announcing a huge body: closed before any of it is sent.
        with server.connect(timeout=10) as connection:
            connection.sendall(b"Content-Length: 900000000\r\n\r\n")
            assert closed_without_answer(connection)
        serves_the_real_client(server, tmp_path)
        stderr = server.stderr()
        assert stderr.count("closed: not an LSP frame") == 2 and "within" not in stderr, stderr
        assert "Traceback" not in stderr
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
                assert closed_without_answer(connection), message
        serves_the_real_client(server, tmp_path)
        stderr = server.stderr()
        assert stderr.count("not an initialize with the right token") == len(refused)
        assert TOKEN not in stderr and "Traceback" not in stderr
    finally:
        server.stop()


def test_silent_connection_closed_after_the_auth_timeout(tmp_path):
    # The server's 30 s made 3 s here (SHORT_AUTH_SERVER); a server that never closes it leaves the
    # client's 20 s socket timeout (a hang guard) to end the wait, and fails. The server's reason
    # says the auth timeout closed it, not how long that took.
    server = TcpServer(tmp_path, auth_timeout=3)
    try:
        with server.connect(timeout=20) as connection:
            connection.sendall(b"Content-Len")  # starts like a frame, never finishes
            assert closed_without_answer(connection)
        serves_the_real_client(server, tmp_path)
        stderr = server.stderr()
        assert stderr.count("closed: no initialize with the token within 3 s") == 1, stderr
    finally:
        server.stop()


def test_shipped_auth_timeout_is_30_seconds():
    from fabric_lsp.lsp import session

    assert session.AUTH_TIMEOUT_SECONDS == 30.0


# -- issue 24, item 14: the token is strong, and guessing it is slow ------------------------------------

WEAK_TOKENS = {
    "1234": "4 decimal digits are about 13 bits",  # brute-forced in 4-5 s before
    "s3cret-for-this-test": "20 base64 characters are about 120 bits",
    "0123456789abcdef0123456789abcde": "31 hexadecimal digits are about 124 bits",
    "0" * 40: "1 different characters",
    "": "empty",
}


@pytest.mark.parametrize("token", sorted(WEAK_TOKENS), ids=lambda token: token[:8] or "empty")
def test_weak_tokens_are_refused(token):
    for arguments, env, source in ((["--token", token], server_env(), "--token"),
                                   ([], server_env(FABRIC_LSP_TOKEN=token), "FABRIC_LSP_TOKEN")):
        if source == "FABRIC_LSP_TOKEN" and not token:
            continue  # an empty variable is unset: a token is generated (test_generated_token_...)
        completed = subprocess.run([*SERVER_COMMAND, "--tcp", f"127.0.0.1:{free_port()}", *arguments],
                                   env=env, capture_output=True, text=True, timeout=TIMEOUT)
        assert completed.returncode == 2, completed.stderr
        lines = completed.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"fabric-lsp: error: {source}: "), lines
        assert WEAK_TOKENS[token] in lines[0] and "Traceback" not in completed.stderr


def test_generated_token_is_printed_and_serves_the_client(tmp_path):
    """No --token and no FABRIC_LSP_TOKEN: a random 256-bit token, printed on stderr for the client."""
    server = TcpServer(tmp_path, token=None)
    try:
        deadline = time.monotonic() + TIMEOUT
        while "initializationOptions.token" not in server.stderr() and time.monotonic() < deadline:
            time.sleep(0.05)
        line = next(line for line in server.stderr().splitlines() if "initializationOptions.token" in line)
        token = line.rsplit(": ", 1)[1]
        assert len(token) >= 43 and re.fullmatch(r"[A-Za-z0-9_-]+", token), line
        serves_the_real_client(server, tmp_path, token)
    finally:
        server.stop()


def guesses_answered(server: TcpServer, threads: int, seconds: float) -> int:
    """Wrong tokens sent by `threads` guessers, one connection each, for `seconds`: how many were
    answered (the connection closed by the server) within that time. Unanswered ones are closed."""
    answered = []
    stop = time.monotonic() + seconds

    def guesser(number: int) -> None:
        attempt = 0
        while time.monotonic() < stop:
            with server.connect(timeout=10) as connection:
                connection.settimeout(max(stop - time.monotonic(), 0.01))
                connection.sendall(initialize(REPO, {"token": f"guess-{number}-{attempt:06d}"}))
                try:
                    if connection.recv(1) == b"":
                        answered.append(time.monotonic())
                except (socket.timeout, ConnectionResetError):
                    pass
            attempt += 1

    workers = [threading.Thread(target=guesser, args=(number,)) for number in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return sum(1 for when in answered if when <= stop)


def test_guessing_is_throttled_across_connections(tmp_path):
    """Before: about 900 wrong tokens a second on one connection after another (2,700 in 3 s), 1,300
    a second with 8 guessers. Now the n-th failure in a row delays the next check by 0.1 * 2**(n-1)
    s (at most 2 s), whatever connection it comes on: about 5 answers in 3 s. The real client still
    gets in once the guessers stop (a wait of at most the 2 s cap)."""
    server = TcpServer(tmp_path)
    try:
        server.connect().close()  # listening (an empty connection is not a guess): the clock starts now
        sequential = guesses_answered(server, threads=1, seconds=3.0)
        assert 1 <= sequential <= 8, sequential
        parallel = guesses_answered(server, threads=8, seconds=3.0)  # new connections do not reset it
        print(f"wrong tokens answered: {sequential} in 3 s one after another, then {parallel} in 3 s by 8 guessers")
        assert parallel <= 4, parallel  # at the 2 s cap by now
        serves_the_real_client(server, tmp_path)  # its timeouts are only hang guards
        stderr = server.stderr()
        # The wait the real client met is at most the cap: no check was delayed longer than 2 s.
        waits = [float(wait) for wait in re.findall(r"the next check waits ([\d.]+) s", stderr)]
        assert waits and max(waits) == 2, waits
        assert "Traceback" not in stderr
    finally:
        server.stop()
