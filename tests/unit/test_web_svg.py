"""Server-side SVG charts, chart grouping and the formatting helpers the pages use."""

from __future__ import annotations

import re

import pytest

from pgrig.web import format as fmt
from pgrig.web import svg
from pgrig.web.series_view import latency_columns, metric_charts


def test_line_chart_draws_lines_axes_and_shade() -> None:
    t = [float(x) for x in range(-5, 20)]
    chart = svg.Chart(
        "TPS",
        [svg.Line("a", t, [100.0 + x for x in t]), svg.Line("b", t, [50.0] * len(t))],
        shade_until=0.0,
    )
    out = str(svg.render(chart))
    assert out.startswith('<svg class="chart"') and out.endswith("</svg>")
    assert out.count("<polyline") == 2
    assert 'class="shade"' in out and "warm-up" in out
    assert ">a</text>" in out and ">b</text>" in out  # legend
    ticks = re.findall(r'class="tick"[^>]*>([^<]+)<', out)
    assert "0" in ticks and "100" in ticks


def test_gaps_and_empty_charts() -> None:
    line = svg.Line("x", [0, 1, 2, 3, 4], [1.0, None, 2.0, 3.0, float("nan")])
    out = str(svg.render(svg.Chart("gappy", [line])))
    assert out.count("<polyline") == 2  # the None splits the line
    empty = str(svg.render(svg.Chart("nothing", [svg.Line("x", [], [])])))
    assert "no data" in empty and "<polyline" not in empty


def test_text_is_escaped() -> None:
    out = str(
        svg.render(svg.Chart("<b>t</b>", [svg.Line("<script>", [0, 1], [1, 2], markers=True)]))
    )
    assert "<script>" not in out and "<b>" not in out
    assert "&lt;script&gt;" in out and "&lt;b&gt;t&lt;/b&gt;" in out


def test_long_series_are_decimated_keeping_spikes() -> None:
    n = 20000
    y = [1.0] * n
    y[12345] = 99.0
    pts = svg._decimate(list(zip(range(n), y, strict=True)), limit=1000)
    assert len(pts) <= 1000 + 2
    assert max(p[1] for p in pts) == 99.0


def test_byte_axes_use_round_binary_units() -> None:
    line = svg.Line("mem", [0, 1], [0.0, 13.8 * 2**30])
    out = str(svg.render(svg.Chart("Memory", [line], y_unit="B")))
    ticks = re.findall(r'class="tick" x="\d+"[^>]*text-anchor="end">([^<]+)<', out)
    assert ticks[0] == "0" and all(re.fullmatch(r"\d+ GiB", t) for t in ticks[1:])


def test_categories() -> None:
    chart = svg.Chart(
        "iters",
        [svg.Line("tps", [0, 1, 2], [1, 2, 3], markers=True)],
        x_categories=["defaults", "wal", "unsafe"],
    )
    out = str(svg.render(chart))
    assert ">defaults<" in out and ">unsafe<" in out
    assert out.count("<circle") == 3


def test_metric_groups_and_quiet_columns() -> None:
    cols = {
        "t": [0.0, 1.0],
        "cpu_user": [50.0, 60.0],
        "cpu_system": [5.0, 6.0],
        "disk_read_bytes": [0.0, 0.0],
        "new_thing": [1.0, 2.0],
    }
    cs = metric_charts("os", cols)
    titles = [c.title for c in cs.charts]
    assert titles == ["CPU", "new thing"]  # unknown columns still get a chart
    assert cs.quiet == ["disk_read_bytes"]
    assert latency_columns(
        {"t": [], "tps": [], "p99": [], "lat_avg": [], "p50": [], "p999": []}
    ) == ["lat_avg", "p50", "p99", "p999"]


@pytest.mark.parametrize(
    ("value", "unit", "shown"),
    [
        ("16384", "8kB", "128MB"),
        ("4096", "kB", "4MB"),
        ("-1", "8kB", "-1"),
        ("300", "s", "300s"),
        ("on", None, "on"),
        ("12345", "kB", "12345kB"),
    ],
)
def test_setting_values_read_like_postgresql_conf(value: str, unit: str | None, shown: str) -> None:
    assert fmt.human_setting(value, unit) == shown


def test_formats() -> None:
    assert fmt.num(1234.5) == "1,234" or fmt.num(1234.5) == "1,235"
    assert fmt.num(None) == "–"
    assert fmt.size(1536 * 2**20) == "1.5 GiB"
    assert fmt.duration(90) == "1m 30s" and fmt.duration(7200) == "2h" and fmt.duration(15) == "15s"
    assert fmt.signed_pct(1.123) == "+12.3%"
    assert fmt.ms(0.0421) == "0.042"
