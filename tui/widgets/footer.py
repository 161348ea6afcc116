"""Provides Footer: Textual's key footer, recomposed once per refresh however many binding updates arrive."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.widgets import Footer as TextualFooter

if TYPE_CHECKING:
    from textual.screen import Screen


class Footer(TextualFooter):
    """Textual's footer queues a whole recompose (every key widget rebuilt and restyled) for each binding
    update; a screen coming up sends nine or so (focus moves, the stack, the wizard's own steps) before its
    first frame. Here updates that arrive before the queued recompose runs join it: the footer shows the same
    keys, built once."""

    _recompose_queued = False

    def bindings_changed(self, screen: Screen) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and not self._recompose_queued:
            self._recompose_queued = True
            self.call_after_refresh(self._recompose_once)

    async def _recompose_once(self) -> None:
        self._recompose_queued = False  # an update from here on queues another: it may change the keys
        await self.recompose()
