"""A notebook's findings, from its joined text to its cells.

The engine analyses a notebook as its code cells joined (fabric_lsp.sources.notebook.join_cells) and reports
findings in the joined text's coordinates, under the notebook's path. Here each one moves to the cell
holding it and takes the cell's URI as its path; from then on the text-document code (convert.py,
actions.py, hover.py) treats cells like files. Related locations in the notebook point at their
cell, another cell included. A fix edit of the joined text becomes an edit of one cell, maybe not
the finding's own (FAB001's `mark_forward_method` goes after the setup, in the setup's cell); a fix
with an edit across cells is left out. Places in other files stay as they are.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any, Callable, Mapping

from fabric_lsp.findings import Finding, Fix, Position, Span, TextEdit
from fabric_lsp.lsp.convert import ClientFeatures, TextSource, result_id, to_diagnostic
from fabric_lsp.lsp.documents import CellResult, NotebookSnapshot, Snapshot
from fabric_lsp.sources.notebook import SpansCells, cell_edit

log = logging.getLogger("fabric_lsp.lsp")


def _cell_end(text: str) -> Position:
    lines = text.split("\n")
    return Position(len(lines) - 1, len(lines[-1]))


def cell_span(span: Span, path: str, notebook: NotebookSnapshot) -> Span | None:
    """`span` in its cell (path: the cell's URI) when it lies in the notebook; None when it lies in
    no cell. A span running into the next cell ends where its own cell ends."""
    if span.path != path:
        return span
    start = notebook.joined.to_cell(span.start)
    if start is None:
        return None
    cell, begin = start
    uri = notebook.uris.get(cell.number)
    if uri is None:
        return None
    end = notebook.joined.to_cell(span.end)
    finish = end[1] if end is not None and end[0].number == cell.number else _cell_end(cell.text)
    return Span(uri, begin, max(begin, finish))


def cell_fix(fix: Fix | None, path: str, notebook: NotebookSnapshot) -> Fix | None:
    if fix is None:
        return None
    edits = []
    for edit in fix.edits:
        if edit.path != path:
            edits.append(edit)
            continue
        try:
            moved = cell_edit(notebook.joined, edit.start, edit.end, edit.new_text)
        except SpansCells as error:
            log.debug("%s: fix %r left out: %s", path, fix.title, error)
            return None
        uri = notebook.uris.get(moved.number)
        if uri is None:
            return None
        edits.append(TextEdit(uri, moved.start, moved.end, moved.new_text))
    return replace(fix, edits=tuple(edits))


def to_cells(findings: tuple[Finding, ...], path: str, notebook: NotebookSnapshot) -> tuple[Finding, ...]:
    """The notebook's findings with every place and edit in the notebook moved to its cell."""
    mapped = []
    for finding in findings:
        span = cell_span(finding.span, path, notebook)
        if span is None:
            log.debug("%s: %s at %s lies in no cell", path, finding.code, finding.span.start)
            continue
        related = []
        for item in finding.related:
            related_span = cell_span(item.span, path, notebook)
            if related_span is not None:
                related.append(replace(item, span=related_span))
        # `alternatives` were chosen from already (confinement): only `fix` is shown.
        fix = cell_fix(finding.fix, path, notebook)
        mapped.append(replace(finding, span=span, related=tuple(related), fix=fix, alternatives=()))
    return tuple(mapped)


def cell_texts(notebook: NotebookSnapshot) -> dict[str, str]:
    """Cell URI -> the cell's text as the editor has it (magics and all)."""
    return {notebook.uris[number]: text for number, text in notebook.cells if number in notebook.uris}


def cell_labels(notebook: NotebookSnapshot) -> dict[str, str]:
    """How a message names a cell: `nb.ipynb:cell 3`, as `fabric-lsp check` does."""
    return {uri: f"{notebook.name}:cell {number}" for number, uri in notebook.uris.items()}


def cell_results(
    findings: tuple[Finding, ...],
    snapshot: Snapshot,
    open_texts: Mapping[str, str],
    open_uris: Mapping[str, str],
    features: ClientFeatures,
    record_url: Callable[[str], str | None],
    converter: Any,
) -> tuple[tuple[Finding, ...], dict[str, CellResult]]:
    """The findings in cell coordinates, and each analysed cell's diagnostics (empty ones too)."""
    notebook = snapshot.notebook
    assert notebook is not None
    mapped = to_cells(findings, snapshot.path, notebook)
    texts_by_uri = cell_texts(notebook)
    labels = cell_labels(notebook)
    results: dict[str, CellResult] = {}
    for uri, text in texts_by_uri.items():
        texts = TextSource(uri, uri, text, open_texts, open_uris, cells=texts_by_uri, labels=labels)
        diagnostics = [to_diagnostic(f, texts, features, record_url) for f in mapped if f.span.path == uri]
        results[uri] = CellResult(notebook.versions.get(uri), text, diagnostics, result_id(uri, diagnostics, converter))
    return mapped, results
