"""workspace/didChangeWatchedFiles, didChangeConfiguration, didChangeWorkspaceFolders: files changed
on disk, new settings, folders added or removed -- and the analyses each one starts again."""

from __future__ import annotations

import os
from typing import Mapping

from lsprotocol import types

from fabric_lsp.settings.config import CONFIG_FILE_NAMES
from fabric_lsp.lsp.documents import uri_to_path
from fabric_lsp.lsp.handlers.guard import guarded
from fabric_lsp.lsp.session import SECTION, FabricLanguageServer


@guarded()
def did_change_watched_files(ls: FabricLanguageServer, params: types.DidChangeWatchedFilesParams) -> None:
    paths = [uri_to_path(change.uri) for change in params.changes]
    if any(p and os.path.basename(p) in CONFIG_FILE_NAMES for p in paths):
        from fabric_lsp.engine import forget_project_roots  # loaded with the analysis, on first use

        forget_project_roots()  # a pyproject.toml added or removed moves a project's root
        ls.forget_configuration()
        ls.schedule_all()
    else:
        # A changed file that is open is the editor's buffer already; others changed on disk.
        changed = [p for p in paths if p and p.endswith((".py", ".pyi")) and p not in ls.uri_by_path]
        if changed:
            ls.schedule_dependents(changed, ls.dependents_delay)


@guarded()
async def did_change_configuration(ls: FabricLanguageServer, params: types.DidChangeConfigurationParams) -> None:
    settings = params.settings
    if isinstance(settings, Mapping) and SECTION in settings:
        ls.pushed_settings = settings[SECTION]
    await ls.reload_settings()


@guarded()
async def did_change_workspace_folders(ls: FabricLanguageServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
    folders = dict((uri, path) for uri, path in ls.folders)
    for removed in params.event.removed or []:
        folders.pop(removed.uri, None)
    for added in params.event.added or []:
        path = uri_to_path(added.uri)
        if path:
            folders[added.uri] = path
    ls.set_folders(list(folders.items()))
    await ls.reload_settings()


def register(server: FabricLanguageServer) -> None:
    server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)(did_change_watched_files)
    server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)(did_change_configuration)
    server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)(did_change_workspace_folders)
