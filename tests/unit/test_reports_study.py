"""Study reports from archived (synthetic) runs: verdicts, tables, charts, escaping."""

from __future__ import annotations

import io
import math
import re
import statistics
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from study_fakes import FakeBackend, archive_at, iterations_toml, make_record, study_toml

from pgrig.errors import NotFound
from pgrig.reports import iteration, publish
from pgrig.reports.document import Paragraph, Table
from pgrig.reports.summary import load_study
from pgrig.study.runner import run_study
from pgrig.study.spec import parse

REPORTED = {"description": "a <b>bold</b> study & more", "repeats": 5, "threshold": 0.02}
HEAD = study_toml("{name}", study=REPORTED, workload="pgbench:tpcb-like", duration=20, warmup=3)

SAME = HEAD + iterations_toml(
    {"name": "first", "settings": {"work_mem": "4MB"}},
    {"name": "same again"},
)

FASTER = HEAD + iterations_toml(
    {"name": "sync commit", "settings": {"synchronous_commit": "on"}},
    {
        "name": "<script>alert(1)</script>",
        "settings": {"synchronous_commit": "off"},
        "note": "<img src=x onerror=alert(1)> | pipe",
    },
)


def quiet() -> Console:
    return Console(file=io.StringIO(), width=200)


def make_study(tmp_path: Path, text: str, name: str, noise: float = 0.01):
    archive = archive_at(tmp_path)
    run_study(
        parse(text.replace("{name}", name)),
        archive=archive,
        backend=FakeBackend(noise=noise),
        console=quiet(),
    )
    return archive


def results_table(doc) -> Table:
    section = next(s for s in doc.sections if s.title == "Results")
    return next(b for b in section.blocks if isinstance(b, Table))


def test_same_configuration_is_equivalent(tmp_path: Path) -> None:
    archive = make_study(tmp_path, SAME, "same")
    data = load_study(archive, "same")
    assert [len(p.samples) for p in data.points] == [5, 5]
    table = results_table(iteration.build(data))
    col = table.columns.index("vs previous")
    assert table.rows[0][col].lines == ["-"]
    assert table.rows[1][col].lines[1] == "equivalent"
    assert table.rows[1][col].style == "neutral"
    ratio, lo, hi = _ratio_cell(table.rows[1][col].lines[0])
    assert 0.98 <= lo <= 1 <= hi <= 1.02
    # independently: the median of all pairwise ratios of the repeats' TPS
    base, cand = data.points[0].samples, data.points[1].samples
    expected = math.exp(statistics.median(math.log(c / b) for c in cand for b in base))
    assert ratio == pytest.approx(expected, abs=0.0005)


def test_real_change_is_faster_with_its_interval(tmp_path: Path) -> None:
    archive = make_study(tmp_path, FASTER, "faster")
    data = load_study(archive, "faster")
    table = results_table(iteration.build(data))
    cell = table.rows[1][table.columns.index("vs iteration 0")]
    assert cell.lines[1] == "faster" and cell.style == "good"
    # "x1.598 [1.578, 1.607]": the ratio candidate / baseline and its bounds
    ratio, lo, hi = _ratio_cell(cell.lines[0])
    assert 1.02 < lo <= ratio <= hi and 1.5 < ratio < 1.7
    tps = table.rows[1][table.columns.index("TPS [bounds]")].lines
    assert len(tps) == 2 and tps[1].startswith("[")


def test_iteration_table_columns(tmp_path: Path) -> None:
    archive = make_study(tmp_path, FASTER, "cols")
    table = results_table(iteration.build(load_study(archive, "cols")))
    row = dict(zip(table.columns, table.rows[1], strict=True))
    assert row["changes"].lines == ["synchronous_commit=off"]
    assert row["runs"].lines == ["5/5"]
    assert row["CPU us/sy/wa/id %"].lines == ["55/25/5/15"]
    assert row["hit %"].lines == ["99.1"]
    assert row["stability"].lines[0].startswith("max CV ")
    assert row["note"].lines == ["<img src=x onerror=alert(1)> | pipe"]


def test_markdown_report_with_charts(tmp_path: Path) -> None:
    archive = make_study(tmp_path, FASTER, "md")
    out = tmp_path / "out"
    [md] = publish.study_report(archive, "md", ["md"], out)
    assert md == out / "md.md"
    text = md.read_text()
    # every chart the Markdown shows is an SVG file next to it, and every file is shown
    linked = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert linked == ["md-tps.svg", "md-latency.svg"]
    assert sorted(p.name for p in out.glob("*.svg")) == sorted(linked)
    for name in linked:
        root = ET.fromstring((out / name).read_bytes())
        assert root.tag == "{http://www.w3.org/2000/svg}svg" and root.find(".//{*}rect") is not None
    assert (
        "faster" in text
        and "no detectable change" not in text.split("## Runs")[0].split("| 1 |")[1].split("\n")[0]
    )
    # user text is inert in Markdown: no raw HTML, no table breaks
    assert "<script>" not in text and "&lt;script&gt;" in text
    assert "<img" not in text and "\\| pipe" in text
    assert "&lt;b&gt;bold&lt;/b&gt; study &amp; more" in text


