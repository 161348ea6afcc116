"""`gpu-advisor serve` in a real browser: headless Chromium drives the wizard to a ranking and an export."""

from __future__ import annotations

import contextlib
import importlib.util
import shutil
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("playwright") is None,
        reason="playwright is not installed (pip install playwright)",
    ),
    pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (apt-get install -y chromium)"),
    pytest.mark.skipif(
        importlib.util.find_spec("textual_serve") is None, reason="textual-serve is not installed"
    ),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[str], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[0]
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.2)
    raise AssertionError(f"nothing listens on port {port} after {timeout:.0f} s")


@contextlib.contextmanager
def served(workdir: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`gpu-advisor serve` on a free loopback port, in workdir (where the app's exports land)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "advisor.cli.main", "serve", "--port", str(port)],
        cwd=workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}", proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_serve_binds_loopback_and_runs_the_ui_in_chromium(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    shots = ROOT / "screenshots"
    shots.mkdir(exist_ok=True)
    with served(tmp_path) as (url, proc), sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(url)
            page.wait_for_selector(".xterm-screen", timeout=30_000)  # the terminal is up in the page
            time.sleep(6)  # the app starts and loads its knowledge
            page.mouse.click(1000, 8)  # the step bar: gives the terminal the keyboard, focuses nothing in it
            page.screenshot(path=str(shots / "serve-wizard.png"))
            for key in ("Tab", "Home", "Enter"):  # the first preset: the quality-inspection job
                page.keyboard.press(key)
                time.sleep(1.0)
            for step in range(2):  # Next, then Find plans
                page.keyboard.press("Control+n")
                time.sleep(1.5)
                page.screenshot(path=str(workdir_shot(tmp_path, step)))
            export = _export(page, tmp_path)
            page.screenshot(path=str(shots / "serve-results.png"))
        finally:
            browser.close()
    banner = proc.stdout.read() if proc.stdout else ""
    assert "loopback only" in banner, banner
    data = tomllib.loads(export.read_text(encoding="utf-8"))
    assert data["inputs"]["workload"]["model"] == "resnet50" and data["chosen"]["count"] >= 1
    assert (shots / "serve-results.png").stat().st_size > 10_000


def workdir_shot(workdir: Path, step: int) -> Path:
    """Where each step's picture goes, for a failure to be looked at."""
    return workdir / f"step-{step}.png"


def _export(page, workdir: Path, timeout: float = 90.0) -> Path:
    """Press e (export) and Enter until the TOML lands: e does nothing until the ranking is done."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        page.keyboard.press("e")
        time.sleep(1.0)
        page.keyboard.press("Enter")
        time.sleep(1.5)
        found = sorted(workdir.glob("gpu-plan-*"))
        if found:
            return found[0]
    raise AssertionError("no export was written: the recommendation did not complete in the browser")
