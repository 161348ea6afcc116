"""Shared fixtures: the shipped knowledge base, and isolation of the user's data directory."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from advisor.catalog import Knowledge, load_knowledge


def pytest_configure(config: pytest.Config) -> None:
    """One knowledge cache for the session, not the user's: tests never read or evict a developer's entries,
    and every process the tests start (subprocesses inherit it) finds the session's warm entries."""
    folder = tempfile.mkdtemp(prefix="gpu-advisor-test-cache-")
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
    os.environ["GPU_ADVISOR_CACHE_DIR"] = folder


@pytest.fixture(scope="session")
def knowledge() -> Knowledge:
    """The knowledge base shipped in the package."""
    return load_knowledge()


@pytest.fixture(autouse=True)
def isolated_user_data(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the developer's own calibration and checklist ticks out of every test."""
    monkeypatch.setenv("GPU_ADVISOR_DATA_DIR", str(tmp_path_factory.mktemp("user-data")))
    monkeypatch.setenv("GPU_ADVISOR_TODAY", "2026-11-30")  # price staleness is judged against a fixed day
