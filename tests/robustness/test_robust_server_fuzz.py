"""Fuzz target for the server's message handling: hypothesis generates JSON-RPC payloads (LSP
methods with plausible-but-mangled params, arbitrary JSON, raw bytes) and sends them to one live
server. After every example the server must still answer a well-formed request, never write
anything but well-formed LSP to stdout, and at the end publish the right diagnostics for the
document's real text with bounded memory.

Bounded: FABRIC_LSP_FUZZ_PAYLOADS examples (default 400, a few seconds); raise it for a longer run.
Every request gets a response (an error for most of them: test_robust_server.py checks the codes).
"""

from __future__ import annotations

import json
import os
import shutil
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robustness_support import CASES_DIR, record_figure
from rpc_client import RawServer, frame, server_env

CASE = CASES_DIR / "fab001_generate_ddp_literal.py"
PAYLOADS = int(os.environ.get("FABRIC_LSP_FUZZ_PAYLOADS", "400"))

METHODS = [
    "textDocument/hover", "textDocument/codeAction", "textDocument/didOpen", "textDocument/didChange",
    "textDocument/didClose", "textDocument/didSave", "textDocument/diagnostic", "workspace/diagnostic",
    "workspace/executeCommand", "workspace/didChangeConfiguration", "workspace/didChangeWatchedFiles",
    "workspace/didChangeWorkspaceFolders", "codeAction/resolve", "$/cancelRequest", "$/setTrace",
    "$/progress", "window/workDoneProgress/cancel", "textDocument/completion", "textDocument/formatting",
    "initialized", "fabric-lsp/unknown",
]

json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**63), st.floats(allow_nan=False),
    st.text(max_size=30), st.sampled_from(["file:///", "untitled:x", "file:///etc/passwd", "python", "\x00", "𝔘"]),
)
json_value = st.recursive(json_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)), max_leaves=20)
position = st.fixed_dictionaries({"line": st.one_of(st.integers(-5, 60), st.integers(0, 2**31)),
                                  "character": st.one_of(st.integers(-5, 120), st.integers(0, 2**31))})


def plausible_params(uri: str):
    document = st.fixed_dictionaries({"uri": st.one_of(st.just(uri), st.text(max_size=20)),
                                      "version": st.integers(-3, 10**6), "languageId": st.just("python"),
                                      "text": st.text(max_size=200)})
    a_range = st.fixed_dictionaries({"start": position, "end": position})
    return st.one_of(
        st.fixed_dictionaries({"textDocument": document, "position": position}),
        st.fixed_dictionaries({"textDocument": document, "range": a_range,
                               "context": st.fixed_dictionaries({"diagnostics": st.lists(json_value, max_size=2)})}),
        st.fixed_dictionaries({"textDocument": document, "contentChanges": st.lists(
            st.one_of(st.fixed_dictionaries({"range": a_range, "text": st.text(max_size=40)}),
                      st.fixed_dictionaries({"text": st.text(max_size=200)})), max_size=4)}),
        st.fixed_dictionaries({"command": st.sampled_from(["fabric-lsp.explain", "fabric-lsp.fixAll", "x"]),
                               "arguments": st.lists(json_value, max_size=3)}),
        st.fixed_dictionaries({"settings": json_value}),
        st.fixed_dictionaries({"changes": st.lists(st.fixed_dictionaries(
            {"uri": st.text(max_size=30), "type": st.integers(-1, 5)}), max_size=3)}),
        json_value,
    )


def payloads(uri: str):
    message = st.fixed_dictionaries({
        "jsonrpc": st.sampled_from(["2.0", "2.0", "2.0", "1.0"]),
        "method": st.one_of(st.sampled_from(METHODS), st.text(max_size=20)),
        "params": plausible_params(uri),
    })
    with_id = st.tuples(message, st.one_of(st.integers(10_000, 2**31), st.text(min_size=1, max_size=8)))
    return st.one_of(
        message.map(lambda m: ("notification", json.dumps(m).encode())),
        with_id.map(lambda pair: ("request", json.dumps({**pair[0], "id": pair[1]}).encode())),
        json_value.map(lambda v: ("json", json.dumps(v).encode())),
        st.binary(max_size=60).map(lambda b: ("bytes", b)),
    )


def test_fuzzed_json_rpc_payloads_never_take_the_server_down(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(CASE, project / "main.py")
    original = (project / "main.py").read_text(encoding="utf-8")
    server = RawServer(project, env=server_env(), stderr_path=tmp_path / "stderr.txt")
    counts = {"payloads": 0, "requests": 0}
    request_ids = []
    try:
        server.initialize(project)
        uri = server.open(project / "main.py")
        expected = server.diagnostics(uri, timeout=60)["diagnostics"]
        assert expected
        started = time.perf_counter()

        @settings(max_examples=PAYLOADS, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
        @given(st.lists(payloads(uri), min_size=1, max_size=5))
        def batch(items):
            for kind, body in items:
                server.send_bytes(frame(body))
                counts["payloads"] += 1
                if kind == "request":
                    counts["requests"] += 1
                    request_ids.append(json.loads(body)["id"])
            assert server.proc.poll() is None, server.stderr_tail()
            ping = server.call("textDocument/hover",
                               {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}, timeout=20)
            assert "result" in ping or "error" in ping
            assert server.garbage == []

        batch()
        # Back to the real text: whatever the fuzz did to the document, the diagnostics follow it.
        server.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python",
                                                                "version": 10**7, "text": original}})
        final = server.diagnostics(uri, timeout=60, version=10**7)
        key = lambda d: (d.get("code"), d["range"]["start"]["line"], d["range"]["start"]["character"])  # noqa: E731
        assert sorted(map(key, final["diagnostics"])) == sorted(map(key, expected))
        answered = {m.get("id") for m in server.messages if "method" not in m}
        unanswered = sum(1 for i in request_ids if i not in answered)
        record_figure("fuzz_payloads", counts["payloads"], requests=counts["requests"], unanswered_requests=unanswered,
                      seconds=round(time.perf_counter() - started, 1), peak_rss_mb=round(server.peak_rss_mb() or 0))
        assert unanswered == 0, f"{unanswered} of {len(request_ids)} requests got no response"
        assert (server.rss_mb() or 0) < 1024
        assert server.shutdown_and_exit() == 0
    finally:
        server.close()
