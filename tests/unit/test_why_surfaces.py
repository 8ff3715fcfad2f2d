"""The Why section and the host checks on the web run page and in the run report: insights built
from captured PostgreSQL 15 logs, statement text escaped, parts not collected saying why."""

from __future__ import annotations

import random
from pathlib import Path

import sample_data
from fastapi.testclient import TestClient
from test_insights_cli import _insights

from pgrig.archive.store import Archive
from pgrig.insights.summary import why, why_parts
from pgrig.reports import html, markdown
from pgrig.reports.run_report import run_document

EVIL = "SELECT '<script>alert(1)</script>' FROM t"
CHECKS = [
    {
        "name": "governor",
        "value": "powersave",
        "recommended": "performance",
        "status": "warn",
        "why": "frequency <scaling> hides differences",
    },
    {
        "name": "thp_enabled",
        "value": None,
        "recommended": "never",
        "status": "unavailable",
        "why": "no THP on this kernel",
    },
]


def _store(archive: Archive, insights: dict) -> int:
    rec = sample_data.make_run(1, random.Random(3), tps=1000.0, tpcc=False, status="ok")
    rec.insights = insights
    rec.host = {"hostname": "bench-01", "checks": CHECKS}
    rec.add_warning("busy_host", "other processes used 40% of the CPUs")
    archive.finish_run(rec)
    assert rec.id is not None
    return rec.id


def _evil_insights() -> dict:
    doc = _insights()
    doc["statements"]["top"][0]["text"] = EVIL
    return doc


def test_why_parts_keep_the_runs_show_lines() -> None:
    doc = _evil_insights()
    parts = why_parts(doc)
    assert [line for p in parts for line in p.lines] == why(doc)  # no notes in this document
    plans = next(p for p in parts if p.key == "plans")
    flags = next(t for t in plans.tables if t.title == "Misestimates")
    rows = [[c.text for c in r] for r in flags.rows]
    row = next(r for r in rows if r[1] == "Index Scan using order_line_pkey on order_line")
    assert row[2] == "order_line"
    first = doc["plans"]["misestimates"][0]  # the worst flag comes first in both
    assert rows[0][3:5] == [f"{first['estimated_rows']:,.0f}", f"{first['actual_rows']:,.0f}"]
    changes = next(t for t in plans.tables if t.title == "Plan changes during the run")
    assert any(
        r[0].text.startswith("UPDATE district") and r[1].text == "switched" for r in changes.rows
    )


def test_run_page_why_section_and_host_checks(archive: Archive, client: TestClient) -> None:
    page = client.get(f"/runs/{_store(archive, _evil_insights())}").text
    why_html = page.split('<section class="why" id="why">')[1].split("</section>")[0]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in why_html and "<script>" not in page
    assert "Index Scan using order_line_pkey on order_line" in why_html
    assert "checkpoints are occurring too frequently" in why_html
    assert 'data-part="waits:Wait events, share of active time"' in why_html
    checks = page.split('id="host-checks"')[1].split("</section>")[0]
    assert "powersave" in checks and "performance" in checks and "warn" in checks
    assert "frequency &lt;scaling&gt; hides differences" in checks
    assert 'data-code="busy_host"' in page

    old = client.get(f"/runs/{_store(archive, {})}").text
    assert old.count('class="muted not-collected"') == 4
    assert "archived before pgrig collected them" in old


def test_run_report_why_and_host_checks(archive: Archive, tmp_path: Path) -> None:
    rec = archive.get_run(_store(archive, _evil_insights()))
    doc = run_document(rec)
    titles = [s.title for s in doc.sections]
    assert "Why" in titles and "Host checks" in titles
    text = markdown.render(doc, "run")
    assert "<script>" not in text and "Index Scan using order_line_pkey on order_line" in text
    assert "| governor | powersave | performance | warn |" in text
    page = html.write(doc, tmp_path, "run").read_text()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)" in page


def test_why_shows_as_many_misestimates_as_statements() -> None:
    """A rare transaction type's misestimate (TPC-C's Stock-Level) is not crowded out by
    three larger ones elsewhere: `runs show` lists as many as it lists statements (5)."""
    from pgrig.insights import summary

    flags = [
        {"fingerprint": f"q{i}", "node": f"Seq Scan on t{i}", "relation": f"t{i}",
         "estimated_rows": 1000.0 * (i + 1), "actual_rows": 1.0, "factor": 1000.0 * (i + 1),
         "direction": "over", "misestimate_samples": 3, "samples": 3, "text": f"SELECT {i}"}
        for i in range(4)
    ]  # fmt: skip
    doc = {"collected": True, "samples": 12, "statements": [{}] * 4, "misestimates": flags}
    rows = summary._plans(doc, 5, 90)
    shown = [text for label, text in rows if label == "misestimate"]
    assert len(shown) == 4 and "Seq Scan on t0: estimated 1,000 rows" in shown[-1]
