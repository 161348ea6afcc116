"""The app leaves at once when its terminal dies: a closed pty (SSH dropped, tmux killed), with or without
the SIGHUP the kernel sends a session leader. Real processes on a real pseudo-terminal."""

from __future__ import annotations

import fcntl
import os
import pty
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APP = """
import os, sys
from pathlib import Path
from advisor.catalog.loader import load_knowledge_from
from textual.widgets import LoadingIndicator
import tui.app
from tui.app import GpuAdvisorApp
Path(sys.argv[1]).write_text(str(os.getpid()))
knowledge = load_knowledge_from(Path(sys.argv[2]))


class Busy(GpuAdvisorApp):
    CSS_PATH = str(Path(tui.app.__file__).with_name("app.tcss"))

    def on_ready(self):
        # A screen that keeps painting, as the results do while a ranking runs.
        self.screen.mount(LoadingIndicator())


app = Busy(lambda: knowledge, "prior", Path(sys.argv[3]), exit_on_hangup=True)
app.run()
"""
STARTED = b"palette"  # the footer, painted with the first frame
LEAVE_WITHIN_S = 8.0  # generous for a loaded machine; a hung app never leaves


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (our own child, not yet reaped) has left.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(")")[-1].split()[0] != "Z"


@pytest.mark.parametrize(
    "leader, end",
    [(True, "close"), (False, "close"), (True, "sighup")],
    ids=["closed-sighup", "closed-no-signal", "stalled-sighup"],
)
def test_a_dead_terminal_ends_the_app(tmp_path: Path, leader: bool, end: str) -> None:
    """The terminal stops reading (a frozen tmux, a stalled SSH link), then dies: its pty closes, or a
    SIGHUP comes while it is still open. leader: the app leads the terminal's session, so the kernel sends
    it SIGHUP when the pty closes; otherwise a shell leads it (as under make): no signal reaches the app."""
    pid_file = tmp_path / "pid"
    command = [sys.executable, "-c", APP, str(pid_file), str(ROOT / "tests/data/knowledge"), str(tmp_path)]
    if not leader:
        command = ["sh", "-c", '"$@"; true', "sh", *command]
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "30"}
    child = subprocess.Popen(
        command, stdin=slave, stdout=slave, stderr=slave, preexec_fn=_own_terminal, env=env, cwd=tmp_path
    )
    os.close(slave)
    seen = bytearray()
    stop_reading = threading.Event()
    reading = threading.Thread(target=_read_all, args=(master, seen, stop_reading), daemon=True)
    reading.start()
    try:
        deadline = time.monotonic() + 120
        while STARTED not in seen and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.1)
        assert STARTED in seen, bytes(seen[-2000:])
        time.sleep(1.0)  # the handlers are in place once the first frame is up
        pid = int(pid_file.read_text())
        # A terminal that stops reading (a frozen tmux, a stalled SSH link): resizes make the app repaint
        # until its output thread blocks on the full pty and its frames back up behind it. Then it dies.
        stop_reading.set()
        for i in range(40):
            fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 30 + i % 20, 100 + i, 0, 0))
            time.sleep(0.05)
        time.sleep(1.0)
        if end == "close":
            os.close(master)
        else:
            os.kill(pid, signal.SIGHUP)
        closed = time.monotonic()
        while alive(pid) and time.monotonic() - closed < LEAVE_WITHIN_S:
            time.sleep(0.1)
        assert not alive(pid), f"still running {LEAVE_WITHIN_S:g} s after its terminal closed"
    finally:
        if end != "close":
            os.close(master)
        for p in (child.pid, int(pid_file.read_text()) if pid_file.exists() else 0):
            if p and alive(p):
                os.kill(p, 9)
        child.wait(timeout=10)


def _own_terminal() -> None:
    """In the child: a new session whose controlling terminal is the pty on stdin (as a terminal window's
    shell has), so the kernel sends the session SIGHUP and SIGWINCH."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _read_all(fd: int, into: bytearray, stop: threading.Event) -> None:
    """Drain the terminal as a terminal emulator would, until it closes or stop is set."""
    while not stop.is_set():
        try:
            data = os.read(fd, 65536)
        except OSError:
            return
        if not data:
            return
        into += data
