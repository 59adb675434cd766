"""The language server: pygls wiring, documents, analysis scheduling, diagnostics, settings.

Analysis runs in one worker thread (jedi and the engine's caches are shared and not meant for
concurrent use) on a frozen snapshot (uri, version, text, generation); a result whose generation is
no longer current is dropped, and the document is analysed again. Requests that need results
(pull diagnostics, hover, fix-all) wait for the current generation and can be cancelled with
`$/cancelRequest` while they wait.

Dependents: a change of a Python file (an open document's edit, open/close, didSave, a watched
file) re-analyses the open documents whose last analysis read that file (and those that took part
in no program), after a short pause so that typing in one file does not re-analyse the others at
every keystroke. Analysing a document takes milliseconds once jedi
has seen the project, and the engine re-reads other modules through the overlay-aware workspace.

Diagnostics are pushed (`textDocument/publishDiagnostics` with the version) unless the client
declares pull diagnostics; then the server registers `textDocument/diagnostic` and
`workspace/diagnostic` and never pushes to it. A pulled document whose diagnostics change without an
edit of its own (a dependency, settings) triggers `workspace/diagnostic/refresh` when the client
supports it.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import os
import sys
import stat
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from lsprotocol import types
from pygls.io_ import StdinAsyncReader, StdoutWriter
from pygls.lsp.server import LanguageServer

import fabric_lsp
from fabric_lsp.confinement import FixBounds, confine
from fabric_lsp.config import Config, load_config
from fabric_lsp.engine import check_document, workspace_for
from fabric_lsp.lsp import actions as code_actions_module
from fabric_lsp.lsp.actions import KINDS, code_actions, resolve
from fabric_lsp.lsp.convert import ClientFeatures, TextSource, result_id, to_diagnostic
from fabric_lsp.lsp.documents import AnalysisResult, Document, Snapshot, uri_to_path
from fabric_lsp.lsp.hover import hover as hover_at
from fabric_lsp.lsp.logs import ClientLogHandler, OneLineFormatter, drop_pygls_deserialize_errors
from fabric_lsp.lsp.positions import encoding_name
from fabric_lsp.lsp.protocol import FabricProtocol
from fabric_lsp.lsp.settings import DEFAULT_LOG_LEVEL, EditorSettings, editor_settings
from fabric_lsp.lsp.transport import read_first_frame, read_frames
from fabric_lsp.records import RecordSet, load_records, render_markdown, render_text, rule_by_code
from fabric_lsp.report.escape import escape_controls
from fabric_lsp.walk import ExcludeMatcher

log = logging.getLogger("fabric_lsp.lsp")

NAME = "fabric-lsp"
SECTION = "fabric-lsp"
EXPLAIN_COMMAND = "fabric-lsp.explain"
RECHECK_COMMAND = "fabric-lsp.recheck"
DEPENDENTS_DELAY = 0.15  # seconds of quiet before other open documents are re-analysed
PROCESS_POLL_SECONDS = 2.0
AUTH_TIMEOUT_SECONDS = 30.0  # a TCP connection that has not shown the token by then is closed
CLIENT_REQUEST_TIMEOUT = 10.0
# Testing hook: seconds each analysis sleeps first, so that tests can make edits and cancellations
# arrive while an analysis is running. Never set in normal use.
ANALYSIS_DELAY_ENV = "FABRIC_LSP_TEST_ANALYSIS_DELAY"


def client_features(capabilities: types.ClientCapabilities, encoding: str) -> ClientFeatures:
    text = capabilities.text_document
    workspace = capabilities.workspace
    publish = text.publish_diagnostics if text else None
    action = text.code_action if text else None
    hover = text.hover if text else None
    formats = [getattr(f, "value", f) for f in (hover.content_format or [])] if hover else []
    preferred = next((f for f in formats if f in ("markdown", "plaintext")), "plaintext")
    resolve_properties = action.resolve_support.properties if action and action.resolve_support else []
    watched = workspace.did_change_watched_files if workspace else None
    change_configuration = workspace.did_change_configuration if workspace else None
    return ClientFeatures(
        encoding=encoding,
        related_information=bool(publish and publish.related_information),
        code_description=bool(publish and publish.code_description_support),
        pull_diagnostics=bool(text and text.diagnostic is not None),
        diagnostic_refresh=bool(workspace and workspace.diagnostics and workspace.diagnostics.refresh_support),
        document_changes=bool(workspace and workspace.workspace_edit and workspace.workspace_edit.document_changes),
        code_action_literals=bool(action and action.code_action_literal_support),
        code_action_data=bool(action and action.data_support),
        resolve_edit=bool(action and action.data_support and "edit" in resolve_properties),
        markdown_hover=preferred == "markdown",
        configuration=bool(workspace and workspace.configuration),
        did_change_configuration_dynamic=bool(change_configuration and change_configuration.dynamic_registration),
        watched_files_dynamic=bool(watched and watched.dynamic_registration),
    )


# Every this many analyses, the C allocator hands the memory freed since back to the system: the
# Python objects of an edit's analysis are all freed (their count stays flat over thousands of
# edits), but the freed pages stay with the process.
TRIM_EVERY = 50


def release_free_memory() -> None:
    try:
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (macOS, musl, Windows): nothing to do
        pass


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    try:  # a killed child that its parent has not reaped yet is gone for our purposes
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[-1].split()[0]
        return state not in (b"Z", b"X")
    except (OSError, IndexError):
        return True


def utf8_size_over(text: str, limit: int) -> int | None:
    """The text's size in bytes (as saved, UTF-8) when over limit, else None; encodes only when the
    character count cannot decide (1 to 4 bytes per character)."""
    if len(text) * 4 <= limit:
        return None
    size = len(text.encode("utf-8", "surrogatepass"))
    return size if size > limit else None


def _analysis_delay() -> float:
    try:
        return max(0.0, float(os.environ.get(ANALYSIS_DELAY_ENV, "0") or 0))
    except ValueError:
        return 0.0


class FabricLanguageServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            NAME,
            fabric_lsp.__version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=FabricProtocol,
        )
        self.docs: dict[str, Document] = {}
        self.overlays: dict[str, str] = {}  # path -> text of open documents (shared with the engine)
        self.uri_by_path: dict[str, str] = {}
        self.closed_uris: set[str] = set()  # pull: closed since the last workspace/diagnostic report
        self.features = ClientFeatures()
        self.folders: list[tuple[str, str]] = []  # (uri, path), longest path first
        self.root_path: str | None = None
        self.initialization_options: Any = None
        self.pushed_settings: Any = None  # didChangeConfiguration payload (clients without workspace/configuration)
        self.settings: dict[str | None, EditorSettings] = {None: EditorSettings()}
        self.log_level = DEFAULT_LOG_LEVEL
        self.exit_code = 0
        self.analysis_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fabric-lsp-analysis")
        self.analysis_delay = _analysis_delay()
        self.analysis_busy = threading.Event()  # set while the worker analyses a document
        self.analyses = 0  # analyses run (release_free_memory)
        self.dependents_delay = DEPENDENTS_DELAY
        self.settings_ready: asyncio.Event | None = None
        self._shown: set[str] = set()
        self._configs: dict[tuple[str, str | None, int], tuple[Config, tuple[str, ...]]] = {}
        self._settings_epoch = 0  # part of the config cache key: a stale analysis cannot refill it
        self._records: dict[tuple[str, ...], RecordSet] = {}
        self._refresh_handle: asyncio.TimerHandle | None = None
        self._log_handler: ClientLogHandler | None = None
        self._background: set[asyncio.Task[Any]] = set()

    # -- transport: pygls' server loops, with fabric_lsp's frame reader (transport.py) ----------
    def start_io(self, stdin: Any = None, stdout: Any = None) -> None:
        self._stop_event = threading.Event()
        reader = StdinAsyncReader(stdin or sys.stdin.buffer, self.thread_pool)
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        try:
            asyncio.run(read_frames(reader, self.protocol, self._stop_event))
        except BrokenPipeError:
            log.error("the connection to the client is lost; shutting down")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()

    def start_tcp(self, host: str, port: int, token: str) -> None:
        """Serve the first connection that opens with an `initialize` carrying the token
        (initializationOptions.token); any other connection is closed, unread beyond its first frame."""
        self._stop_event = stop_event = threading.Event()
        client_connected = False

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            nonlocal client_connected
            peer = writer.get_extra_info("peername")
            if client_connected:
                log.warning("TCP connection from %s closed: a client is already connected", peer)
                writer.close()
                return
            try:
                first = await asyncio.wait_for(read_first_frame(reader), AUTH_TIMEOUT_SECONDS)
            except asyncio.TimeoutError:
                first, refusal = None, f"no initialize with the token within {AUTH_TIMEOUT_SECONDS:g} s"
            else:
                refusal = "not an LSP frame" if first is None else None
            payload = None
            if first is not None:
                payload = authenticated_initialize(first[0], token)
                if payload is None:
                    refusal = "the first message is not an initialize with the right token"
            if payload is None or client_connected:
                log.warning("TCP connection from %s closed: %s", peer, refusal or "a client is already connected")
                writer.close()
                return
            client_connected = True
            self.protocol.set_writer(writer)  # type: ignore[arg-type]
            try:
                self.protocol.receive(payload)
                await read_frames(reader, self.protocol, stop_event)
            except SystemExit:  # pygls ends `exit` with sys.exit; asyncio would log it as a crash here
                pass
            finally:
                self.shutdown()  # closes the listening socket: serve() returns, then run() with exit_code

        async def serve() -> None:
            self._server = await asyncio.start_server(connection, host, port)
            async with self._server:
                await self._server.serve_forever()

        try:
            asyncio.run(serve())
        except asyncio.CancelledError:
            pass

    def report_server_error(self, error: Exception, source: Any) -> None:
        # pygls would pop a window/showMessage for each; a failing handler is a log line, not a dialog
        log.error("%s: %s", getattr(source, "__name__", source), error)

    # -- messages -------------------------------------------------------------------------------
    def trace(self, message: str, verbose: str | None = None) -> None:
        trace = getattr(self.protocol.trace, "value", self.protocol.trace)
        if trace in (None, "off"):
            return
        self.log_trace(types.LogTraceParams(message=message, verbose=verbose if trace == "verbose" else None))

    def show_once(
        self, problems: list[str] | tuple[str, ...], kind: types.MessageType = types.MessageType.Warning
    ) -> None:
        """One `window/showMessage` for the problems not shown before (each problem is shown once)."""
        fresh = [p for p in dict.fromkeys(problems) if p not in self._shown]
        if not fresh:
            return
        self._shown.update(fresh)
        for problem in fresh:
            log.warning("%s", problem)
        self.window_show_message(
            types.ShowMessageParams(type=kind, message=escape_controls("\n".join(fresh), keep="\n"))
        )

    def _call_in_loop(self, function: Callable[..., Any], *args: Any) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(function, *args)

    @property
    def _loop(self) -> asyncio.AbstractEventLoop | None:
        return getattr(self, "_event_loop", None)

    def _spawn(self, coroutine: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    # -- folders and settings ---------------------------------------------------------------------
    def set_folders(self, folders: list[tuple[str, str]]) -> None:
        self.folders = sorted(dict(folders).items(), key=lambda item: len(item[1]), reverse=True)

    def folder_of(self, path: str | None) -> str | None:
        if not path:
            return None
        for _, folder in self.folders:
            if path == folder or path.startswith(folder.rstrip(os.sep) + os.sep):
                return folder
        return None

    def fix_roots_for(self, path: str) -> list[str]:
        """The folders a fix for `path` may edit: every workspace folder holding it, else its own folder."""
        roots = [
            folder for _, folder in self.folders if path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)
        ]
        return roots or [os.path.dirname(path)]

    def settings_for(self, path: str | None) -> EditorSettings:
        folder = self.folder_of(path)
        if folder in self.settings:
            return self.settings[folder]
        return self.settings.get(None) or EditorSettings()

    async def refresh_settings(self) -> None:
        """Read the editor settings of every scope again (workspace/configuration when the client has
        it), and forget the configurations and records derived from them."""
        scopes: list[tuple[str | None, str | None]] = [(None, None)] + [(path, uri) for uri, path in self.folders]
        answers: list[Any] = [None] * len(scopes)
        if self.features.configuration:
            items = [types.ConfigurationItem(scope_uri=uri, section=SECTION) for _, uri in scopes]
            try:
                answers = list(
                    await asyncio.wait_for(
                        self.workspace_configuration_async(types.ConfigurationParams(items=items)),
                        CLIENT_REQUEST_TIMEOUT,
                    )
                )
            except Exception as error:  # an editor that cannot answer: its other settings still apply
                log.warning("workspace/configuration failed: %s", error)
                answers = [None] * len(scopes)
            answers = (answers + [None] * len(scopes))[: len(scopes)]
        else:  # settings pushed with didChangeConfiguration apply to every folder
            answers = [self.pushed_settings] * len(scopes)
        settings: dict[str | None, EditorSettings] = {}
        problems: list[str] = []
        for (path, _), answer in zip(scopes, answers, strict=True):
            base = path or self.root_path
            label = f"folder {path}" if path else None
            settings[path] = editor_settings(self.initialization_options, answer, base, label)
            problems.extend(settings[path].problems)
        self.settings = settings
        self.log_level = settings[None].log_level or DEFAULT_LOG_LEVEL
        self.forget_configuration()
        if problems:
            self.show_once(problems)

    def config_for(self, path: str) -> tuple[Config, EditorSettings]:
        """defaults <- [tool.fabric-lsp] of the nearest pyproject.toml <- editor settings of the folder."""
        epoch = self._settings_epoch
        folder = self.folder_of(path)
        settings = self.settings_for(path)
        key = (os.path.dirname(path), folder, epoch)
        cached = self._configs.get(key)
        if cached is None:
            file_config, problems = load_config(Path(path))
            config = replace(file_config, **dict(settings.fields))
            if config.root is None:
                config = replace(config, root=folder or self.root_path or os.path.dirname(path))
            cached = self._configs[key] = (config, tuple(problems))
        config, problems = cached
        if problems and any(p not in self._shown for p in problems):
            self._call_in_loop(self.show_once, list(problems))
        return config, settings

    def records_for(self, config: Config) -> RecordSet:
        key = tuple(config.extend_records)
        records = self._records.get(key)
        if records is None:
            records = self._records[key] = load_records(key)
            lines = [f"fabric-lsp: records: {p}" for p in (*records.problems, *records.notices)]
            if lines:
                self._call_in_loop(self.show_once, lines)
        return records

    def forget_configuration(self) -> None:
        self._settings_epoch += 1
        self._configs.clear()
        self._records.clear()

    # -- analysis -------------------------------------------------------------------------------
    def version_of(self, uri: str) -> int | None:
        doc = self.docs.get(uri)
        return doc.version if doc is not None else None

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
        for doc in list(self.docs.values()):
            if doc.uri != except_uri:
                self.schedule(doc, delay)

    def schedule_dependents(self, paths: Iterable[str | None], delay: float = 0.0, except_uri: str | None = None) -> None:
        """Analyse again the open documents whose findings a change of `paths` can change: those
        whose last analysis read one of them, those not analysed yet, and those that took part in
        no program (a change elsewhere can make them join one; checking them costs next to nothing).
        Re-analysing every open document at every keystroke cost seconds of CPU with hundreds open."""
        changed = {p for p in paths if p}
        for doc in list(self.docs.values()):
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
            if self.analyses % TRIM_EVERY == 0:
                release_free_memory()

    def _analyse_now(self, doc: Document, snapshot: Snapshot, open_uris: Mapping[str, str]) -> AnalysisResult | None:
        if doc.closed or doc.generation != snapshot.generation:
            return None
        if self.analysis_delay:
            time.sleep(self.analysis_delay)
        started = time.perf_counter()
        findings: tuple = ()
        files: frozenset[str] = frozenset()
        enabled = True
        try:
            config, settings = self.config_for(snapshot.path)
            enabled = settings.enable
            records = self.records_for(config)
            if not enabled:
                pass
            elif config.exclude and ExcludeMatcher(config.exclude, config.root).excluded(snapshot.path, False):
                log.debug("%s: excluded by the configuration", snapshot.path)
            elif (size := utf8_size_over(snapshot.text, config.max_file_size)) is not None:
                log.info("%s: %d bytes, over max-file-size", snapshot.path, size)
                # shown once per file, not at every keystroke: the message does not carry the size
                self._call_in_loop(self.show_once, [
                    f"fabric-lsp: {snapshot.path} is not analysed: it is larger than max-file-size "
                    f"({config.max_file_size} bytes)"
                ], types.MessageType.Info)
            else:
                workspace = workspace_for(config)
                if workspace.overlays is not self.overlays:
                    workspace.overlays = self.overlays  # unsaved buffers, seen by every analysis
                    log.info("analysing %s against the interpreter %s", workspace.root, workspace.python)
                for problem in workspace.problems:
                    self._call_in_loop(self.show_once, [f"fabric-lsp: {problem}"])
                found, files = check_document(snapshot.path, snapshot.text, config, workspace)
                # Quick fixes and fix-all edit only files of the workspace, never installed code
                # (a workspace file linking outside, a module found on the interpreter's path).
                bounds = FixBounds(self.fix_roots_for(snapshot.path), lambda: workspace.library_path)
                found, _ = confine(found, bounds)
                findings = tuple(f for f in found if f.span.path == snapshot.path)
            texts = TextSource(snapshot.path, snapshot.uri, snapshot.text, self.overlays, open_uris)

            def url_of(record_id: str) -> str | None:
                record = records.by_id(record_id)
                return record.github_url if record else None

            diagnostics = [to_diagnostic(f, texts, self.features, url_of) for f in findings]
        except Exception:  # one file's crash must not stop the server: report nothing for it
            log.exception("%s: analysis failed", snapshot.path)
            findings, diagnostics = (), []
        elapsed = (time.perf_counter() - started) * 1000
        log.debug(
            "%s: version %s analysed in %.0f ms: %d finding(s)", snapshot.uri, snapshot.version, elapsed, len(findings)
        )
        return AnalysisResult(
            generation=snapshot.generation,
            version=snapshot.version,
            text=snapshot.text,
            findings=findings,
            diagnostics=diagnostics,
            result_id=result_id(snapshot.uri, diagnostics, self.protocol._converter),
            enabled=enabled,
            files=files,
        )

    def _store(self, doc: Document, result: AnalysisResult) -> None:
        previous = doc.result
        doc.result = result
        doc.resolve_waiters()
        if self.features.pull_diagnostics:
            if previous is not None and previous.version == result.version and previous.result_id != result.result_id:
                self._request_refresh()  # changed without an edit of its own
            return
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=doc.uri, diagnostics=result.diagnostics, version=result.version)
        )

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

    async def settled_result(self, doc: Document, timeout: float) -> AnalysisResult | None:
        """The current result, or after `timeout` the last one if it is for the current version."""
        try:
            return await asyncio.wait_for(self.current_result(doc), timeout)
        except asyncio.TimeoutError:
            result = doc.result
            return result if result is not None and result.version == doc.version else None

    # -- shutdown -------------------------------------------------------------------------------
    def stop_analysis(self) -> None:
        self.analysis_pool.shutdown(wait=False, cancel_futures=True)


def guarded(default: Any = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A handler that logs its exceptions (window/logMessage) and answers `default`: the server
    never dies of one bad request."""

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        if asyncio.iscoroutinefunction(function):

            async def wrapper(params: Any) -> Any:
                try:
                    return await function(params)
                except Exception:
                    log.exception("%s failed", function.__name__)
                    return default

        else:

            def wrapper(params: Any) -> Any:  # type: ignore[misc]
                try:
                    return function(params)
                except Exception:
                    log.exception("%s failed", function.__name__)
                    return default

        wrapper.__name__ = function.__name__
        wrapper.__doc__ = function.__doc__
        return wrapper

    return decorate


