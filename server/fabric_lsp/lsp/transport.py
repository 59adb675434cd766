"""Reading LSP frames (`Content-Length: N` headers, a blank line, N bytes of JSON) from a byte stream.

pygls' own loop (pygls.io_.run_async) only recognises a header line that is exactly
`Content-Length: N\\r\\n`: after one frame with a wrong length, the rest of that frame's body is read
as a header line glued to the next frame's header, and every frame after it is lost the same way.
This loop looks for the header at the end of any line instead. Since a JSON body never contains a
raw newline, a body read as a line always ends where the next frame's header line ends, so the
stream is back in step after at most one or two lost messages.

Bodies go to `protocol.receive` as decoded JSON (or the parse error), which answers what it must.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import math
import re
import string
import threading
from typing import Any, Awaitable, Callable, Protocol

from lsprotocol import types

log = logging.getLogger("fabric_lsp.lsp")

HEADER = re.compile(rb"Content-Length:[ \t]*(\d{1,15})[ \t]*\r?\n?\Z", re.IGNORECASE)
# A larger frame is not read as one: its body then passes as an (ignored) header line, so a wrong
# huge length costs one message instead of a huge allocation or the rest of the stream.
MAX_FRAME_BYTES = 256 * 1024 * 1024


class AsyncReader(Protocol):
    def readline(self) -> Awaitable[bytes]: ...

    def readexactly(self, n: int) -> Awaitable[bytes]: ...


class PayloadReceiver(Protocol):
    def receive(self, payload: Any, error: str | None = None) -> None: ...


def decode(body: bytes) -> tuple[Any, str | None]:
    """(payload, None), or (None, why it is not JSON)."""
    try:
        return json.loads(body), None
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        return None, f"{type(error).__name__}: {error}"[:300]


async def read_frames(reader: AsyncReader, protocol: PayloadReceiver, stop_event: threading.Event) -> None:
    """Hand every frame's payload to the protocol until end of input or stop_event."""
    content_length: int | None = None
    while not stop_event.is_set():
        try:
            line = await reader.readline()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as error:
            # asyncio's StreamReader (TCP) refuses lines over its limit: the frame is lost, not the stream
            log.warning("unreadable header line skipped: %s", error)
            content_length = None
            continue
        if not line:
            break
        header = HEADER.search(line)
        if header is not None:
            length = int(header.group(1))
            if length > MAX_FRAME_BYTES:
                log.error("frame of %d bytes (over %d) not read; its body is skipped", length, MAX_FRAME_BYTES)
                content_length = None
            else:
                content_length = length
                if header.start() > 0:
                    log.warning("stream resynchronised: %d bytes before a header skipped", header.start())
            continue
        if line.strip():
            continue  # Content-Type, or garbage: nothing to do
        if content_length is None:
            continue  # a blank line outside a frame
        try:
            body = await reader.readexactly(content_length)
        except asyncio.IncompleteReadError:
            break
        if content_length and not body:
            break  # end of input
        content_length = None
        payload, error = decode(body)
        try:
            protocol.receive(payload, error)
        except Exception:  # the protocol answers what it can; a failure here must not end the loop
            log.exception("message not handled")


# Before the client has shown its token, the peer may be anything that can reach the port (a web
# page through the browser, another local user): only a strict frame of a bounded size is read.
MAX_UNAUTHENTICATED_FRAME_BYTES = 1024 * 1024
_STRICT_HEADER = re.compile(rb"Content-Length:[ \t]*(\d{1,15})[ \t]*\r\n\Z", re.IGNORECASE)
_CONTENT_TYPE = re.compile(rb"Content-Type:[^\r\n]*\r\n\Z", re.IGNORECASE)
MAX_HEADER_LINES = 4


async def read_first_frame(reader: AsyncReader) -> tuple[Any, str | None] | None:
    """The first frame's payload (as `decode` gives it), or None when the bytes are not an LSP frame
    (e.g. `POST / HTTP/1.1`): then no body is read at all."""
    content_length: int | None = None
    for _ in range(MAX_HEADER_LINES):
        try:
            line = await reader.readline()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            return None
        header = _STRICT_HEADER.match(line)
        if header is not None and content_length is None:
            content_length = int(header.group(1))
            if content_length > MAX_UNAUTHENTICATED_FRAME_BYTES:
                return None
        elif _CONTENT_TYPE.match(line):
            continue
        elif line == b"\r\n" and content_length is not None:
            try:
                return decode(await reader.readexactly(content_length))
            except asyncio.IncompleteReadError:
                return None
        else:
            return None
    return None


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


