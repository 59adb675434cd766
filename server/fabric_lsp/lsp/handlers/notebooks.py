"""notebookDocument/didOpen, didChange, didSave, didClose: a Jupyter notebook, analysed as one unit.

pygls keeps the notebook's structure (`server.workspace.get_notebook_document`: the cells, their
kinds, their order); the server keeps the cells' text itself, as it does for text documents (same
line breaks, same position encoding). Any change -- a cell's text, cells added, removed or moved, a
cell's kind or language -- analyses the whole notebook again: its Python code cells joined in order
(documents.NotebookDocument), so that `mark_forward_method` added in cell 1 clears cell 5's
diagnostic. Diagnostics go out per cell URI (scheduling.py).

The selector asks for every cell, so a cell's number counts markdown cells too (as `check` does);
cells of other kinds or languages are synced and ignored.
"""

from __future__ import annotations

import logging

from lsprotocol import types

from fabric_lsp.lsp.documents import Cell, Document, NotebookDocument, uri_to_path
from fabric_lsp.lsp.handlers.guard import guarded
from fabric_lsp.lsp.session import FabricLanguageServer

log = logging.getLogger("fabric_lsp.lsp")


def _open_cell(ls: FabricLanguageServer, notebook: NotebookDocument, item: types.TextDocumentItem) -> None:
    other = ls.cells.get(item.uri)
    if other is not None and other is not notebook:
        other.cell_docs.pop(item.uri, None)
    notebook.cell_docs[item.uri] = Document(item.uri, None, item.language_id, item.version, item.text, cell=True)
    ls.cells[item.uri] = notebook
    ls.closed_uris.discard(item.uri)


def _close_cell(ls: FabricLanguageServer, notebook: NotebookDocument, uri: str) -> None:
    notebook.cell_docs.pop(uri, None)
    if ls.cells.get(uri) is notebook:
        del ls.cells[uri]
        if ls.features.pull_diagnostics:
            ls.closed_uris.add(uri)
    # pushed: the notebook's next publication clears it (scheduling._publish_cells)


def _sync_cells(ls: FabricLanguageServer, notebook: NotebookDocument) -> None:
    """The cells in pygls' order, numbered from 1."""
    structure = ls.workspace.get_notebook_document(notebook_uri=notebook.uri)
    if structure is None:
        log.warning("notebook %s: pygls does not know it; its cells are left as they were", notebook.uri)
        return
    cells = []
    for number, cell in enumerate(structure.cells, start=1):
        if cell.document not in notebook.cell_docs:
            log.warning("notebook %s: cell %d (%s) was never opened; left out", notebook.uri, number, cell.document)
            continue
        cells.append(Cell(number, cell.document, cell.kind))
    notebook.cells = cells


def _forget(ls: FabricLanguageServer, notebook: NotebookDocument) -> set[str]:
    """Close the notebook: no more analyses, waiters answered; its cells' URIs."""
    notebook.closed = True
    notebook.resolve_waiters()
    uris = set(notebook.cell_docs) | set(notebook.published)
    for uri in uris:
        if ls.cells.get(uri) is notebook:
            del ls.cells[uri]
    return uris


@guarded()
def did_open_notebook(ls: FabricLanguageServer, params: types.DidOpenNotebookDocumentParams) -> None:
    item = params.notebook_document
    previous = ls.notebooks.pop(item.uri, None)
    if previous is not None:
        _forget(ls, previous)
    notebook = NotebookDocument(item.uri, uri_to_path(item.uri), "python", item.version, "")
    for cell in params.cell_text_documents:
        _open_cell(ls, notebook, cell)
    ls.notebooks[item.uri] = notebook
    _sync_cells(ls, notebook)
    ls.schedule(notebook)


@guarded()
def did_change_notebook(ls: FabricLanguageServer, params: types.DidChangeNotebookDocumentParams) -> None:
    notebook = ls.notebooks.get(params.notebook_document.uri)
    if notebook is None:
        log.warning("notebookDocument/didChange for a notebook that is not open: %s", params.notebook_document.uri)
        return
    notebook.version = params.notebook_document.version
    cells = params.change.cells
    if cells is not None:
        if cells.structure is not None:  # first, as the protocol orders them
            for closed in cells.structure.did_close or []:
                _close_cell(ls, notebook, closed.uri)
            for opened in cells.structure.did_open or []:
                _open_cell(ls, notebook, opened)
        for content in cells.text_content or []:
            cell = notebook.cell_docs.get(content.document.uri)
            if cell is None:
                log.warning("notebook %s: a change for cell %s, which is not open", notebook.uri, content.document.uri)
                continue
            cell.apply_changes(content.changes, ls.features.encoding)
            cell.version = content.document.version
    _sync_cells(ls, notebook)
    ls.schedule(notebook)


@guarded()
def did_save_notebook(ls: FabricLanguageServer, params: types.DidSaveNotebookDocumentParams) -> None:
    # Nothing to do (and `save` is not asked for): the analysis reads the cells the editor sent,
    # and no module imports a notebook.
    log.debug("notebook %s saved", params.notebook_document.uri)


@guarded()
def did_close_notebook(ls: FabricLanguageServer, params: types.DidCloseNotebookDocumentParams) -> None:
    notebook = ls.notebooks.pop(params.notebook_document.uri, None)
    if notebook is None:
        return
    uris = _forget(ls, notebook) | {cell.uri for cell in params.cell_text_documents if cell.uri not in ls.cells}
    if ls.features.pull_diagnostics:
        ls.closed_uris.update(uris)
        return
    for uri in sorted(uris):
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


def register(server: FabricLanguageServer) -> None:
    server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)(did_open_notebook)
    server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)(did_change_notebook)
    server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)(did_save_notebook)
    server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)(did_close_notebook)
