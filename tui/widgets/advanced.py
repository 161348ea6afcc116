"""Provides AdvancedSection: the model step's collapsed section for the configuration the user states."""

from __future__ import annotations

from textual.widgets import Collapsible

from tui.form import ADVANCED_FIELDS
from tui.widgets.field import field_row


class AdvancedSection(Collapsible):
    """Layout, batch, optimizer, LoRA, stack or engine, headroom; 'auto' or blank leaves it to the search."""

    def __init__(self) -> None:
        super().__init__(
            *(field_row(name) for name in ADVANCED_FIELDS),
            title="Advanced: configuration (blank or auto: chosen for you)",
            collapsed=True,
            id="advanced",
        )
