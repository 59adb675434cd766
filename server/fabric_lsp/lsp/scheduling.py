"""Analysis scheduling: when a document (or notebook) is analysed, on which thread, and what happens
to the result (a base class of the session's FabricLanguageServer).

Analysis runs in one worker thread (jedi and the engine's caches are shared and not meant for
concurrent use) on a frozen snapshot (uri, version, text, generation); a result whose generation is
no longer current is dropped, and the document is analysed again. Requests that need results
(pull diagnostics, hover, fix-all) wait for the current generation and can be cancelled with
`$/cancelRequest` while they wait.

Dependents: a change of a Python file (an open document's edit, open/close, didSave, a watched
file) re-analyses the open documents whose last analysis read that file (and those that took part
in no program), after a short pause so that typing in one file does not re-analyse the others at
every keystroke. Analysing a document takes milliseconds once jedi has seen the project, and the
engine re-reads other modules through the overlay-aware workspace.

A notebook is analysed like a document: its joined cells under the notebook's path; its findings
are then mapped to the cells (cells.py) and published per cell URI.

Diagnostics are pushed (`textDocument/publishDiagnostics` with the version) unless the client
declares pull diagnostics; then the server registers `textDocument/diagnostic` and
`workspace/diagnostic` and never pushes to it. A pulled document whose diagnostics change without an
edit of its own (a dependency, settings) triggers `workspace/diagnostic/refresh` when the client
supports it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import Any, Iterable, Mapping

from lsprotocol import types

from fabric_lsp.findings import Finding
from fabric_lsp.lsp.cells import cell_results
from fabric_lsp.lsp.convert import TextSource, result_id, to_diagnostic
from fabric_lsp.lsp.documents import AnalysisResult, CellResult, Document, NotebookDocument, Snapshot

log = logging.getLogger("fabric_lsp.lsp")

DEPENDENTS_DELAY = 0.15  # seconds of quiet before other open documents are re-analysed
CLIENT_REQUEST_TIMEOUT = 10.0  # seconds an answer from the client (settings, registration) is waited for
# Testing hook: seconds each analysis sleeps first, so that tests can make edits and cancellations
# arrive while an analysis is running. Never set in normal use.
ANALYSIS_DELAY_ENV = "FABRIC_LSP_TEST_ANALYSIS_DELAY"
# Every this many analyses, once that analysis's result is out: the cyclic collector's full pass (the
# server's thresholds leave the oldest generation to it; the cycles an edit leaves there, a few
# hundred objects each, grew the memory replay by 3.5 MB over its last fifth) and the C allocator
# hands the memory freed since back to the system (freed pages otherwise stay with the process).
TRIM_EVERY = 50


def release_free_memory() -> None:
    import gc

    gc.collect()
    try:
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (macOS, musl, Windows): nothing to do
        pass


def utf8_size_over(text: str, limit: int) -> int | None:
    """The text's size in bytes (as saved, UTF-8) when over limit, else None; encodes only when the
    character count cannot decide (1 to 4 bytes per character)."""
    if len(text) * 4 <= limit:
        return None
    size = len(text.encode("utf-8", "surrogatepass"))
    return size if size > limit else None


def analysis_delay_from_env() -> float:
    try:
        return max(0.0, float(os.environ.get(ANALYSIS_DELAY_ENV, "0") or 0))
    except ValueError:
        return 0.0


class AnalysisScheduler:
    """The analysis half of FabricLanguageServer (its state is the session's)."""

    def schedule(self, doc: Document, delay: float = 0.0) -> None:
        """Analyse `doc` again (its current text), now or after `delay` seconds of quiet."""
        if doc.closed or not doc.is_python:
            return
        loop = asyncio.get_running_loop()
        doc.generation += 1
        doc.not_before = max(doc.not_before, loop.time() + delay) if delay else 0.0
        if doc.runner is None or doc.runner.done():
            doc.runner = loop.create_task(self._runner(doc))

    def schedule_all(self, delay: float = 0.0, except_uri: str | None = None) -> None:
        for doc in self.units():
            if doc.uri != except_uri:
                self.schedule(doc, delay)

    def schedule_dependents(self, paths: Iterable[str | None], delay: float = 0.0, except_uri: str | None = None) -> None:
        """Analyse again the open documents whose findings a change of `paths` can change: those
        whose last analysis read one of them, those not analysed yet, and those that took part in
        no program (a change elsewhere can make them join one; checking them costs next to nothing).
        Re-analysing every open document at every keystroke cost seconds of CPU with hundreds open."""
        changed = {p for p in paths if p}
        for doc in self.units():
            if doc.uri == except_uri:
                continue
            result = doc.result
            if result is None or not result.files or not changed.isdisjoint(result.files):
                self.schedule(doc, delay)

    async def _wait_settings(self) -> None:
        if self.settings_ready is not None and not self.settings_ready.is_set():
            try:
                await asyncio.wait_for(self.settings_ready.wait(), CLIENT_REQUEST_TIMEOUT)
            except asyncio.TimeoutError:
                log.warning("no settings from the editor yet; analysing with the defaults")

    async def _runner(self, doc: Document) -> None:
        loop = asyncio.get_running_loop()
        try:
            while not doc.closed:
                wait = doc.not_before - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                    continue
                if self.settings_ready is not None and not self.settings_ready.is_set():
                    await self._wait_settings()  # then analyse, with whatever settings there are
                snapshot = doc.snapshot()
                open_uris = dict(self.uri_by_path)
                try:
                    result = await loop.run_in_executor(self.analysis_pool, self._analyse, doc, snapshot, open_uris)
                except RuntimeError as error:  # the pool is shut down: the server is exiting
                    log.debug("analysis of %s not run: %s", doc.uri, error)
                    return
                if doc.closed:
                    return
                if result is None or doc.generation != snapshot.generation:
                    log.debug("%s: dropped the result for version %s (stale)", doc.uri, snapshot.version)
                    self.trace(f"dropped stale analysis of {doc.uri} version {snapshot.version}")
                    continue
                self._store(doc, result)
                return
        except Exception:
            log.exception("analysis of %s failed", doc.uri)
        finally:
            if doc.runner is asyncio.current_task():
                doc.runner = None

    def _analyse(self, doc: Document, snapshot: Snapshot, open_uris: Mapping[str, str]) -> AnalysisResult | None:
        """Worker thread. None when the snapshot went stale before the work started."""
        self.analysis_busy.set()
        try:
            return self._analyse_now(doc, snapshot, open_uris)
        finally:
            self.analysis_busy.clear()
            self.analyses += 1
            if self.analyses % TRIM_EVERY == 0:  # queued behind this analysis: its result is not delayed
                try:
                    self.analysis_pool.submit(release_free_memory)
                except RuntimeError:  # the pool is shut down: the server is exiting
                    pass

    def _analyse_now(self, doc: Document, snapshot: Snapshot, open_uris: Mapping[str, str]) -> AnalysisResult | None:
        if doc.closed or doc.generation != snapshot.generation:
            return None
        if self.analysis_delay:
            time.sleep(self.analysis_delay)
        started = time.perf_counter()
        findings: tuple = ()
        files: frozenset[str] = frozenset()
        enabled = True
        text = snapshot.text  # a notebook's: its joined cells, once joined
        try:
            # The analysis machinery loads on the first analysis, not at `initialize` (issue 29).
            from fabric_lsp.analysis.incremental import freeze_what_analyses_keep
            from fabric_lsp.fixes.confinement import FixBounds, confine
            from fabric_lsp.engine import check_document, workspace_for

            freeze_what_analyses_keep()  # the server owns its heap (see there)
            from fabric_lsp.records.pages import page_url
            from fabric_lsp.sources.walk import exclude_matcher

            config, settings = self.config_for(snapshot.path)
            enabled = settings.enable
            if not enabled:
                pass
            elif config.exclude and exclude_matcher(config.exclude, config.root).excluded(snapshot.path, False):
                log.debug("%s: excluded by the configuration", snapshot.path)
            elif (size := self._size_over(snapshot, config.max_file_size)) is not None:
                log.info("%s: %d bytes, over max-file-size", snapshot.path, size)
                # shown once per file, not at every keystroke: the message does not carry the size
                what = "its code cells are" if snapshot.notebook is not None else "it is"
                self._call_in_loop(self.show_once, [
                    f"fabric-lsp: {snapshot.path} is not analysed: {what} larger than max-file-size "
                    f"({config.max_file_size} bytes)"
                ], types.MessageType.Info)
            else:
                workspace = workspace_for(config)
                workspace.probe_interpreter_soon()  # its answer arrives while the files are read and parsed
                if workspace.overlays is not self.overlays:
                    workspace.overlays = self.overlays  # unsaved buffers, seen by every analysis
                    log.info("analysing %s against the interpreter %s", workspace.root, workspace.python)
                for problem in workspace.problems:
                    self._call_in_loop(self.show_once, [f"fabric-lsp: {problem}"])
                text = snapshot.analysed_text()  # a notebook's cells joined here, under the size limit
                found, files = check_document(snapshot.path, text, config, workspace)
                # Quick fixes and fix-all edit only files of the workspace, never installed code
                # (a workspace file linking outside, a module found on the interpreter's path).
                bounds = FixBounds(self.fix_roots_for(snapshot.path), lambda: workspace.library_path)
                found, _ = confine(found, bounds)
                findings = tuple(f for f in found if f.span.path == snapshot.path)

            def url_of(code: str) -> str | None:  # the rule page: the team's docs-url or the installed copy
                return page_url(code, config.docs_url)

            findings, diagnostics, cells = self._diagnostics(snapshot, findings, open_uris, url_of)
        except Exception:  # one file's crash must not stop the server: report nothing for it
            log.exception("%s: analysis failed", snapshot.path)
            findings, diagnostics, cells = (), [], {}  # a notebook's cells: cleared as no longer analysed
        elapsed = (time.perf_counter() - started) * 1000
        log.debug(
            "%s: version %s analysed in %.0f ms: %d finding(s)", snapshot.uri, snapshot.version, elapsed, len(findings)
        )
        return AnalysisResult(
            generation=snapshot.generation,
            version=snapshot.version,
            text=text,
            findings=findings,
            diagnostics=diagnostics,
            result_id=result_id(snapshot.uri, diagnostics, self.protocol._converter),
            enabled=enabled,
            files=files,
            cells=cells,
        )

    @staticmethod
    def _size_over(snapshot: Snapshot, limit: int) -> int | None:
        """The document's size in bytes when over `limit` (a notebook's: its analysed code cells',
        counted before they are joined), else None."""
        if snapshot.notebook is not None:
            size = snapshot.notebook.code_size
            return size if size > limit else None
        return utf8_size_over(snapshot.text, limit)

    def _diagnostics(
        self, snapshot: Snapshot, findings: tuple[Finding, ...], open_uris: Mapping[str, str], url_of: Any
    ) -> tuple[tuple[Finding, ...], list[types.Diagnostic], dict[str, CellResult]]:
        """The findings as diagnostics; a notebook's mapped to its cells first."""
        if snapshot.notebook is None:
            texts = TextSource(snapshot.path, snapshot.uri, snapshot.text, self.overlays, open_uris)
            return findings, [to_diagnostic(f, texts, self.features, url_of) for f in findings], {}
        mapped, cells = cell_results(
            findings, snapshot, self.overlays, open_uris, self.features, url_of, self.protocol._converter
        )
        return mapped, [d for part in cells.values() for d in part.diagnostics], cells

    def _store(self, doc: Document, result: AnalysisResult) -> None:
        previous = doc.result
        doc.result = result
        doc.resolve_waiters()
        if self.features.pull_diagnostics:
            if previous is not None and previous.version == result.version and previous.result_id != result.result_id:
                self._request_refresh()  # changed without an edit of its own
            elif previous is not None and _a_cell_changed_unedited(previous, result):
                self._request_refresh()  # the client pulls only the cells it edited: cell 4 after cell 3's fix
            return
        if isinstance(doc, NotebookDocument):
            self._publish_cells(doc, result)
            return
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=doc.uri, diagnostics=result.diagnostics, version=result.version)
        )

    def _publish_cells(self, notebook: NotebookDocument, result: AnalysisResult) -> None:
        """Each cell's diagnostics, where they or the cell's version changed since they were last
        published (every cell the first time: an empty list clears old squiggles); empty ones for the
        cells no longer analysed (removed, or no longer Python code)."""
        for uri, part in result.cells.items():
            if notebook.published.get(uri) != (part.result_id, part.version):
                self.text_document_publish_diagnostics(
                    types.PublishDiagnosticsParams(uri=uri, diagnostics=part.diagnostics, version=part.version)
                )
        for uri in [uri for uri in notebook.published if uri not in result.cells]:
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
        notebook.published = {uri: (part.result_id, part.version) for uri, part in result.cells.items()}

    def _request_refresh(self) -> None:
        if not self.features.diagnostic_refresh or self._refresh_handle is not None:
            return

        def send() -> None:
            self._refresh_handle = None
            try:
                self.workspace_diagnostic_refresh(None)
            except Exception as error:
                log.debug("workspace/diagnostic/refresh failed: %s", error)

        self._refresh_handle = asyncio.get_running_loop().call_later(0.05, send)

    async def current_result(self, doc: Document) -> AnalysisResult | None:
        """The result for the document's current generation, waiting for it if needed."""
        while not doc.closed:
            result = doc.current_result()
            if result is not None:
                return result
            if doc.runner is None or doc.runner.done():
                if not doc.is_python:
                    return None
                self.schedule(doc)
            waiter = asyncio.get_running_loop().create_future()
            doc.waiters.append(waiter)
            await waiter
        return None

    # -- shutdown -------------------------------------------------------------------------------
    def stop_analysis(self) -> None:
        self.analysis_pool.shutdown(wait=False, cancel_futures=True)


def _a_cell_changed_unedited(previous: AnalysisResult, result: AnalysisResult) -> bool:
    """Whether a notebook cell's diagnostics changed (or it is no longer analysed) while its own text
    did not: an edit in another cell (a mark added in cell 3) changed them."""
    for uri, before in previous.cells.items():
        after = result.cells.get(uri)
        if after is None or (after.version == before.version and after.result_id != before.result_id):
            return True
    return False
