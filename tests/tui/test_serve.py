"""`gpu-advisor serve` in a real browser: headless Chromium opens the start-up link, ranks plans, is refused
an export outside its session and receives a normal export as a download; closing the tab ends its app."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import tomllib
from pathlib import Path

import pytest
from serve_client import open_in_browser, rank_in_browser, served, wait_until_gone

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SERVED_LABEL = b"File name of the download"
REFUSAL = b"file name only"
FIELD_LEFT, FIELD_RIGHT = "▊".encode(), "▎".encode()  # the input's borders on the dialog's line

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("playwright") is None,
        reason="playwright is not installed (pip install playwright)",
    ),
    pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (apt-get install -y chromium)"),
]


def retype(page, screen, text: str, attempts: int = 3) -> None:
    """Replace the field's text with text, and see the whole field show it.

    Keys typed at full speed into a loaded machine can go missing between the browser and the app (seen at a
    load of 13 on 2 cores), so each key waits a little and a field that does not show the text is retyped.
    """
    field = re.compile(FIELD_LEFT + rb"\s*" + re.escape(text.encode()) + rb"\s*" + FIELD_RIGHT)
    for _ in range(attempts):
        since = screen.mark()
        page.keyboard.press("End")
        for _ in range(80):
            page.keyboard.press("Backspace", delay=5)
        page.keyboard.type(text, delay=30)
        with contextlib.suppress(AssertionError):
            screen.wait_for(field, timeout=15, since=since)
            return
    raise AssertionError(f"the field never showed {text!r}")


def test_serve_in_chromium_refuses_paths_and_delivers_the_export_as_a_download(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    absolute = Path(f"/tmp/gpu-advisor-{os.getpid()}.toml")  # short: the whole path fits in the field
    with served(tmp_path / "server") as server, sync_playwright() as pw:
        home = server.root / "home"
        (home / ".bashrc").write_text("# the server user's own\n")
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 800}, accept_downloads=True)
            downloads: list = []
            # textual-serve opens each download in a new tab: listen on every page the context opens.
            context.on("page", lambda tab: tab.on("download", lambda d: downloads.append(d)))
            page = context.new_page()
            screen = open_in_browser(page, server)
            rank_in_browser(page, screen)
            page.keyboard.press("e")
            screen.wait_for(SERVED_LABEL)
            for path in ("../x.toml", "~/.bashrc", str(absolute)):
                since = screen.mark()
                retype(page, screen, path)
                screen.wait_for(REFUSAL, since=since)
                page.keyboard.press("Enter")  # refused: nothing is written, nothing is sent
            retype(page, screen, "plan.toml")
            page.keyboard.press("Enter")
            screen.wait_for(b"on its way to your browser")
            page.wait_for_timeout(500)
            for _ in range(100):
                if downloads:
                    break
                page.wait_for_timeout(100)
            assert len(downloads) == 1, downloads
            assert downloads[0].suggested_filename == "plan.toml"
            downloads[0].save_as(tmp_path / "downloaded.toml")
            page.screenshot(path=str(tmp_path / "serve-results.png"))  # for a failure to be looked at
        finally:
            browser.close()
        assert wait_until_gone(server) < 10  # the closed tab's app is reaped
    data = tomllib.loads((tmp_path / "downloaded.toml").read_text(encoding="utf-8"))
    assert data["inputs"]["workload"]["model"] == "resnet50" and data["chosen"]["count"] >= 1
    assert (home / ".bashrc").read_text() == "# the server user's own\n"
    assert not absolute.exists() and not (server.root / "x.toml").exists()
    assert not any((server.root / "cwd").iterdir())  # nothing in the server's working directory
    assert not any((server.root / "data" / "serve-sessions").iterdir())  # the session's folder went with it
    log = server.log()
    assert "loopback only" in log and "Traceback" not in log, log
