"""Single-run and comparison reports, Markdown escaping, HTML rendering."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
from study_fakes import archive_at, make_record

from pgrig.archive.records import ScriptResult
from pgrig.errors import PgrigError
from pgrig.reports import html, markdown, publish
from pgrig.reports.document import Cell, Document, KeyValues, Paragraph, Section, Table
from pgrig.reports.run_report import compare_document, run_document
from pgrig.reports.summary import latency_columns, run_stability


def store(archive, **kw):
    rec = make_record(**kw)
    archive.finish_run(rec)
    return rec


def test_run_document() -> None:
    rec = make_record(tps=1000, seed=1, note="after <restart>", settings={"work_mem": "64MB"})
    rec.id = 7
    rec.scripts = [ScriptResult(script_no=0, name="pgbench:tpcb", transactions=20000, tps=1000)]
    rec.series["os"] = {"t": [0.0, 1.0], "cpu_user": [50.0, 60.0], "cpu_system": [20.0, 20.0]}
    doc = run_document(rec)
    assert doc.title == "Run 7: pgbench:tpcb-like on e1"
    titles = [s.title for s in doc.sections]
    # the run page's charts: pgbench's over time, then each sampler's (here the OS)
    assert titles[:5] == [
        "Summary",
        "Over time",
        "Per transaction type",
        "Operating system",
        "Settings",
    ]
    summary = dict(doc.sections[0].blocks[0].items)
    assert summary["stability"].startswith("CV ")
    assert summary["warm-up"].startswith("3s at ")
    assert [f.name for f in doc.figures()] == ["throughput", "latency-percentiles", "os-cpu"]


def test_settings_print_as_show_prints_them() -> None:
    a = make_record(tps=1000, seed=1)
    b = make_record(tps=1000, seed=2)
    a.id, b.id = 1, 2
    for rec, pages in ((a, "6144"), (b, "771378")):
        rec.settings = {
            "shared_buffers": {"setting": pages, "unit": "8kB", "boot_val": "16384",
                               "source": "configuration file"},
        }  # fmt: skip
    settings = next(s for s in run_document(a).sections if s.title == "Settings")
    rows = next(t for t in settings.blocks if isinstance(t, Table)).rows
    # human units (pgrig/format.py): binary units, exact when whole, else one decimal
    assert [c.lines for c in rows[0]][:3] == [["shared_buffers"], ["48 MiB"], ["128 MiB"]]
    text = markdown.render(compare_document([[a], [b]]), "compare")
    assert "| shared_buffers | 48 MiB | 5.9 GiB |" in text
    assert "6171024kB" not in text and "61448kB" not in text


def test_run_report_files(tmp_path: Path) -> None:
    archive = archive_at(tmp_path)
    rec = store(archive, tps=1200, seed=3)
    paths = publish.run_report(archive, rec.id, ["md", "html"], tmp_path / "r")
    assert [p.name for p in paths] == [f"run-{rec.id}.md", f"run-{rec.id}.html"]
    md = paths[0].read_text()
    assert f"(run-{rec.id}-throughput.svg)" in md
    assert (tmp_path / "r" / f"run-{rec.id}-throughput.svg").exists()


def test_failed_run_without_series() -> None:
    rec = make_record(tps=0, status="failed")
    rec.id = 3
    doc = run_document(rec)
    assert "failed: pgbench: connection refused" in dict(doc.sections[0].blocks[0].items)["status"]
    assert doc.figures() == []


def test_compare_groups_with_verdicts(tmp_path: Path) -> None:
    archive = archive_at(tmp_path)
    base = [store(archive, tps=1000 + i, seed=i, settings={"fsync": "on"}) for i in range(5)]
    fast = [store(archive, tps=1500 + i, seed=10 + i, settings={"fsync": "off"}) for i in range(5)]
    single = [store(archive, tps=1010, seed=20)]
    groups = [[archive.get_run(r.id) for r in g] for g in (base, fast, single)]
    doc = compare_document(groups)
    table = doc.sections[0].blocks[0]
    verdicts = [row[5].lines for row in table.rows]
    assert verdicts[0] == ["baseline"]
    assert verdicts[1][1] == "faster"
    # independently: the median of the 25 pairwise ratios, bounds from the sorted ratios
    ratios = sorted(f / b for f in range(1500, 1505) for b in range(1000, 1005))
    assert verdicts[1][0] == f"x{statistics.median(ratios):.3f} [{ratios[2]:.3f}, {ratios[-3]:.3f}]"
    assert verdicts[2] == ["x1.008", "no verdict: single runs under 30 s (run 11: 20 s)"]
    diff = doc.sections[1].blocks[0]
    assert diff.rows[0].__len__() == 4 and diff.rows[0][0].lines == ["fsync"]
    assert doc.figures()[0].name == "overlay-tps"
    assert [t.label for t in doc.figures()[0].chart.traces] == [
        f"runs {','.join(str(r.id) for r in base)} (run {base[0].id})",
        f"runs {','.join(str(r.id) for r in fast)} (run {fast[0].id})",
        f"run {single[0].id} (run {single[0].id})",
    ]
    paths = publish.compare_report(
        archive, [[r.id for r in base], [r.id for r in fast]], ["html"], tmp_path / "c"
    )
    assert paths[0].name.startswith("compare-1_2_3_4_5-vs-6_")


def test_compare_needs_two_groups(tmp_path: Path) -> None:
    with pytest.raises(PgrigError, match="at least two"):
        publish.compare_report(archive_at(tmp_path), [[1]], ["md"], tmp_path)


def test_parse_group() -> None:
    assert publish.parse_group("7") == [7]
    assert publish.parse_group("1,2, 3") == [1, 2, 3]
    assert publish.parse_group("1,4-6") == [1, 4, 5, 6]
    with pytest.raises(PgrigError, match="bad run list"):
        publish.parse_group("a-b")
    with pytest.raises(PgrigError, match="bad run list"):
        publish.parse_group("6-4")


def test_formats() -> None:
    assert publish.check_formats(["md,html", "md"]) == ["md", "html"]
    with pytest.raises(PgrigError, match="unknown report format 'pdf'"):
        publish.check_formats(["pdf"])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain text", "plain text"),
        ("a|b", "a\\|b"),
        ("<script>x</script>", "&lt;script&gt;x&lt;/script&gt;"),
        ("[click](javascript:alert(1))", "[click\\](javascript:alert(1))"),
        ("see [x] here", "see [x] here"),
        ("*bold* `code`", "\\*bold\\* \\`code\\`"),
        ("# heading", "# heading"),
        ("line\nbreak", "line break"),
        ("AT&T", "AT&amp;T"),
        ("shared_buffers=1GB", "shared_buffers=1GB"),
    ],
)
def test_markdown_escape(text: str, expected: str) -> None:
    assert markdown.escape(text) == expected


def test_markdown_escape_at_line_start() -> None:
    assert markdown.escape("# heading", line_start=True) == "\\# heading"
    assert markdown.escape("[x]: http://a", line_start=True) == "\\[x\\]: http://a"
    assert markdown.escape("- item", line_start=True) == "\\- item"


def test_html_escapes_everything() -> None:
    evil = '<script>alert("x")</script>'
    doc = Document(
        title=evil,
        subtitle=evil,
        sections=[
            Section(
                evil,
                [
                    Paragraph(evil, "warn"),
                    KeyValues([(evil, evil)]),
                    Table([evil], [[Cell([evil, evil], "good")]], caption=evil),
                ],
            )
        ],
        generated_by=evil,
    )
    out = html.render(doc)
    assert "<script>" not in out
    assert out.count("&lt;script&gt;") == 12


def test_latency_columns_order() -> None:
    cols = {"t": [], "tps": [], "max": [], "p99": [], "p50": [], "p999": [], "p95": [], "x": []}
    assert latency_columns(cols) == ["p50", "p95", "p99", "p999", "max"]


def test_stability_of_short_runs() -> None:
    rec = make_record(tps=500, seconds=2, warmup=0)
    s = run_stability(rec)
    assert s.cv is None and s.describe() == "no per-second data"


def test_compare_gives_no_verdict_for_a_failed_run(tmp_path: Path) -> None:
    archive = archive_at(tmp_path)
    base = [store(archive, tps=1000 + i, seed=i) for i in range(3)]
    cand = [store(archive, tps=1500, seed=10), store(archive, tps=0, seed=11, status="failed")]
    doc = compare_document([[archive.get_run(r.id) for r in g] for g in (base, cand)])
    cell = doc.sections[0].blocks[0].rows[1][5]
    assert cell.lines == ["-", f"no verdict: run {cand[1].id} is failed"]
    assert cell.style == "muted"
    notes = [b.text for b in doc.sections[0].blocks if isinstance(b, Paragraph)]
    assert "No verdict: only ok runs are compared." in notes


def test_stability_is_read_from_the_run_when_stored() -> None:
    """One reader: the figures the runner stored (extra["stability"]) win over a recomputation,
    so every report shows what the run page and `runs show --json` show."""
    rec = make_record(tps=500, seconds=30, seed=4)
    rec.extra["stability"] = {
        "seconds": 30,
        "cv": 0.012,
        "trend_pct_per_min": -9.0,
        "first_last_change_pct": -6.5,
        "drift_flagged": True,
        "reasons": ["level after t=20s differs by -9.0% from the level before t=20s"],
        "change_points": [{"t": 20.0, "before": 520.0, "after": 473.0, "change_pct": -9.0}],
    }
    s = run_stability(rec)
    assert (s.cv, s.drift, s.seconds) == (0.012, True, 30)
    assert s.describe() == (
        "CV 1.2%, trend -9.0%/min, last vs first fifth -6.5%, change points t=20s -9.0% "
        "(DRIFT: level after t=20s differs by -9.0% from the level before t=20s)"
    )


def test_stability_of_older_runs_uses_whole_seconds_only() -> None:
    """Runs archived before stability was stored ended their series with a partial second
    (156 TPS after 30 s at ~4,500): it must not count, so a steady run is not "drifting"."""
    import numpy as np

    rng = np.random.default_rng(0)
    rec = make_record(tps=4500, seconds=30, warmup=0, seed=5)
    tps = [*(4500 * (1 + 0.01 * rng.standard_normal(30))), 156.0]
    rec.series["pgbench"] = {"t": list(range(31)), "tps": tps}
    rec.measured_s = 30.0
    s = run_stability(rec)
    assert s.seconds == 30 and not s.drift
    assert s.cv == pytest.approx(np.std(tps[:30], ddof=1) / np.mean(tps[:30]))
