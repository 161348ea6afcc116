"""Shared fixtures of the Pilot tests: the fixture knowledge base and an app factory over it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from advisor.catalog import Knowledge
from advisor.catalog.loader import load_knowledge_from
from tui.app import GpuAdvisorApp

FIXTURE_KNOWLEDGE = Path(__file__).resolve().parents[1] / "data" / "knowledge"


@pytest.fixture(scope="session")
def fixture_knowledge() -> Knowledge:
    """The small knowledge base in tests/data/knowledge, loaded once."""
    return load_knowledge_from(FIXTURE_KNOWLEDGE)


@pytest.fixture
def make_app(fixture_knowledge: Knowledge, tmp_path: Path) -> Callable[..., GpuAdvisorApp]:
    """An app on the fixture knowledge, with the deterministic prior efficiency and a private data dir."""

    def build(user_data_dir: Path | None = None) -> GpuAdvisorApp:
        return GpuAdvisorApp(
            load_knowledge=lambda: fixture_knowledge,
            efficiency="prior",
            user_data_dir=user_data_dir or tmp_path / "user-data",
        )

    return build
