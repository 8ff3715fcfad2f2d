"""Render a Document as Markdown with its charts as SVG files next to it (for write-ups and
repositories: GitHub and most Markdown viewers show them as images)."""

from __future__ import annotations

import re
from pathlib import Path

from pgrig.reports import svg
from pgrig.reports.document import Cell, Document, Figure, KeyValues, Paragraph, Table

_SPECIAL = re.compile(r"([\\`*|<>]|\](?=[(\[:]))")
_HTML = {"<": "&lt;", ">": "&gt;"}


def escape(text: str, line_start: bool = False) -> str:
    """Plain text made inert: no emphasis, links, HTML or table breaks from user input.

    `[x]` alone stays readable; a `]` that would start a link target (`](`, `][`, `]:`) is
    escaped, as is `&`, and (for text that starts a line) a leading `#`, `[`, `-` or `+`
    (heading, reference definition, list).
    """
    text = text.replace("&", "&amp;").replace("\r", " ").replace("\n", " ")
    text = _SPECIAL.sub(lambda m: _HTML.get(m.group(1), "\\" + m.group(1)), text)
    if line_start and text[:1] in ("#", "[", "-", "+"):
        text = "\\" + text
    return text


def _cell(cell: Cell) -> str:
    return "<br>".join(escape(line) for line in cell.lines) or " "


def _table(t: Table) -> list[str]:
    out = []
    if t.caption:
        out += [f"*{escape(t.caption)}*", ""]
    out.append("| " + " | ".join(escape(c) for c in t.columns) + " |")
    out.append(
        "|" + "|".join("---:" if i in t.numeric else "---" for i in range(len(t.columns))) + "|"
    )
    for row in t.rows:
        out.append("| " + " | ".join(_cell(c) for c in row) + " |")
    return out


def figure_filename(stem: str, fig: Figure) -> str:
    return f"{stem}-{fig.name}.svg"


def render(doc: Document, stem: str) -> str:
    """The Markdown text; figures are referenced as `<stem>-<name>.svg`."""
    lines = [f"# {escape(doc.title)}", ""]
    if doc.subtitle:
        lines += [escape(doc.subtitle, line_start=True), ""]
    for section in doc.sections:
        lines += [f"## {escape(section.title)}", ""]
        for block in section.blocks:
            if isinstance(block, Paragraph):
                text = escape(block.text, line_start=True)
                lines += [f"> {text}" if block.style in ("note", "warn") else text, ""]
            elif isinstance(block, KeyValues):
                lines += [f"- **{escape(k)}**: {escape(v)}" for k, v in block.items] + [""]
            elif isinstance(block, Table):
                lines += [*_table(block), ""]
            elif isinstance(block, Figure):
                alt = escape(block.caption or block.chart.title)
                lines += [f"![{alt}]({figure_filename(stem, block)})", ""]
                lines += [f"*{escape(block.caption)}*", ""] if block.caption else []
    lines += [f"<sub>{escape(doc.generated_by)}</sub>", ""]
    return "\n".join(lines)


def write(doc: Document, out_dir: Path, stem: str) -> Path:
    """Write `<stem>.md` and its SVG charts into out_dir; returns the Markdown path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for fig in doc.figures():
        (out_dir / figure_filename(stem, fig)).write_text(svg.document(fig.chart), encoding="utf-8")
    path = out_dir / f"{stem}.md"
    path.write_text(render(doc, stem), encoding="utf-8")
    return path
