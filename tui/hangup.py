"""Provides leave_with_the_terminal(): the process ends at once when its terminal hangs up or goes away."""

from __future__ import annotations

import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable

HANGUP_STATUS = 129  # 128 + SIGHUP, as a shell reports a job ended by a hangup
GRACE_S = 1.0
"""How long a hangup waits for the normal exit (a terminal that still reads gets its modes restored)."""
POLL_S = 1.0


def leave_with_the_terminal(exit_app: Callable[[], object]) -> None:
    """On SIGHUP, and when the terminal on stdin hangs up (no signal reaches a job under make or a shell),
    leave: exit_app() first, then, if that is stuck, at once.

    Leaving at once is safe: every file the UI writes (ticks, exports, settings) is written atomically. The
    normal exit can block for ever on a dead terminal: Textual's output thread waits on a write nobody
    reads, and the event loop behind it, so neither an asyncio signal handler nor a timer would run. A
    Python signal handler and a thread run regardless.
    """
    fd = sys.__stdin__.fileno() if sys.__stdin__ is not None else -1

    def hung_up(_signum: int, _frame: object) -> None:
        if fd >= 0 and _hung_up(fd):
            os._exit(HANGUP_STATUS)  # nothing to restore on a terminal that is gone
        threading.Thread(target=_leave_after, args=(GRACE_S,), daemon=True, name="hangup-grace").start()
        exit_app()

    signal.signal(signal.SIGHUP, hung_up)
    if fd >= 0 and os.isatty(fd):
        threading.Thread(target=_watch, args=(fd,), daemon=True, name="terminal-watch").start()


def _hung_up(fd: int) -> bool:
    """Whether the terminal on fd has hung up (its other end closed)."""
    poller = select.poll()
    poller.register(fd, 0)  # hang-ups and errors are always reported
    return any(events & (select.POLLHUP | select.POLLERR | select.POLLNVAL) for _, events in poller.poll(0))


def _watch(fd: int) -> None:
    try:
        tty = os.ttyname(fd)
    except OSError:
        tty = None
    while True:
        time.sleep(POLL_S)
        if _hung_up(fd) or (tty is not None and not os.path.exists(tty)):
            os._exit(HANGUP_STATUS)


def _leave_after(seconds: float) -> None:
    time.sleep(seconds)
    os._exit(HANGUP_STATUS)
