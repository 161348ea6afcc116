"""Shared fixtures: the shipped knowledge base, and isolation of the user's data directory."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from advisor.catalog import Knowledge, load_knowledge


def pytest_configure(config: pytest.Config) -> None:
    """One knowledge cache per test process, not the user's: tests never read or evict a developer's entries,
    and every process a test starts (subprocesses inherit it) finds its worker's warm entries. Under xdist
    each worker (and the controller) runs this in its own process, so each gets its own folder: a worker's
    cleanup never removes a folder another worker is still using."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    folder = tempfile.mkdtemp(prefix=f"gpu-advisor-test-cache-{worker}-")
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
    os.environ["GPU_ADVISOR_CACHE_DIR"] = folder
    # One OpenMP thread per test process (scikit-learn's tree fitting, here and in the processes tests
    # start): `make test` already runs one worker per core, and on a busy machine OpenMP threads spin at
    # their barriers waiting for a displaced sibling (one `calibrate` took 18-20 s of CPU with two threads
    # beside a busy core, 4.5-6 s with one). The trees are the same either way (the shipped-trees test
    # passes with one thread). A developer's own setting wins; the runtime reads it once, at first use.
    os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="session")
def knowledge() -> Knowledge:
    """The knowledge base shipped in the package."""
    return load_knowledge()


@pytest.fixture(autouse=True)
def isolated_user_data(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the developer's own calibration and checklist ticks out of every test."""
    monkeypatch.setenv("GPU_ADVISOR_DATA_DIR", str(tmp_path_factory.mktemp("user-data")))
    monkeypatch.setenv("GPU_ADVISOR_TODAY", "2026-11-30")  # price staleness is judged against a fixed day
