"""`fabric-lsp serve` accepts what language clients append (issue 14).

vscode-languageclient appends `--stdio` to an Executable started with TransportKind.stdio (that is
how the VS Code setting `fabric-lsp.path` runs the server), `--pipe=NAME` / `--socket=PORT` for its
other transports and `--clientProcessId=N` for Node modules (node_modules/vscode-languageclient/lib/
node/main.js). `--stdio` serves; the transports the server does not offer fail in one line, exit 2.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TIMEOUT = 60.0

SOURCE = '''\
import torch.nn as nn
from lightning.fabric import Fabric


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 4)

    def generate(self, x):
        return self.head(x)


fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp"); fabric.launch()
model = fabric.setup(LM())
model.generate(None)
'''


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "server"), env.get("PYTHONPATH")) if p)
    return env


def _command() -> list[str]:
    """The installed console script when there is one (what `fabric-lsp.path` names), else -m."""
    script = Path(sys.executable).with_name("fabric-lsp")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "fabric_lsp"]


def _frame(payload: dict) -> bytes:
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read_frame(stream) -> dict:
    length = None
    while True:
        line = stream.readline()
        if not line:
            raise AssertionError("the server closed stdout")
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    assert length is not None
    return json.loads(stream.read(length))


@pytest.mark.parametrize("extra", [["--stdio"], ["--stdio", "--clientProcessId=%d" % os.getpid()],
                                   ["--clientProcessId", str(os.getpid()), "--stdio"]],
                         ids=["stdio", "stdio-client-pid", "client-pid-stdio"])
def test_serve_stdio_speaks_lsp(tmp_path, extra):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    script = tmp_path / "train.py"
    script.write_text(SOURCE)
    uri = script.as_uri()
    server = subprocess.Popen([*_command(), "serve", *extra], cwd=tmp_path, env=_env(), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        send = lambda payload: (server.stdin.write(_frame(payload)), server.stdin.flush())  # noqa: E731
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"processId": os.getpid(), "rootUri": tmp_path.as_uri(), "capabilities": {}}})
        answer = _read_frame(server.stdout)
        assert answer["id"] == 1 and "capabilities" in answer["result"], answer
        assert answer["result"]["serverInfo"]["name"] == "fabric-lsp"
        send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": SOURCE}}})
        deadline = time.monotonic() + TIMEOUT
        diagnostics = None
        while time.monotonic() < deadline:
            message = _read_frame(server.stdout)
            if message.get("method") == "textDocument/publishDiagnostics" and message["params"]["uri"] == uri:
                diagnostics = message["params"]["diagnostics"]
                if diagnostics:
                    break
        assert diagnostics, "no diagnostics published"
        assert [d["code"] for d in diagnostics] == ["FAB001"]
        assert diagnostics[0]["range"]["start"] == {"line": 15, "character": 6}
        send({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
        while _read_frame(server.stdout).get("id") != 2:
            pass
        send({"jsonrpc": "2.0", "method": "exit"})
        assert server.wait(TIMEOUT) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (["--pipe=/tmp/vscode-lsp-1234.sock"], "serve --pipe: named pipes not supported"),
        (["--pipe", "/tmp/vscode-lsp-1234.sock"], "serve --pipe: named pipes not supported"),
        (["--socket=6009"], "serve --socket: connecting to a socket the client listens on not supported"),
        (["--socket", "6009"], "serve --socket: connecting to a socket the client listens on not supported"),
        (["--node-ipc", "--clientProcessId=1"], "serve --node-ipc: Node IPC not supported"),
        (["--clientProcessId=abc"], "serve --clientProcessId: expected a process id"),
        (["--stdio", "--tcp", "127.0.0.1:6009"], "serve: --stdio and --tcp exclude each other"),
    ],
)
def test_unsupported_transports_fail_in_one_line(tmp_path, arguments, expected):
    result = subprocess.run([*_command(), "serve", *arguments], cwd=tmp_path, env=_env(), stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, timeout=TIMEOUT)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("fabric-lsp: error: " + expected), lines[0]
    if "not supported" in expected:
        assert "use stdio (the default, or --stdio)" in lines[0]


def test_console_script_is_the_installed_one():
    """The workbench test points `fabric-lsp.path` at this script: it must exist in the test venv."""
    assert shutil.which("fabric-lsp", path=str(Path(sys.executable).parent)), "pip install -e . first"
