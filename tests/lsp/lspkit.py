"""Helpers for the language-server tests: a recording pytest-lsp client, sessions with any client
capabilities, fixture workspaces, and an independent implementation of LSP positions and edits (so
that the tests do not trust the server's own conversion code)."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any, AsyncIterator, Callable

from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

REPO = Path(__file__).resolve().parents[2]
CASES = REPO / "fixtures" / "cases"
SERVER_COMMAND = [sys.executable, "-m", "fabric_lsp", "serve"]
PRESETS = ["visual-studio-code", "neovim", "neovim@v0.7.0"]
DELAY_ENV = "FABRIC_LSP_TEST_ANALYSIS_DELAY"
TIMEOUT = 30.0


def server_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "server"), env.get("PYTHONPATH")) if p)
    env.pop(DELAY_ENV, None)
    env.pop("VIRTUAL_ENV", None)  # analyse against the interpreter running the server
    env.update(extra)
    return env


# -- the recording client ---------------------------------------------------------------------


def _record_publish(client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
    client.published.append(params)
    client.diagnostics[params.uri] = params.diagnostics


def _record_registration(client: LanguageClient, params: types.RegistrationParams) -> None:
    client.registrations.extend(params.registrations)


def _record_trace(client: LanguageClient, params: Any) -> None:
    client.traces.append(params)


def make_client() -> LanguageClient:
    client = LanguageClient(converter_factory=default_converter)
    client.published = []  # every publishDiagnostics, in order
    client.registrations = []  # client/registerCapability
    client.traces = []  # $/logTrace
    features = dict(DEFAULT_CLIENT_FEATURES)
    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = _record_publish
    features[types.CLIENT_REGISTER_CAPABILITY] = _record_registration
    features[types.LOG_TRACE] = _record_trace
    register_lsp_features(client, features)
    return client


def capabilities(
    preset: str, change: Callable[[types.ClientCapabilities], None] | None = None
) -> types.ClientCapabilities:
    caps = copy.deepcopy(client_capabilities(preset))
    if change is not None:
        change(caps)
    return caps


def is_pull(client: LanguageClient) -> bool:
    caps = client.capabilities
    return bool(caps and caps.text_document and caps.text_document.diagnostic is not None)


@contextlib.asynccontextmanager
async def session(
    caps: types.ClientCapabilities,
    folders: list[Path],
    *,
    initialization_options: Any = None,
    configuration: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    process_id: int | None = None,
) -> AsyncIterator[tuple[LanguageClient, types.InitializeResult]]:
    """A server process and an initialized client with these capabilities and workspace folders.
    `configuration`: scope uri ("" = global) -> the `fabric-lsp` section the client answers."""
    config = ClientServerConfig(
        server_command=SERVER_COMMAND, server_env=server_env(**(env or {})), client_factory=make_client
    )
    client = await config.start()
    try:
        for scope, section in (configuration or {}).items():
            client.set_configuration(section, section="fabric-lsp", scope_uri=scope or None)
        params = types.InitializeParams(
            capabilities=caps,
            process_id=process_id,
            root_uri=folders[0].as_uri() if folders else None,
            workspace_folders=[types.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in folders] or None,
            initialization_options=initialization_options,
        )
        result = await asyncio.wait_for(client.initialize_session(params), TIMEOUT)
        yield client, result
        await asyncio.wait_for(client.shutdown_session(), TIMEOUT)
    finally:
        # After a failure there was no shutdown/exit: the client's stop() would wait for ever.
        server = client._server
        if server is not None and server.returncode is None:
            server.kill()
        await client.stop()


# -- workspaces and documents -------------------------------------------------------------------


def copy_case(name: str, destination: Path) -> Path:
    """fixtures/cases/<name> (a file or a folder) copied into `destination`; returns the copy."""
    source = CASES / name
    target = destination / name
    if source.is_dir():
        shutil.copytree(source, target)
    else:
        destination.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target)
    return target


def open_doc(client: LanguageClient, path: Path, text: str | None = None, version: int = 1) -> str:
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=version, text=path.read_text() if text is None else text
            )
        )
    )
    return uri


def replace_text(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


async def wait_until(condition: Callable[[], Any], timeout: float = TIMEOUT, message: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message}")
        await asyncio.sleep(0.02)


def pushes(client: LanguageClient, uri: str, since: int = 0) -> list[types.PublishDiagnosticsParams]:
    return [p for p in client.published[since:] if p.uri == uri]


async def diagnostics(
    client: LanguageClient, uri: str, version: int | None = None, since: int | None = None
) -> list[types.Diagnostic]:
    """The document's diagnostics: pulled from a pull client; for a push client the first
    publication for `version` (or the first one after index `since` of client.published)."""
    if is_pull(client):
        report = await asyncio.wait_for(
            client.text_document_diagnostic_async(
                types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri))
            ),
            TIMEOUT,
        )
        assert report.kind == "full", report
        return list(report.items)

    def found() -> list[types.PublishDiagnosticsParams]:
        return [
            p for p in pushes(client, uri, since or 0) if version is None or since is not None or p.version == version
        ]

    published = await wait_until(found, message=f"diagnostics of {uri} version {version}")
    return list(published[0].diagnostics)


def range_tuple(value: types.Range) -> tuple[int, int, int, int]:
    return (value.start.line, value.start.character, value.end.line, value.end.character)


# -- positions and edits, independently of the server -------------------------------------------


def code_units(text: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    if encoding == "utf-16":
        return len(text.encode("utf-16-le")) // 2
    return len(text)


def lines_of(text: str) -> list[str]:
    """Lines without their breaks; LSP breaks lines at \\n, \\r\\n and \\r only."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def lsp_position(text: str, line: int, column: int, encoding: str) -> types.Position:
    """Code-point column -> LSP position in `encoding`."""
    return types.Position(line=line, character=code_units(lines_of(text)[line][:column], encoding))


