"""The runs page with 10,000 archived runs: how long a browser waits for it (the bar: < 1 s).

    python bench/web_runs_page.py [--runs 10000] [--archive URL] [--repeat 20]

Fills a temporary SQLite archive (or the empty archive at --archive, e.g. a PostgreSQL one)
with synthetic runs through the real Archive API, serves it with uvicorn on 127.0.0.1, and
times complete HTTP GETs (server render + transfer) of the runs page as people use it: the
default page, sorted by result, filtered, a deep page, 500 per page, and the whole CSV export.
Prints the median and the worst time of each.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from pgrig.archive.store import Archive
from pgrig.web.app import create_app

# The synthetic runs and the browser harness live with the tests (they are not part of pgrig).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import sample_data
import web_harness

PORTS = (56760, 56799)
QUERIES = {
    "default page (100 newest)": "/runs",
    "sorted by result": "/runs?sort=-result",
    "filtered status=ok, workload": "/runs?status=ok&workload=pgbench%3Atpcb-like",
    "note contains 'vacuum'": "/runs?q=vacuum",
    "tag filter": "/runs?tag=hw%3Dc5.2xlarge",
    "page 50 of 100": "/runs?page=50",
    "500 per page": "/runs?per=500",
    "CSV export (all runs)": "/runs.csv",
}


def fill(url: str, n: int) -> float:
    t0 = time.perf_counter()
    archive = Archive(url)
    rng = random.Random(1)
    for i in range(n):
        rec = sample_data.make_run(i, rng, with_details=False)
        archive.finish_run(rec)  # a record never begun is inserted whole, in one transaction
    archive.close()
    return time.perf_counter() - t0


def get(url: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=30) as r:
        body = r.read()
        assert r.status == 200
    return time.perf_counter() - t0, len(body)


def browser_load(url: str, repeat: int) -> float | None:
    """Median time Chromium takes from navigation to the load event (layout of the table
    included); None when Debian's chromium is not installed."""
    if not Path(web_harness.CHROMIUM).exists():
        return None
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = web_harness.launch_chromium(pw)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        times = []
        for _ in range(max(3, repeat // 2)):
            t0 = time.perf_counter()
            page.goto(url, wait_until="load")
            times.append(time.perf_counter() - t0)
        browser.close()
    print(
        f"Chromium, /runs until the load event: median {statistics.median(times) * 1000:.0f} ms, "
        f"best {min(times) * 1000:.0f} ms"
    )
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--archive", help="an empty archive to fill (default: temporary SQLite)")
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pgrig-bench-web-") as tmp:
        url = args.archive or f"sqlite:///{Path(tmp) / 'archive.sqlite'}"
        if Archive(url).count_runs():
            sys.exit(f"{url} is not empty: give an empty archive")
        print(f"filling {args.runs:,} runs ... ", end="", flush=True)
        print(f"{fill(url, args.runs):.1f} s")
        app = create_app(url)
        with web_harness.running(app, web_harness.free_port(*PORTS)) as base:
            first, _ = get(base + "/runs")
            print(f"first request after start: {first * 1000:.0f} ms")
            print(f"{'page':34} {'median':>8} {'worst':>8} {'size':>9}")
            worst_page = 0.0
            for name, path in QUERIES.items():
                times = []
                for _ in range(args.repeat if "CSV" not in name else max(3, args.repeat // 5)):
                    t, size = get(base + path)
                    times.append(t)
                med, worst = statistics.median(times), max(times)
                if "CSV" not in name:
                    worst_page = max(worst_page, med)
                print(f"{name:34} {med * 1000:6.0f}ms {worst * 1000:6.0f}ms {size / 1024:7.0f}KB")
            browser_s = browser_load(base + "/runs", args.repeat)
        app.state.archive.close()
    if browser_s is not None:
        worst_page = max(worst_page, browser_s)
    load = os.getloadavg()[0]
    print(
        f"load average while measuring: {load:.1f} on {os.cpu_count()} CPUs (shared machine: "
        "figures above a load of about the CPU count are inflated)"
    )
    verdict = "under" if worst_page < 1.0 else "OVER"
    print(
        f"slowest runs page (median): {worst_page * 1000:.0f} ms with {args.runs:,} runs "
        f"({verdict} the 1 s bar)"
    )
    return 0 if worst_page < 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
