"""Issue 30, class 9: bidi controls (U+202A-202E, U+2066-2069, U+200E/F, U+061C) in notes, tags
and labels are shown escaped in the terminal and on pages, as ESC is; BEL is shown escaped,
not dropped (rich's Text drops it)."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest
import sample_data
from rich.text import Text

from pgrig.cli.common import SafeConsole  # as in the CLI: before any Text is made
from pgrig.format import visible

BIDI = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068",
        "\u2069", "\u200e", "\u200f", "\u061c"]  # fmt: skip


@pytest.mark.parametrize("char", BIDI)
def test_every_bidi_control_is_shown_escaped(char: str) -> None:
    shown = visible(f"ok{char}evil")
    assert char not in shown and f"\\u{ord(char):04x}" in shown
    assert visible(shown) == shown  # idempotent


def _printed(*items: object) -> str:
    out = io.StringIO()
    con = SafeConsole(file=out, width=200, color_system=None)
    for item in items:
        con.print(item, highlight=False)
    return out.getvalue()


def test_the_terminal_shows_bidi_and_bel_escaped() -> None:
    text = _printed("note \u202eevil", Text("tag \u2066x\u2069"), Text("bell\x07"), "bel\x07")
    assert "\u202e" not in text and "\u2066" not in text and "\x07" not in text
    assert "\\u202eevil" in text and "\\u2066x\\u2069" in text
    assert "bell\\x07" in text and "bel\\x07" in text  # shown, not dropped


def test_pages_show_bidi_escaped(pgrig_home: Path) -> None:
    from fastapi.testclient import TestClient

    from pgrig.archive.store import Archive
    from pgrig.web.app import create_app

    url = f"sqlite:///{pgrig_home / 'archive.sqlite'}"
    archive = Archive(url)
    rec = sample_data.make_run(1, random.Random(4), note="gpj.\u202eexe", tpcc=False)
    rec.tags = {"k": "v\u2067x\x1b[31m"}
    sample_data.store(archive, rec)
    archive.close()
    client = TestClient(create_app(url))
    for path in ("/runs", "/runs/1"):
        html = client.get(path).text
        assert "\u202e" not in html and "\u2067" not in html and "\x1b" not in html, path
    assert "gpj.\\u202eexe" in client.get("/runs/1").text


def test_reports_show_bidi_escaped() -> None:
    from pgrig.reports.html import _jinja

    template = _jinja().from_string("{{ note }}")
    assert template.render(note="a\u202eb") == "a\\u202eb"
