"""-o and --artefacts: checked before writing, all or nothing, normal modes, regular files only, faults one
line."""

from __future__ import annotations

import errno
import os
import stat
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "fuzz"))
from fuzz_cases import problems, run_in_process

BASE = ["recommend", "--model", "llama-2-7b", "--workload", "finetune", "--tokens", "1B"]


def _fail_writes_in(folder: Path, code: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A small fake filesystem fault: creating a file in folder fails as a read-only or full disk would."""
    real = tempfile.mkstemp

    def mkstemp(*args, dir=None, **kwargs):
        if dir is not None and Path(dir).resolve() == folder.resolve():
            raise OSError(code, os.strerror(code), str(folder))
        return real(*args, dir=dir, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)


@pytest.mark.parametrize(
    "code,needle",
    [
        (errno.EROFS, "read-only file system"),
        (errno.ENOSPC, "no space left on device"),
        (errno.EACCES, "permission denied"),
    ],
)
def test_output_faults_are_one_line(
    code: int, needle: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fail_writes_in(tmp_path, code, monkeypatch)
    outcome = run_in_process([*BASE, "-o", str(tmp_path / "plan.toml")])
    assert outcome.code == 2 and not problems(outcome) and needle in outcome.stderr, outcome
    assert list(tmp_path.iterdir()) == []


def test_multi_file_output_is_all_or_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Relative paths: a message cuts a value at 80 characters, and a long temporary folder (an xdist
    # worker's adds one level) would cut the file's name off the end.
    monkeypatch.chdir(tmp_path)
    artefacts = Path("run")
    artefacts.mkdir()
    (artefacts / "launch.sh").write_text("mine")
    outcome = run_in_process([*BASE, "-o", "plan.toml", "--artefacts", str(artefacts)])
    assert outcome.code == 2 and "launch.sh" in outcome.stderr and "--force" in outcome.stderr
    assert not (tmp_path / "plan.toml").exists(), "nothing is written when one target is refused"
    _fail_writes_in(artefacts, errno.ENOSPC, monkeypatch)
    outcome = run_in_process(
        [*BASE, "-o", str(tmp_path / "plan.toml"), "--artefacts", str(artefacts), "--force"]
    )
    assert outcome.code == 2 and "no space left" in outcome.stderr
    assert not (tmp_path / "plan.toml").exists() and (artefacts / "launch.sh").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["launch.sh", "run"], "no temporary file left"


def test_modes_follow_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        outcome = run_in_process(
            [*BASE, "-o", str(tmp_path / "plan.toml"), "--artefacts", str(tmp_path / "a")]
        )
    finally:
        os.umask(old)
    assert outcome.code == 0, outcome
    assert stat.S_IMODE((tmp_path / "plan.toml").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "a" / "launch.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "a" / "sky-task.yaml").stat().st_mode) == 0o644


@pytest.mark.parametrize("kind", ["symlink", "fifo", "device"])
def test_force_replaces_regular_files_only(kind: str, tmp_path: Path) -> None:
    target = tmp_path / "out.toml"
    if kind == "symlink":
        (tmp_path / "real").write_text("mine")
        target.symlink_to(tmp_path / "real")
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        target = Path("/dev/null")
    outcome = run_in_process([*BASE, "-o", str(target), "--force"])
    assert outcome.code == 2 and "--force replaces regular files only" in outcome.stderr, outcome
    if kind == "symlink":
        assert target.is_symlink() and (tmp_path / "real").read_text() == "mine"


def test_force_replaces_a_regular_file(tmp_path: Path) -> None:
    (tmp_path / "out.toml").write_text("old")
    assert run_in_process([*BASE, "-o", str(tmp_path / "out.toml")]).code == 2
    assert run_in_process([*BASE, "-o", str(tmp_path / "out.toml"), "--force"]).code == 0
    assert "schema_version" in (tmp_path / "out.toml").read_text()


@pytest.mark.parametrize("where", ["file-as-folder", "missing-folder"])
def test_bad_places_are_one_line(where: str, tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    argv = {
        "file-as-folder": ["--artefacts", str(tmp_path / "f")],
        "missing-folder": ["-o", str(tmp_path / "nope" / "x.toml")],
    }[where]
    outcome = run_in_process([*BASE, *argv])
    assert outcome.code == 2 and not problems(outcome), outcome
    assert (tmp_path / "f").read_text() == "x"
