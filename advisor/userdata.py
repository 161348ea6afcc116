"""Provides the user's data directory and atomic JSON files in it (checklist ticks, calibration runs)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def data_dir() -> Path:
    """$GPU_ADVISOR_DATA_DIR, else $XDG_DATA_HOME/gpu-advisor, else ~/.local/share/gpu-advisor."""
    explicit = os.environ.get("GPU_ADVISOR_DATA_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_DATA_HOME")
    return (Path(base) if base else Path.home() / ".local" / "share") / "gpu-advisor"


def write_text_atomic(path: Path, text: str) -> None:
    """Write through a temporary file in the same folder and a rename, so a crash never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_json(path: Path, default: Any) -> Any:
    """The JSON in path, or default when it is absent or unreadable."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return default


class ChecklistTicks:
    """Which checklist steps the user has ticked, kept in the data directory across restarts."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or data_dir() / "checklist-ticks.json"
        raw = read_json(self.path, {})
        self._ticks: dict[str, set[int]] = {
            k: {int(i) for i in v} for k, v in raw.items() if isinstance(v, list)
        } if isinstance(raw, dict) else {}

    def ticked(self, entry_id: str) -> set[int]:
        """Indices (0-based) of the ticked steps of one entry."""
        return set(self._ticks.get(entry_id, set()))

    def set(self, entry_id: str, step: int, done: bool) -> None:
        """Tick or untick one step and save."""
        steps = self._ticks.setdefault(entry_id, set())
        (steps.add if done else steps.discard)(step)
        self._save()

    def clear(self, entry_id: str | None = None) -> None:
        """Clear one entry's ticks, or all."""
        if entry_id is None:
            self._ticks.clear()
        else:
            self._ticks.pop(entry_id, None)
        self._save()

    def _save(self) -> None:
        data = {k: sorted(v) for k, v in self._ticks.items() if v}
        write_text_atomic(self.path, json.dumps(data, indent=1, sort_keys=True))
