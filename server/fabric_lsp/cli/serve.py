"""`fabric-lsp serve`: the language server over stdio, or TCP on the loopback with a token."""

from __future__ import annotations

import argparse
import ipaddress
import os
import secrets

from fabric_lsp.cli.arguments import PROG, UsageError
from fabric_lsp.cli.output import say


def cmd_serve(args: argparse.Namespace) -> int:
    """LSP over stdio, or over TCP with `--tcp HOST:PORT` (one client at a time).

    Any local user (and any web page, through the browser) can connect to a TCP port: the server
    listens on loopback only and serves only a client that knows the token. A token given (`--token`,
    FABRIC_LSP_TOKEN) must be worth 128 bits (lsp/transport.weak_token_reason); without one, a random
    token is made and printed on stderr. Failed checks slow down the next ones (transport.TokenGate).

    `--stdio` names the default transport (vscode-languageclient appends it to an Executable with
    TransportKind.stdio). Its other transports are refused in one line: `--pipe NAME` and `--socket PORT`
    (the server would have to connect out to a pipe or port the client opened) and `--node-ipc`.
    `--clientProcessId N` (appended for Node modules) is accepted and not needed: the server already
    watches the `processId` of `initialize`."""
    unsupported = {
        "--pipe": "named pipes",
        "--socket": "connecting to a socket the client listens on",
        "--node-ipc": "Node IPC",
    }
    for option, what in unsupported.items():
        if getattr(args, option.lstrip("-").replace("-", "_")) not in (None, False):
            raise UsageError(f"serve {option}: {what} not supported; use stdio (the default, or --stdio), "
                             "or --tcp 127.0.0.1:PORT with a token")
    if args.clientProcessId is not None and not args.clientProcessId.strip().isdigit():
        raise UsageError(f"serve --clientProcessId: expected a process id, got {args.clientProcessId!r}")
    if args.stdio and args.tcp is not None:
        raise UsageError("serve: --stdio and --tcp exclude each other")
    tcp = None
    token = None
    if args.tcp is not None:
        host, _, port = args.tcp.rpartition(":")
        if not host or not port.isdigit() or not 0 <= int(port) < 65536:  # 0: a free port, printed
            raise UsageError(f"--tcp: expected HOST:PORT, got {args.tcp!r}")
        host = host.strip("[]")
        if not _is_loopback(host):
            raise UsageError(f"--tcp: {host!r} is not a loopback address (use 127.0.0.1, ::1 or localhost)")
        from fabric_lsp.lsp.transport import weak_token_reason

        token = args.token if args.token is not None else (os.environ.get("FABRIC_LSP_TOKEN") or None)
        if token is None:
            token = secrets.token_urlsafe(32)  # 256 bits
            say(f"{PROG}: serve: the client must send this token as initializationOptions.token "
                 f"(choose your own with --token or FABRIC_LSP_TOKEN): {token}")
        else:
            weak = weak_token_reason(token)
            if weak is not None:
                source = "--token" if args.token is not None else "FABRIC_LSP_TOKEN"
                raise UsageError(f"{source}: {weak}")
        tcp = (host, int(port))
    elif args.token is not None:
        raise UsageError("--token: only with --tcp")
    if tcp is None:  # `initialize` answered before pygls is imported (lsp/early_initialize.py)
        from fabric_lsp.lsp.early_initialize import serve_stdio

        return serve_stdio()
    from fabric_lsp.lsp.server import run

    return run(tcp, token)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # another name: it could resolve anywhere

