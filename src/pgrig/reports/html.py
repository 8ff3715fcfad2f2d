"""Render a Document as ONE self-contained HTML file: inline CSS, charts as inline SVG.

Nothing is fetched when the file is opened (no CDN, no fonts, no scripts), so it can be mailed
or attached to a ticket. All text goes through Jinja2 with autoescaping; the charts are the
chart engine's SVG (pgrig.reports.svg), whose text is escaped the same way.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape

from pgrig.format import page_text
from pgrig.reports import svg
from pgrig.reports.document import Block, Document, Figure, KeyValues, Paragraph, Table

_TEMPLATES = Path(__file__).parent / "templates"


@cache
def _jinja() -> Environment:
    return Environment(
        loader=FileSystemLoader(str(_TEMPLATES)),
        autoescape=select_autoescape(["html"], default=True),
        finalize=page_text,  # control and bidi characters shown escaped, as in the CLI
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _block(block: Block) -> dict[str, Any]:
    if isinstance(block, Paragraph):
        return {"kind": "paragraph", "text": block.text, "style": block.style}
    if isinstance(block, KeyValues):
        return {"kind": "keyvalues", "pairs": block.items}
    if isinstance(block, Table):
        rows = [
            [
                {
                    "lines": c.lines,
                    "classes": " ".join(
                        x for x in ("num" if i in block.numeric else "", c.style or "") if x
                    ),
                }
                for i, c in enumerate(row)
            ]
            for row in block.rows
        ]
        return {"kind": "table", "columns": block.columns, "rows": rows, "caption": block.caption}
    if isinstance(block, Figure):
        return {"kind": "figure", "caption": block.caption, "svg": svg.render(block.chart)}
    raise TypeError(f"unknown block {type(block).__name__}")


def _blocks(blocks: list[Block]) -> list[dict[str, Any]]:
    """Blocks for the template; figures in a row share one grid, side by side when they fit."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        view = _block(block)
        if view["kind"] == "figure":
            if not out or out[-1]["kind"] != "figures":
                out.append({"kind": "figures", "figures": []})
            out[-1]["figures"].append(view)
        else:
            out.append(view)
    return out


def render(doc: Document) -> str:
    view = {
        "title": doc.title,
        "subtitle": doc.subtitle,
        "generated_by": doc.generated_by,
        "sections": [{"title": s.title, "blocks": _blocks(s.blocks)} for s in doc.sections],
    }
    return _jinja().get_template("report.html").render(doc=view)


def write(doc: Document, out_dir: Path, stem: str) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{stem}.html"
    path.write_text(render(doc), encoding="utf-8")
    return path
