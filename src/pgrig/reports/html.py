"""Render a Document as ONE self-contained HTML file: inline CSS, charts as embedded SVG images.

Nothing is fetched when the file is opened (no CDN, no fonts, no scripts), so it can be mailed
or attached to a ticket. All text goes through Jinja2 with autoescaping; charts are embedded as
base64 `data:` URIs inside <img>, where an SVG cannot run scripts.
"""

from __future__ import annotations

import base64
import io
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape

from pgrig.reports.document import Document, Figure, KeyValues, Paragraph, Table

_TEMPLATES = Path(__file__).parent / "templates"


@cache
def _jinja() -> Environment:
    return Environment(
        loader=FileSystemLoader(str(_TEMPLATES)),
        autoescape=select_autoescape(["html"], default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )


def figure_data_uri(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.figure.savefig(buf, format="svg", metadata={"Date": None})
    return "data:image/svg+xml;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _block(block: Any) -> dict[str, Any]:
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
        return {"kind": "figure", "caption": block.caption, "src": figure_data_uri(block)}
    raise TypeError(f"unknown block {type(block).__name__}")


def render(doc: Document) -> str:
    view = {
        "title": doc.title,
        "subtitle": doc.subtitle,
        "generated_by": doc.generated_by,
        "sections": [
            {"title": s.title, "blocks": [_block(b) for b in s.blocks]} for s in doc.sections
        ],
    }
    return _jinja().get_template("report.html").render(doc=view)


def write(doc: Document, out_dir: Path, stem: str) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{stem}.html"
    path.write_text(render(doc), encoding="utf-8")
    return path
