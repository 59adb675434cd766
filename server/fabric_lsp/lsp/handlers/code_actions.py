"""textDocument/codeAction and codeAction/resolve (the actions themselves: actions.py). On a notebook
cell they act on the notebook."""

from __future__ import annotations

from lsprotocol import types

from fabric_lsp.lsp.actions import KINDS, code_actions, fix_all_kind, resolve
from fabric_lsp.lsp.handlers.guard import guarded
from fabric_lsp.lsp.session import FabricLanguageServer


@guarded()
async def code_action(ls: FabricLanguageServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
    found = ls.unit_of(params.text_document.uri)
    if found is None or not found[0].is_python:
        return None
    doc = found[0]
    if fix_all_kind(doc, params.context.only) is not None:
        # Fix-all on save acts on the text being saved: it waits for that text's analysis however long it takes
        # (it is bounded by counts, never by time; a wall-clock limit here saved without the fixes under load).
        await ls.current_result(doc)
    if not ls.features.code_action_literals:
        return None  # a client that only runs commands; every editor we know takes literals
    return code_actions(params, doc, ls.features, ls.version_of) or None


@guarded()
def code_action_resolve(ls: FabricLanguageServer, params: types.CodeAction) -> types.CodeAction:
    return resolve(params, {**ls.docs, **ls.notebooks}, ls.features, ls.version_of, ls.overlays, ls.uri_by_path)


def register(server: FabricLanguageServer) -> None:
    server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=KINDS, resolve_provider=True),
    )(code_action)
    server.feature(types.CODE_ACTION_RESOLVE)(code_action_resolve)
