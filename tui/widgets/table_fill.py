"""Provides fill_table: a DataTable's columns and rows replaced at once, each column sized from its cells."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual.geometry import Size
from textual.widgets import DataTable


def fill_table(table: DataTable[Any], labels: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Replace the table's columns and rows; each column as wide as its header and its widest cell.

    Left to the table, the cells are measured only when it next goes idle, and a frame painted before then (a
    busy machine) caches the header at its old widths: Textual keeps that line, cut to the old widths above
    the new rows, until something repaints the table. So the widths and the size are set here, with the rows.
    """
    cells = [tuple(Text(cell) for cell in row) for row in rows]  # plain text: a name is never read as markup
    widths = [
        max([Text(head).cell_len, *(row[i].cell_len for row in cells)]) for i, head in enumerate(labels)
    ]
    table.clear(columns=True)
    for label, width in zip(labels, widths, strict=True):
        table.add_column(label, width=width)
    table.add_rows(cells)
    header = table.header_height if table.show_header else 0
    table.virtual_size = Size(sum(w + 2 * table.cell_padding for w in widths), len(cells) + header)
    table.refresh(layout=True)
