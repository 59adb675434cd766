"""The JSON-RPC side of the server: pygls' LanguageServerProtocol, with every request answered.

pygls 2.1 leaves some requests without any response, and a client then waits forever
(vscode-languageclient keeps the request pending): a request whose params do not match the LSP types,
a request after `shutdown`. It also pops a `window/showMessage` at the user for a malformed message.
`receive` checks each decoded payload first and answers per JSON-RPC 2.0 and LSP:

- not JSON: -32700 (id null); not a JSON-RPC object: -32600 (its id when it has a usable one);
- a request before `initialize`: -32002; after `shutdown`: -32600 (notifications then are dropped,
  except `exit`);
- params that do not fit the method's type: -32602 for a request, a log line for a notification;
- a notification's method sent as a request: -32600;
- anything else goes to pygls (unknown methods: -32601 there).

When `initialize` was answered before pygls was imported (early_initialize.py), pygls' own answer to
it is dropped (`early_answer`), after a comparison with the answer sent.

It also drops the finished futures pygls 2.1 keeps for every notification (a leak of each keystroke's
params; see `_forget_finished_futures`).

The server also keeps open documents itself (see documents.py), so pygls' document handlers only
pass the notifications on. For notebooks pygls keeps the structure (the cells and their order): a
notification it cannot file (a change for a notebook it does not know) is logged and still reaches
the server's handler, which keeps the cells' text itself.
"""

from __future__ import annotations

import json
import logging
from typing import Any

try:
    from builtins import BaseExceptionGroup
except ImportError:  # Python 3.10: cattrs brings the backport
    from exceptiongroup import BaseExceptionGroup

from lsprotocol import types
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

log = logging.getLogger("fabric_lsp.lsp")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
SERVER_NOT_INITIALIZED = -32002
MAX_REASON_CHARS = 500


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1] + "…"


def _response_id(data: Any) -> Any:
    """The id of a response (a result or an error) pygls is about to send, else None."""
    if isinstance(data, dict):
        return data.get("id") if "method" not in data else None
    if hasattr(data, "method") or not (hasattr(data, "result") or hasattr(data, "error")):
        return None
    return getattr(data, "id", None)


def _why_unstructurable(error: BaseException) -> str:
    """The first concrete reason cattrs gives, with where it is (cattrs nests exception groups and
    notes the attribute path on each)."""
    path: list[str] = []
    for _ in range(50):  # cattrs nests a few levels; a cycle of causes must not loop forever
        if isinstance(error, BaseExceptionGroup) and error.exceptions:
            error = error.exceptions[0]
        elif isinstance(error.__cause__, BaseException):
            error = error.__cause__
        else:
            break
        for note in getattr(error, "__notes__", ()):
            if " @ attribute " in note:
                path.append(note.rsplit(" @ attribute ", 1)[1].split()[0])
                break
    where = ".".join(path)
    return f"{where + ': ' if where else ''}{type(error).__name__}: {error}"


