"""A neutral report document: sections of paragraphs, key/value lists, tables and figures.

Report builders (run, compare, iteration, sweep) produce a Document; markdown.py and html.py
render the same Document, so both formats always say the same thing. Text here is plain text:
each renderer escapes it for its own format.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pgrig.reports.svg import Chart

Block = Any  # Paragraph | KeyValues | Table | Figure


@dataclass
class Cell:
    """A table cell: one or more lines of plain text, with an optional style (for HTML)."""

    lines: list[str]
    style: str | None = None  # good | bad | neutral | muted | warn

    @classmethod
    def of(cls, value: CellValue, style: str | None = None) -> Cell:
        if isinstance(value, Cell):
            return value
        if value is None:
            return cls(["-"], style or "muted")
        if isinstance(value, list):
            return cls([str(v) for v in value] or ["-"], style)
        return cls([str(value)], style)


CellValue = Cell | str | list[str] | None  # what a table row may hold before Cell.of


@dataclass
class Paragraph:
    text: str
    style: str | None = None  # note | warn


@dataclass
class KeyValues:
    items: list[tuple[str, str]]


@dataclass
class Table:
    columns: list[str]
    rows: list[list[Cell]]
    caption: str | None = None
    numeric: frozenset[int] = frozenset()  # right-aligned column indexes

    @classmethod
    def build(
        cls,
        columns: list[str],
        rows: Sequence[Sequence[CellValue]],
        caption: str | None = None,
        numeric: set[int] | frozenset[int] = frozenset(),
    ) -> Table:
        return cls(
            columns, [[Cell.of(c) for c in row] for row in rows], caption, frozenset(numeric)
        )


@dataclass
class Figure:
    """A chart; `name` becomes its file name next to a Markdown report (letters, digits, '-')."""

    name: str
    caption: str  # "" when the chart's own title says it all
    chart: Chart


@dataclass
class Section:
    title: str
    blocks: list[Block] = field(default_factory=list)


@dataclass
class Document:
    title: str
    subtitle: str | None = None
    sections: list[Section] = field(default_factory=list)
    generated_by: str = "pgrig"

    def figures(self) -> list[Figure]:
        return [b for s in self.sections for b in s.blocks if isinstance(b, Figure)]
