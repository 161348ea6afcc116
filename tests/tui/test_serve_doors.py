"""`gpu-advisor serve` as a server, from outside: a real server on a loopback port, raw HTTP and websocket
clients. Who may open a session, what garbage does to it, how many sessions run and that each is reaped."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from serve_client import Served, raw_http, served, wait_until_gone

pytestmark = pytest.mark.slow
MAX_SESSIONS = 2


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served(tmp_path_factory.mktemp("serve"), "--max-sessions", str(MAX_SESSIONS)) as running:
        yield running
    log = running.log()
    assert "Traceback" not in log, log
    assert all(line.startswith("gpu-advisor serve:") for line in log.splitlines()), log


def client() -> aiohttp.ClientSession:
    # A browser keeps a cookie set by 127.0.0.1; aiohttp's default jar refuses cookies of IP addresses.
    return aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))


async def connect(
    server: Served, session: aiohttp.ClientSession, **headers: str
) -> aiohttp.ClientWebSocketResponse:
    """A websocket as the page opens it: the server's own Origin, the token (as the page's cookie would)."""
    headers = {"Origin": server.url, **headers}
    return await session.ws_connect(
        f"{server.url}/ws?width=100&height=30&token={server.token}", headers=headers
    )


async def first_bytes(ws: aiohttp.ClientWebSocketResponse, timeout: float = 60.0) -> bytes:
    """The app's first frame: its process is up and painting."""
    message = await ws.receive(timeout=timeout)
    assert message.type == aiohttp.WSMsgType.BINARY, message
    return bytes(message.data)


async def test_the_page_needs_the_token_and_this_servers_name(server: Served) -> None:
    async with client() as session:
        async with session.get(server.url + "/") as r:
            assert r.status == 403 and "token" in await r.text()
        async with session.get(server.url + "/?token=not-it") as r:
            assert r.status == 403
        async with session.get(server.link, allow_redirects=False) as r:
            assert r.status == 303 and r.headers["Location"] == "/"  # the token leaves the address bar
            cookie = r.headers["Set-Cookie"]
            assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        async with session.get(server.url + "/") as r:  # the cookie now opens the page
            assert r.status == 200 and f"ws://127.0.0.1:{server.port}/ws" in await r.text()
            assert r.headers["X-Frame-Options"] == "DENY"
        # DNS rebinding: a page of evil.example that resolves to 127.0.0.1 asks with its own Host.
        async with session.get(server.url + "/", headers={"Host": f"evil.example:{server.port}"}) as r:
            assert r.status == 421


@pytest.mark.parametrize(
    "origin,with_token",
    [
        ("http://evil.example", True),  # a page of another site
        ("null", True),  # a sandboxed frame or a file:// page
        (None, True),  # no Origin at all
        ("http://127.0.0.1:1", True),  # another port of this machine is another origin
        ("self", False),  # this server's page without the token
    ],
)
async def test_a_websocket_from_another_origin_or_without_the_token_is_refused(
    server: Served, origin: str | None, with_token: bool
) -> None:
    headers = {} if origin is None else {"Origin": server.url if origin == "self" else origin}
    query = f"?token={server.token}" if with_token else ""
    async with client() as session:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await session.ws_connect(f"{server.url}/ws{query}", headers=headers)
    assert refused.value.status == 403
    assert not server.app_processes()


GARBAGE = [
    "not json",
    "[",
    "{}",
    "[]",
    "[1, 2]",
    '["stdin", 5]',
    '["stdin"]',
    '["resize", {"width": 1e9, "height": 24}]',
    '["resize", {"width": "wide"}]',
    '["resize", [1, 2]]',
    '["ping", {"a": 1}]',
    '["ping", "' + "x" * 1000 + '"]',
    '["no-such-type", 1]',
    "[" * 100_000,
    "x" * 200_000,
]


async def test_websocket_garbage_is_one_line_each_and_the_session_survives(server: Served) -> None:
    before = len(server.log())
    async with client() as session:
        ws = await connect(server, session)
        await first_bytes(ws)
        for text in GARBAGE:
            await ws.send_str(text)
        await ws.send_bytes(b"\x00\xff binary")
        await ws.send_str(
            '["stdin", "\\ud800"]'
        )  # a lone surrogate: JSON allows it, UTF-8 does not: replaced
        # A huge resize is clamped, not passed on: the app stays up and answers.
        await ws.send_str('["resize", {"width": 1000000000, "height": 1000000000}]')
        await ws.send_str('["ping", "still-there"]')
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            message = await ws.receive(timeout=30)
            if message.type == aiohttp.WSMsgType.TEXT and "still-there" in message.data:
                break
            assert message.type in (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.TEXT), message
        else:
            raise AssertionError("no pong after the garbage")
        await ws.close()
    wait_until_gone(server)
    deadline = time.monotonic() + 10
    while "closed (" not in server.log()[before:] and time.monotonic() < deadline:
        time.sleep(0.1)  # the log reaches us through a pipe and a reader thread
    log = server.log()[before:]
    assert "Traceback" not in log
    # The first three, one line each; then counted, not logged: garbage cannot flood the log.
    assert log.count(": ignored") == 3, log
    assert log.count("further bad messages of this session are counted, not logged") == 1, log
    assert f"; {len(GARBAGE) + 1} bad messages ignored" in log, log  # the garbage and the binary message


