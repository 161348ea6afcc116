"""Provides `gpu-advisor serve`: the terminal UI in a web browser, through textual-serve."""

from __future__ import annotations

import argparse
import shlex
import sys

from advisor.question.errors import InputError

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


def add_serve_parser(sub: argparse._SubParsersAction) -> None:
    """The `serve` subcommand and its flags."""
    p = sub.add_parser(
        "serve",
        help="the guided UI in a web browser",
        description="Serve the guided UI over HTTP with textual-serve: each browser tab runs its own copy. "
        "Binds to this machine only (127.0.0.1) unless --host says otherwise.",
    )
    p.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0: every interface)",
    )
    p.add_argument("--port", default=DEFAULT_PORT, type=int, help="port to listen on (default 8000)")


def reach(host: str) -> str:
    """Who can open the page, in one line."""
    if host in LOOPBACK:
        return "loopback only: only this machine can connect (use --host 0.0.0.0 to share it on the network)"
    return f"listening on {host}: anyone who can reach this port can use the advisor (there is no login)"


def ui_command() -> str:
    """The command each browser session runs: this Python's `-m tui`, so it needs no script on PATH."""
    return f"{shlex.quote(sys.executable)} -m tui"


def run_serve(args: argparse.Namespace) -> int:
    """Serve until Ctrl+C."""
    if not 0 < args.port < 65536:
        raise InputError(
            f"--port {args.port}: must be between 1 and 65535",
            field="port",
            value=args.port,
            problem="is not a port",
            accepted="a number between 1 and 65535",
        )
    try:
        from textual_serve.server import Server
    except ImportError as exc:
        raise InputError("serve needs textual-serve: pip install textual-serve") from exc
    url = f"http://{'[' + args.host + ']' if ':' in args.host else args.host}:{args.port}"
    print(f"gpu-advisor serve: open {url} in a browser; {reach(args.host)}. Ctrl+C stops it.", flush=True)
    Server(ui_command(), host=args.host, port=args.port, title="gpu-advisor", public_url=url).serve()
    return 0
