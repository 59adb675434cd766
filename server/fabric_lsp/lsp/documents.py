"""Open documents: text kept in sync with the editor (incremental changes), version, generation.

The server applies text changes itself rather than through pygls' document store, because that one
splits lines with `str.splitlines()` (which also breaks at form feeds, U+2028, ...) while LSP and
Python break only at \\n, \\r\\n and \\r.

`generation` counts every reason to analyse the document again: its own edits and changes of other
files or settings it may depend on. An analysis result is kept only if the generation it was started
for is still current; otherwise it is stale and dropped.

A notebook is one analysis unit (`NotebookDocument`): its Python code cells joined in order
(fabric_lsp.sources.notebook.join_cells), analysed under the notebook's path, its findings then mapped back
to the cells (cells.py). Its cells' text documents are kept here too, never analysed on their own.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Sequence

from lsprotocol import types
from pygls.uris import to_fs_path, uri_scheme

from fabric_lsp.findings import Finding
from fabric_lsp.lsp.positions import LineIndex
from fabric_lsp.sources.notebook import NOTEBOOK_SUFFIXES, PYTHON_LANGUAGES, JoinedCells, join_cells, utf8_size

PYTHON_SUFFIXES = (".py", ".pyi")
# A notebook cell's text document (VS Code's scheme): part of a notebook, never a file of its own.
NOTEBOOK_CELL_SCHEMES = ("vscode-notebook-cell",)


def is_cell_uri(uri: str) -> bool:
    return uri_scheme(uri) in NOTEBOOK_CELL_SCHEMES


def safe_name(uri: str, fallback: str) -> str:
    """The last part of a URI as a file name (untitled buffers)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in uri.rsplit("/", 1)[-1]) or fallback


def uri_to_path(uri: str) -> str | None:
    path = to_fs_path(uri)
    return os.path.abspath(path) if path else None


@dataclass
class CellResult:
    """What a notebook's analysis holds for one of its cells."""

    version: int | None  # the cell document's version the analysis read
    text: str
    diagnostics: list[types.Diagnostic]
    result_id: str


@dataclass
class AnalysisResult:
    generation: int
    version: int | None
    text: str
    findings: tuple[Finding, ...]
    diagnostics: list[types.Diagnostic]
    result_id: str
    enabled: bool = True
    # The files of the programs the document took part in (its own included): the documents to
    # re-analyse when one of them changes. Empty: it takes part in none (cheap to re-check).
    files: frozenset[str] = frozenset()
    # A notebook's analysed cells by URI; its `findings` are then in cell coordinates, each with
    # the cell's URI as its path (cells.py), and `diagnostics` are every cell's.
    cells: dict[str, CellResult] = field(default_factory=dict)


@dataclass(frozen=True)
class NotebookSnapshot:
    """A notebook's analysed cells as the event loop hands them over: their texts, not yet joined.
    Joining neutralises and parses every cell, so it happens in the analysis thread (`joined`),
    after the cells' size was checked against max-file-size (`code_size`)."""

    cells: tuple[tuple[int, str], ...]  # (cell number, text) of the analysed code cells, in order
    uris: dict[int, str]  # cell number -> cell URI
    versions: dict[str, int | None]  # cell URI -> its version
    name: str  # the notebook's file name, for messages ("nb.ipynb")
    previous: JoinedCells | None = None  # the last join of this notebook, reused if no cell changed

    @property
    def code_size(self) -> int:
        return sum(utf8_size(text) for _, text in self.cells)

    @cached_property
    def joined(self) -> JoinedCells:
        """The cells joined (analysis thread only)."""
        previous = self.previous
        if previous is not None and tuple((cell.number, cell.text) for cell in previous.cells) == self.cells:
            return previous
        return join_cells(list(self.cells))

    def joined_if_made(self) -> JoinedCells | None:
        return self.__dict__.get("joined")


@dataclass
class Snapshot:
    """What one analysis sees: frozen before it is handed to the worker thread."""

    uri: str
    path: str
    version: int | None
    text: str
    generation: int
    notebook: NotebookSnapshot | None = None

    def analysed_text(self) -> str:
        """The text the engine reads: the document's, or a notebook's cells joined (analysis thread)."""
        return self.notebook.joined.text if self.notebook is not None else self.text


