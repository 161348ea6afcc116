"""Provides what the serve tests, the serve benchmark and the screenshot script share: a real
`gpu-advisor serve` on a free loopback port (its HOME, data directory and working directory private), raw
HTTP and websocket clients, the app processes it started, and the keys that drive a session to a ranking."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# What a browser sends for the first preset (quality inspection, ResNet-50), for Next and for Find plans.
PRESET_KEYS, NEXT_KEY = ("\t", "\x1b[H", "\r"), "\x0e"
RANKED = re.compile(rb"best \d+ of \d+ plans")
LOADED = re.compile(rb"to fill in")  # the first step's status once the catalogue is loaded
STEP_MODEL, STEP_BUDGET = b"Which model?", b"What must the plan respect?"
ESCAPES = re.compile(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]")  # styles and cursor moves between the words


@dataclass
class Served:
    """A running `gpu-advisor serve` and what it printed."""

    proc: subprocess.Popen[str]
    port: int
    token: str
    root: Path  # holds home/, data/ and cwd/: everything the server could write
    lines: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def link(self) -> str:
        return f"{self.url}/?token={self.token}"

    def log(self) -> str:
        return "".join(self.lines)

    def wait_for_log(self, text: str, timeout: float = 20.0, count: int = 1) -> None:
        """Until the server has logged text (count times)."""
        deadline = time.monotonic() + timeout
        while self.log().count(text) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"the server did not log {text!r} in {timeout:.0f} s:\n{self.log()}")
            time.sleep(0.1)

    def app_processes(self) -> list[int]:
        """This server's session apps that are alive, found by their working directory (orphans too)."""
        return app_processes(self.root / "data")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def served(root: Path, *flags: str) -> Iterator[Served]:
    """`gpu-advisor serve` on a free loopback port with a private HOME, data directory and cwd under root."""
    for name in ("home", "data", "cwd"):
        (root / name).mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HOME": str(root / "home"), "GPU_ADVISOR_DATA_DIR": str(root / "data")}
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "advisor.cli.main", "serve", "--port", str(port), *flags],
        cwd=root / "cwd",
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    lines: list[str] = []
    assert proc.stdout is not None
    threading.Thread(target=_collect, args=(proc, lines), daemon=True).start()
    try:
        token = _token(lines, proc)
        yield Served(proc, port, token, root, lines)
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _collect(proc: subprocess.Popen[str], lines: list[str]) -> None:
    for line in proc.stdout or ():
        lines.append(line)


def _token(lines: list[str], proc: subprocess.Popen[str], timeout: float = 30.0) -> str:
    """The token in the start-up line (the sockets listen before it is printed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if lines:
            found = re.search(r"\?token=([\w-]+)", lines[0])
            assert found, lines[0]
            return found.group(1)
        assert proc.poll() is None, "".join(lines)
        time.sleep(0.05)
    raise AssertionError(f"serve printed no start-up line in {timeout:.0f} s")


def app_processes(data_dir: Path) -> list[int]:
    """Live processes whose working directory is a session folder under data_dir."""
    sessions = str(data_dir.resolve() / "serve-sessions")
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{pid}/cwd").startswith(sessions) and _alive(pid):
                found.append(int(pid))
    return found


def _alive(pid: str) -> bool:
    """Not a zombie (a zombie has no memory and is the parent's to reap)."""
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


def rss_mb(pids: list[int], field: str = "VmRSS") -> float:
    """Resident memory of these processes together, in MB (field="VmHWM": each one's peak)."""
    total_kb = 0
    for pid in pids:
        with contextlib.suppress(OSError), open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    total_kb += int(line.split()[1])
    return total_kb / 1024


def wait_until_gone(server: Served, timeout: float = 20.0) -> float:
    """Seconds until no app process of the server is left (AssertionError past timeout)."""
    start = time.monotonic()
    while server.app_processes():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"app processes left {timeout:.0f} s after their sessions closed")
        time.sleep(0.1)
    return time.monotonic() - start


def raw_http(port: int, request: bytes, timeout: float = 10.0) -> bytes:
    """Send bytes as they are (no client tidies the path) and read the answer until the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        conn.sendall(request)
        chunks = []
        with contextlib.suppress(TimeoutError, ConnectionResetError):
            while chunk := conn.recv(65536):
                chunks.append(chunk)
    return b"".join(chunks)


class Screen:
    """What a page's terminal was sent (its websocket frames), for waiting on text without sleeping."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.data = bytearray()
        page.on("websocket", lambda ws: ws.on("framereceived", self._frame))

    def _frame(self, payload: str | bytes) -> None:
        self.data += payload if isinstance(payload, bytes) else payload.encode()

    def mark(self) -> int:
        """Where the output is now: wait_for(since=mark) looks only at what comes after."""
        return len(self.data)

    def wait_for(self, pattern: re.Pattern[bytes] | bytes, timeout: float = 30.0, since: int = 0) -> None:
        """Until the terminal was sent pattern (Playwright's events arrive only while it waits)."""
        regex = pattern if isinstance(pattern, re.Pattern) else re.compile(re.escape(pattern))
        deadline = time.monotonic() + timeout
        while not regex.search(ESCAPES.sub(b"", self.data[since:])):
            if time.monotonic() > deadline:
                raise AssertionError(f"the page never showed {regex.pattern!r} in {timeout:.0f} s")
            self.page.wait_for_timeout(100)


def open_in_browser(page: Any, server: Served) -> Screen:
    """Open the start-up link (it sets the cookie, then redirects); wait for the loaded catalogue."""
    screen = Screen(page)
    page.goto(server.link)
    screen.wait_for(LOADED, timeout=90)
    page.mouse.click(1000, 8)  # the step bar: gives the terminal the keyboard, focuses nothing in it
    return screen


def rank_in_browser(page: Any, screen: Screen) -> None:
    """The first preset (ResNet-50 quality inspection), Next, Find plans; until the ranking is on screen.

    Each key waits for the screen it leads to: a key pressed before the step is ready would be lost.
    """
    for keys, shown in ((("Tab", "Home", "Enter"), STEP_MODEL), (("Control+n",), STEP_BUDGET)):
        since = screen.mark()
        for key in keys:
            page.keyboard.press(key)
        screen.wait_for(shown, timeout=60, since=since)
    since = screen.mark()
    page.keyboard.press("Control+n")
    screen.wait_for(RANKED, timeout=120, since=since)
