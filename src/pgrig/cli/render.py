"""The terminal renderer of the view layer: pgrig.table.Table and labelled items on stdout,
fitted to the terminal's width (120 columns when stdout is not a terminal).

A table wider than the width wraps its long cells; one that cannot fit even so (many columns
of long words: a comparison of many groups) folds, each row becoming a block of
"column: value" lines.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console, RenderableType
from rich.table import Table as RichTable
from rich.text import Text

from pgrig.cli.common import out_console
from pgrig.table import Cell, Table

GAP = 2  # between columns
KEEP_WHOLE = 24  # figures up to this wide are never wrapped ("x1.598 [1.565, 1.608]")
STYLES = {
    "good": "green",
    "bad": "red",
    "neutral": "cyan",
    "muted": "dim",
    "warn": "yellow",
    "better": "green",
    "worse": "red",
}


def console() -> Console:
    """stdout: the terminal at its width, else 120 columns (common.out_console)."""
    return out_console()


def width() -> int:
    return console().width


def heading(title: str) -> str:
    """A title as the terminal's headings read ("run", "results"): "Host differences" ->
    "host differences"."""
    return title[:1].lower() + title[1:]


def _text(cell: Cell) -> Text:
    return Text(cell.text, style=STYLES.get(cell.style or "", ""))


def _longest_word(cell: Cell) -> int:
    return max((len(w) for line in cell.lines for w in line.split()), default=1)


def _natural(cell: Cell) -> int:
    return max((len(line) for line in cell.lines), default=1)


def _kept_whole(t: Table, i: int) -> bool:
    """A numeric column of short figures: its lines stay whole (text columns wrap first)."""
    cells = [row[i] for row in t.rows if i < len(row)]
    return i in t.numeric and max((_natural(c) for c in cells), default=0) <= KEEP_WHOLE


def fits(t: Table, room: int) -> bool:
    """Whether the table fits `room` columns once its long cells wrap at spaces."""
    if not t.columns:
        return True
    need = 0
    for i, name in enumerate(t.columns):
        cells = [row[i] for row in t.rows if i < len(row)]
        header = max((len(w) for w in name.split()), default=0)
        longest = max([header, *(_longest_word(c) for c in cells)])
        if _kept_whole(t, i):
            longest = max([header, *(_natural(c) for c in cells)])
        if any(c.style == "code" for c in cells):
            longest = min(longest, 40)  # plans wrap at any character
        need += longest + GAP
    return need <= room


def table(t: Table, room: int | None = None) -> RenderableType:
    """The table as rich renders it: wrapped within `room` columns, or folded into rows."""
    room = room or width()
    if not fits(t, room):
        return folded(t)
    rt = RichTable(
        title=Text(heading(t.caption), style="bold") if t.caption else None,
        title_justify="left",
        box=None,
        pad_edge=False,
        header_style="bold",
        show_header=any(t.columns),
    )
    for i, name in enumerate(t.columns):
        natural = max([len(name), *(_natural(r[i]) for r in t.rows if i < len(r))])
        # never wider than its longest word: fits() counted that much, and no more
        word = max(
            [*(len(w) for w in name.split()), *(_longest_word(r[i]) for r in t.rows if i < len(r))]
        )
        rt.add_column(
            Text(name),
            justify="right" if i in t.numeric else "left",
            overflow="fold",
            min_width=min(natural, word, 12),
            no_wrap=_kept_whole(t, i),
        )
    for row in t.rows:
        rt.add_row(*(_text(c) for c in row))
    return rt


def folded(t: Table) -> RenderableType:
    """Each row as a block: its first cell as a heading, then "column: value" lines."""
    from rich.console import Group

    parts: list[RenderableType] = []
    if t.caption:
        parts.append(Text(heading(t.caption), style="bold"))
    for row in t.rows:
        if not row:
            continue
        parts.append(Text(row[0].text, style="bold"))
        for name, cell in zip(t.columns[1:], row[1:], strict=False):
            line = Text(f"  {name}: " if name else "  ", style="dim")
            line.append(" / ".join(cell.lines), style=STYLES.get(cell.style or "", ""))
            parts.append(line)
    return Group(*parts)


def items(title: str, pairs: Sequence[tuple[str, str]]) -> RenderableType:
    """Labelled values: the label dim, the value wrapped within the width."""
    rt = RichTable(
        title=Text(title, style="bold") if title else None,
        title_justify="left",
        box=None,
        show_header=False,
        pad_edge=False,
    )
    rt.add_column(style="dim", no_wrap=True)
    rt.add_column(overflow="fold")
    for k, v in pairs:
        rt.add_row(Text(k), Text(v))
    return rt


def show(*renderables: RenderableType) -> None:
    con = console()
    for r in renderables:
        con.print(r)


def note(text: str, style: str = "dim") -> None:
    console().print(Text(text, style=style), soft_wrap=False)


def print_table(t: Table) -> None:
    """A table, or its note alone when it has no rows."""
    if not t.rows:
        if t.note:
            note(f"{heading(t.title)}: {t.note}" if t.title else t.note)
        return
    show(table(t))
    if t.note:
        note(t.note)