def test_html_report_is_self_contained_and_escaped(tmp_path: Path) -> None:
    archive = make_study(tmp_path, FASTER, "web")
    [html] = publish.study_report(archive, "web", ["html"], tmp_path / "h")
    text = html.read_text()
    assert text.startswith("<!DOCTYPE html>")
    assert "<script" not in text and "<link" not in text
    assert not re.search(r'(src|href)="(https?:)?//', text)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in text
    # charts inline, as the web shows them; nothing refers outside the file
    assert text.count('<svg class="chart"') == 2 and "<img" not in text
    urls = set(re.findall(r"[a-z]+://[^\s\"'<>)]*", text))
    assert urls == {"http://www.w3.org/2000/svg"}  # the SVG namespace name, never fetched
    assert "url(" not in text and "@import" not in text
    assert not re.search(r"<[^>]+\s(src|href)=", text)  # no tag loads or links anything
    assert 'class="num good"' in text  # the verdict cell is styled


def test_both_formats_and_default_directory(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PGRIG_HOME", str(tmp_path / "home"))
    archive = make_study(tmp_path, SAME, "both")
    paths = publish.study_report(archive, "both", ["md,html"])
    assert [p.name for p in paths] == ["both.md", "both.html"]
    assert paths[0].parent == tmp_path / "home" / "reports" / "both"


def test_runs_section_lists_every_run_and_drift(tmp_path: Path) -> None:
    archive = make_study(tmp_path, SAME, "runs")
    data = load_study(archive, "runs")
    doc = iteration.build(data)
    runs = next(s for s in doc.sections if s.title == "Runs")
    table = next(b for b in runs.blocks if isinstance(b, Table))
    assert len(table.rows) == 10
    warm = table.rows[0][table.columns.index("warm-up")].lines[0]
    assert warm.startswith("3s, ") and warm.endswith(" tps")


def test_drift_is_flagged(tmp_path: Path) -> None:
    archive = archive_at(tmp_path)
    run_study(
        parse(SAME.replace("{name}", "d")), archive=archive, backend=FakeBackend(), console=quiet()
    )
    # one more run of point 0, repeat 0, drifting by -30% over its window: it replaces repeat 0
    rec = make_record(tps=900, study="d", point="iter-00", repeat=0, drift=-0.3, seed=99)
    archive.finish_run(rec)
    data = load_study(archive, "d")
    st = next(s for s in data.points[0].stability if s.run_id == rec.id)
    assert st.drift and st.first_last_pct is not None and st.first_last_pct < -5
    doc = iteration.build(data)
    runs = next(s for s in doc.sections if s.title == "Runs")
    assert "Drift flagged" in runs.blocks[0].text
    table = results_table(doc)
    assert "drift in 1 of 5 runs" in table.rows[0][table.columns.index("stability")].lines


def test_few_repeats_are_marked(tmp_path: Path) -> None:
    archive = make_study(tmp_path, FASTER.replace("repeats = 5", "repeats = 2"), "few")
    doc = iteration.build(load_study(archive, "few"))
    table = results_table(doc)
    assert table.rows[0][table.columns.index("TPS [bounds]")].lines[1].endswith("(range)")
    notes = [b.text for s in doc.sections for b in s.blocks if hasattr(b, "text")]
    assert any("too few repeats" in t for t in notes)


def test_unknown_study(tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        publish.study_report(archive_at(tmp_path), "nope", ["md"], tmp_path)


SWEEP = (
    HEAD.replace("repeats = 5", "repeats = 3")
    + """
[sweep]
settings.synchronous_commit = ["on", "off"]
clients = [1, 4, 8]
"""
)


def test_sweep_report(tmp_path: Path) -> None:
    from pgrig.reports import sweep

    archive = make_study(tmp_path, SWEEP, "sw")
    data = load_study(archive, "sw")
    doc = sweep.build(data)
    table = results_table(doc)
    assert table.columns[:4] == ["series", "clients", "TPS [bounds]", "runs"]
    assert "vs synchronous_commit=on" in table.columns
    assert len(table.rows) == 6
    col = table.columns.index("vs synchronous_commit=on")
    assert table.rows[0][col].lines == ["baseline"]
    assert table.rows[3][col].lines[1] in ("faster", "faster *")
    assert {f.name for f in doc.figures()} == {"tps", "latency"}
    paths = publish.study_report(archive, "sw", ["md", "html"], tmp_path / "o")
    assert (tmp_path / "o" / "sw-tps.svg").exists() and (tmp_path / "o" / "sw-latency.svg").exists()
    assert all(p.exists() for p in paths)


def test_one_short_repeat_gives_a_ratio_but_no_verdict(tmp_path: Path) -> None:
    archive = make_study(tmp_path, FASTER.replace("repeats = 5", "repeats = 1"), "one")
    doc = iteration.build(load_study(archive, "one"))
    table = results_table(doc)
    cell = table.rows[1][table.columns.index("vs previous")]
    assert cell.lines[1] == "no verdict: single runs under 30 s (run 1: 20 s)"
    assert cell.style == "muted"
    assert re.fullmatch(r"x1\.\d{3}", cell.lines[0])
    notes = [b.text for b in doc.sections[1].blocks if isinstance(b, Paragraph)]
    assert any(
        n.startswith("No verdict: an indicative verdict on single runs needs 30 s") for n in notes
    )


def test_one_long_repeat_gives_an_indicative_verdict(tmp_path: Path) -> None:
    text = FASTER.replace("repeats = 5", "repeats = 1").replace("duration = 20", "duration = 40")
    archive = make_study(tmp_path, text, "long")
    doc = iteration.build(load_study(archive, "long"))
    table = results_table(doc)
    cell = table.rows[1][table.columns.index("vs previous")]
    assert cell.lines[1] in ("faster (indicative)", "faster (indicative) *"), cell.lines
    notes = [b.text for b in doc.sections[1].blocks if isinstance(b, Paragraph)]
    assert any(
        n.startswith("Indicative: single runs compared by the means of blocks") for n in notes
    )


def _ratio_cell(text: str) -> tuple[float, float, float]:
    m = re.fullmatch(r"x(\d+\.\d{3}) \[(\d+\.\d{3}), (\d+\.\d{3})\]", text)
    assert m, text
    ratio, lo, hi = (float(g) for g in m.groups())
    return ratio, lo, hi


POOLER = (
    HEAD.replace("repeats = 5", "repeats = 3").replace(
        'version = "15"', 'version = "15"\npooler = { pool_size = 4 }'
    )
    + """
[sweep]
via = ["direct", "pgbouncer"]
workload = ["pgbench:select-only", "pgbench:tpcb-like"]
clients = [1, 8]
"""
)


@pytest.mark.parametrize("compare", ['compare = "via"\n', ""])
def test_sweep_compares_along_the_named_axis(tmp_path: Path, compare: str) -> None:
    """Issue 9: pgbouncer against direct at the same workload and clients, never one workload
    against another; every ratio checked against the pairwise ratios of the two points."""
    from pgrig.reports import sweep

    archive = make_study(tmp_path, POOLER + compare, "pool", noise=0.05)
    data = load_study(archive, "pool")
    doc = sweep.build(data)
    table = results_table(doc)
    col = table.columns.index("vs via=direct")
    by_coords = {
        (ps.point.coords["via"], ps.point.coords["workload"], ps.point.coords["clients"]): ps
        for ps in data.points
    }
    compared = 0
    for row in table.rows:  # grouped by series: matched to points by their labels
        series, clients = row[0].lines[0], int(row[1].lines[0])
        via = "pgbouncer" if "via=pgbouncer" in series else "direct"
        workload = series.split("workload=")[1]
        cell = row[col]
        if via == "direct":
            assert cell.lines == ["baseline"]
            continue
        ref = by_coords[("direct", workload, clients)]
        cand = by_coords[("pgbouncer", workload, clients)]
        expected = math.exp(
            statistics.median(math.log(c / b) for c in cand.samples for b in ref.samples)
        )
        ratio, lo, hi = _ratio_cell(cell.lines[0])
        assert ratio == pytest.approx(expected, abs=0.0005) and lo <= ratio <= hi
        assert cell.lines[1].split(" (")[0].removesuffix(" *") in (
            "faster",
            "slower",
            "equivalent",
            "inconclusive",
        )
        compared += 1
    assert compared == 4
    note = next(b.text for b in doc.sections[1].blocks if isinstance(b, Paragraph))
    assert note.startswith("Each point is compared with via=direct at the same workload, clients")
    if compare:
        assert note.endswith('(compare = "via" in [sweep]).')
    else:
        assert 'compare = "via" by default' in note


def test_sweep_of_one_dimension_says_there_is_no_comparison(tmp_path: Path) -> None:
    from pgrig.reports import sweep

    text = HEAD.replace("repeats = 5", "repeats = 2") + "\n[sweep]\nclients = [1, 8]\n"
    doc = sweep.build(load_study(make_study(tmp_path, text, "c"), "c"))
    table = results_table(doc)
    assert not any(c.startswith("vs ") for c in table.columns)
    note = next(b.text for b in doc.sections[1].blocks if isinstance(b, Paragraph))
    assert note.startswith("No comparison column: only clients is swept")


def test_the_markdown_study_report_renders_the_host(archive: Any, tmp_path: Path) -> None:
    import sample_data

    from pgrig.reports import publish

    sample_data.iteration_study(archive)
    (md,) = publish.study_report(archive, "tune-pg15", ["md"], tmp_path)
    line = next(ln for ln in md.read_text().splitlines() if "host" in ln.lower() and "CPUs" in ln)
    assert "{" not in line and "'" not in line and "checks" not in line, line
    assert "RAM " in line and " GiB" in line
