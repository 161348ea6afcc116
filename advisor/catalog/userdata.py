"""Provides the user's data directory as a small database: locked updates, atomic files, bad files moved
aside."""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import functools
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

# Files a person may open or share: readable by others unless the umask says otherwise (mkstemp gives 0600).
FILE_MODE = 0o666
EXEC_MODE = 0o777
# Stored JSON larger than this is not ours: it is moved aside rather than read into memory.
MAX_STORED_BYTES = 16 << 20
# What parsing a file of the wrong shape raises (pydantic's ValidationError and json's errors are
# ValueErrors).
BAD_SHAPE = (ValueError, TypeError, KeyError, IndexError, AttributeError, ArithmeticError, RecursionError)


def data_dir() -> Path:
    """$GPU_ADVISOR_DATA_DIR, else $XDG_DATA_HOME/gpu-advisor, else ~/.local/share/gpu-advisor."""
    env = os.environ
    return _data_dir(env.get("GPU_ADVISOR_DATA_DIR"), env.get("XDG_DATA_HOME"), env.get("HOME"))


@functools.lru_cache(maxsize=16)
def _data_dir(explicit: str | None, base: str | None, home: str | None) -> Path:
    # Keyed by the variables it reads (HOME through Path.home): a search asks once per GPU it prices.
    if explicit:
        return Path(explicit)
    return (Path(base) if base else Path.home() / ".local" / "share") / "gpu-advisor"


def _umask() -> int:
    # /proc says it without changing it (os.umask would, briefly, for every thread).
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def file_mode(executable: bool = False) -> int:
    """0644 (0755 when executable) under the usual umask: what a new file would get from open()."""
    return (EXEC_MODE if executable else FILE_MODE) & ~_umask()


def stage_text(path: Path, text: str, *, executable: bool = False) -> Path:
    """text written and synced to a temporary file beside path (the caller renames it into place)."""
    import tempfile  # here: its imports (random, shutil) cost every command, and only writes need it

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fchmod(handle.fileno(), file_mode(executable))
            os.fsync(handle.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def write_text_atomic(path: Path, text: str, *, executable: bool = False) -> None:
    """Write through a temporary file in the same folder and a rename, so a crash never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = stage_text(path, text, executable=executable)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def ensure_dir(folder: Path) -> Path:
    """folder, created when missing; InputError (one line) when something else stands in its place."""
    from advisor.question.errors import InputError

    for part in (folder, *folder.parents):
        if os.path.lexists(part):
            if not part.is_dir():
                raise InputError(
                    f"data directory {folder}: {part} is not a directory; move it, or set "
                    "GPU_ADVISOR_DATA_DIR to a folder"
                )
            break
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@contextlib.contextmanager
def locked(name: str, folder: Path | None = None) -> Iterator[None]:
    """Hold the advisory lock `<name>.lock` in the data directory: one read-modify-write at a time.

    The lock file sits beside the stores, never inside a folder that --reset removes, so every process
    locks the same inode. flock is released by the kernel when a holder dies.
    """
    folder = ensure_dir(folder or data_dir())
    fd = os.open(folder / f".{name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def warn(message: str) -> None:
    """One warning line on stderr (the UI captures stderr, so this never tears its screen)."""
    from advisor.question.checks import escape_controls

    print(f"gpu-advisor: warning: {escape_controls(message)}", file=sys.stderr)


def aside_name(path: Path, tag: str = "corrupt") -> Path:
    """`<name>.<tag>-<timestamp>` beside path, with a counter when that name is taken."""
    stamp = dt.datetime.now().strftime("%Y%m%dT%H%M%S")
    candidate = path.with_name(f"{path.name}.{tag}-{stamp}")
    n = 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.{tag}-{stamp}-{n}")
        n += 1
    return candidate


def move_aside(path: Path, why: str) -> Path | None:
    """Rename a bad stored file out of the way (never delete it) and warn with one line naming both."""
    target = aside_name(path)
    try:
        os.rename(path, target)
    except FileNotFoundError:
        return None
    warn(f"{path} could not be used ({why}); moved it aside to {target.name}")
    return target


def read_stored_text(path: Path) -> str | None:
    """A stored file's text; None when absent; moved aside (and None) when it is not a readable UTF-8 file."""
    try:
        if not path.is_file():
            if path.exists() or path.is_symlink():
                move_aside(path, "not a regular file")
            return None
        if path.stat().st_size > MAX_STORED_BYTES:
            move_aside(path, f"larger than {MAX_STORED_BYTES >> 20} MiB")
            return None
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        move_aside(path, "not UTF-8 text")
        return None


def read_stored(path: Path, parse: Callable[[str], T]) -> T | None:
    """path parsed and validated by parse; None when absent; moved aside with a warning when parse fails.

    parse raises ValueError (json errors and pydantic's ValidationError are ValueErrors), TypeError, KeyError,
    IndexError, AttributeError or OverflowError for a file of the wrong shape.
    """
    text = read_stored_text(path)
    if text is None:
        return None
    try:
        return parse(text)
    except BAD_SHAPE as exc:
        move_aside(path, _reason(exc))
        return None


def _reason(exc: BaseException) -> str:
    from advisor.question.checks import escape_controls

    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return escape_controls(first[:160])


def read_json(path: Path, default: Any) -> Any:
    """The JSON in path, or default when it is absent; a file that does not parse is moved aside."""
    value = read_stored(path, json.loads)
    return default if value is None else value


def _parse_ticks(text: str) -> dict[str, set[int]]:
    from advisor.question.checks import Bound, in_bound

    raw = json.loads(text)
    if not isinstance(raw, dict):
        raise ValueError("expected a JSON object of entry id -> list of step numbers")
    step = Bound(0, 10_000, integer=True)
    ticks: dict[str, set[int]] = {}
    for key, steps in raw.items():
        if not isinstance(steps, list):
            raise ValueError(f"{key!r}: expected a list of step numbers")
        ticks[key] = {int(in_bound(i, f"{key} step", step)) for i in steps}
    return ticks


class ChecklistTicks:
    """Which checklist steps the user has ticked, kept in the data directory across restarts.

    Every change re-reads the file under the lock and writes it atomically, so two windows (or two
    processes) ticking at once both keep their ticks; a file that does not parse is moved aside, not lost.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or data_dir() / "checklist-ticks.json"
        self._ticks = self._load()

    def _load(self) -> dict[str, set[int]]:
        return read_stored(self.path, _parse_ticks) or {}

    def ticked(self, entry_id: str) -> set[int]:
        """Indices (0-based) of the ticked steps of one entry."""
        return set(self._ticks.get(entry_id, set()))

    def set(self, entry_id: str, step: int, done: bool) -> None:
        """Tick or untick one step and save."""
        with locked(self.path.name, self.path.parent):
            self._ticks = self._load()
            steps = self._ticks.setdefault(entry_id, set())
            (steps.add if done else steps.discard)(step)
            self._save()

    def clear(self, entry_id: str | None = None) -> None:
        """Clear one entry's ticks, or all."""
        with locked(self.path.name, self.path.parent):
            self._ticks = self._load()
            if entry_id is None:
                self._ticks.clear()
            else:
                self._ticks.pop(entry_id, None)
            self._save()

    def _save(self) -> None:
        data = {k: sorted(v) for k, v in self._ticks.items() if v}
        write_text_atomic(self.path, json.dumps(data, indent=1, sort_keys=True))
