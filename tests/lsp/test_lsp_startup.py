"""How the server starts (issue 29, items 9 and 11): `initialize` is answered before the analysis
machinery is imported (counted in modules, not timed: the machine is shared), and `serve --tcp`
says where it listens."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time

from lspkit import SERVER_COMMAND, TIMEOUT, server_env

# Runs `fabric-lsp serve` in this process (cli.main, as the console script does), then writes the
# modules imported by then. The client sends `initialize` and `exit` only: what is imported at the
# end is what answering `initialize` needed (and `exit`, which needs nothing more).
PROBE = """
import json, sys
from fabric_lsp.cli import main
code = main(["serve"])
with open(sys.argv[1], "w") as handle:
    json.dump({"code": code, "modules": sorted(sys.modules)}, handle)
"""

# The analysis (jedi, parso, the value flow, the rules), the records' loader, matcher and renderers,
# and the report formats load on first use.
NOT_AT_INITIALIZE = re.compile(
    r"^(jedi|parso|fabric_lsp\.(analysis|engine|rules|records\.(loader|matching|render|patterns)|"
    r"report\.(text|jsonfmt|sarif|junit|github|gitlab)))(\.|$)"
)


def _frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_initialize_is_answered_before_the_analysis_is_imported(tmp_path):
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "processId": None,
            "rootUri": tmp_path.as_uri(),
            "workspaceFolders": [{"uri": tmp_path.as_uri(), "name": "w"}],
            "capabilities": {"textDocument": {"diagnostic": {}, "hover": {"contentFormat": ["markdown"]}}},
            "initializationOptions": {"select": ["FAB001"]},
        },
    }
    (tmp_path / "pyproject.toml").write_text("[tool.fabric-lsp]\nselect = ['FAB001']\n")
    modules_path = tmp_path / "modules.json"
    completed = subprocess.run(
        [sys.executable, "-c", PROBE, str(modules_path)],
        input=_frame(initialize) + _frame({"jsonrpc": "2.0", "method": "exit"}),
        capture_output=True,
        env=server_env(),
        cwd=tmp_path,
        timeout=TIMEOUT,
    )
    assert completed.returncode == 0, completed.stderr.decode(errors="replace")
    body = completed.stdout.split(b"\r\n\r\n", 1)[1]
    response = json.loads(body[: int(re.search(rb"Content-Length: (\d+)", completed.stdout)[1])])
    assert response["id"] == 1 and response["result"]["capabilities"]["hoverProvider"] is True
    report = json.loads(modules_path.read_text())
    assert report["code"] == 1  # `exit` without `shutdown`
    modules = report["modules"]
    loaded_early = [m for m in modules if NOT_AT_INITIALIZE.match(m)]
    assert loaded_early == []
    # Before issue 29: 82 fabric_lsp modules and 379 in all (jedi and parso not yet, the analysis
    # and every record and report module already); now 45 and 309.
    ours = [m for m in modules if m == "fabric_lsp" or m.startswith("fabric_lsp.")]
    assert len(ours) <= 55, ours


def test_serve_tcp_says_where_it_listens(tmp_path):
    stderr_path = tmp_path / "stderr.txt"
    process = subprocess.Popen(
        [*SERVER_COMMAND, "--tcp", "127.0.0.1:0"],
        env=server_env(FABRIC_LSP_TOKEN="s3cret-for-this-test-only"),
        stdout=subprocess.DEVNULL,
        stderr=stderr_path.open("wb"),
    )
    try:
        deadline = time.monotonic() + TIMEOUT
        while "listening on" not in stderr_path.read_text() and time.monotonic() < deadline:
            assert process.poll() is None, stderr_path.read_text()
            time.sleep(0.05)
        line = next(l for l in stderr_path.read_text().splitlines() if "listening on" in l)
        match = re.fullmatch(r"fabric-lsp: serve: listening on 127\.0\.0\.1:(\d+)", line)
        assert match and int(match[1]) > 0, line
        with socket.create_connection(("127.0.0.1", int(match[1])), timeout=TIMEOUT):
            pass  # the port printed is the one listening
    finally:
        process.kill()
        process.wait()