# The token of `serve --tcp`: at least MIN_TOKEN_BITS of guessing. A token's strength is counted from
# its length and the smallest of these alphabets that holds all its characters (a token of digits
# only is worth log2(10) bits a character, however it was made): 39 digits, 32 hexadecimal digits,
# 22 characters of base64 (URL-safe or not), or 20 of any other kind; and at least
# MIN_TOKEN_CHARACTERS different characters (a random token has them; `000...0` has not). The count
# cannot tell a random token from words: the generated one (secrets.token_urlsafe(32)) is random.
MIN_TOKEN_BITS = 128
MIN_TOKEN_CHARACTERS = 6
_TOKEN_ALPHABETS = (  # (name, characters, bits per character)
    ("decimal digits", set(string.digits), math.log2(10)),
    ("hexadecimal digits", set(string.digits + "abcdef"), 4.0),
    ("hexadecimal digits", set(string.digits + "ABCDEF"), 4.0),
    ("base64 characters", set(string.ascii_letters + string.digits + "-_"), 6.0),
    ("base64 characters", set(string.ascii_letters + string.digits + "+/="), 6.0),
)
_ANY_CHARACTER_BITS = math.log2(95)  # printable ASCII: a token outside the alphabets above


def token_bits(token: str) -> tuple[float, str]:
    """(bits a guesser must try at most, the alphabet they were counted in)."""
    characters = set(token)
    for name, alphabet, bits in _TOKEN_ALPHABETS:
        if characters <= alphabet:
            return len(token) * bits, name
    return len(token) * _ANY_CHARACTER_BITS, "characters"


def weak_token_reason(token: str) -> str | None:
    """Why `token` is too weak for a TCP port any local user can reach, or None."""
    if not token:
        return "empty; leave the token out to have one generated"
    bits, alphabet = token_bits(token)
    if bits >= MIN_TOKEN_BITS:
        if len(set(token)) < MIN_TOKEN_CHARACTERS:
            return (f"too weak: {len(set(token))} different characters, at least {MIN_TOKEN_CHARACTERS} are needed; "
                    "leave the token out to have one generated")
        return None
    needed = math.ceil(MIN_TOKEN_BITS / (bits / len(token)))
    return (f"too weak: {len(token)} {alphabet} are about {int(bits)} bits, at least {MIN_TOKEN_BITS} are needed "
            f"({needed} such characters); leave the token out to have one generated")


# Failed token checks (a wrong token, no token, or a first message that is not `initialize`), counted
# over the whole server: the check after the n-th consecutive failure waits FAILURE_DELAY * 2**(n-1)
# seconds, at most MAX_FAILURE_DELAY, whichever connection it comes on (opening new connections does
# not reset it; a connection has one attempt, its first message). The cap keeps the wait of the real
# client, once a guesser stops, to a couple of seconds.
FAILURE_DELAY = 0.1
MAX_FAILURE_DELAY = 2.0


def failure_delay(failures: int) -> float:
    return 0.0 if failures <= 0 else min(FAILURE_DELAY * 2 ** min(failures - 1, 32), MAX_FAILURE_DELAY)


class TokenGate:
    """Token checks one at a time, each after the delay the failures so far call for (see above)."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.failures = 0
        self._lock = asyncio.Lock()
        self._next_check = 0.0  # the event loop's clock

    async def check(self, payload: Any, closed: Callable[[], bool] = lambda: False) -> dict[str, Any] | None:
        """The `initialize` without its token (authenticated_initialize), or None. A connection the
        peer `closed` while it waited is not checked: it neither waits nor holds up the others."""
        loop = asyncio.get_running_loop()
        async with self._lock:
            if closed():
                return None
            wait = self._next_check - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
                if closed():
                    return None
            accepted = authenticated_initialize(payload, self.token)
            if accepted is None:
                self.failures += 1
                self._next_check = loop.time() + failure_delay(self.failures)
            else:
                self.failures = 0
            return accepted
