"""Provides what the UI does differently when `gpu-advisor serve` runs it for a browser: exports become
downloads written only inside the session's own folder, and the app leaves when its server does."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual.app import App
    from textual.screen import Screen

    from advisor.answer.report import Report
    from tui.engine import Engine

# Set by `gpu-advisor serve` (tui/serve_web.py names it too) to the session's private folder: the
# browser user's checklist ticks and exports live there and nowhere else, and it goes when the session ends.
SESSION_ENV = "GPU_ADVISOR_SERVE_SESSION"
# A plain file name: no folder, no "~", no "..", no leading dot, nothing a shell or a browser reads twice.
EXPORT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
LABEL = "File name of the download (the TOML is sent to your browser):"


def session_dir() -> Path | None:
    """The session folder the server gave this process, or None when the UI runs in a terminal."""
    text = os.environ.get(SESSION_ENV, "")
    folder = Path(text)
    return folder if text and folder.is_absolute() and folder.is_dir() else None


def name_problem(text: str) -> str | None:
    """Why a served export name is refused: only a plain file name is, never a path on the server."""
    text = text.strip()
    if EXPORT_NAME.fullmatch(text) and ".." not in text:
        return None
    return (
        "In the browser the export is a download: give a file name only (letters, digits, . _ -), "
        "no folder, no ~ and no .."
    )


def export_path(folder: Path, text: str) -> Path:
    """Where a served export is written: the name (with .toml added when missing) inside the session folder.

    ValueError for anything name_problem refuses: the dialog checks first, this is the last word.
    """
    name = text.strip()
    if name_problem(name) is not None:
        raise ValueError(f"{name!r} is not a plain file name")
    if not name.lower().endswith(".toml"):
        name += ".toml"
    path = folder / name
    if path.parent != folder:
        raise ValueError(f"{name!r} leaves the session folder")
    return path


def deliver_export(screen: Screen[Any], engine: Engine, report: Report, folder: Path, text: str) -> None:
    """Write the export in the session folder (in a thread), then send it to the browser as a download."""
    app = screen.app
    path = export_path(folder, text)

    def write() -> None:
        try:
            engine.write_export(report, path)
        except Exception as exc:  # noqa: BLE001 - shown to the user rather than lost in a failed worker
            message = f"Could not write the export: {type(exc).__name__}"
            app.call_from_thread(app.notify, message, title="Export failed", severity="error")
            return
        app.call_from_thread(send, app, path)

    screen.run_worker(write, thread=True, group="export", exit_on_error=False, description="served export")


def send(app: App[object], path: Path) -> None:
    """Hand a written export to the browser (textual-serve's download route) and say so, without the path."""
    app.deliver_text(path, save_filename=path.name, mime_type="application/toml", name="export")
    app.notify(f"{path.name} is on its way to your browser as a download.", title="Exported")


def leave_with_server(app: App[Any]) -> None:
    """Exit when the server that started this session is gone (its process is no longer the parent)."""
    parent = os.getppid()

    def check() -> None:
        if os.getppid() != parent:
            app.exit(return_code=1)

    app.set_interval(2.0, check)