def _folders_from(params: types.InitializeParams) -> list[tuple[str, str]]:
    folders = []
    for folder in params.workspace_folders or []:
        path = uri_to_path(folder.uri)
        if path:
            folders.append((folder.uri, path))
    if not folders:
        uri = params.root_uri
        path = uri_to_path(uri) if uri else (os.path.abspath(params.root_path) if params.root_path else None)
        if path:
            folders.append((uri or Path(path).as_uri(), path))
    return folders


def _text_differs_from_disk(path: str | None, text: str) -> bool:
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


def create_server() -> FabricLanguageServer:
    server = FabricLanguageServer()

    # -- lifecycle ------------------------------------------------------------------------------
    @server.feature(types.INITIALIZE)
    @guarded()
    def initialize(params: types.InitializeParams) -> None:
        server._event_loop = asyncio.get_running_loop()
        server.settings_ready = asyncio.Event()
        package_logger = logging.getLogger("fabric_lsp")
        if server._log_handler is not None:
            package_logger.removeHandler(server._log_handler)
        server._log_handler = ClientLogHandler(server, server._event_loop)
        package_logger.addHandler(server._log_handler)
        encoding = encoding_name(server.workspace.position_encoding)
        server.features = client_features(params.capabilities, encoding)
        server.initialization_options = params.initialization_options
        folders = _folders_from(params)
        server.set_folders(folders)
        server.root_path = folders[0][1] if folders else None
        if params.trace is not None:
            server.protocol.trace = params.trace
        # Settings from initializationOptions right away; workspace/configuration after `initialized`.
        server.settings = {
            path: editor_settings(server.initialization_options, None, path or server.root_path, None)
            for path in [None] + [p for _, p in server.folders]
        }
        server.log_level = server.settings[None].log_level or DEFAULT_LOG_LEVEL
        problems = [p for s in server.settings.values() for p in s.problems]
        if problems:
            server._spawn(_show_later(problems))
        if server.features.pull_diagnostics and types.TEXT_DOCUMENT_DIAGNOSTIC not in server.protocol.fm.features:
            server.feature(
                types.TEXT_DOCUMENT_DIAGNOSTIC,
                types.DiagnosticOptions(identifier=NAME, inter_file_dependencies=True, workspace_diagnostics=True),
            )(document_diagnostic)
            server.feature(types.WORKSPACE_DIAGNOSTIC)(workspace_diagnostic)
        if params.process_id:
            server._spawn(_watch_client_process(params.process_id))

    async def _show_later(problems: list[str]) -> None:
        await asyncio.sleep(0)  # after the initialize response
        server.show_once(problems)

    async def _watch_client_process(pid: int) -> None:
        while True:
            await asyncio.sleep(PROCESS_POLL_SECONDS)
            if not process_alive(pid):
                log.warning("the editor process %d is gone; exiting", pid)
                sys.stderr.flush()
                os._exit(0)

    @server.feature(types.INITIALIZED)
    @guarded()
    async def initialized(params: types.InitializedParams) -> None:
        try:
            await _register_dynamic_capabilities()
            await server.refresh_settings()
        finally:
            if server.settings_ready is not None:
                server.settings_ready.set()
        features = server.features
        log.info(
            "fabric-lsp %s: %s diagnostics, positions in %s, %d workspace folder(s)",
            fabric_lsp.__version__,
            "pull" if features.pull_diagnostics else "push",
            features.encoding,
            len(server.folders),
        )

    async def _register_dynamic_capabilities() -> None:
        registrations = []
        if server.features.watched_files_dynamic:
            watchers = [
                types.FileSystemWatcher(glob_pattern="**/*.py"),
                types.FileSystemWatcher(glob_pattern="**/pyproject.toml"),
            ]
            registrations.append(
                types.Registration(
                    id="fabric-lsp-watched-files",
                    method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                    register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers),
                )
            )
        if server.features.did_change_configuration_dynamic:
            registrations.append(
                types.Registration(
                    id="fabric-lsp-configuration",
                    method=types.WORKSPACE_DID_CHANGE_CONFIGURATION,
                    register_options=types.DidChangeConfigurationRegistrationOptions(section=SECTION),
                )
            )
        if not registrations:
            return
        try:
            await asyncio.wait_for(
                server.client_register_capability_async(types.RegistrationParams(registrations=registrations)),
                CLIENT_REQUEST_TIMEOUT,
            )
        except Exception as error:
            log.warning("client/registerCapability failed: %s", error)

    @server.feature(types.SHUTDOWN)
    @guarded()
    def shutdown(params: Any) -> None:
        server.stop_analysis()

    @server.feature(types.EXIT)
    @guarded()
    def exit_(params: Any) -> None:
        server.exit_code = 0 if server.protocol._shutdown else 1
        server.stop_analysis()

    # -- documents ------------------------------------------------------------------------------
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    @guarded()
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        item = params.text_document
        previous = server.docs.pop(item.uri, None)
        if previous is not None:
            previous.closed = True
            previous.resolve_waiters()
        doc = Document(item.uri, uri_to_path(item.uri), item.language_id, item.version, item.text)
        server.docs[item.uri] = doc
        server.closed_uris.discard(item.uri)
        if not doc.is_python:
            return
        if doc.path:
            server.overlays[doc.path] = doc.text
            server.uri_by_path[doc.path] = doc.uri
        server.schedule(doc)
        if _text_differs_from_disk(doc.path, doc.text):
            server.schedule_dependents([doc.path], server.dependents_delay, except_uri=doc.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    @guarded()
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        doc = server.docs.get(params.text_document.uri)
        if doc is None:
            log.warning("didChange for a document that is not open: %s", params.text_document.uri)
            return
        doc.apply_changes(params.content_changes, server.features.encoding)
        doc.version = params.text_document.version
        if not doc.is_python:
            return
        if doc.path:
            server.overlays[doc.path] = doc.text
        server.schedule(doc)
        server.schedule_dependents([doc.path], server.dependents_delay, except_uri=doc.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    @guarded()
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        path = uri_to_path(params.text_document.uri)
        if path and os.path.basename(path) == "pyproject.toml":
            server.forget_configuration()
            server.schedule_all()
        elif path and path.endswith((".py", ".pyi")):
            server.schedule_dependents([path], server.dependents_delay, except_uri=params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    @guarded()
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        doc = server.docs.pop(params.text_document.uri, None)
        if doc is None:
            return
        doc.closed = True
        doc.resolve_waiters()
        if doc.path and server.uri_by_path.get(doc.path) == doc.uri:
            del server.uri_by_path[doc.path]
            server.overlays.pop(doc.path, None)
        if not doc.is_python:
            return
        if server.features.pull_diagnostics:
            # A client pulling workspace diagnostics keeps a closed file's last ones until a
            # workspace report says otherwise (vscode-languageclient does).
            server.closed_uris.add(doc.uri)
        else:
            server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=doc.uri, diagnostics=[]))
        server.schedule_dependents([doc.path], server.dependents_delay)  # the file on disk replaces the buffer

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    @guarded()
    def did_change_watched_files(params: types.DidChangeWatchedFilesParams) -> None:
        paths = [uri_to_path(change.uri) for change in params.changes]
        if any(p and os.path.basename(p) == "pyproject.toml" for p in paths):
            server.forget_configuration()
            server.schedule_all()
        else:
            # A changed file that is open is the editor's buffer already; others changed on disk.
            changed = [p for p in paths if p and p.endswith((".py", ".pyi")) and p not in server.uri_by_path]
            if changed:
                server.schedule_dependents(changed, server.dependents_delay)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    @guarded()
    async def did_change_configuration(params: types.DidChangeConfigurationParams) -> None:
        settings = params.settings
        if isinstance(settings, Mapping) and SECTION in settings:
            server.pushed_settings = settings[SECTION]
        await _with_new_settings()

    async def _with_new_settings() -> None:
        """Re-read the settings and re-analyse everything. Analyses (and the requests waiting for
        them) hold until the new settings are in."""
        ready = server.settings_ready
        if ready is not None:
            ready.clear()
        server.schedule_all()
        try:
            await server.refresh_settings()
        finally:
            if ready is not None:
                ready.set()

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    @guarded()
    async def did_change_workspace_folders(params: types.DidChangeWorkspaceFoldersParams) -> None:
        folders = dict((uri, path) for uri, path in server.folders)
        for removed in params.event.removed or []:
            folders.pop(removed.uri, None)
        for added in params.event.added or []:
            path = uri_to_path(added.uri)
            if path:
                folders[added.uri] = path
        server.set_folders(list(folders.items()))
        await _with_new_settings()

    # -- diagnostics (pull; registered in `initialize` when the client supports it) -------------
    @guarded()
    async def document_diagnostic(params: types.DocumentDiagnosticParams) -> types.DocumentDiagnosticReport:
        doc = server.docs.get(params.text_document.uri)
        result = await server.current_result(doc) if doc is not None else None
        if result is None:
            return types.RelatedFullDocumentDiagnosticReport(items=[])
        if params.previous_result_id == result.result_id:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=result.result_id)
        return types.RelatedFullDocumentDiagnosticReport(items=result.diagnostics, result_id=result.result_id)

    @guarded()
    async def workspace_diagnostic(params: types.WorkspaceDiagnosticParams) -> types.WorkspaceDiagnosticReport:
        previous = {item.uri: item.value for item in params.previous_result_ids or []}
        items: list[Any] = []
        for doc in list(server.docs.values()):
            if not doc.is_python:
                continue
            result = await server.current_result(doc)
            if result is None:
                continue
            if previous.get(doc.uri) == result.result_id:
                items.append(
                    types.WorkspaceUnchangedDocumentDiagnosticReport(
                        uri=doc.uri, version=result.version, result_id=result.result_id
                    )
                )
            else:
                items.append(
                    types.WorkspaceFullDocumentDiagnosticReport(
                        uri=doc.uri, version=result.version, items=result.diagnostics, result_id=result.result_id
                    )
                )
        for uri in sorted(server.closed_uris - set(server.docs)):
            items.append(types.WorkspaceFullDocumentDiagnosticReport(uri=uri, version=None, items=[]))
        server.closed_uris.clear()
        return types.WorkspaceDiagnosticReport(items=items)

    # -- code actions and hover -----------------------------------------------------------------
    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=KINDS, resolve_provider=True),
    )
    @guarded()
    async def code_action(params: types.CodeActionParams) -> list[types.CodeAction] | None:
        doc = server.docs.get(params.text_document.uri)
        if doc is None or not doc.is_python:
            return None
        if code_actions_module.kind_wanted(code_actions_module.FIX_ALL_KIND, params.context.only):
            await server.settled_result(doc, timeout=2.0)
        if not server.features.code_action_literals:
            return None  # a client that only runs commands; every editor we know takes literals
        return code_actions(params, doc, server.features, server.version_of) or None

    @server.feature(types.CODE_ACTION_RESOLVE)
    @guarded()
    def code_action_resolve(params: types.CodeAction) -> types.CodeAction:
        return resolve(params, server.docs, server.features, server.version_of, server.overlays, server.uri_by_path)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    @guarded()
    async def hover(params: types.HoverParams) -> types.Hover | None:
        doc = server.docs.get(params.text_document.uri)
        if doc is None or not doc.is_python:
            return None
        result = await server.settled_result(doc, timeout=2.0)
        findings = result.findings if result is not None and result.text == doc.text else ()
        config, _ = server.config_for(doc.analysis_path)
        records = server.records_for(config)
        return hover_at(
            findings,
            doc.analysis_path,
            doc.index,
            params.position,
            server.features.encoding,
            records,
            server.features.markdown_hover,
        )

    # -- commands -------------------------------------------------------------------------------
    @server.command(EXPLAIN_COMMAND)
    async def explain(*arguments: Any) -> dict[str, Any] | None:
        """Explain a rule code/name, a record id or a runtime error message: returns the record
        rendered as Markdown and as plain text, and shows the plain text with window/showMessage."""
        try:
            query = arguments[0] if arguments else None
            if isinstance(query, Mapping):
                query = query.get("query") or query.get("code") or query.get("message")
            if not isinstance(query, str) or not query.strip():
                server.window_show_message(
                    types.ShowMessageParams(
                        type=types.MessageType.Warning,
                        message=f"{EXPLAIN_COMMAND}: give a rule code or an error message",
                    )
                )
                return None
            query = query.strip()
            config, _ = server.config_for(os.path.join(server.root_path or os.getcwd(), "__explain__.py"))
            records = server.records_for(config)
            rule = rule_by_code(query)
            record = records.by_code(query) if rule else records.by_id(query)
            context = None
            if record is None:
                match = records.match_message(query)
                if match is not None:
                    record, context = match.record, match.context
            if record is None:
                server.window_show_message(
                    types.ShowMessageParams(
                        type=types.MessageType.Warning, message=f"fabric-lsp: no rule or record matches {query[:200]!r}"
                    )
                )
                return None
            code = rule.code if rule else record.code
            plaintext = render_text(record, context=context, code=code)
            server.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Info, message=escape_controls(plaintext, keep="\n"))
            )
            return {
                "code": code,
                "record": record.id,
                "url": record.github_url,
                "context": context or {},
                "markdown": render_markdown(record, context=context, code=code),
                "plaintext": plaintext,
            }
        except Exception:
            log.exception("%s failed", EXPLAIN_COMMAND)
            return None

    @server.command(RECHECK_COMMAND)
    async def recheck(*arguments: Any) -> dict[str, Any] | None:
        """Re-read the settings and re-check every open document; returns when their diagnostics are
        out (or after a timeout)."""
        try:
            await _with_new_settings()
            docs = [doc for doc in server.docs.values() if doc.is_python]
            try:
                await asyncio.wait_for(asyncio.gather(*(server.current_result(doc) for doc in docs)), 60)
            except asyncio.TimeoutError:
                log.warning("%s: timed out waiting for the analyses", RECHECK_COMMAND)
            return {"rechecked": len(docs), "findings": sum(len(d.result.findings) for d in docs if d.result)}
        except Exception:
            log.exception("%s failed", RECHECK_COMMAND)
            return None

    return server


