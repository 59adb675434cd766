"""`initialize` answered before pygls is imported (issue 36): importing pygls costs ~0.4 s (lsprotocol
builds ~1,000 attrs classes and cattrs converters), more than the editor should wait for a first answer.

Over stdio, `serve_stdio` reads the first frame with the standard library only. When it is an
`initialize` that pygls is sure to accept, the answer is written at once: the InitializeResult pygls
computes for that case, taken from early_initialize_data.py (written by early_initialize_gen.py with
the real server; the cases are what the result depends on, `variant_key`). Then pygls is imported and the server started on the same stream, the
first frame's bytes first: the `initialize` goes through exactly the path it always took (frame
reader, FabricProtocol.receive checks, pygls, the handler), so the server's state (client
capabilities, folders, initializationOptions, processId watch, position encoding) is what it always
was; pygls' own answer to it is dropped (FabricProtocol.early_answer) after a comparison with the
one sent (a difference is logged as an error). What arrives meanwhile waits in the pipe, in order.

Anything else takes the usual path, unchanged (every byte read is handed to the server): a first
frame that is not a well-formed `initialize`, params outside the schema pygls is sure to accept
(`fits`: strict JSON types, enum values, required fields), installed pygls / lsprotocol / cattrs
versions or a fabric-lsp version other than the data's, end of input, a malformed header.

`serve --tcp` does not use it: its first frame is checked for the token (transport.TokenGate).
"""

from __future__ import annotations

import json
import os
import sys

TYPE_CHECKING = False  # not typing's: this module is imported before anything else of the server
if TYPE_CHECKING:
    from typing import Any, BinaryIO

ENCODINGS = ("utf-8", "utf-16", "utf-32")  # pygls' _SUPPORTED_ENCODINGS; utf-16 when none is shared
VERSIONED_PACKAGES = ("pygls", "lsprotocol", "cattrs")
MAX_HEADER_LINES = 4
MAX_EARLY_FRAME_BYTES = 16 * 1024 * 1024
MAX_LINE_BYTES = 1024


class Replayed:
    """A binary stream: `prefix` (the bytes already read), then the rest of `stream`; readline and
    read as pygls' StdinAsyncReader calls them."""

    def __init__(self, prefix: bytes, stream: BinaryIO) -> None:
        self._prefix = prefix
        self._stream = stream

    def readline(self, size: int = -1) -> bytes:
        if not self._prefix:
            return self._stream.readline(size)
        end = self._prefix.find(b"\n") + 1
        if size is not None and 0 <= size < (end or len(self._prefix) + 1):
            line, self._prefix = self._prefix[:size], self._prefix[size:]
            return line
        if end:
            line, self._prefix = self._prefix[:end], self._prefix[end:]
            return line
        line, self._prefix = self._prefix, b""
        return line + self._stream.readline(-1 if size is None or size < 0 else size - len(line))

    def read(self, size: int = -1) -> bytes:
        if not self._prefix:
            return self._stream.read(size)
        if size is None or size < 0:
            data, self._prefix = self._prefix, b""
            return data + self._stream.read()
        data, self._prefix = self._prefix[:size], self._prefix[size:]
        if len(data) < size:
            data += self._stream.read(size - len(data))
        return data

    def close(self) -> None:
        self._stream.close()


def read_first_frame(stream: BinaryIO) -> tuple[bytes, Any]:
    """(the bytes read, the first frame's decoded payload or None). Only a plain frame is decoded:
    `Content-Length: N` (and a Content-Type) lines, a blank line, N bytes of JSON; on anything else
    reading stops (the bytes read go to the server's own frame reader, which deals with them)."""
    read: list[bytes] = []
    length: int | None = None
    for _ in range(MAX_HEADER_LINES):
        line = stream.readline(MAX_LINE_BYTES)
        read.append(line)
        if not line.endswith(b"\n"):  # end of input, or a line too long for a header
            return b"".join(read), None
        name, colon, value = line[: -2 if line.endswith(b"\r\n") else -1].partition(b":")
        value = value.strip(b" \t")
        if colon and name.lower() == b"content-length" and length is None and value.isdigit() and len(value) <= 15:
            length = int(value)
            if length > MAX_EARLY_FRAME_BYTES:
                return b"".join(read), None
        elif colon and name.lower() == b"content-type" and b"\r" not in value:
            continue
        elif line in (b"\r\n", b"\n") and length is not None:
            break
        else:
            return b"".join(read), None
    else:
        return b"".join(read), None
    body = stream.read(length)
    read.append(body)
    if len(body) != length:
        return b"".join(read), None
    try:
        return b"".join(read), json.loads(body)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return b"".join(read), None


