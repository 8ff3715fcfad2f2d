"""The run page of a 1-hour run: how long its ~40 per-second charts take to draw and to serve.

    python bench/charts.py [--seconds 3600] [--repeat 7]

Makes one synthetic run of --seconds measured seconds (plus a 60 s warm-up) with the samplers'
usual columns (pgbench, OS, PostgreSQL: about 45 series), then prints:
- the chart engine alone: all the run page's charts drawn (median), points drawn vs recorded;
- the same without decimation (every recorded point drawn), for comparison;
- the run page over HTTP (archive read + render + transfer) and its size, and how long
  Chromium takes to show it (navigation to the load event, layout of every chart included);
- the run report (Markdown + .svg files, and the HTML file) written from the archive.
Figures on a shared machine are inflated: compare them on a quiet host.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from pgrig.archive.records import RunRecord
from pgrig.archive.store import Archive
from pgrig.reports import publish, svg
from pgrig.web import run_page
from pgrig.web.app import create_app

# The synthetic runs and the browser harness live with the tests (they are not part of pgrig).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import sample_data
import web_harness

PORTS = (56900, 56909)
T = TypeVar("T")


def timed(fn: Callable[[], T], repeat: int) -> tuple[float, T]:
    """Median seconds of `repeat` calls (at least one), and the last result."""
    times = []
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def draw_page(rec: RunRecord) -> str:
    page = run_page.build(rec)
    charts = [*page.load_charts, *(c for m in page.metrics for c in m.charts)]
    return "".join(str(c) for c in charts)


def points_drawn(markup: str) -> int:
    return sum(p.count(",") for p in re.findall(r'<polyline class="line" points="([^"]*)"', markup))


def chromium_load(url: str, repeat: int) -> float | None:
    """Median seconds from navigation to the load event; None without Debian's chromium."""
    if not Path(web_harness.CHROMIUM).exists():
        return None
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = web_harness.launch_chromium(pw)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        seconds, _ = timed(lambda: page.goto(url, wait_until="load"), max(3, repeat))
        browser.close()
    return seconds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=3600)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    rec = sample_data.make_run(
        1, random.Random(5), duration=args.seconds, warmup=60, status="ok", tpcc=False
    )
    columns = sum(len(cols) - 1 for cols in rec.series.values())
    recorded = sum(len(c) for cols in rec.series.values() for k, c in cols.items() if k != "t")
    print(
        f"run: {args.seconds:,} s measured + 60 s warm-up, {columns} series, "
        f"{recorded:,} recorded points"
    )

    engine_s, markup = timed(lambda: draw_page(rec), args.repeat)
    drawn = points_drawn(markup)
    print(
        f"chart engine, all charts of the run page: {engine_s * 1000:.0f} ms (median), "
        f"{drawn:,} points drawn, {len(markup) / 1024:.0f} KB of SVG"
    )

    keep_all = svg.decimate
    svg.decimate = lambda xa, ya, column_of: (xa, ya)  # type: ignore[assignment]
    try:
        full_s, full = timed(lambda: draw_page(rec), max(1, args.repeat // 2))
    finally:
        svg.decimate = keep_all
    print(
        f"  without decimation: {full_s * 1000:.0f} ms, {points_drawn(full):,} points, "
        f"{len(full) / 1024:.0f} KB"
    )

    with tempfile.TemporaryDirectory(prefix="pgrig-bench-charts-") as tmp:
        os.environ["PGRIG_HOME"] = tmp
        url = f"sqlite:///{Path(tmp) / 'archive.sqlite'}"
        archive = Archive(url)
        run_id = sample_data.store(archive, rec)
        app = create_app(url)
        with web_harness.running(app, web_harness.free_port(*PORTS)) as base:

            def get() -> int:
                with urllib.request.urlopen(f"{base}/runs/{run_id}", timeout=60) as r:
                    assert r.status == 200
                    return len(r.read())

            page_s, size = timed(get, args.repeat)
            browser_s = chromium_load(f"{base}/runs/{run_id}", args.repeat)
        app.state.archive.close()
        print(
            f"run page over HTTP (read, draw, send): {page_s * 1000:.0f} ms (median), "
            f"{size / 1024:.0f} KB"
        )
        if browser_s is not None:
            print(f"Chromium, run page until the load event: {browser_s * 1000:.0f} ms (median)")

        out = Path(tmp) / "report"
        report_s, _ = timed(lambda: publish.run_report(archive, run_id, ["md", "html"], out), 3)
        files = list(out.iterdir())
        print(
            f"run report, Markdown + {sum(f.suffix == '.svg' for f in files)} .svg files + "
            f"HTML: {report_s * 1000:.0f} ms (median), "
            f"{sum(f.stat().st_size for f in files) / 1024:.0f} KB in all"
        )
        archive.close()
    load = os.getloadavg()[0]
    print(
        f"load average while measuring: {load:.1f} on {os.cpu_count()} CPUs (a shared machine "
        "inflates every figure above)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
