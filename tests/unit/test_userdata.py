"""The user's data directory: a lock around read-modify-write, atomic files, bad files set aside."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

from advisor.catalog.userdata import ChecklistTicks, locked, move_aside, read_json, write_text_atomic


def _tick_many(path: str, entry: str) -> None:
    ticks = ChecklistTicks(Path(path))
    for step in range(15):
        ticks.set(entry, step, True)


def test_ticks_from_parallel_processes_are_all_kept(tmp_path: Path) -> None:
    path = tmp_path / "checklist-ticks.json"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_tick_many, args=(str(path), f"entry-{i}")) for i in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    ticks = ChecklistTicks(path)
    assert all(ticks.ticked(f"entry-{i}") == set(range(15)) for i in range(6))


def _count_up(folder: str) -> None:
    counter = Path(folder) / "n"
    for _ in range(25):
        with locked("count", Path(folder)):
            n = int(counter.read_text()) if counter.exists() else 0
            write_text_atomic(counter, str(n + 1))


def test_lock_serialises_read_modify_write(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_count_up, args=(str(tmp_path),)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert (tmp_path / "n").read_text() == "100"


def test_unparsable_json_is_moved_aside_with_one_warning(tmp_path: Path, capsys) -> None:
    path = tmp_path / "store.json"
    path.write_text('{"half": ')
    assert read_json(path, {"default": 1}) == {"default": 1}
    err = capsys.readouterr().err.splitlines()
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("store.json.corrupt-")]
    assert len(err) == 1 and aside and aside[0].name in err[0] and aside[0].read_text() == '{"half": '


def test_move_aside_never_overwrites_an_earlier_copy(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    for text in ("one", "two", "three"):
        path.write_text(text)
        move_aside(path, "test")
    assert sorted(p.read_text() for p in tmp_path.iterdir()) == ["one", "three", "two"]


def test_atomic_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    write_text_atomic(tmp_path / "a" / "b.txt", "hello")
    assert os.listdir(tmp_path / "a") == ["b.txt"]
