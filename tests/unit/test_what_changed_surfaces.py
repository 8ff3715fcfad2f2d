"""What changed between A and B gives the same tables in `pgrig runs compare --json`, the Markdown
of `pgrig report compare` and the web compare page; statement text is escaped everywhere."""

from __future__ import annotations

import json
from pathlib import Path

import compare_surfaces as surfaces
from fastapi.testclient import TestClient
from test_insights_changes import INDEX, SELECT, SEQ, digest, plans, run, st, waits
from typer.testing import CliRunner

from pgrig.archive.store import Archive
from pgrig.cli.runs import app as runs_app
from pgrig.insights.changes import tables
from pgrig.reports import publish

EVIL = "SELECT '<script>alert(1)</script>' | 1"


def _pair(archive: Archive) -> tuple[int, int]:
    a = run(
        [st(SELECT, 1000, 50.0), st(EVIL, 10, 1.0)],
        digest(timed=1),
        waits(10, CPU=10),
        plans(INDEX, "aaa"),
        governor="performance",
    )
    b = run(
        [st(SELECT, 400, 4000.0, read=900), st(EVIL, 10, 9.0)],
        digest(requested=2),
        waits(10, CPU=4, IO_DataFileRead=6),
        plans(SEQ, "bbb"),
        governor="powersave",
    )
    for rec in (a, b):
        archive.finish_run(rec)
    assert a.id is not None and b.id is not None
    return a.id, b.id


def test_every_compare_surface_shows_the_same_changes(
    url: str, archive: Archive, client: TestClient, tmp_path: Path
) -> None:
    a, b = _pair(archive)
    result = CliRunner().invoke(runs_app, ["compare", str(a), str(b), "--json", "--archive", url])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)["what_changed"]
    (change,) = doc["plan_changes"]
    assert change["a"]["outline"] == INDEX and change["b"]["outline"] == SEQ
    expected = tables(doc)
    md = publish.compare_report(archive, [[a], [b]], ["md"], tmp_path)[0].read_text()
    page = client.get(f"/compare?ids={a},{b}").text
    for t in expected:
        if not t.rows:
            continue
        want = surfaces.changes_from_tables(expected, t.title)
        assert surfaces.changes_from_markdown(md, t.title) == want, t.title
        assert surfaces.changes_from_web(page, t.title) == want, t.title
    plan_rows = surfaces.changes_from_tables(expected, "Plan changes")
    assert plan_rows[0][1][1:] == INDEX and plan_rows[0][2][1:] == SEQ
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>" not in md  # Markdown escapes HTML too

    text = CliRunner().invoke(runs_app, ["compare", str(a), str(b), "--archive", url]).stdout
    assert "statements (pg_stat_statements, per run)" in text and "+3,950.0" in text
    assert "wait profile" in text and "IO:DataFileRead" in text


def test_the_statements_table_fits_120_columns_and_wide_shows_every_column(
    url: str, archive: Archive
) -> None:
    a, b = _pair(archive)
    text = CliRunner().invoke(runs_app, ["compare", str(a), str(b), "--archive", url]).stdout
    lines = text.splitlines()
    assert max(len(ln) for ln in lines) <= 120
    at = [ln.strip() for ln in lines].index("statements (pg_stat_statements, per run)")
    header = lines[at + 1].split()
    # a table, not one folded block per statement: the time columns in one header line
    assert header[:3] == ["statement", "total", "ms"] and "B/A" in header
    assert "calls A" not in text and "--wide" in text

    wide = CliRunner().invoke(runs_app, ["compare", str(a), str(b), "--wide", "--archive", url])
    assert wide.exit_code == 0, wide.output
    assert "calls A" in wide.stdout and "shared read B" in wide.stdout
    # the narrow table is the wide one's first columns, the same values
    doc = json.loads(
        CliRunner().invoke(runs_app, ["compare", str(a), str(b), "--json", "--archive", url]).stdout
    )["what_changed"]
    narrow, full = tables(doc, wide=False)[0], tables(doc)[0]
    assert narrow.columns == full.columns[:7]
    assert narrow.rows == [r[:7] for r in full.rows]