async def test_sessions_are_capped_and_every_app_is_reaped_when_its_websocket_closes(server: Served) -> None:
    async with client() as session:
        closed = server.log().count("closed (0 open")
        quick = await connect(server, session)
        await quick.close()  # closed while its app is still starting
        # Its session counts until the server has reaped it, which on a loaded machine may be after its app is
        # gone or before its app was even started: a tab opened sooner is told the server is full.
        server.wait_for_log("closed (0 open", timeout=30, count=closed + 1)
        wait_until_gone(server)
        tabs = [await connect(server, session) for _ in range(MAX_SESSIONS)]
        await asyncio.gather(*(first_bytes(ws) for ws in tabs))
        assert len(server.app_processes()) == MAX_SESSIONS
        async with session.get(server.link) as r:  # a further tab is told the server is full
            assert r.status == 503 and "sessions of this gpu-advisor server are in use" in await r.text()
        extra = await connect(server, session)
        message = await extra.receive(timeout=10)
        assert b"in use" in message.data
        closed = await extra.receive(timeout=10)
        assert closed.type == aiohttp.WSMsgType.CLOSE and closed.data == 1013
        for ws in tabs:
            await ws.close()
    seconds = wait_until_gone(server)
    assert seconds < 10
    # Each session's folder goes with it: removed once its app has exited and its output has been read to the
    # end, a moment after the process is gone (on a loaded machine after this line ran; reruns had hidden it).
    folders = server.root / "data" / "serve-sessions"
    deadline = time.monotonic() + 10
    while any(folders.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(folders.iterdir())


async def test_a_hung_app_is_killed_when_its_tab_closes(server: Served) -> None:
    async with client() as session:
        ws = await connect(server, session)
        await first_bytes(ws)
        (pid,) = server.app_processes()
        os.kill(pid, signal.SIGSTOP)  # an app that no longer reads its input: "quit" cannot reach it
        await ws.close()
    # The reaper waits for "quit", then SIGTERMs the app's process group, then SIGKILLs it.
    assert wait_until_gone(server, timeout=20) < 15


TRAVERSALS = [
    "/../../etc/passwd",
    "/static/../../../../etc/passwd",
    "/static/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
    "/static/..%2f..%2f..%2f..%2fetc%2fpasswd",
    "/static/%252e%252e/%252e%252e/etc/passwd",
    "/static/....//....//etc/passwd",
    "/download/..%2f..%2fetc%2fpasswd",
    "/%2e%2e/%2e%2e/etc/passwd",
]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_no_path_reaches_outside_the_static_folder(server: Served, path: str) -> None:
    request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nConnection: close\r\n\r\n"
    answer = raw_http(server.port, request.encode())
    assert b"root:" not in answer
    assert answer.startswith((b"HTTP/1.1 4", b"HTTP/1.0 4")), answer[:200]


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"\x00\xff\xfe garbage \r\n\r\n",
        b"GET /" + b"a" * 100_000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"b" * 100_000 + b"\r\n\r\n",
        b"GET / HTTP/9.9\r\n\r\n",
    ],
    ids=["binary", "huge-request-line", "huge-header", "bad-version"],
)
def test_raw_garbage_is_refused_and_the_server_goes_on(server: Served, request_bytes: bytes) -> None:
    answer = raw_http(server.port, request_bytes)
    assert not answer or (answer.startswith(b"HTTP/1.") and b" 200 " not in answer.split(b"\r\n", 1)[0])
    assert raw_http(server.port, _get(server)).startswith(b"HTTP/1.1 403")  # still answering


def _get(server: Served) -> bytes:
    return f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nConnection: close\r\n\r\n".encode()


def test_fifty_half_open_connections_do_not_stop_the_server(server: Served) -> None:
    held = []
    try:
        for _ in range(50):
            conn = socket.create_connection(("127.0.0.1", server.port), timeout=5)
            conn.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1")  # never finished
            held.append(conn)
        start = time.monotonic()
        assert raw_http(server.port, _get(server), timeout=5).startswith(b"HTTP/1.1 403")
        assert time.monotonic() - start < 5
    finally:
        for conn in held:
            with contextlib.suppress(OSError):
                conn.close()


def test_stopping_the_server_reaps_open_sessions(tmp_path: Path) -> None:
    async def open_one(server: Served) -> None:
        async with client() as session:
            ws = await connect(server, session)
            await first_bytes(ws)
            server.proc.terminate()  # Ctrl+C or a service stop, with a tab still open
            with contextlib.suppress(Exception):
                await ws.receive(timeout=15)

    with served(tmp_path) as server:
        asyncio.run(open_one(server))
        server.proc.wait(20)
    assert server.proc.returncode == 0
    assert not server.app_processes()
