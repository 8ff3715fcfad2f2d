"""The one table model of pgrig: titled rows of plain-text cells, each cell one or more lines.

Built by the view layer (pgrig.views), the insights (why a run was fast or slow, what changed)
and the report builders; rendered by every surface: the terminal (cli/render.py: fitted to its
width), the web pages (a Jinja macro) and the reports (Markdown and HTML). Text is plain: each
renderer escapes it for its own format. A shared module: it imports nothing from pgrig.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class Cell:
    """A table cell: one or more lines of plain text, with an optional style."""

    lines: list[str]
    style: str | None = None  # good | bad | neutral | muted | warn | code (lines kept as typed)

    @classmethod
    def of(cls, value: CellValue, style: str | None = None) -> Cell:
        if isinstance(value, Cell):
            return value
        if value is None:
            return cls(["-"], style or "muted")
        if isinstance(value, list):
            return cls([str(v) for v in value] or ["-"], style)
        return cls([str(value)], style)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


CellValue = Cell | str | list[str] | None  # what a table row may hold before Cell.of


@dataclass
class Table:
    columns: list[str]
    rows: list[list[Cell]] = field(default_factory=list)
    caption: str | None = None  # the table's title
    numeric: frozenset[int] = frozenset()  # right-aligned column indexes
    note: str | None = None  # why there are no rows, or how to read them

    @property
    def title(self) -> str:
        return self.caption or ""

    @classmethod
    def build(
        cls,
        columns: Sequence[str],
        rows: Sequence[Sequence[CellValue]],
        caption: str | None = None,
        numeric: set[int] | frozenset[int] = frozenset(),
        note: str | None = None,
    ) -> Table:
        return cls(
            list(columns),
            [[Cell.of(c) for c in row] for row in rows],
            caption,
            frozenset(numeric),
            note,
        )

    @classmethod
    def titled(
        cls,
        title: str,
        columns: Sequence[str] = (),
        rows: Sequence[Sequence[str | list[str] | Cell]] = (),
        note: str | None = None,
        numeric: set[int] | frozenset[int] = frozenset(),
    ) -> Table:
        """A table of text: a list cell is lines kept as they are (a plan's outline)."""
        cells = [
            [Cell(list(c), "code") if isinstance(c, list) else Cell.of(c) for c in row]
            for row in rows
        ]
        return cls(list(columns), cells, title, frozenset(numeric), note)
