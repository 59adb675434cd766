"""The server process: commands, tracing, exit when the editor is gone, TCP, what it imports."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time

from lspkit import (
    CASES,
    REPO,
    SERVER_COMMAND,
    TIMEOUT,
    capabilities,
    copy_case,
    diagnostics,
    make_client,
    open_doc,
    replace_text,
    server_env,
    session,
    wait_until,
)
from lsprotocol import types
from pytest_lsp import ClientServerConfig

RUNTIME_MESSAGE = (
    "RuntimeError: You are calling the method `TinyLM.generate()` from outside the model. To avoid issues "
    "with the currently selected strategy, explicitly mark it as a forward method with "
    "`fabric_model.mark_forward_method('generate')` after `fabric.setup()`."
)


async def execute(client, command: str, *arguments):
    return await asyncio.wait_for(
        client.workspace_execute_command_async(types.ExecuteCommandParams(command=command, arguments=list(arguments))),
        TIMEOUT,
    )


async def test_explain_and_recheck_commands(tmp_path):
    path = copy_case("fab001_generate_ddp_literal.py", tmp_path)
    async with session(capabilities("visual-studio-code"), [tmp_path]) as (client, init):
        assert set(init.capabilities.execute_command_provider.commands) == {"fabric-lsp.explain", "fabric-lsp.recheck"}

        by_code = await execute(client, "fabric-lsp.explain", "FAB003")
        assert by_code["code"] == "FAB003" and by_code["record"] == "ce209f7f268e625f"
        assert by_code["markdown"].startswith("### FAB003 mark-forward-method-bound\n")
        assert by_code["plaintext"].startswith("FAB003 mark-forward-method-bound\n")
        await wait_until(lambda: client.messages, message="window/showMessage")
        assert client.messages[0].type == types.MessageType.Info
        assert client.messages[0].message == by_code["plaintext"]

        # A pasted runtime error: matched to its record, with the names recovered from it.
        by_message = await execute(
            client, "fabric-lsp.explain", f"Traceback (most recent call last):\n  ...\n{RUNTIME_MESSAGE}"
        )
        assert by_message["code"] == "FAB001"
        assert by_message["context"] == {"class": "TinyLM", "method": "generate"}
        assert RUNTIME_MESSAGE in by_message["markdown"]

        assert await execute(client, "fabric-lsp.explain", "ValueError: something else entirely") is None
        await wait_until(lambda: len(client.messages) == 3, message="a third window/showMessage")
        assert client.messages[2].type == types.MessageType.Warning
        assert "no rule or record matches" in client.messages[2].message

        uri = open_doc(client, path)
        await diagnostics(client, uri, version=1)
        published = len(client.published)
        assert await execute(client, "fabric-lsp.recheck") == {"rechecked": 1, "findings": 1}
        republished = [p for p in client.published[published:] if p.uri == uri]
        assert [d.code for d in republished[0].diagnostics] == ["FAB001"]


async def test_set_trace_sends_log_trace(tmp_path):
    path = copy_case("fab001_generate_ddp_literal.py", tmp_path)
    async with session(capabilities("neovim"), [tmp_path]) as (client, _):
        uri = open_doc(client, path)
        await diagnostics(client, uri, version=1)
        assert client.traces == []  # tracing is off until the client asks
        client.protocol.notify(types.SET_TRACE, types.SetTraceParams(value=types.TraceValue.Verbose))
        replace_text(client, uri, 2, path.read_text() + "\n")
        await diagnostics(client, uri, version=2)
        traces = await wait_until(
            lambda: [t for t in client.traces if "version 2 analysed" in t.message], message="$/logTrace"
        )
    assert "1 finding(s)" in traces[0].message


async def test_server_exits_when_the_editor_process_is_gone(tmp_path):
    editor = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    config = ClientServerConfig(server_command=SERVER_COMMAND, server_env=server_env(), client_factory=make_client)
    client = await config.start()
    server = client._server
    try:
        params = types.InitializeParams(
            capabilities=capabilities("neovim"), process_id=editor.pid, root_uri=tmp_path.as_uri()
        )
        await asyncio.wait_for(client.initialize_session(params), TIMEOUT)
        await asyncio.sleep(0.5)
        assert server.returncode is None  # alive while the editor is
        editor.kill()
        editor.wait()
        await asyncio.wait_for(server.wait(), 10)  # a hang guard only: it ends by itself, untimed
    finally:
        if editor.poll() is None:
            editor.kill()
        if server.returncode is None:
            server.kill()
        await client.stop()


def _message(payload: dict) -> bytes:
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read_message(stream) -> dict:
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


def test_tcp_transport(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    stderr_path = tmp_path / "stderr.txt"
    process = subprocess.Popen(
        [*SERVER_COMMAND, "--tcp", f"127.0.0.1:{port}"],
        env=server_env(FABRIC_LSP_TOKEN="s3cret-for-this-test-only"),
        stderr=stderr_path.open("wb"),
    )
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                connection = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise
                time.sleep(0.1)
        with connection, connection.makefile("rb") as stream:
            connection.sendall(
                _message(
                    {
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "initialize",
                        "params": {
                            "processId": None,
                            "rootUri": tmp_path.as_uri(),
                            "capabilities": {},
                            "initializationOptions": {"token": "s3cret-for-this-test-only"},
                        },
                    }
                )
            )
            response = _read_message(stream)
            assert response["id"] == 1
            capabilities_ = response["result"]["capabilities"]
            assert capabilities_["hoverProvider"] is True
            assert capabilities_["positionEncoding"] == "utf-16"
            assert response["result"]["serverInfo"]["name"] == "fabric-lsp"
            connection.sendall(_message({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
            assert _read_message(stream) == {"jsonrpc": "2.0", "id": 2, "result": None}
            connection.sendall(_message({"jsonrpc": "2.0", "method": "exit"}))
            assert process.wait(TIMEOUT) == 0
        assert "Traceback" not in stderr_path.read_text(encoding="utf-8", errors="replace")
    finally:
        process.kill()
        process.wait()


def test_serve_rejects_a_bad_tcp_address():
    completed = subprocess.run(
        [*SERVER_COMMAND, "--tcp", "no-port-here", "--token", "t"], env=server_env(), capture_output=True, text=True, timeout=TIMEOUT
    )
    assert completed.returncode == 2
    assert "--tcp: expected HOST:PORT" in completed.stderr


def test_server_and_engine_never_import_torch_or_lightning():
    # The same import graph as a running server, plus a full analysis of a Lightning program.
    script = (
        "import sys\n"
        "from fabric_lsp.lsp.server import create_server\n"
        "from fabric_lsp.settings.config import Config\n"
        "from fabric_lsp.engine import check_source\n"
        "create_server()\n"
        f"path = {str(CASES / 'fab002_block_in_other_module' / 'main.py')!r}\n"
        "findings = check_source(path, open(path).read(), Config())\n"
        "assert [f.code for f in findings] == ['FAB002'], findings\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'lightning', 'lightning_fabric')))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script], env=server_env(), capture_output=True, text=True, timeout=TIMEOUT, cwd=REPO
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "[]"
