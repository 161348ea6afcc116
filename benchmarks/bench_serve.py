"""Prints the resident memory of `gpu-advisor serve` sessions and what is left after their tabs close.

Starts a real server on a loopback port (private HOME and data directory), opens N sessions as a browser tab
would (the page's Origin, the token, one websocket each), drives each to a ranking with the keys a browser
sends (the first preset, Next, Find plans), then reads the resident memory (VmRSS) of every app process.
Then it closes every websocket and counts the app processes still alive after the reaper's grace time.

    python benchmarks/bench_serve.py [SESSIONS] [--preset N]
(default 8 sessions, the server started with --max-sessions SESSIONS; N: the Nth preset, 0 = ResNet-50)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

DOWN = "\x1b[B"
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the serve helpers the tests use

from serve_client import (  # noqa: E402
    ESCAPES,
    LOADED,
    NEXT_KEY,
    PRESET_KEYS,
    RANKED,
    STEP_BUDGET,
    STEP_MODEL,
    Served,
    rss_mb,
    served,
)


class Tab:
    """One session as a browser tab holds it: a websocket and what its terminal was sent."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.screen = bytearray()

    async def keys(self, *keys: str) -> None:
        for key in keys:
            await self.ws.send_str(json.dumps(["stdin", key]))

    async def until(self, pattern: re.Pattern[bytes] | bytes, since: int, timeout: float = 300.0) -> None:
        """Read the terminal until it shows pattern (after byte since)."""
        regex = pattern if isinstance(pattern, re.Pattern) else re.compile(re.escape(pattern))
        deadline = time.monotonic() + timeout
        while not regex.search(ESCAPES.sub(b"", bytes(self.screen[since:]))):
            message = await self.ws.receive(timeout=max(1.0, deadline - time.monotonic()))
            if message.type != aiohttp.WSMsgType.BINARY:
                if message.type != aiohttp.WSMsgType.TEXT:
                    raise RuntimeError(f"the session closed: {message}")
                continue
            self.screen += message.data

    async def rank(self, preset: int) -> None:
        """A preset, Next, Find plans: each key once the screen it needs is up."""
        await self.until(LOADED, 0)
        choose = (*PRESET_KEYS[:2], *[DOWN] * preset, PRESET_KEYS[2])
        for keys, shown in ((choose, STEP_MODEL), ((NEXT_KEY,), STEP_BUDGET), ((NEXT_KEY,), RANKED)):
            since = len(self.screen)
            await self.keys(*keys)
            await self.until(shown, since)


async def measure(server: Served, sessions: int, preset: int) -> dict[str, float]:
    """Open, rank, measure, close; the figures."""
    async with aiohttp.ClientSession() as http:
        url = f"{server.url}/ws?width=120&height=36&token={server.token}"
        tabs = [Tab(await http.ws_connect(url, headers={"Origin": server.url})) for _ in range(sessions)]
        start = time.monotonic()
        await asyncio.gather(*(tab.rank(preset) for tab in tabs))
        ranked_s = time.monotonic() - start
        pids = server.app_processes()
        each = sorted(rss_mb([pid]) for pid in pids)
        peaks = sorted(rss_mb([pid], "VmHWM") for pid in pids)
        for tab in tabs:
            await tab.ws.close()
    closed = time.monotonic()
    while server.app_processes() and time.monotonic() - closed < 30:
        await asyncio.sleep(0.1)
    return {
        "app processes while open": len(pids),
        "resident MB, all sessions": sum(each),
        "resident MB per session, least": each[0],
        "resident MB per session, median": statistics.median(each),
        "resident MB per session, most": each[-1],
        "peak resident MB of any session": peaks[-1],
        "seconds until all ranked": ranked_s,
        "app processes left after close": len(server.app_processes()),
        "seconds until none left": time.monotonic() - closed,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sessions", nargs="?", type=int, default=8)
    parser.add_argument("--preset", type=int, default=0, help="which preset (0: ResNet-50, 1: 70B LoRA, ...)")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="gpu-advisor-bench-serve-") as tmp,
        served(Path(tmp), "--max-sessions", str(args.sessions)) as server,
    ):
        figures = asyncio.run(measure(server, args.sessions, args.preset))
    print(
        f"gpu-advisor serve, {args.sessions} sessions each ranked (preset {args.preset} of the first step):"
    )
    for name, value in figures.items():
        print(f"  {name:34} {value:8.1f}" if isinstance(value, float) else f"  {name:34} {value:8d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
