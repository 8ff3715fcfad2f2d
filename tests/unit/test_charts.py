"""The chart engine (pgrig.reports.svg) and the charts of runs: lines, gaps, shading, units,
bars with whiskers, log axes, decimation, escaping, determinism, standalone SVG files."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np

from pgrig.reports import svg
from pgrig.reports.run_charts import latency_columns, load_charts, metric_charts, overlay_charts
from pgrig.reports.svg import Chart, LegendKey, Reference, Trace

XSS = "<script>alert(1)</script>"
NS = "{http://www.w3.org/2000/svg}"


def draw(chart: Chart) -> str:
    return str(svg.render(chart))


def polylines(out: str) -> list[list[tuple[float, float]]]:
    """The points of every drawn line, in SVG pixels."""
    return [
        [tuple(map(float, p.split(","))) for p in pts.split()]  # type: ignore[misc]
        for pts in re.findall(r'<polyline class="line" points="([^"]*)"', out)
    ]


def plot_box(out: str) -> tuple[float, float, float, float]:
    """x, y, width, height of the plot area."""
    m = re.search(r'<rect class="plot" x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" '
                  r'height="([\d.]+)"', out)  # fmt: skip
    assert m
    x, y, w, h = (float(g) for g in m.groups())
    return x, y, w, h


def y_ticks(out: str) -> list[str]:
    block = re.search(r'<g class="tick"[^>]*text-anchor="end">(.*?)</g>', out).group(1)
    return re.findall(r">([^<]+)</text>", block)


def x_ticks(out: str) -> list[str]:
    block = re.search(r'<g class="tick"[^>]*text-anchor="(?:middle|end)">(<line.*?)</g>', out)
    return re.findall(r">([^<]+)</text>", block.group(1))


def test_line_chart_draws_lines_axes_legend_and_shade() -> None:
    t = [float(x) for x in range(-5, 20)]
    chart = Chart(
        "TPS",
        [Trace("a", t, [100.0 + x for x in t]), Trace("b", t, [50.0] * len(t))],
        shade_until=0.0,
        x_unit="s",
    )
    out = draw(chart)
    assert out.startswith('<svg class="chart"') and out.endswith("</svg>")
    assert len(polylines(out)) == 2
    assert 'class="shade"' in out and "warm-up" in out
    assert ">a</text>" in out and ">b</text>" in out  # legend
    assert "0" in y_ticks(out) and "100" in y_ticks(out)
    assert x_ticks(out)[:2] == ["-5s", "0"]
    # the shade covers exactly t < 0: from the plot's left edge to x(0)
    x0, _, pw, _ = plot_box(out)
    shade_w = float(re.search(r'class="shade" x="[\d.]+" y="[\d.]+" width="([\d.]+)"', out)[1])
    assert abs(x0 + 0.5 + shade_w - (x0 + 5 / 24 * pw)) < 0.6


def test_none_is_a_gap_never_a_zero() -> None:
    # a partial last second recorded as None must not pull the line to the bottom
    line = Trace("x", [0, 1, 2, 3, 4, 5], [10.0, None, 12.0, 13.0, float("nan"), None])
    out = draw(Chart("gappy", [line]))
    lines = polylines(out)
    assert [len(p) for p in lines] == [1, 2]  # the None splits the line; NaN and None end it
    _, top, _, ph = plot_box(out)
    assert all(y < top + ph - 1 for pts in lines for _, y in pts)  # nothing at zero
    empty = draw(Chart("nothing", [Trace("x", [], [])]))
    assert "no data" in empty and "<polyline" not in empty
    only_none = draw(Chart("none", [Trace("x", [0, 1], [None, None])]))
    assert "no data" in only_none


def test_all_user_text_is_escaped() -> None:
    chart = Chart(
        XSS,
        [
            Trace(XSS, [0, 1], [1, 2], markers=True, lower=[0.5, 1.5], upper=[1.5, 2.5]),
            Trace("b", [0, 1], [2, 3], kind="points"),
        ],
        x_label=XSS,
        y_label=XSS,
        shade_until=0.5,
        shade_label=XSS,
        x_categories=[XSS, "ok"],
        references=[Reference(1.0, XSS, 0.9, 1.1)],
        notes=[XSS],
    )
    out = draw(chart)
    assert "<script" not in out
    assert out.count("&lt;script&gt;") >= 10  # title x2, axes, shade, legend, tooltips, ...
    doc = draw(Chart("\x1b[31mred\x00", [Trace("\x07bell", [0, 1], [1, 2])]))
    assert "\x1b" not in doc and "\x00" not in doc and "\x07" not in doc


def test_standalone_file_is_valid_svg_without_external_references() -> None:
    chart = Chart(f"a & b {XSS} 'q' \"dq\"", [Trace("é…", [0, 1, 2], [1, None, 3])])
    text = svg.document(chart)
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<svg')
    root = ET.fromstring(text.encode("utf-8"))
    assert root.tag == f"{NS}svg" and root.get("width") == "640"
    assert root.find(f"{NS}title").text == f"a & b {XSS} 'q' \"dq\""
    assert "href" not in text and "url(" not in text and "<style" not in text
    assert " style=" not in text  # presentation attributes only: the web CSP allows no inline CSS


def test_decimation_keeps_the_extremes_of_each_pixel_column() -> None:
    n = 3600
    rng = np.random.default_rng(1)
    y = (1000 + rng.normal(0, 10, n)).tolist()
    y[1234], y[2345] = 5000.0, 10.0  # one-second spike and dip
    out = draw(Chart("long", [Trace("tps", list(range(n)), y)], width=640))
    [pts] = polylines(out)
    _, top, pw, ph = plot_box(out)
    assert len(pts) <= 2 * (pw + 1)  # at most two points per pixel column
    ys = [p[1] for p in pts]
    assert abs(min(ys) - top) < 12  # the spike reaches (nearly) the top
    assert max(ys) > top + ph - 6  # the dip reaches the bottom
    # each column's own min and max are kept
    xa = np.arange(n, dtype=float)
    cols = np.floor(xa / 10).astype(int)
    dx, dy = svg.decimate(xa, np.asarray(y), lambda a: np.floor(a / 10).astype(np.int64))
    assert dx.size <= 2 * (cols.max() + 1) and np.all(np.diff(dx) > 0)
    for c in (123, 234):
        seg = np.asarray(y)[cols == c]
        kept = dy[np.floor(dx / 10).astype(int) == c]
        assert set(kept) == {seg.min(), seg.max()}


def test_short_series_are_not_decimated() -> None:
    out = draw(Chart("short", [Trace("tps", list(range(30)), [float(i % 7) for i in range(30)])]))
    assert len(polylines(out)[0]) == 30


def test_output_is_deterministic() -> None:
    def build() -> Chart:
        t = [float(x) for x in range(-10, 600)]
        return Chart(
            "det",
            [Trace("a", t, [float((x * 37) % 101) for x in t]), Trace("b", tuple(t), [1.0] * 610)],
            shade_until=0.0,
            x_unit="s",
            y_unit="B/s",
        )

    assert draw(build()) == draw(build())
    assert svg.document(build()) == svg.document(build())


def test_units_on_the_axes() -> None:
    mem = draw(Chart("Memory", [Trace("mem", [0, 1], [0.0, 13.8 * 2**30])], y_unit="B"))
    ticks = y_ticks(mem)
    assert ticks[0] == "0" and all(re.fullmatch(r"\d+ GiB", t) for t in ticks[1:])
    rate = draw(Chart("WAL", [Trace("wal", [0, 1], [0.0, 3.5 * 2**20])], y_unit="B/s"))
    assert all(re.fullmatch(r"\d+(\.\d+)? MiB/s", t) for t in y_ticks(rate)[1:])
    pct = draw(Chart("CPU", [Trace("user", [0, 1], [10.0, 55.0])], y_unit="%"))
    assert y_ticks(pct)[-1] == "60%"
    per_s = draw(Chart("TPS", [Trace("tps", [0, 1], [0.0, 25_000.0])], y_unit="1/s"))
    assert y_ticks(per_s)[-1] in ("25k", "30k")
    hour = draw(Chart("1h", [Trace("tps", list(range(-60, 3601)), [1.0] * 3661)], x_unit="s"))
    assert "10m" in x_ticks(hour) and "1h" in x_ticks(hour)


def test_tooltips_carry_value_and_unit() -> None:
    out = draw(Chart("lat", [Trace("p95", [0, 1], [1.5, 2.25], markers=True)], y_unit="ms"))
    assert "<title>p95: 1 → 2.25 ms</title>" in out


def test_categories_rotate_when_long() -> None:
    short = draw(
        Chart("iters", [Trace("tps", [0, 1, 2], [1, 2, 3], markers=True)],
              x_categories=["defaults", "wal", "unsafe"])
    )  # fmt: skip
    assert ">defaults<" in short and ">unsafe<" in short and "rotate(-35)" not in short
    assert short.count("<circle") == 3
    labels = [f"{i}: shared_buffers {i} GB and more" for i in range(12)]
    long = draw(Chart("many", [Trace("tps", list(range(12)), [1.0] * 12)], x_categories=labels))
    assert long.count("rotate(-35)") == 12
    assert int(re.search(r'height="(\d+)"', long)[1]) > 250  # room below for the labels


def test_bars_with_whiskers_points_and_a_reference_band() -> None:
    chart = Chart(
        "TPS per iteration",
        [
            Trace("TPS", [0, 1, 2], [100.0, None, 150.0], [95.0, None, 140.0], [104.0, None, 160.0],
                  kind="bars"),
            Trace("repeats", [-0.07, 0, 0.07, 1.93, 2.07], [96, 100, 104, 141, 159], kind="points"),
        ],
        x_categories=["a", "b", "c"],
        references=[Reference(100.0, "iteration 0 ±2%", 98.0, 102.0)],
    )  # fmt: skip
    out = draw(chart)
    assert out.count('<rect class="bar"') == 2  # no bar (not a zero bar) where there is no result
    assert out.count('<circle class="dot"') == 5
    whiskers = re.search(r'<path class="whiskers" d="([^"]+)"', out)[1]
    assert whiskers.count("V") == 2  # one whisker per bounded point
    assert 'class="ref-band"' in out and 'class="ref"' in out and "iteration 0 ±2%" in out
    assert "TPS: c → 150 [140, 160]" in out


def test_interval_band_and_log_axis() -> None:
    clients = [1, 10, 100, 1000]
    chart = Chart(
        "TPS by clients",
        [Trace("direct", clients, [100, 900, 5000, 4000], [90, 850, 4800, 3500],
               [110, 950, 5200, 4500], band=True, markers=True)],
        x_ticks=[float(c) for c in clients],
        x_log=True,
    )  # fmt: skip
    out = draw(chart)
    assert out.count('<polygon class="band"') == 1 and "whiskers" not in out
    assert x_ticks(out) == ["1", "10", "100", "1,000"]
    cx = [float(v) for v in re.findall(r'<circle class="dot" cx="([\d.]+)"', out)]
    gaps = np.diff(cx)
    assert np.allclose(gaps, gaps[0], atol=0.2)  # decades equally spaced


def test_legend_keys_and_overflow() -> None:
    keys = [LegendKey("direct", "#4e79a7"), LegendKey("p99", "#000", "dashed")]
    out = draw(Chart("lat", [Trace("x", [0, 1], [1, 2])], legend=keys))
    assert ">direct<" in out and 'stroke-dasharray="6 3"' in out
    many = [Trace(f"wait event number {i}", [0, 1], [i, i + 1]) for i in range(40)]
    crowded = draw(Chart("Wait events", many))
    shown = crowded.count('class="legend"')
    more = int(re.search(r">\+(\d+) more<", crowded)[1])
    assert shown + more == 40 and shown < 40


def test_run_charts_group_columns_with_units() -> None:
    cols = {
        "t": [0.0, 1.0],
        "cpu_user": [50.0, 60.0],
        "cpu_system": [5.0, 6.0],
        "disk_read_bytes": [0.0, 0.0],
        "new_thing": [1.0, 2.0],
    }
    cs = metric_charts("os", cols)
    assert [c.title for c in cs.charts] == ["CPU", "new thing"]  # unknown columns get a chart
    assert cs.charts[0].y_unit == "%" and cs.charts[0].x_unit == "s"
    assert cs.quiet == ["disk_read_bytes"]
    assert latency_columns(
        {"t": [], "tps": [], "p99": [], "lat_avg": [], "p50": [], "p999": []}
    ) == ["lat_avg", "p50", "p99", "p999"]


def test_load_charts_and_overlays_shade_the_warm_up() -> None:
    pg = {"t": [-2.0, -1.0, 0.0, 1.0], "tps": [5.0, 8.0, 10.0, None], "p95": [3.0, 2, 2, None]}
    charts = load_charts(pg)
    assert [c.title for c in charts] == ["Throughput", "Latency percentiles"]
    assert all(c.shade_until == 0.0 for c in charts)
    a = {"pgbench": pg}
    b = {"pgbench": {"t": [0.0, 1.0], "tps": [9.0, 9.5], "p95": [2.0, 2.1]}}
    over = overlay_charts([("#1", a), ("#2", b), ("#3 no series", {})])
    assert [c.title for c in over] == ["TPS", "Latency p95"]
    assert [t.label for t in over[0].traces] == ["#1", "#2", "#3 no series"]  # colours kept
    assert over[0].shade_until == 0.0
