"""textDocument/didOpen, didChange, didSave, didClose: the open documents' text, and which analyses
an edit, a save or a close starts (the document's own, and its dependents')."""

from __future__ import annotations

import logging
import os
import stat

from lsprotocol import types

from fabric_lsp.settings.config import CONFIG_FILE_NAMES
from fabric_lsp.lsp.documents import Document, is_cell_uri, uri_to_path
from fabric_lsp.lsp.handlers.guard import guarded
from fabric_lsp.lsp.session import FabricLanguageServer

log = logging.getLogger("fabric_lsp.lsp")


def text_differs_from_disk(path: str | None, text: str) -> bool:
    """Whether the buffer differs from the file the URI names. The URI is the client's word: read
    only a regular file, and only as many bytes as the buffer has (O_NONBLOCK: a FIFO never blocks)."""
    if not path:
        return False
    data = text.encode("utf-8", errors="surrogatepass")
    try:
        with os.fdopen(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size != len(data):
                return True
            return handle.read(len(data) + 1) != data
    except OSError:
        return True


@guarded()
def did_open(ls: FabricLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
    item = params.text_document
    previous = ls.docs.pop(item.uri, None)
    if previous is not None:
        previous.closed = True
        previous.resolve_waiters()
    doc = Document(item.uri, uri_to_path(item.uri), item.language_id, item.version, item.text)
    # A notebook cell sent as a text document is kept but not analysed: alone it is not the program
    # the kernel runs (its notebook is analysed as one unit through notebookDocument/*).
    doc.cell = is_cell_uri(item.uri) or item.uri in ls.cells
    ls.docs[item.uri] = doc
    ls.closed_uris.discard(item.uri)
    if not doc.is_python:
        return
    if doc.path:
        ls.overlays[doc.path] = doc.text
        ls.uri_by_path[doc.path] = doc.uri
    ls.schedule(doc)
    if text_differs_from_disk(doc.path, doc.text):
        ls.schedule_dependents([doc.path], ls.dependents_delay, except_uri=doc.uri)


@guarded()
def did_change(ls: FabricLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
    doc = ls.docs.get(params.text_document.uri)
    if doc is None:
        log.warning("didChange for a document that is not open: %s", params.text_document.uri)
        return
    doc.apply_changes(params.content_changes, ls.features.encoding)
    doc.version = params.text_document.version
    if not doc.is_python:
        return
    if doc.path:
        ls.overlays[doc.path] = doc.text
    ls.schedule(doc)
    ls.schedule_dependents([doc.path], ls.dependents_delay, except_uri=doc.uri)


@guarded()
def did_save(ls: FabricLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
    path = uri_to_path(params.text_document.uri)
    if path and os.path.basename(path) in CONFIG_FILE_NAMES:
        ls.forget_configuration()
        ls.schedule_all()
    elif path and path.endswith((".py", ".pyi")):
        ls.schedule_dependents([path], ls.dependents_delay, except_uri=params.text_document.uri)


@guarded()
def did_close(ls: FabricLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
    doc = ls.docs.pop(params.text_document.uri, None)
    if doc is None:
        return
    doc.closed = True
    doc.resolve_waiters()
    if doc.path and ls.uri_by_path.get(doc.path) == doc.uri:
        del ls.uri_by_path[doc.path]
        ls.overlays.pop(doc.path, None)
    if not doc.is_python:
        return
    if ls.features.pull_diagnostics:
        # A client pulling workspace diagnostics keeps a closed file's last ones until a
        # workspace report says otherwise (vscode-languageclient does).
        ls.closed_uris.add(doc.uri)
    else:
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=doc.uri, diagnostics=[]))
    ls.schedule_dependents([doc.path], ls.dependents_delay)  # the file on disk replaces the buffer


def register(server: FabricLanguageServer) -> None:
    server.feature(types.TEXT_DOCUMENT_DID_OPEN)(did_open)
    server.feature(types.TEXT_DOCUMENT_DID_CHANGE)(did_change)
    server.feature(types.TEXT_DOCUMENT_DID_SAVE)(did_save)
    server.feature(types.TEXT_DOCUMENT_DID_CLOSE)(did_close)