def find_position(
    text: str, needle: str, encoding: str, occurrence: int = 0, line_containing: str | None = None
) -> types.Range:
    """The LSP range of `needle` (its n-th occurrence, optionally on the first line containing
    `line_containing`)."""
    for number, line in enumerate(lines_of(text)):
        if line_containing is not None and line_containing not in line:
            continue
        start = -1
        for _ in range(occurrence + 1):
            start = line.find(needle, start + 1)
        if start >= 0:
            return types.Range(
                start=lsp_position(text, number, start, encoding),
                end=lsp_position(text, number, start + len(needle), encoding),
            )
    raise AssertionError(f"{needle!r} not found")


def offset(text: str, position: types.Position, encoding: str) -> int:
    starts = [0]
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\r" and text[index + 1 : index + 2] == "\n":
            index += 2
            starts.append(index)
            continue
        index += 1
        if char in "\r\n":
            starts.append(index)
    if position.line >= len(starts):
        return len(text)
    line_start = starts[position.line]
    line_end = starts[position.line + 1] if position.line + 1 < len(starts) else len(text)
    line = text[line_start:line_end].rstrip("\r\n")
    count = 0
    for i, char in enumerate(line):
        if count >= position.character:
            return line_start + i
        count += code_units(char, encoding)
    return line_start + len(line)


def apply_edits(text: str, edits: list[types.TextEdit], encoding: str) -> str:
    spans = sorted(
        (
            (offset(text, e.range.start, encoding), offset(text, e.range.end, encoding), i, e.new_text)
            for i, e in enumerate(edits)
        ),
        key=lambda s: (s[0], s[1], s[2]),
    )
    out, cursor = [], 0
    for start, end, _, new_text in spans:
        assert start >= cursor, "overlapping edits"
        out.append(text[cursor:start])
        out.append(new_text)
        cursor = end
    out.append(text[cursor:])
    return "".join(out)


def edits_by_uri(edit: types.WorkspaceEdit) -> dict[str, tuple[int | None, list[types.TextEdit]]]:
    """uri -> (version or None, edits) from `changes` or `documentChanges`."""
    found: dict[str, tuple[int | None, list[types.TextEdit]]] = {}
    if edit.document_changes:
        for change in edit.document_changes:
            assert isinstance(change, types.TextDocumentEdit), change
            found[change.text_document.uri] = (change.text_document.version, list(change.edits))
    for uri, edits in (edit.changes or {}).items():
        found[uri] = (None, list(edits))
    return found


async def resolved(client: LanguageClient, action: types.CodeAction) -> types.CodeAction:
    if action.edit is None:
        action = await asyncio.wait_for(client.code_action_resolve_async(action), TIMEOUT)
    assert action.edit is not None, f"no edit for {action.title}"
    return action


async def code_actions(
    client: LanguageClient,
    uri: str,
    diagnostics_: list[types.Diagnostic],
    only: list[str] | None = None,
    range_: types.Range | None = None,
) -> list[types.CodeAction]:
    rng = range_ or (
        diagnostics_[0].range if diagnostics_ else types.Range(start=types.Position(0, 0), end=types.Position(0, 0))
    )
    result = await asyncio.wait_for(
        client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=rng,
                context=types.CodeActionContext(diagnostics=diagnostics_, only=only),
            )
        ),
        TIMEOUT,
    )
    return [a for a in result or [] if isinstance(a, types.CodeAction)]


def encoding_of(result: types.InitializeResult) -> str:
    value = result.capabilities.position_encoding
    return getattr(value, "value", value) or "utf-16"
