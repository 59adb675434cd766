"""`initialize` answered before pygls is imported (issue 36, lsp/early_initialize.py).

Proven by counting, not timing (the machines are shared): the modules imported when the answer is
written (no pygls, no lsprotocol, no settings or report machinery). The early answer is the one pygls
computes: the generated data is what the real server answers now, and for the capabilities of real
editors and many variations of them, an early answer is only ever given when pygls answers the same.
Every other first message takes the usual path: the same bytes in give the same messages out and the
same exit status with and without the early answer.
"""

from __future__ import annotations

import copy
import io
import json
import random
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from lspkit import TIMEOUT, server_env

from fabric_lsp.cli import _PROG, main, plain_stdio_serve
from fabric_lsp.lsp import early_initialize as early
from fabric_lsp.lsp import early_initialize_data as data
from fabric_lsp.lsp import early_initialize_gen as gen

CLIENTS = sorted((Path(__import__("pytest_lsp").__file__).parent / "clients").glob("*.json"))


def _frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _initialize(params: dict, msg_id: int | str = 1) -> dict:
    return {"jsonrpc": "2.0", "id": msg_id, "method": "initialize", "params": params}


def _params(tmp: Path | None = None, capabilities: dict | None = None, **extra) -> dict:
    uri = tmp.as_uri() if tmp is not None else None
    params = {"processId": None, "rootUri": uri, "capabilities": capabilities if capabilities is not None else {}}
    if tmp is not None:
        params["workspaceFolders"] = [{"uri": uri, "name": "w"}]
    params.update(extra)
    return params


def _messages(stdout: bytes) -> list[dict]:
    messages = []
    while stdout:
        header, _, rest = stdout.partition(b"\r\n\r\n")
        length = int(next(line for line in header.split(b"\r\n") if line.lower().startswith(b"content-length")).split(b":")[1])
        messages.append(json.loads(rest[:length]))
        stdout = rest[length:]
    return messages


# -- the data: what pygls answers today, for the packages installed ----------------------------------------

def test_the_generated_data_is_what_the_server_answers_now():
    assert gen.DATA_PATH.read_text(encoding="utf-8") == gen.render(), (
        "run: python -m fabric_lsp.lsp.early_initialize_gen")


def test_installed_versions_are_found_as_importlib_finds_them():
    assert early.installed_versions() == {name: metadata.version(name) for name in early.VERSIONED_PACKAGES}
    assert early.installed_versions([]) is None


@pytest.mark.parametrize("client", CLIENTS, ids=lambda path: path.stem)
@pytest.mark.parametrize("encodings", [None, ["utf-8"], ["utf-32", "utf-16"], ["utf-7", "utf-32"], ["utf-7"], []])
def test_real_editors_are_answered_early_with_pygls_answer(tmp_path, client, encodings):
    params = _params(tmp_path, **json.loads(client.read_text()))
    if encodings is not None:
        params["capabilities"].setdefault("general", {})["positionEncodings"] = encodings
    params["initializationOptions"] = {"select": ["FAB001"], "logLevel": "debug"}
    request = _initialize(params, msg_id="first")
    result = early.early_result(request)
    assert result is not None  # real editors take the fast path
    assert gen.pygls_answer(request) == {"jsonrpc": "2.0", "id": "first", "result": result}


def _mutations(value, rng: random.Random, depth: int = 0):
    """A copy of a JSON value with one random change somewhere (a wrong type, a removed or unknown key,
    a value out of its enum or range, null)."""
    replacements = [None, True, 0, -1, 2**31, 1.5, "x", "utf-8", [], {}, [1], ["markdown"], {"a": 1}]
    if isinstance(value, dict) and value and rng.random() < 0.85:
        key = rng.choice(sorted(value))
        changed = dict(value)
        roll = rng.random()
        if roll < 0.15:
            del changed[key]
        elif roll < 0.25:
            changed["unknownField"] = rng.choice(replacements)
        else:
            changed[key] = _mutations(value[key], rng, depth + 1)
        return changed
    if isinstance(value, list) and value and rng.random() < 0.7:
        index = rng.randrange(len(value))
        changed = list(value)
        changed[index] = _mutations(value[index], rng, depth + 1)
        return changed
    return copy.deepcopy(rng.choice(replacements))