def _configure_logging() -> None:
    # stderr is the editor's server log; stdout is the protocol and must stay clean.
    # Warnings and errors also go to stderr (the editor's server log, and the only place before
    # the client is connected); the client gets fabric_lsp's records at its logLevel.
    root = logging.getLogger()
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(OneLineFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(drop_pygls_deserialize_errors)
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("fabric_lsp").setLevel(logging.DEBUG)
    logging.getLogger("pygls").setLevel(logging.WARNING)


def authenticated_initialize(payload: Any, token: str) -> dict[str, Any] | None:
    """The `initialize` request without its token when it carries the right one, else None. The token
    is removed so that it is neither read as a setting nor logged."""
    if not isinstance(payload, dict) or payload.get("method") != types.INITIALIZE:
        return None
    params = payload.get("params")
    options = params.get("initializationOptions") if isinstance(params, dict) else None
    given = options.get("token") if isinstance(options, dict) else None
    if not isinstance(given, str) or not hmac.compare_digest(given.encode(), token.encode()):
        return None
    options = {key: value for key, value in options.items() if key != "token"}
    return {**payload, "params": {**params, "initializationOptions": options}}


def run(tcp: tuple[str, int] | None = None, token: str | None = None) -> int:
    """Serve one client over stdio (or TCP); the exit status follows LSP (1 after `exit` without
    `shutdown`)."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print() must not corrupt the protocol stream
    _configure_logging()
    server = create_server()
    try:
        if tcp is not None:
            server.start_tcp(*tcp, token or "")
        else:
            server.start_io(stdin, stdout)
    finally:
        server.stop_analysis()
    if server.analysis_busy.is_set():
        # The worker is inside one document's analysis, which cannot be interrupted; the interpreter
        # would wait for it at exit. The client asked to exit: leave now.
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(server.exit_code)
    return server.exit_code
