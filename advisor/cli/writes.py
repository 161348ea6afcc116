"""Provides the CLI's file writes: atomic, all-or-nothing, no-clobber (imported only when a command writes a
file: its record type and imports are not on a command's path otherwise)."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from advisor.catalog.userdata import stage_text
from advisor.question.checks import shown
from advisor.question.errors import InputError


@dataclass(frozen=True, slots=True, repr=False)
class Target:
    """One file an output flag asks for: where, what, and whether it is a script to run."""

    path: Path
    text: str
    flag: str
    executable: bool = False


def _kind(mode: int) -> str:
    return (
        "a symlink"
        if stat.S_ISLNK(mode)
        else "a FIFO"
        if stat.S_ISFIFO(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "not a regular file"
    )


def check_target(target: Target, force: bool) -> None:
    """InputError (one line) when target may not be written: a directory, an existing file without --force,
    anything but a regular file even with --force, or a missing folder (one --artefacts creates is fine)."""
    name = f"{target.flag} {shown(str(target.path))}"
    parent = target.path.parent
    existing = next((p for p in (parent, *parent.parents) if os.path.lexists(p)), Path("."))
    if not existing.is_dir():
        shown_as = f"{target.flag} {shown(str(existing))}" if target.flag == "--artefacts" else name
        raise InputError(
            f"{shown_as}: {'is not a directory' if existing == parent else 'a folder on the way is a file'}"
        )
    if existing != parent and target.flag == "-o":
        raise InputError(f"{name}: folder {shown(str(parent))} does not exist")
    try:
        mode = target.path.lstat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise InputError(f"{name}: cannot use it ({(exc.strerror or str(exc)).lower()})") from exc
    if mode is None:
        return
    if stat.S_ISDIR(mode):
        raise InputError(f"{name}: is a directory; give a file name")
    if not force:
        raise InputError(f"{name}: file exists; pass --force to overwrite it")
    if not stat.S_ISREG(mode):
        raise InputError(f"{name}: is {_kind(mode)}; --force replaces regular files only")


def write_all(targets: Sequence[Target], force: bool) -> None:
    """Write every target or none: all are checked first, then staged beside their places (where a full disk
    or a read-only folder fails), then renamed in; a failure undoes what was done and re-raises."""
    for target in targets:
        check_target(target, force)
    made = sorted(
        {p for t in targets for p in (t.path.parent, *t.path.parent.parents) if not os.path.lexists(p)},
        key=lambda p: len(p.parts),
    )
    staged: list[tuple[Target, Path]] = []
    try:
        for folder in made:
            folder.mkdir(exist_ok=True)
        for target in targets:
            staged.append((target, stage_text(target.path, target.text, executable=target.executable)))
        _commit(staged, force)
    except BaseException:
        for _, tmp in staged:
            tmp.unlink(missing_ok=True)
        for folder in reversed(made):
            with contextlib.suppress(OSError):
                folder.rmdir()  # only when empty: nothing of the user's is removed
        raise


def _commit(staged: list[tuple[Target, Path]], force: bool) -> None:
    done: list[tuple[Path, Path | None, bool]] = []  # (target, backup of the file it replaced, existed)
    try:
        for target, tmp in staged:
            existed = os.path.lexists(target.path)
            backup = _backup(target.path) if force and existed else None
            if not force:
                try:
                    os.link(tmp, target.path)  # no clobber, atomically: fails if the file appeared meanwhile
                except FileExistsError as exc:
                    raise InputError(
                        f"{target.flag} {shown(str(target.path))}: file exists; pass --force"
                    ) from exc
                tmp.unlink()
            else:
                os.replace(tmp, target.path)
            done.append((target.path, backup, existed))
    except BaseException:
        for path, backup, existed in reversed(done):
            if backup is not None:
                os.replace(backup, path)
            elif not existed:
                path.unlink(missing_ok=True)
        raise
    for _, backup, _ in done:
        if backup is not None:
            backup.unlink(missing_ok=True)


def _backup(path: Path) -> Path | None:
    backup = path.with_name(f".{path.name}.{os.getpid()}.bak")
    try:
        os.link(path, backup)
    except OSError:
        return None
    return backup


def write_atomic(path: str | Path, text: str, *, force: bool, flag: str = "-o") -> Path:
    """Write text to path through a temporary file and a rename; refuse to replace a file without force."""
    target = Path(path).expanduser()
    write_all([Target(target, text, flag)], force)
    return target
