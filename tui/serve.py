"""Provides `gpu-advisor serve`: the terminal UI in a web browser, through textual-serve, behind a token."""

from __future__ import annotations

import argparse
import errno
from pathlib import Path
from typing import TYPE_CHECKING

from advisor.question.errors import InputError

if TYPE_CHECKING:  # socket and secrets are imported where the server starts: every other command skips them
    import socket

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
# Each session is its own app process (about 76 MB resident after a ranking: docs/ui.md): a small default.
DEFAULT_MAX_SESSIONS = 4
MAX_SESSIONS_LIMIT = 64


def add_serve_parser(sub: argparse._SubParsersAction) -> None:
    """The `serve` subcommand and its flags."""
    p = sub.add_parser(
        "serve",
        help="the guided UI in a web browser",
        description="Serve the guided UI over HTTP with textual-serve: each browser tab runs its own copy. "
        "Binds to this machine only (127.0.0.1) unless --host says otherwise. The link printed at start "
        "carries a token: only browsers given it can open a session, and only pages of this server can "
        "drive one. Exports are downloads; nothing is written outside each session's own folder.",
    )
    p.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0: every interface)",
    )
    p.add_argument("--port", default=DEFAULT_PORT, type=int, help="port to listen on (default 8000)")
    p.add_argument(
        "--max-sessions",
        default=DEFAULT_MAX_SESSIONS,
        type=int,
        help=f"browser sessions at once, each its own app process (default {DEFAULT_MAX_SESSIONS}); "
        "past it a page says the server is full",
    )
    p.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="URL",
        help="also answer pages of this origin (scheme://host[:port], e.g. https://gpu.example.com behind "
        "a proxy that passes the Host header on); repeatable",
    )


def reach(host: str) -> str:
    """Who can open the page, in one line."""
    if host in LOOPBACK:
        return "loopback only: only this machine can connect (use --host 0.0.0.0 to share it on the network)"
    return f"listening on {host}: anyone who can reach this port and has the link can use the advisor"


def check_serve_args(args: argparse.Namespace) -> frozenset[str]:
    """InputError (one line, exit 2) for a bad port, host, session cap or origin; the origins, normalised."""
    from tui.serve_rules import origin_of, origin_problem, valid_host

    if not 0 < args.port < 65536:
        raise InputError(
            field="port", value=args.port, problem="is not a port", accepted="a number between 1 and 65535"
        )
    if not valid_host(args.host):
        raise InputError(
            field="host", value=args.host, problem="is not an address or a host name", accepted=HOST_ACCEPTED
        )
    if not 0 < args.max_sessions <= MAX_SESSIONS_LIMIT:
        raise InputError(
            field="max_sessions",
            value=args.max_sessions,
            problem="is out of range",
            accepted=f"a number of sessions from 1 to {MAX_SESSIONS_LIMIT}",
        )
    for origin in args.allow_origin:
        if problem := origin_problem(origin):
            raise InputError(
                field="allow_origin", value=origin, problem=problem, accepted="e.g. https://gpu.example.com"
            )
    return frozenset(origin_of(o) for o in args.allow_origin)


HOST_ACCEPTED = "an address of this machine (127.0.0.1, ::1, 0.0.0.0, ::) or a name that resolves to one"


def bind(host: str, port: int) -> list[socket.socket]:
    """Listening sockets for every address host resolves to; InputError (one line) when it cannot be done."""
    import socket

    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as exc:
        raise InputError(
            field="host",
            value=host,
            problem=f"cannot be resolved ({getattr(exc, 'strerror', None) or exc})",
            accepted=HOST_ACCEPTED,
        ) from None
    sockets: list[socket.socket] = []
    for family, kind, proto, _, address in dict.fromkeys((i[0], i[1], i[2], "", i[4]) for i in infos):
        sock = socket.socket(family, kind, proto)
        sockets.append(sock)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as asyncio does: restarts at once
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            sock.listen(128)
            sock.setblocking(False)
        except OSError as exc:
            for opened in sockets:
                opened.close()
            raise bind_error(host, port, str(address[0]), exc) from None
    return sockets


def bind_error(host: str, port: int, address: str, exc: OSError) -> InputError:
    """The one line for a failed bind: the port in use, a privileged port, an address not of this machine."""
    if exc.errno == errno.EADDRINUSE:
        return InputError(
            field="port",
            value=port,
            problem=f"is already in use on {address} (another server listens there)",
            accepted="a free port, e.g. --port 8001",
        )
    if exc.errno == errno.EACCES:
        return InputError(
            field="port", value=port, problem="needs privileges here", accepted="a port from 1024 to 65535"
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return InputError(
            field="host", value=host, problem="is not an address of this machine", accepted=HOST_ACCEPTED
        )
    return InputError(
        field="host", value=host, problem=f"cannot listen on port {port}: {exc.strerror or exc}"
    )


def page_url(host: str, port: int, token: str) -> str:
    """The link to print: this machine's name when bound to every interface."""
    import socket

    from tui.serve_rules import WILDCARD_HOSTS, bracketed

    name = socket.gethostname() if host in WILDCARD_HOSTS else bracketed(host)
    return f"http://{name}:{port}/?token={token}"


def sessions_root() -> Path:
    """The folder that holds one private folder per session (its ticks and exports), made now so that an
    unwritable data directory is one line at start rather than a failure at each tab."""
    from advisor.catalog.userdata import data_dir, ensure_dir

    root = data_dir() / "serve-sessions"
    try:
        ensure_dir(root).chmod(0o700)
    except OSError as exc:
        raise InputError(
            f"data directory {root}: cannot create it ({exc.strerror or exc}); set GPU_ADVISOR_DATA_DIR "
            "to a folder you can write"
        ) from None
    return root


def run_serve(args: argparse.Namespace) -> int:
    """Bind (or fail in one line), print the one start-up line with the link, serve until Ctrl+C."""
    origins = check_serve_args(args)
    try:
        from tui.serve_web import GuardedServer
    except ImportError as exc:
        raise InputError("serve needs textual-serve: pip install textual-serve") from exc
    import secrets

    from tui.serve_rules import Doors

    root = sessions_root()
    sockets = bind(args.host, args.port)
    doors = Doors(args.host, args.port, secrets.token_urlsafe(24), origins)
    server = GuardedServer(doors, max_sessions=args.max_sessions, sessions_root=root, title="gpu-advisor")
    print(
        f"gpu-advisor serve: open {page_url(args.host, args.port, doors.token)} in a browser; "
        f"{reach(args.host)}; at most {args.max_sessions} sessions at once. Ctrl+C stops it.",
        flush=True,
    )
    server.serve_on(sockets)
    return 0
