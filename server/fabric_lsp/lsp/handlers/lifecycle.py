"""initialize, initialized, shutdown, exit: what the client declared, the settings to start with,
the capabilities registered once the client can take them, and watching the client's process."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from pathlib import Path
from typing import Any

from lsprotocol import types

from fabric_lsp.version import __version__
from fabric_lsp.settings.config import CONFIG_FILE_NAMES
from fabric_lsp.lsp.convert import ClientFeatures
from fabric_lsp.lsp.documents import uri_to_path
from fabric_lsp.lsp.handlers import diagnostics
from fabric_lsp.lsp.handlers.guard import guarded
from fabric_lsp.lsp.logs import ClientLogHandler
from fabric_lsp.lsp.positions import encoding_name
from fabric_lsp.lsp.session import CLIENT_REQUEST_TIMEOUT, SECTION, FabricLanguageServer
from fabric_lsp.lsp.settings import DEFAULT_LOG_LEVEL, editor_settings

log = logging.getLogger("fabric_lsp.lsp")

PROCESS_POLL_SECONDS = 2.0


def client_features(capabilities: types.ClientCapabilities, encoding: str) -> ClientFeatures:
    text = capabilities.text_document
    workspace = capabilities.workspace
    publish = text.publish_diagnostics if text else None
    action = text.code_action if text else None
    hover = text.hover if text else None
    formats = [getattr(f, "value", f) for f in (hover.content_format or [])] if hover else []
    preferred = next((f for f in formats if f in ("markdown", "plaintext")), "plaintext")
    resolve_properties = action.resolve_support.properties if action and action.resolve_support else []
    watched = workspace.did_change_watched_files if workspace else None
    change_configuration = workspace.did_change_configuration if workspace else None
    return ClientFeatures(
        encoding=encoding,
        related_information=bool(publish and publish.related_information),
        code_description=bool(publish and publish.code_description_support),
        pull_diagnostics=bool(text and text.diagnostic is not None),
        diagnostic_refresh=bool(workspace and workspace.diagnostics and workspace.diagnostics.refresh_support),
        document_changes=bool(workspace and workspace.workspace_edit and workspace.workspace_edit.document_changes),
        code_action_literals=bool(action and action.code_action_literal_support),
        code_action_data=bool(action and action.data_support),
        resolve_edit=bool(action and action.data_support and "edit" in resolve_properties),
        markdown_hover=preferred == "markdown",
        configuration=bool(workspace and workspace.configuration),
        did_change_configuration_dynamic=bool(change_configuration and change_configuration.dynamic_registration),
        watched_files_dynamic=bool(watched and watched.dynamic_registration),
    )


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    try:  # a killed child that its parent has not reaped yet is gone for our purposes
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[-1].split()[0]
        return state not in (b"Z", b"X")
    except (OSError, IndexError):
        return True


def folders_from(params: types.InitializeParams) -> list[tuple[str, str]]:
    folders = []
    for folder in params.workspace_folders or []:
        path = uri_to_path(folder.uri)
        if path:
            folders.append((folder.uri, path))
    if not folders:
        uri = params.root_uri
        path = uri_to_path(uri) if uri else (os.path.abspath(params.root_path) if params.root_path else None)
        if path:
            folders.append((uri or Path(path).as_uri(), path))
    return folders


@guarded()
def initialize(ls: FabricLanguageServer, params: types.InitializeParams) -> None:
    ls._event_loop = asyncio.get_running_loop()
    ls.settings_ready = asyncio.Event()
    package_logger = logging.getLogger("fabric_lsp")
    if ls._log_handler is not None:
        package_logger.removeHandler(ls._log_handler)
    ls._log_handler = ClientLogHandler(ls, ls._event_loop)
    package_logger.addHandler(ls._log_handler)
    encoding = encoding_name(ls.workspace.position_encoding)
    ls.features = client_features(params.capabilities, encoding)
    # First, before anything that could fail: the capabilities answered depend on it alone (the early
    # answer, lsp/early_initialize.py, is computed from the same client capabilities).
    if ls.features.pull_diagnostics:
        diagnostics.register_pull(ls)
    ls.initialization_options = params.initialization_options
    folders = folders_from(params)
    ls.set_folders(folders)
    ls.root_path = folders[0][1] if folders else None
    if params.trace is not None:
        ls.protocol.trace = params.trace
    # Settings from initializationOptions right away; workspace/configuration after `initialized`.
    ls.settings = {
        path: editor_settings(ls.initialization_options, None, path or ls.root_path, None)
        for path in [None] + [p for _, p in ls.folders]
    }
    ls.log_level = ls.settings[None].log_level or DEFAULT_LOG_LEVEL
    problems = [p for s in ls.settings.values() for p in s.problems]
    if problems:
        ls._spawn(_show_later(ls, problems))
    if params.process_id:
        ls._spawn(_watch_client_process(params.process_id))


async def _show_later(ls: FabricLanguageServer, problems: list[str]) -> None:
    await asyncio.sleep(0)  # after the initialize response
    ls.show_once(problems)


async def _watch_client_process(pid: int) -> None:
    while True:
        await asyncio.sleep(PROCESS_POLL_SECONDS)
        if not process_alive(pid):
            log.warning("the editor process %d is gone; exiting", pid)
            sys.stderr.flush()
            os._exit(0)


@guarded()
async def initialized(ls: FabricLanguageServer, params: types.InitializedParams) -> None:
    try:
        await _register_dynamic_capabilities(ls)
        await ls.refresh_settings()
    finally:
        if ls.settings_ready is not None:
            ls.settings_ready.set()
    features = ls.features
    log.info(
        "fabric-lsp %s: %s diagnostics, positions in %s, %d workspace folder(s)",
        __version__,
        "pull" if features.pull_diagnostics else "push",
        features.encoding,
        len(ls.folders),
    )


async def _register_dynamic_capabilities(ls: FabricLanguageServer) -> None:
    registrations = []
    if ls.features.watched_files_dynamic:
        watchers = [
            types.FileSystemWatcher(glob_pattern="**/*.py"),
            *(types.FileSystemWatcher(glob_pattern=f"**/{name}") for name in CONFIG_FILE_NAMES),
        ]
        registrations.append(
            types.Registration(
                id="fabric-lsp-watched-files",
                method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers),
            )
        )
    if ls.features.did_change_configuration_dynamic:
        registrations.append(
            types.Registration(
                id="fabric-lsp-configuration",
                method=types.WORKSPACE_DID_CHANGE_CONFIGURATION,
                register_options=types.DidChangeConfigurationRegistrationOptions(section=SECTION),
            )
        )
    if not registrations:
        return
    try:
        await asyncio.wait_for(
            ls.client_register_capability_async(types.RegistrationParams(registrations=registrations)),
            CLIENT_REQUEST_TIMEOUT,
        )
    except Exception as error:
        log.warning("client/registerCapability failed: %s", error)


@guarded()
def shutdown(ls: FabricLanguageServer, params: Any) -> None:
    ls.stop_analysis()


@guarded()
def exit_(ls: FabricLanguageServer, params: Any) -> None:
    ls.exit_code = 0 if ls.protocol._shutdown else 1
    ls.stop_analysis()


def register(server: FabricLanguageServer) -> None:
    server.feature(types.INITIALIZE)(initialize)
    server.feature(types.INITIALIZED)(initialized)
    server.feature(types.SHUTDOWN)(shutdown)
    server.feature(types.EXIT)(exit_)
