"""A neutral report document: sections of paragraphs, key/value lists, tables and figures.

Report builders (run, compare, iteration, sweep) produce a Document; markdown.py and html.py
render the same Document, so both formats always say the same thing. Text here is plain text:
each renderer escapes it for its own format.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias

from pgrig.reports.svg import Chart

# The one table model (pgrig/table.py), re-exported for the report builders.
from pgrig.table import Cell as Cell
from pgrig.table import CellValue as CellValue
from pgrig.table import Table as Table

# a section's block: Paragraph | KeyValues | Table | Figure (defined below)
Block: TypeAlias = "Paragraph | KeyValues | Table | Figure"


@dataclass
class Paragraph:
    text: str
    style: str | None = None  # note | warn


@dataclass
class KeyValues:
    items: list[tuple[str, str]]


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