def fits(value: Any, spec: tuple, classes: dict[str, dict[str, tuple[tuple, bool]]]) -> bool:
    """Whether lsprotocol is sure to structure `value` as `spec` (early_initialize_gen.schema): JSON types
    as declared (no bool for an int, no number for a string: cattrs would convert some, not all),
    enum values of the enum, every required field; unknown fields are ignored, as cattrs does."""
    kind = spec[0]
    if kind == "any":
        return True
    if kind == "optional":
        return value is None or fits(value, spec[1], classes)
    if kind == "bool":
        return value is True or value is False
    if kind == "str":
        return type(value) is str
    if kind == "int":
        return type(value) is int and (spec[1] is None or spec[1] <= value <= spec[2])
    if kind in ("enum", "literal"):
        return type(value) in (int, str) and value in spec[1]
    if kind == "list":
        return type(value) is list and all(fits(item, spec[1], classes) for item in value)
    if kind == "union":
        return any(fits(value, alternative, classes) for alternative in spec[1])
    if kind == "class":
        fields = classes.get(spec[1])
        if fields is None:
            return False
        if type(value) is list:
            # cattrs reads a field as `name in value`: a list holding no string is an object of no
            # fields (Neovim 0.9 sends `callHierarchy: [{...}]`, an empty Lua table's confusion)
            return not any(type(item) is str for item in value) and not any(required for _, required in fields.values())
        if type(value) is not dict:
            return False
        for name, (field_spec, required) in fields.items():
            if name in value:
                if not fits(value[name], field_spec, classes):
                    return False
            elif required:
                return False
        return True
    return False  # a kind this code does not know: not sure


def _object(value: Any) -> dict[str, Any]:
    """An object as cattrs reads it (a list, as `fits` lets through, is an object of no fields)."""
    return value if isinstance(value, dict) else {}


def variant_key(params: dict[str, Any]) -> tuple[str, bool, bool, bool, bool]:
    """What the InitializeResult depends on: the position encoding pygls chooses
    (ServerCapabilitiesBuilder.choose_position_encoding: the client's first supported one), whether
    the client declares notebook support (pygls then adds notebookDocumentSync), whether it pulls
    diagnostics (handlers/lifecycle.py registers textDocument/diagnostic then), and whether it declares
    willSave and willSaveWaitUntil at all (pygls then answers false for them, else leaves them out)."""
    capabilities = _object(params.get("capabilities"))
    general = _object(capabilities.get("general"))
    encoding = "utf-16"
    for candidate in general.get("positionEncodings") or ():
        if candidate in ENCODINGS:
            encoding = candidate
            break
    text = _object(capabilities.get("textDocument"))
    synchronization = _object(text.get("synchronization"))
    return (encoding, capabilities.get("notebookDocument") is not None, text.get("diagnostic") is not None,
            synchronization.get("willSave") is not None, synchronization.get("willSaveWaitUntil") is not None)


def installed_versions(path: list[str] | None = None) -> dict[str, str] | None:
    """The versions of VERSIONED_PACKAGES as imported from `path` (sys.path): read from the
    `<name>-<version>.dist-info` folder next to the package (no importlib.metadata: it costs more than
    this module). None when a package or its version cannot be found that way."""
    found: dict[str, str] = {}
    for entry in sys.path if path is None else path:
        if len(found) == len(VERSIONED_PACKAGES):
            break
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        wanted = [name for name in VERSIONED_PACKAGES if name not in found and name in names]
        for name in wanted:
            versions = [n[len(name) + 1: -len(".dist-info")] for n in names
                        if n.startswith(name + "-") and n.endswith(".dist-info")]
            if len(versions) != 1:
                return None
            found[name] = versions[0]
        if any(name not in found and (name + ".py") in names for name in VERSIONED_PACKAGES):
            return None
    return found if len(found) == len(VERSIONED_PACKAGES) else None


def early_result(payload: Any) -> dict[str, Any] | None:
    """The InitializeResult for `payload` when it is an `initialize` pygls is sure to accept and the
    data matches what is installed; else None (the usual path answers)."""
    if not isinstance(payload, dict) or payload.get("method") != "initialize" or payload.get("jsonrpc") != "2.0":
        return None
    msg_id = payload.get("id")
    if type(msg_id) not in (int, str) or not isinstance(payload.get("params"), dict):
        return None
    try:
        from fabric_lsp.lsp import early_initialize_data as data
        from fabric_lsp.version import __version__
    except ImportError:
        return None
    if data.FABRIC_LSP_VERSION != __version__ or installed_versions() != data.VERSIONS:
        return None
    try:
        if not fits(payload, ("class", "InitializeRequest"), data.SCHEMA):
            return None
    except RecursionError:
        return None
    result = data.RESULTS.get("|".join(map(str, variant_key(payload["params"]))))
    return None if result is None else json.loads(result)


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def serve_stdio(stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> int:
    """`fabric-lsp serve` over stdio (see the module docstring)."""
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    try:
        read, payload = read_first_frame(stdin)
    except (OSError, ValueError):
        read, payload = b"", None
    answered = None
    try:
        result = early_result(payload)
    except Exception:  # not sure: the usual path answers
        result = None
    if result is not None:
        try:
            stdout.write(frame({"jsonrpc": "2.0", "id": payload["id"], "result": result}))
            stdout.flush()
            answered = (payload["id"], result)
        except (OSError, ValueError):
            pass  # the server finds the broken stream too, and ends as it always did
    from fabric_lsp.lsp.server import run

    return run(None, None, stdin=Replayed(read, stdin), stdout=stdout, answered=answered)