def test_an_early_answer_is_given_only_when_pygls_gives_the_same(tmp_path):
    """Random changes of real editors' initialize requests: whenever the early path answers, pygls
    answers the same thing; when pygls refuses a request (-32602), the early path never answered it."""
    rng = random.Random(36)
    bases = [_initialize(_params(tmp_path, **json.loads(client.read_text()))) for client in CLIENTS]
    answered = refused = 0
    for _ in range(300):
        request = _mutations(rng.choice(bases), rng)
        if not isinstance(request, dict):
            continue
        result = early.early_result(request)
        if result is None:
            continue
        answered += 1
        answer = gen.pygls_answer(request)
        refused += "error" in answer
        assert answer == {"jsonrpc": "2.0", "id": request["id"], "result": result}, json.dumps(request)[:3000]
    assert answered > 30 and refused == 0  # 59 of the 300 with this seed


@pytest.mark.parametrize("payload", [
    _initialize(_params(capabilities=5)),  # capabilities must be an object
    _initialize(_params(capabilities=["general"])),  # cattrs would read `"general" in capabilities`
    _initialize(_params(capabilities={"textDocument": {"hover": {"contentFormat": ["html"]}}})),  # no such MarkupKind
    _initialize(_params(processId="12")),
    _initialize(_params(trace="loud")),
    _initialize(_params(workspaceFolders=[{"uri": "file:///w"}])),  # a folder without its name
    _initialize(_params(capabilities={"textDocument": {"foldingRange": {"rangeLimit": -1}}})),  # uinteger
    _initialize(_params(capabilities={"textDocument": {"hover": {"dynamicRegistration": "yes"}}})),  # pygls takes it; not sure
    {**_initialize(_params()), "id": True},
    {**_initialize(_params()), "id": 1.0},
    {**_initialize(_params()), "jsonrpc": "1.0"},
    {"jsonrpc": "2.0", "method": "initialize", "params": _params()},  # a notification
    {"jsonrpc": "2.0", "id": 1, "method": "initialize"},
    {"jsonrpc": "2.0", "id": 1, "method": "shutdown"},
    [_initialize(_params())],
])
def test_requests_pygls_could_refuse_take_the_usual_path(payload):
    assert early.early_result(payload) is None


def test_the_data_must_match_the_installed_packages_and_fabric_lsp(monkeypatch):
    request = _initialize(_params())
    assert early.early_result(request) is not None
    monkeypatch.setattr(data, "VERSIONS", {**data.VERSIONS, "pygls": "0.0.1"})
    assert early.early_result(request) is None
    monkeypatch.undo()
    monkeypatch.setattr(data, "FABRIC_LSP_VERSION", "0.0.0")
    assert early.early_result(request) is None


# -- the stream --------------------------------------------------------------------------------------------

def test_replayed_stream_gives_the_bytes_read_then_the_rest():
    stream = early.Replayed(b"Content-Length: 2\r\n\r\n{", io.BytesIO(b"}\nline two\nrest"))
    assert stream.readline() == b"Content-Length: 2\r\n"
    assert stream.readline() == b"\r\n"
    assert stream.read(2) == b"{}"
    assert stream.readline() == b"\n"
    assert stream.readline() == b"line two\n"
    assert stream.read(10) == b"rest"
    assert stream.read(10) == b""
    partial = early.Replayed(b"abc", io.BytesIO(b"def\nghi"))
    assert partial.readline() == b"abcdef\n" and partial.read() == b"ghi"


