"""Pull diagnostics: textDocument/diagnostic and workspace/diagnostic, registered in `initialize`
when the client declares them (the server then never pushes). A notebook's are pulled per cell."""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from fabric_lsp.lsp.documents import NotebookDocument
from fabric_lsp.lsp.handlers.guard import guarded
from fabric_lsp.lsp.session import NAME, FabricLanguageServer


@guarded()
async def document_diagnostic(
    ls: FabricLanguageServer, params: types.DocumentDiagnosticParams
) -> types.DocumentDiagnosticReport:
    found = ls.unit_of(params.text_document.uri)
    result = await ls.current_result(found[0]) if found is not None else None
    if result is None:
        return types.RelatedFullDocumentDiagnosticReport(items=[])
    doc, uri = found
    if isinstance(doc, NotebookDocument):
        part = result.cells.get(uri)
        if part is None:  # a cell that is not analysed (not Python code)
            return types.RelatedFullDocumentDiagnosticReport(items=[])
        items, result_id = part.diagnostics, part.result_id
    else:
        items, result_id = result.diagnostics, result.result_id
    if params.previous_result_id == result_id:
        return types.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
    return types.RelatedFullDocumentDiagnosticReport(items=items, result_id=result_id)


def _report(uri: str, version: int | None, items: list[types.Diagnostic], result_id: str, previous: dict[str, str]) -> Any:
    if previous.get(uri) == result_id:
        return types.WorkspaceUnchangedDocumentDiagnosticReport(uri=uri, version=version, result_id=result_id)
    return types.WorkspaceFullDocumentDiagnosticReport(uri=uri, version=version, items=items, result_id=result_id)


@guarded()
async def workspace_diagnostic(
    ls: FabricLanguageServer, params: types.WorkspaceDiagnosticParams
) -> types.WorkspaceDiagnosticReport:
    previous = {item.uri: item.value for item in params.previous_result_ids or []}
    items: list[Any] = []
    for doc in ls.units():
        if not doc.is_python:
            continue
        result = await ls.current_result(doc)
        if result is None:
            continue
        if isinstance(doc, NotebookDocument):
            for uri, part in result.cells.items():
                items.append(_report(uri, part.version, part.diagnostics, part.result_id, previous))
        else:
            items.append(_report(doc.uri, result.version, result.diagnostics, result.result_id, previous))
    for uri in sorted(ls.closed_uris - set(ls.docs) - set(ls.cells)):
        items.append(types.WorkspaceFullDocumentDiagnosticReport(uri=uri, version=None, items=[]))
    ls.closed_uris.clear()
    return types.WorkspaceDiagnosticReport(items=items)


def register_pull(server: FabricLanguageServer) -> None:
    if types.TEXT_DOCUMENT_DIAGNOSTIC in server.protocol.fm.features:
        return
    server.feature(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        types.DiagnosticOptions(identifier=NAME, inter_file_dependencies=True, workspace_diagnostics=True),
    )(document_diagnostic)
    server.feature(types.WORKSPACE_DIAGNOSTIC)(workspace_diagnostic)
