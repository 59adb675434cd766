"""textDocument/hover: the record of the finding (or `# noqa` code) under the cursor (hover.py), in a
document or a notebook cell."""

from __future__ import annotations

import asyncio

from lsprotocol import types

from fabric_lsp.lsp.documents import NotebookDocument
from fabric_lsp.lsp.handlers.guard import guarded
from fabric_lsp.lsp.session import FabricLanguageServer


@guarded()
async def hover(ls: FabricLanguageServer, params: types.HoverParams) -> types.Hover | None:
    from fabric_lsp.lsp.hover import hover as hover_at  # the records' renderers load on first use (issue 29)

    found = ls.unit_of(params.text_document.uri)
    if found is None or not found[0].is_python:
        return None
    doc, uri = found
    result = await ls.current_result(doc)  # the current text's findings: no wall-clock limit changes the answer
    if isinstance(doc, NotebookDocument):
        cell = doc.cell_docs.get(uri)
        if cell is None:
            return None
        part = result.cells.get(uri) if result is not None else None
        # the findings hold for the text the analysis read: the cell's as it is now
        findings = result.findings if part is not None and part.text == cell.text else ()
        path, index = uri, cell.index  # a notebook's findings name their cell by its URI (cells.py)
    else:
        findings = result.findings if result is not None and result.text == doc.text else ()
        path, index = doc.analysis_path, doc.index
    config, _ = ls.config_for(doc.analysis_path)
    # Extension records are read and validated (bounded, once per file) off the event loop.
    records = await asyncio.get_running_loop().run_in_executor(None, ls.records_for, config)
    return hover_at(
        findings,
        path,
        index,
        params.position,
        ls.features.encoding,
        records,
        ls.features.markdown_hover,
        config.docs_url,
    )


def register(server: FabricLanguageServer) -> None:
    server.feature(types.TEXT_DOCUMENT_HOVER)(hover)
