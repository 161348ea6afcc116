"""Provides GuardedServer: textual-serve's server behind a token, Host and Origin checks and a session cap,
each browser session in its own folder and process group, reaped when its websocket closes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import shutil
import signal
import socket
import sys
from collections.abc import Awaitable, Callable, Iterable
from html import escape
from pathlib import Path
from typing import Any

import aiohttp_jinja2
from aiohttp import WSMsgType, web
from textual_serve.app_service import AppService
from textual_serve.server import Server

from advisor.question.checks import escape_controls
from tui.serve_rules import Doors, parse_message, size_from_query

log = logging.getLogger("gpu-advisor.serve")
# The UI reads it (tui/served.py names it too; a test holds the two equal): the session's private folder.
SESSION_ENV = "GPU_ADVISOR_SERVE_SESSION"
APP_COMMAND = (sys.executable, "-P", "-m", "tui")  # -P: the session folder (the cwd) is never on sys.path
QUIT_GRACE_S = 3.0  # after "quit", the app's time to leave before its process group is sent SIGTERM
TERM_GRACE_S = 2.0  # then SIGKILL
BAD_LOGGED = 3  # bad websocket messages logged per session; the rest are counted, not logged
ERRORS_FILE = ".app-errors.txt"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class OneLine(logging.Formatter):
    """Every log record as one line with no traceback: garbage from a client never floods the log."""

    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            text += f" ({type(exc).__name__}: {exc})"
        return "gpu-advisor serve: " + escape_controls(" ".join(text.split()))[:400]


def page(status: int, title: str, text: str) -> web.Response:
    """A small HTML page that says what happened and what to do."""
    body = (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>gpu-advisor: {escape(title)}</title></head>"
        f"<body style='font-family:sans-serif;max-width:40em;margin:4em auto'><h1>{escape(title)}</h1>"
        f"<p>{escape(text)}</p></body></html>"
    )
    return web.Response(status=status, text=body, content_type="text/html")


def _empty_stream() -> asyncio.StreamReader:
    reader = asyncio.StreamReader()
    reader.feed_eof()
    return reader


class Session(AppService):
    """One browser tab's app: `python -m tui` in its own process group, with the session folder as its cwd."""

    def __init__(self, folder: Path, **kwargs: Any) -> None:
        super().__init__(" ".join(APP_COMMAND), **kwargs)
        self.folder = folder
        self.name = folder.name[:8]
        self.bad_messages = 0
        self._stopping: asyncio.Future[None] | None = None

    async def _open_app_process(self, width: int = 80, height: int = 24) -> asyncio.subprocess.Process:
        environment = self._build_environment(width=width, height=height)
        environment[SESSION_ENV] = str(self.folder)
        PIPE = asyncio.subprocess.PIPE
        # The app's stderr goes to a file (its last line is logged at the end), not raw into the server's log.
        with open(self.folder / ERRORS_FILE, "wb") as errors:
            process = await asyncio.create_subprocess_exec(
                *APP_COMMAND,
                stdin=PIPE,
                stdout=PIPE,
                stderr=errors,
                env=environment,
                cwd=self.folder,
                start_new_session=True,  # its own process group: the reaper can end all of it
            )
        process.stderr = _empty_stream()  # textual-serve's reader of stderr finds it already at its end
        assert process.stdin is not None
        self._process, self._stdin = process, process.stdin
        return process

    async def stop(self) -> None:
        """Reap the app (once, however many callers ask; a cancelled caller does not stop the reaping)."""
        if self._stopping is None:
            self._stopping = asyncio.ensure_future(self._reap())
        await asyncio.shield(self._stopping)

    async def _reap(self) -> None:
        """Ask the app to quit; SIGTERM its process group if it has not left in time, then SIGKILL."""
        process, task = self._process, self._task
        if process is None:
            return
        await self._download_manager.cancel_app_downloads(app_service_id=self.app_service_id)
        if process.returncode is None:
            await self.send_meta({"type": "quit"})
        for sig, grace in ((None, QUIT_GRACE_S), (signal.SIGTERM, TERM_GRACE_S), (signal.SIGKILL, None)):
            if sig is not None and process.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, sig)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), grace)
                break
        if task is not None:
            await task  # ends at the end of the app's stdout
        self._task = None

    def kill_now(self) -> None:
        """SIGKILL the process group, for a server that is leaving without waiting."""
        if self._process is not None and self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._process.pid, signal.SIGKILL)

    def errors(self) -> str:
        """The last line the app wrote to stderr, if any."""
        try:
            lines = (self.folder / ERRORS_FILE).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return ""
        lines = [line for line in lines if line.strip()]
        return f"{lines[-1].strip()} ({len(lines)} lines)" if lines else ""