class FabricProtocol(LanguageServerProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.initialize_received = False
        # (id, result) of the `initialize` answered early (early_initialize.py): pygls' answer to it
        # is not sent again
        self.early_answer: tuple[Any, Any] | None = None

    # -- documents: the server keeps them (documents.py) --------------------------------------
    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None

    # -- notebooks: pygls keeps their structure, the server their cells' text -------------------
    def _file_notebook(self, method: str, update: Any, params: Any) -> None:
        try:
            update(params)
        except Exception as error:
            log.warning("%s: pygls could not file it: %s: %s", method, type(error).__name__, error)

    @lsp_method(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def lsp_notebook_document__did_open(self, params: types.DidOpenNotebookDocumentParams):
        self._file_notebook(types.NOTEBOOK_DOCUMENT_DID_OPEN, self.workspace.put_notebook_document, params)
        if (handler := self.fm.features.get(types.NOTEBOOK_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def lsp_notebook_document__did_change(self, params: types.DidChangeNotebookDocumentParams):
        self._file_notebook(types.NOTEBOOK_DOCUMENT_DID_CHANGE, self.workspace.update_notebook_document, params)
        if (handler := self.fm.features.get(types.NOTEBOOK_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def lsp_notebook_document__did_close(self, params: types.DidCloseNotebookDocumentParams):
        self._file_notebook(types.NOTEBOOK_DOCUMENT_DID_CLOSE, self.workspace.remove_notebook_document, params)
        if (handler := self.fm.features.get(types.NOTEBOOK_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None

    # -- messages -------------------------------------------------------------------------------
    def _send_data(self, data: Any) -> None:
        early = self.early_answer
        if early is not None and _response_id(data) == early[0]:
            self.early_answer = None
            self._compare_early_answer(data, early[1])
            return
        super()._send_data(data)

    def _compare_early_answer(self, data: Any, sent: Any) -> None:
        """pygls' answer to the `initialize` answered early, which is dropped: it must be the same."""
        try:
            message = json.loads(json.dumps(data, default=self._serialize_message))
        except Exception as error:
            log.error("initialize: pygls' answer could not be read (%s: %s)", type(error).__name__, error)
            return
        if "error" in message:
            log.error("initialize: answered early, but pygls refused it: %.500s", json.dumps(message["error"]))
        elif message.get("result") != sent:
            log.error("initialize: the early answer differs from pygls' (run python -m "
                      "fabric_lsp.lsp.early_initialize_gen): sent %.2000s, pygls %.2000s",
                      json.dumps(sent, sort_keys=True), json.dumps(message.get("result"), sort_keys=True))

    def send_error(self, msg_id: Any, code: int, message: str) -> None:
        # pygls' ResponseErrorMessage drops an `id` of None; JSON-RPC wants `"id": null` there
        self._send_data({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": _short(message)}})

    def receive(self, payload: Any, error: str | None = None) -> None:
        """Check one decoded message and hand it to pygls, or answer it (see the module docstring)."""
        if error is not None:
            log.warning("message is not JSON: %s", error)
            self.send_error(None, PARSE_ERROR, f"Parse error: {error}")
            return
        if not isinstance(payload, dict):
            log.warning("message is not a JSON object: %.200r", payload)
            self.send_error(None, INVALID_REQUEST, "Invalid Request: a message must be one JSON object (no batches)")
            return
        msg_id = payload.get("id")
        id_ok = isinstance(msg_id, (str, int)) and not isinstance(msg_id, bool)
        method = payload.get("method")
        is_response = "method" not in payload and ("result" in payload or "error" in payload)
        if payload.get("jsonrpc") != "2.0" or (method is None and not is_response) or (
            method is not None and not isinstance(method, str)
        ):
            log.warning("not a JSON-RPC 2.0 message: %.200r", payload)
            if not is_response:  # JSON-RPC answers an invalid request even without an id
                self.send_error(msg_id if id_ok else None, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message")
            return
        if method is None:
            self._receive_response(payload, msg_id, id_ok)
            return
        is_request = "id" in payload
        if is_request and not id_ok:
            log.warning("request %r with an unusable id %.100r", method, msg_id)
            self.send_error(None, INVALID_REQUEST, "Invalid Request: id must be a string or an integer")
            return
        if method != types.EXIT:
            if not self.initialize_received and method != types.INITIALIZE:
                if is_request:
                    self.send_error(msg_id, SERVER_NOT_INITIALIZED, f"{method}: the server is not initialized yet")
                else:
                    log.warning("notification %r before initialize dropped", method)
                return
            if self._shutdown:
                if is_request:
                    self.send_error(msg_id, INVALID_REQUEST, f"{method}: the server is shut down (only exit is expected)")
                else:
                    log.warning("notification %r after shutdown dropped", method)
                return
        if "params" not in payload and self.get_message_type(method) is None:
            payload = {**payload, "params": None}  # pygls' generic message wants the field; -32601 follows
        try:
            message = self.structure_message(payload)
        except Exception as structure_error:
            reason = _why_unstructurable(structure_error)
            if is_request:
                log.warning("request %r (id %r) has invalid params: %s", method, msg_id, reason)
                self.send_error(msg_id, INVALID_PARAMS, f"Invalid params for {method}: {reason}")
            else:
                log.warning("notification %r with invalid params dropped: %s", method, reason)
            return
        if is_request and not hasattr(message, "id"):  # a notification's method, sent with an id
            log.warning("request %r: that method is a notification", method)
            self.send_error(msg_id, INVALID_REQUEST, f"Invalid Request: {method} is a notification, not a request")
            return
        if method == types.INITIALIZE:
            self.initialize_received = True
        self.handle_message(message)
        if not is_request:
            self._forget_finished_futures()

    def _forget_finished_futures(self) -> None:
        """pygls 2.1 files the future of every step of a generator handler (its own didOpen/didChange/
        didClose pass the notification on that way) under a fresh uuid in `_request_futures` and pops
        only those of requests: each keystroke's params stayed referenced forever. A finished future
        has run its callbacks and cannot be cancelled any more, so dropping it changes nothing else."""
        futures = getattr(self, "_request_futures", None)
        if not isinstance(futures, dict):
            return
        for key in [key for key, future in futures.items() if future.done()]:
            del futures[key]

    def _receive_response(self, payload: dict[str, Any], msg_id: Any, id_ok: bool) -> None:
        """A response to one of the server's own requests (workspace/configuration, ...)."""
        if not id_ok:
            log.warning("response without a usable id: %.200r", payload)
            return
        try:
            message = self.structure_message(payload)
        except Exception as structure_error:
            # Fail the waiting request instead of leaving it pending forever.
            reason = _why_unstructurable(structure_error)
            log.warning("response %r does not fit its request: %s", msg_id, reason)
            self._handle_response(
                msg_id, None, types.ResponseError(code=INVALID_PARAMS, message=_short(f"unreadable response: {reason}"))
            )
            return
        self.handle_message(message)
