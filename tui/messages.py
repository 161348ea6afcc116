"""Provides the messages thread workers post to the UI: each carries an immutable result or an error line."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from advisor.answer.report import Report
    from advisor.catalog import Knowledge
    from tui.engine import PlanOps


@dataclass
class KnowledgeLoaded(Message):
    """The knowledge base is loaded."""

    knowledge: Knowledge


@dataclass
class EfficiencyLoaded(Message):
    """The efficiency model is loaded (recommendations no longer wait for it)."""

    name: str


@dataclass
class LoadFailed(Message):
    """The knowledge or the efficiency model could not be loaded."""

    error: str


@dataclass
class ReportReady(Message):
    """A recommendation finished; generation tells a fresh result from a stale one."""

    report: Report
    generation: int


@dataclass
class RecommendFailed(Message):
    """The core refused the question, or failed while answering it."""

    error: str
    generation: int


@dataclass
class OperationsReady(Message):
    """The operations plan of the highlighted plan was worked out."""

    ops: PlanOps
    generation: int


@dataclass
class ExportWritten(Message):
    """The TOML file was written."""

    path: Path


@dataclass
class ExportFailed(Message):
    """The TOML file could not be written; any previous file is untouched."""

    path: Path
    error: str