class GuardedServer(Server):
    """textual-serve's Server with the doors of `gpu-advisor serve` (see tui/serve.py)."""

    def __init__(self, doors: Doors, *, max_sessions: int, sessions_root: Path, title: str) -> None:
        super().__init__(" ".join(APP_COMMAND), host=doors.host, port=doors.port, title=title)
        self.doors = doors
        self.max_sessions = max_sessions
        self.sessions_root = sessions_root
        self.sessions: set[Session] = set()

    # Start and stop ------------------------------------------------------------------------------------

    def initialize_logging(self) -> None:
        """One plain line per record on stderr; no access log."""
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(OneLine())
        logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)
        logging.getLogger("aiohttp.access").setLevel(logging.WARNING)

    def serve_on(self, sockets: Iterable[socket.socket]) -> None:
        """Serve on sockets already bound (a bad --host or a busy port failed before anything was printed)."""
        self.initialize_logging()
        loop = asyncio.new_event_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.request_exit)
        try:
            web.run_app(
                self._make_app(),
                sock=list(sockets),
                handle_signals=False,
                loop=loop,
                print=None,
                access_log=None,
                shutdown_timeout=QUIT_GRACE_S + TERM_GRACE_S + 1,
            )
        finally:
            for session in list(self.sessions):
                session.kill_now()

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self._guard)
        app.on_shutdown.append(self._reap_all)
        return app

    async def on_startup(self, app: web.Application) -> None:
        """Nothing: tui/serve.py has printed the one start-up line."""

    async def _reap_all(self, app: web.Application) -> None:
        await asyncio.gather(*(session.stop() for session in list(self.sessions)), return_exceptions=True)

    # Doors ---------------------------------------------------------------------------------------------

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Every request names this server; a download needs the token; no page of it can be framed."""
        if not self.doors.host_ok(request.headers.get("Host")):
            log.warning("refused a request for another host: %r", request.headers.get("Host", "")[:80])
            return page(
                421,
                "Wrong address",
                f"This gpu-advisor server answers as {', '.join(sorted(self.doors.hosts()))}. To reach it "
                "under another name, start it with --allow-origin http://NAME:PORT.",
            )
        if request.path.startswith("/download/") and not self._has_token(request):
            return page(403, "No token", "Downloads need the page opened from the server's link.")
        response = await handler(request)
        if not response.prepared:
            response.headers["X-Frame-Options"] = "DENY"
            response.headers["Content-Security-Policy"] = "frame-ancestors 'none'"
            response.headers["Referrer-Policy"] = "no-referrer"
        return response

    def _has_token(self, request: web.Request) -> bool:
        return self.doors.token_ok(request.cookies.get(self.doors.cookie) or request.query.get("token"))

    def full(self) -> bool:
        """Whether every session is taken (a closing session counts until its process is gone)."""
        return len(self.sessions) >= self.max_sessions

    def full_text(self) -> str:
        return (
            f"All {self.max_sessions} sessions of this gpu-advisor server are in use (each browser tab "
            "runs its own copy of the app). Close a tab that has it open, or try again in a minute."
        )

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        """The page: with ?token= it sets the cookie and redirects to itself; without a token, a refusal."""
        given = request.query.get("token")
        if given is not None:
            if not self.doors.token_ok(given):
                return page(
                    403, "Wrong token", "This link's token is not this server's: use the start-up link."
                )
            response = web.Response(status=303, headers={"Location": "/"})  # the token leaves the address bar
            response.set_cookie(
                self.doors.cookie, self.doors.token, httponly=True, samesite="Strict", path="/"
            )
            return response
        if not self._has_token(request):
            return page(
                403,
                "Open the link with its token",
                "This gpu-advisor server needs the link it printed when it started (ending in ?token=...).",
            )
        if self.full():
            return page(503, "Server full", self.full_text())
        return self._render(request)

    def _render(self, request: web.Request) -> web.Response:
        """textual-serve's page, its URLs built from the Host it was asked under (checked by _guard)."""
        scheme = self.doors.scheme_for(request.host)
        font = request.query.get("fontsize", "16")
        context = {
            "font_size": min(max(int(font), 6), 48)
            if font.isascii() and font.isdigit() and len(font) < 4
            else 16,
            "app_websocket_url": f"{'wss' if scheme == 'https' else 'ws'}://{request.host}/ws",
            "config": {"static": {"url": f"{scheme}://{request.host}/static/"}},
            "application": {"name": self.title},
        }
        return aiohttp_jinja2.render_template("app_index.html", request, context)

    def _ws_refusal(self, request: web.Request) -> str | None:
        origin = request.headers.get("Origin")
        if not self.doors.origin_ok(origin, request.headers.get("Host")):
            return (
                f"a websocket from origin {origin[:80]!r} (not this server's page)"
                if origin
                else ("a websocket with no Origin (not a page of this server)")
            )
        if not self._has_token(request):
            return "a websocket without this server's token"
        return None

    # Sessions ------------------------------------------------------------------------------------------

    async def handle_websocket(self, request: web.Request) -> web.StreamResponse:  # type: ignore[override]
        """One session: its app started, fed checked messages, and reaped when either side closes."""
        refusal = self._ws_refusal(request)
        if refusal is not None:
            log.warning("refused %s", refusal)
            return web.Response(status=403, text=f"refused: {refusal}")
        websocket = web.WebSocketResponse(heartbeat=15, max_msg_size=1 << 20)
        await websocket.prepare(request)
        if self.full():
            await websocket.send_bytes(f"\r\n  {self.full_text()}\r\n".encode())
            await websocket.close(code=1013, message=b"server full")
            return websocket
        session = self._open_session(websocket)
        try:
            await session.start(*size_from_query(request.query.get("width"), request.query.get("height")))
            await self._process_messages(websocket, session)
        except Exception as exc:  # noqa: BLE001 - one line in the log; the session is reaped below either way
            log.warning("session %s ended on %s: %s", session.name, type(exc).__name__, exc)
        finally:
            await self._close_session(session)
        return websocket

    def _open_session(self, websocket: web.WebSocketResponse) -> Session:
        self.sessions_root.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder = self.sessions_root / secrets.token_hex(8)
        folder.mkdir(mode=0o700)
        session = Session(
            folder,
            write_bytes=websocket.send_bytes,
            write_str=websocket.send_str,
            close=websocket.close,
            download_manager=self.download_manager,
        )
        self.sessions.add(session)
        log.info("session %s opened (%d of %d)", session.name, len(self.sessions), self.max_sessions)
        return session

    async def _close_session(self, session: Session) -> None:
        try:
            await session.stop()
        finally:
            self.sessions.discard(session)
            if errors := session.errors():
                log.warning("session %s: the app wrote to stderr: %s", session.name, errors)
            shutil.rmtree(session.folder, ignore_errors=True)
            bad = (
                f"; {session.bad_messages} bad messages ignored" if session.bad_messages > BAD_LOGGED else ""
            )
            log.info("session %s closed (%d open%s)", session.name, len(self.sessions), bad)

    async def _process_messages(self, websocket: web.WebSocketResponse, app_service: AppService) -> None:
        """The browser's messages, each checked (serve_rules.parse_message); garbage: one log line."""
        assert isinstance(app_service, Session)
        async for message in websocket:
            parsed = parse_message(message.data) if message.type == WSMsgType.TEXT else "a binary message"
            if isinstance(parsed, str):
                app_service.bad_messages += 1
                if app_service.bad_messages <= BAD_LOGGED:
                    last = app_service.bad_messages == BAD_LOGGED
                    more = "; further bad messages of this session are counted, not logged" if last else ""
                    log.warning("session %s: ignored %s%s", app_service.name, parsed, more)
                continue
            kind, value = parsed
            if kind == "stdin":
                await app_service.send_bytes(value.encode("utf-8", "replace"))
            elif kind == "resize":
                await app_service.set_terminal_size(*value)
            elif kind == "ping":
                await websocket.send_json(["pong", value])
            elif kind == "blur":
                await app_service.blur()
            elif kind == "focus":
                await app_service.focus()
