"""Snapshot fixtures: the fixture knowledge, the deterministic prior efficiency, and no blinking cursor."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import Input

from advisor.catalog import Knowledge
from advisor.catalog.loader import load_knowledge_from
from tui.app import GpuAdvisorApp

FIXTURE_KNOWLEDGE = Path(__file__).resolve().parents[1] / "data" / "knowledge"


@pytest.fixture(autouse=True)
def no_cursor_blink(monkeypatch: pytest.MonkeyPatch) -> None:
    """A blinking cursor makes screenshots depend on timing (harlequin's fix; patches a private method)."""
    monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None)


@pytest.fixture(scope="session")
def snapshot_knowledge() -> Knowledge:
    """The small knowledge base in tests/data/knowledge."""
    return load_knowledge_from(FIXTURE_KNOWLEDGE)


@pytest.fixture
def snapshot_app(snapshot_knowledge: Knowledge, tmp_path: Path) -> Callable[[], GpuAdvisorApp]:
    """A fresh app over the fixture knowledge with prior efficiency and a private data directory."""
    return lambda: GpuAdvisorApp(
        load_knowledge=lambda: snapshot_knowledge, efficiency="prior", user_data_dir=tmp_path / "user-data"
    )