@pytest.mark.parametrize("data, decoded", [
    (_frame({"a": 1}), {"a": 1}),
    (b"Content-Length: 8\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{\"a\": 1}", {"a": 1}),
    (b"content-length:8 \n\n{\"a\": 1}", {"a": 1}),
    (b"Content-Length: 9\r\n\r\n{\"a\": 1}", None),  # end of input inside the body
    (b"garbage\r\nContent-Length: 8\r\n\r\n{\"a\": 1}", None),
    (b"Content-Length: 8\r\nContent-Length: 8\r\n\r\n{\"a\": 1}", None),
    (b"Content-Length: 8\r\r\n\r\n{\"a\": 1}", None),
    (b"Content-Length: 99999999999\r\n\r\n", None),
    (b"Content-Length: 2\r\n\r\n{]", None),
    (b"", None),
    (b"Content-Length: " + b"1" * 2000 + b"\r\n\r\n", None),
])
def test_only_a_plain_first_frame_is_decoded_and_every_byte_read_is_kept(data, decoded):
    stream = io.BytesIO(data)
    read, payload = early.read_first_frame(stream)
    assert payload == decoded
    assert read + stream.read() == data


# -- the command line --------------------------------------------------------------------------------------

@pytest.mark.parametrize("arguments, plain", [
    (["serve"], True),
    (["serve", "--stdio"], True),
    (["serve", "--stdio", "--clientProcessId", "123"], True),
    (["serve", "--clientProcessId=123", "--stdio"], True),
    (["serve", "--clientProcessId", "x"], False),
    (["serve", "--clientProcessId"], False),
    (["serve", "--tcp", "127.0.0.1:0"], False),
    (["serve", "--stdio", "--tcp", "127.0.0.1:0"], False),
    (["serve", "--pipe", "x"], False),
    (["serve", "-h"], False),
    (["serve", "--std"], False),
    (["check", "serve"], False),
    ([], False),
])
def test_plain_stdio_serve_is_only_what_the_parser_reads_as_stdio(arguments, plain):
    assert plain_stdio_serve(arguments) is plain
    if plain:
        from fabric_lsp.cli.arguments import build_parser

        args = build_parser().parse_args(arguments)
        assert args.command == "serve" and args.tcp is None and args.token is None
        assert not (args.pipe or args.socket or args.node_ipc)


def test_version_is_printed_as_argparse_prints_it(capsys):
    from fabric_lsp.cli.arguments import PROG, build_parser

    assert _PROG == PROG
    assert main(["--version"]) == 0
    fast = capsys.readouterr()
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--version"])
    assert capsys.readouterr() == fast


def test_version_imports_neither_the_parser_nor_the_settings():
    probe = "import sys\nfrom fabric_lsp.cli import main\nmain(['--version'])\nprint(sorted(m for m in sys.modules if m.startswith(('fabric_lsp', 'argparse', 'logging'))))"
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, env=server_env(), timeout=TIMEOUT)
    assert completed.returncode == 0, completed.stderr
    modules = eval(completed.stdout.decode().splitlines()[-1])
    assert modules == ["fabric_lsp", "fabric_lsp.cli", "fabric_lsp.version"]


# -- the server, end to end --------------------------------------------------------------------------------

# Runs `fabric-lsp serve` (cli.main, as the console script does) or the server without the early answer
# (lsp.server.run, the usual path), with stdout recorded: the modules imported when the first bytes are
# written go to the file named by argv[2].
PROBE = """
import io, json, os, sys

class Recorder(io.RawIOBase):
    first = None
    def writable(self):
        return True
    def write(self, data):
        if Recorder.first is None:
            Recorder.first = sorted(sys.modules)
        os.write(1, bytes(data))
        return len(data)

sys.stdout = kept = io.TextIOWrapper(io.BufferedWriter(Recorder()), encoding="utf-8")  # kept: the server
# replaces sys.stdout, which would close this one (the real one lives on as sys.__stdout__)
if sys.argv[1] == "early":
    from fabric_lsp.cli import main
    code = main(["serve"])
else:
    from fabric_lsp.lsp.server import run
    code = run()
with open(sys.argv[2], "w") as handle:
    json.dump({"code": code, "first_write": Recorder.first}, handle)
"""