@dataclass(eq=False)
class Document:
    uri: str
    path: str | None  # absolute path of a file: URI, else None
    language_id: str
    version: int | None
    text: str
    generation: int = 0
    closed: bool = False
    result: AnalysisResult | None = None
    not_before: float = 0.0  # event-loop time before which a dependent re-analysis waits
    runner: asyncio.Task[None] | None = None  # the task analysing this document, while it runs
    waiters: list[asyncio.Future[Any]] = field(default_factory=list)
    cell: bool = False  # a notebook cell's text document: kept in sync, never analysed on its own
    _index: LineIndex | None = field(default=None, repr=False)

    @property
    def index(self) -> LineIndex:
        if self._index is None or self._index.text is not self.text:
            self._index = LineIndex(self.text)
        return self._index

    @property
    def is_python(self) -> bool:
        if self.cell:
            return False
        if self.language_id == "python":
            return True
        return bool(self.path and self.path.endswith(PYTHON_SUFFIXES))

    @property
    def analysis_path(self) -> str:
        """The path the engine is told: untitled buffers get one in the current directory."""
        if self.path:
            return self.path
        name = safe_name(self.uri, "untitled")
        return os.path.join(os.getcwd(), name if name.endswith(".py") else name + ".py")

    def snapshot(self) -> Snapshot:
        return Snapshot(self.uri, self.analysis_path, self.version, self.text, self.generation)

    def apply_changes(self, changes: Sequence[Any], encoding: str) -> None:
        for change in changes:
            change_range = getattr(change, "range", None)
            if change_range is None:  # the whole document
                self.text = change.text
                continue
            index = self.index
            start = index.offset_from_lsp(change_range.start, encoding)
            end = index.offset_from_lsp(change_range.end, encoding)
            if end < start:
                start, end = end, start
            self.text = self.text[:start] + change.text + self.text[end:]

    def current_result(self) -> AnalysisResult | None:
        result = self.result
        return result if result is not None and result.generation == self.generation else None

    def resolve_waiters(self) -> None:
        waiters, self.waiters = self.waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)


@dataclass(eq=False)
class Cell:
    number: int  # 1-based position among the notebook's cells the client sent
    uri: str
    kind: types.NotebookCellKind


@dataclass(eq=False)
class NotebookDocument(Document):
    """A notebook: the analysis unit, its code cells joined in the analysis thread (its `text` stays
    empty); `cells` is the order the client sent, `cell_docs` their text documents."""

    cells: list[Cell] = field(default_factory=list)
    cell_docs: dict[str, Document] = field(default_factory=dict)
    # cell URI -> (result id, version) of the diagnostics last published for it (push)
    published: dict[str, tuple[str, int | None]] = field(default_factory=dict)
    # The last snapshot handed to the analysis: its join (made in the analysis thread, which is done
    # with it before the next snapshot is taken) is reused while no cell changes.
    last: NotebookSnapshot | None = None

    @property
    def is_python(self) -> bool:
        return True

    @property
    def analysis_path(self) -> str:
        if self.path:
            return self.path
        name = safe_name(self.uri, "untitled")
        return os.path.join(os.getcwd(), name if name.endswith(NOTEBOOK_SUFFIXES) else name + ".ipynb")

    def analysed_cells(self) -> list[tuple[Cell, Document]]:
        """The code cells whose text document is Python, in order."""
        found = []
        for cell in self.cells:
            doc = self.cell_docs.get(cell.uri)
            if doc is not None and cell.kind == types.NotebookCellKind.Code and (
                doc.language_id.lower() in PYTHON_LANGUAGES
            ):
                found.append((cell, doc))
        return found

    def snapshot(self) -> Snapshot:
        """The cells' texts as they are (no joining here: this runs on the event loop)."""
        analysed = self.analysed_cells()
        previous = self.last.joined_if_made() if self.last is not None else None
        notebook = NotebookSnapshot(
            cells=tuple((cell.number, doc.text) for cell, doc in analysed),
            uris={cell.number: cell.uri for cell, _ in analysed},
            versions={cell.uri: doc.version for cell, doc in analysed},
            name=os.path.basename(self.analysis_path),
            previous=previous,
        )
        self.last = notebook
        # `text` is the joined cells: the analysis thread joins them (Snapshot.analysed_text).
        return Snapshot(self.uri, self.analysis_path, self.version, "", self.generation, notebook)
