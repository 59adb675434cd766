"""Open documents: text kept in sync with the editor (incremental changes), version, generation.

The server applies text changes itself rather than through pygls' document store, because that one
splits lines with `str.splitlines()` (which also breaks at form feeds, U+2028, ...) while LSP and
Python break only at \\n, \\r\\n and \\r.

`generation` counts every reason to analyse the document again: its own edits and changes of other
files or settings it may depend on. An analysis result is kept only if the generation it was started
for is still current; otherwise it is stale and dropped.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from typing import Any, Sequence

from lsprotocol import types
from pygls.uris import to_fs_path

from fabric_lsp.findings import Finding
from fabric_lsp.lsp.positions import LineIndex

PYTHON_SUFFIXES = (".py", ".pyi")


def uri_to_path(uri: str) -> str | None:
    path = to_fs_path(uri)
    return os.path.abspath(path) if path else None


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


@dataclass
class Snapshot:
    """What one analysis sees: frozen before it is handed to the worker thread."""

    uri: str
    path: str
    version: int | None
    text: str
    generation: int


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
    _index: LineIndex | None = field(default=None, repr=False)

    @property
    def index(self) -> LineIndex:
        if self._index is None or self._index.text is not self.text:
            self._index = LineIndex(self.text)
        return self._index

    @property
    def is_python(self) -> bool:
        if self.language_id == "python":
            return True
        return bool(self.path and self.path.endswith(PYTHON_SUFFIXES))

    @property
    def analysis_path(self) -> str:
        """The path the engine is told: untitled buffers get one in the current directory."""
        if self.path:
            return self.path
        name = "".join(c if c.isalnum() or c in "-_." else "_" for c in self.uri.rsplit("/", 1)[-1]) or "untitled"
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