def _serve(tmp_path: Path, path: str, stdin: bytes) -> tuple[int, list[dict], dict]:
    report = tmp_path / f"report-{path}.json"
    completed = subprocess.run([sys.executable, "-c", PROBE, path, str(report)], input=stdin, capture_output=True,
                               env=server_env(), cwd=tmp_path, timeout=TIMEOUT)
    stderr = completed.stderr.decode(errors="replace")
    assert "Traceback" not in stderr and " ERROR " not in stderr, stderr
    assert completed.returncode == 0, stderr
    return json.loads(report.read_text())["code"], _messages(completed.stdout), json.loads(report.read_text())


SHUTDOWN = _frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
EXIT = _frame({"jsonrpc": "2.0", "method": "exit"})


def test_initialize_is_answered_before_pygls_is_imported(tmp_path):
    capabilities = json.loads((CLIENTS[-1]).read_text())["capabilities"]
    params = _params(tmp_path, capabilities, initializationOptions={"select": ["FAB001"]})
    hover = _frame({"jsonrpc": "2.0", "id": 3, "method": "textDocument/hover",
                    "params": {"textDocument": {"uri": (tmp_path / "a.py").as_uri()}, "position": {"line": 0, "character": 0}}})
    stdin = _frame(_initialize(params)) + hover + SHUTDOWN + EXIT  # all at once: the rest waits for pygls
    code, messages, report = _serve(tmp_path, "early", stdin)
    first = report["first_write"]
    assert not [m for m in first if m.split(".")[0] in ("pygls", "lsprotocol", "cattrs", "attrs", "jedi", "parso")]
    ours = [m for m in first if m.split(".")[0] == "fabric_lsp"]
    assert ours == ["fabric_lsp", "fabric_lsp.cli", "fabric_lsp.lsp", "fabric_lsp.lsp.early_initialize",
                    "fabric_lsp.lsp.early_initialize_data", "fabric_lsp.version"], ours
    # Answered once (pygls' answer to the replayed request is dropped), then everything else in order,
    # as the usual path answers it.
    assert [m.get("id") for m in messages] == [1, 3, 2]
    assert code == 0
    plain_code, plain_messages, plain_report = _serve(tmp_path, "plain", stdin)
    assert "pygls" in plain_report["first_write"]
    assert (code, messages) == (plain_code, plain_messages)


@pytest.mark.parametrize("stdin", [
    b"",  # end of input at once
    EXIT,  # exit before initialize
    SHUTDOWN + EXIT,  # a request before initialize: -32002
    _frame(_initialize({"processId": None, "capabilities": []})) + SHUTDOWN + EXIT,  # invalid params: -32602
    b"garbage\r\n" + _frame(_initialize({"processId": None, "capabilities": {}})) + SHUTDOWN + EXIT,  # resynchronised
    b"Content-Length: 5\r\n\r\n{]}}}" + _frame(_initialize({"processId": None, "capabilities": {}})) + EXIT,  # not JSON
    _frame(_initialize({"processId": None, "capabilities": {}})),  # end of input after initialize
    _frame(_initialize({"processId": None, "capabilities": {}}))[:-3],  # end of input inside the frame
    _frame(_initialize({"processId": None, "capabilities": {"general": {"positionEncodings": ["utf-32"]}}},
                       msg_id="x")) + SHUTDOWN + EXIT,
], ids=["eof", "exit", "request-first", "invalid-params", "garbage-first", "not-json", "eof-after-initialize",
        "eof-in-frame", "utf-32"])
def test_every_stream_gets_the_messages_and_status_of_the_usual_path(tmp_path, stdin):
    assert _serve(tmp_path, "early", stdin)[:2] == _serve(tmp_path, "plain", stdin)[:2]
