"""The session: one client's state in one place (FabricLanguageServer).

Open documents and notebooks, the client's features, workspace folders, editor settings and the
configurations derived from them, plus the transport loops and the messages the server shows. The
analysis machinery is in scheduling.py (a base class of the server); the handlers of each request
and notification family are in handlers/.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from lsprotocol import types
from pygls.io_ import StdinAsyncReader, StdoutWriter
from pygls.lsp.server import LanguageServer

from fabric_lsp.version import __version__
from fabric_lsp.settings.config import Config, apply_settings, is_config_error, load_config
from fabric_lsp.lsp.convert import ClientFeatures
from fabric_lsp.lsp.documents import Document, NotebookDocument
from fabric_lsp.lsp.logs import ClientLogHandler
from fabric_lsp.lsp.protocol import FabricProtocol
from fabric_lsp.lsp.scheduling import (
    CLIENT_REQUEST_TIMEOUT,
    DEPENDENTS_DELAY,
    AnalysisScheduler,
    analysis_delay_from_env,
)
from fabric_lsp.lsp.settings import DEFAULT_LOG_LEVEL, EditorSettings, editor_settings
from fabric_lsp.lsp.transport import TokenGate, failure_delay, read_first_frame, read_frames
from fabric_lsp.report.escape import escape_controls

if TYPE_CHECKING:
    from fabric_lsp.records import RecordSet

log = logging.getLogger("fabric_lsp.lsp")

NAME = "fabric-lsp"
SECTION = "fabric-lsp"
AUTH_TIMEOUT_SECONDS = 30.0  # a TCP connection that has not shown the token by then is closed
NOTEBOOK_TYPE = "jupyter-notebook"
# Jupyter notebooks, every cell: the cells' text goes through notebookDocument/* only. Markdown
# cells are synced too (and ignored) so that cell numbers count every cell, as `check` and ruff do;
# a selector of Python cells made the client leave them out and "cell 3" meant another cell.
NOTEBOOK_SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[
        types.NotebookDocumentFilterWithNotebook(
            notebook=types.NotebookDocumentFilterNotebookType(notebook_type=NOTEBOOK_TYPE),
        )
    ]
)


class FabricLanguageServer(AnalysisScheduler, LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            NAME,
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=NOTEBOOK_SYNC,
            protocol_cls=FabricProtocol,
        )
        self.docs: dict[str, Document] = {}  # open text documents
        self.notebooks: dict[str, NotebookDocument] = {}  # open notebooks (one analysis unit each)
        self.cells: dict[str, NotebookDocument] = {}  # a notebook cell's URI -> its notebook
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
        self.analysis_delay = analysis_delay_from_env()
        self.analysis_busy = threading.Event()  # set while the worker analyses a document
        self.analyses = 0  # analyses run (release_free_memory)
        self.dependents_delay = DEPENDENTS_DELAY
        self.settings_ready: asyncio.Event | None = None
        self._shown: set[str] = set()
        self._configs: dict[tuple[str, str | None, int], tuple[Config, tuple[str, ...]]] = {}
        self._settings_epoch = 0  # part of the config cache key: a stale analysis cannot refill it
        # The last settings read without a mistake, per settings file's folder: a file saved with a
        # mistake (broken TOML, an unknown key) leaves them in force, as ruff's server does.
        self._last_good: dict[str | None, Config] = {}
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
        gate: TokenGate | None = None  # made in the server's event loop

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            nonlocal client_connected
            peer = writer.get_extra_info("peername")
            if client_connected:
                log.warning("TCP connection from %s closed: a client is already connected", peer)
                writer.close()
                return
            deadline = asyncio.get_running_loop().time() + AUTH_TIMEOUT_SECONDS
            try:
                first = await asyncio.wait_for(read_first_frame(reader), AUTH_TIMEOUT_SECONDS)
            except asyncio.TimeoutError:
                first, refusal = None, f"no initialize with the token within {AUTH_TIMEOUT_SECONDS:g} s"
            else:
                refusal = "not an LSP frame" if first is None else None
            payload = None
            if first is not None and gate is not None:
                # One check at a time, delayed after failures (transport.TokenGate): guessing is slow
                # however many connections are opened.
                try:
                    left = max(deadline - asyncio.get_running_loop().time(), 0.1)
                    payload = await asyncio.wait_for(gate.check(first[0], closed=reader.at_eof), left)
                except asyncio.TimeoutError:
                    refusal = f"not checked within {AUTH_TIMEOUT_SECONDS:g} s (other failed attempts before it)"
                else:
                    if payload is None and reader.at_eof():
                        refusal = "closed by the client before its token was checked"
                    elif payload is None:
                        refusal = (f"the first message is not an initialize with the right token "
                                   f"({gate.failures} failed in a row; the next check waits "
                                   f"{failure_delay(gate.failures):g} s)")
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
            nonlocal gate
            gate = TokenGate(token)
            self._server = await asyncio.start_server(connection, host, port)
            # Where the client is to connect (port 0: the one the system chose), as `ruff server` and
            # other servers say it; stderr is the log, stdout stays unused.
            for listening in self._server.sockets:
                address, bound_port = listening.getsockname()[:2]
                shown = f"[{address}]" if ":" in address else address
                sys.stderr.write(f"fabric-lsp: serve: listening on {shown}:{bound_port}\n")
            sys.stderr.flush()
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
        """defaults <- the closest settings file (config.find_config_file: .fabric-lsp.toml,
        fabric-lsp.toml or pyproject.toml's [tool.fabric-lsp], as the command line) <- editor
        settings of the folder."""
        epoch = self._settings_epoch
        folder = self.folder_of(path)
        settings = self.settings_for(path)
        key = (os.path.dirname(path), folder, epoch)
        cached = self._configs.get(key)
        if cached is None:
            file_config, problems = load_config(Path(path))
            if not any(is_config_error(problem) for problem in problems):
                self._last_good[file_config.root] = file_config
            elif file_config.root in self._last_good:
                file_config = self._last_good[file_config.root]
                problems.append(f"fabric-lsp: the last good settings of {file_config.root} stay in force")
            config = apply_settings(file_config, settings.fields)
            if config.root is None:
                config = replace(config, root=folder or self.root_path or os.path.dirname(path))
            cached = self._configs[key] = (config, tuple(problems))
        config, problems = cached
        if problems and any(p not in self._shown for p in problems):
            kind = types.MessageType.Error if any(map(is_config_error, problems)) else types.MessageType.Warning
            self._call_in_loop(self.show_once, list(problems), kind)
        return config, settings

    def records_for(self, config: Config) -> RecordSet:
        key = tuple(config.extend_records)
        records = self._records.get(key)
        if records is None:
            from fabric_lsp.records import load_records  # the loader loads on first use (issue 29)

            records = self._records[key] = load_records(key)
            lines = [f"fabric-lsp: records: {p}" for p in (*records.problems, *records.notices)]
            if lines:
                self._call_in_loop(self.show_once, lines)
        return records

    def forget_configuration(self) -> None:
        self._settings_epoch += 1
        self._configs.clear()
        self._records.clear()

    async def reload_settings(self) -> None:
        """Re-read the settings and re-analyse everything. Analyses (and the requests waiting for
        them) hold until the new settings are in."""
        ready = self.settings_ready
        if ready is not None:
            ready.clear()
        self.schedule_all()
        try:
            await self.refresh_settings()
        finally:
            if ready is not None:
                ready.set()

    # -- documents ------------------------------------------------------------------------------
    def units(self) -> list[Document]:
        """What is analysed: the open text documents and notebooks."""
        return [*self.docs.values(), *self.notebooks.values()]

    def unit_of(self, uri: str) -> tuple[Document, str] | None:
        """The analysis unit a request's URI belongs to, and that URI: an open text document, or
        the notebook of an open cell."""
        notebook = self.cells.get(uri)
        if notebook is not None and not notebook.closed:
            return notebook, uri
        doc = self.docs.get(uri)
        return (doc, uri) if doc is not None else None

    def version_of(self, uri: str) -> int | None:
        notebook = self.cells.get(uri)
        cell = notebook.cell_docs.get(uri) if notebook is not None else None
        if cell is not None:
            return cell.version
        doc = self.docs.get(uri)
        return doc.version if doc is not None else None

