"""Writes early_initialize_data.py, what the early `initialize` answer (early_initialize.py) needs
without pygls: the shape of an `initialize` request that pygls is sure to accept (a schema read from
lsprotocol's attrs classes) and the InitializeResult pygls computes for each case the answer depends
on (early_initialize.variant_key), computed here by the real server.

    python -m fabric_lsp.lsp.early_initialize_gen      # after changing a handler or upgrading pygls

tests/lsp/test_lsp_early_initialize.py fails while the written file differs from what this computes.
"""

from __future__ import annotations

import asyncio
import collections.abc
import enum
import itertools
import json
import logging
import os
import pprint
import typing
from importlib import metadata
from pathlib import Path
from typing import Any

import attrs
from lsprotocol import converters, types

from fabric_lsp.lsp.early_initialize import ENCODINGS, VERSIONED_PACKAGES, variant_key
from fabric_lsp.version import __version__

DATA_PATH = Path(__file__).with_name("early_initialize_data.py")
INTEGER = (-(2**31), 2**31 - 1)
UINTEGER = (0, 2**31 - 1)


def _json_name(name: str) -> str:  # lsprotocol's _to_camel_case
    name = name[:-1] if name.endswith("_") else name
    parts = name.split("_")
    return parts[0] + "".join(p.title() for p in parts[1:])


def schema(root: type = types.InitializeRequest) -> dict[str, dict[str, tuple[Any, bool]]]:
    """{class name: {JSON field name: (spec, required)}} for `root` and every class it holds. A spec is
    ("any",), ("bool",), ("str",), ("int", low, high) (bounds or None), ("enum", values),
    ("literal", values), ("class", name), ("list", spec), ("optional", spec), ("union", specs)."""
    converters.get_converter()  # resolves lsprotocol's forward references
    classes: dict[str, dict[str, tuple[Any, bool]]] = {}

    def spec(tp: Any, where: str, bounds: tuple[int, int] | None) -> tuple:
        if tp is typing.Any:
            return ("any",)
        if tp is bool:
            return ("bool",)
        if tp is str:
            return ("str",)
        if tp is int:
            return ("int", *(bounds or (None, None)))
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            return ("enum", tuple(sorted((member.value for member in tp), key=repr)))
        if isinstance(tp, type) and attrs.has(tp):
            add(tp)
            return ("class", tp.__name__)
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if origin is typing.Literal:
            return ("literal", tuple(args))
        if origin is typing.Union:
            present = [arg for arg in args if arg is not type(None)]
            inner = (spec(present[0], where, bounds) if len(present) == 1
                     else ("union", tuple(spec(arg, where, bounds) for arg in present)))
            return ("optional", inner) if len(present) < len(args) else inner
        if origin in (list, collections.abc.Sequence) and len(args) == 1:
            return ("list", spec(args[0], where, bounds))
        raise TypeError(f"{where}: type {tp!r} is not known to the early initialize schema")

    def add(cls: type) -> None:
        if cls.__name__ in classes:
            return
        fields: dict[str, tuple[Any, bool]] = {}
        classes[cls.__name__] = fields
        for field in attrs.fields(cls):
            validator = repr(field.validator)
            bounds = UINTEGER if "uinteger_validator" in validator else INTEGER if "integer_validator" in validator else None
            fields[_json_name(field.name)] = (spec(field.type, f"{cls.__name__}.{field.name}", bounds),
                                              field.default is attrs.NOTHING)

    add(root)
    return classes


def pygls_answer(request: dict[str, Any]) -> dict[str, Any]:
    """The message the real server (pygls, every handler registered) answers `request` with."""
    from fabric_lsp.lsp.server import create_server

    server = create_server()
    written: list[bytes] = []

    class Writer:
        def write(self, data: bytes) -> None:
            written.append(data)

        def close(self) -> None:
            pass

    server.protocol.set_writer(Writer())

    async def answer() -> None:
        server.protocol.receive(request)
        await asyncio.sleep(0)

    try:
        asyncio.run(answer())
    finally:
        server.stop_analysis()
        if server._log_handler is not None:
            logging.getLogger("fabric_lsp").removeHandler(server._log_handler)
    for data in written:
        message = json.loads(data.split(b"\r\n\r\n", 1)[1])
        if message.get("id") == request.get("id") and "method" not in message:
            return message
    raise AssertionError(f"no answer to {request!r}: {written!r}")


def results() -> dict[str, str]:
    """The InitializeResult of each case (early_initialize.variant_key), as JSON text (only the one
    needed is decoded)."""
    computed = {}
    for key in itertools.product(ENCODINGS, *[(False, True)] * 4):
        encoding, notebook, pull, will_save, will_save_wait_until = key
        synchronization = {}
        if will_save:
            synchronization["willSave"] = False
        if will_save_wait_until:
            synchronization["willSaveWaitUntil"] = True
        capabilities: dict[str, Any] = {"general": {"positionEncodings": [encoding]},
                                        "textDocument": {"synchronization": synchronization}}
        if notebook:
            capabilities["notebookDocument"] = {"synchronization": {}}
        if pull:
            capabilities["textDocument"]["diagnostic"] = {}
        params = {"processId": None, "rootUri": None, "capabilities": capabilities}
        assert variant_key(params) == key, (variant_key(params), key)
        answer = pygls_answer({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        computed["|".join(map(str, key))] = json.dumps(answer["result"], sort_keys=True, separators=(",", ":"))
    return computed


def installed_versions() -> dict[str, str]:
    return {name: metadata.version(name) for name in VERSIONED_PACKAGES}


def render() -> str:
    data = {
        "FABRIC_LSP_VERSION": __version__,
        "VERSIONS": installed_versions(),
        "SCHEMA": schema(),
        "RESULTS": results(),
    }
    lines = [
        '"""Generated by early_initialize_gen.py (python -m fabric_lsp.lsp.early_initialize_gen); do not edit."""',
        "",
        "# fmt: off",
    ]
    for name, value in data.items():
        lines.append(f"{name} = {pprint.pformat(value, width=120, sort_dicts=True)}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    text = render()
    DATA_PATH.write_text(text, encoding="utf-8")
    print(f"{os.path.relpath(DATA_PATH)}: {len(text)} characters")
