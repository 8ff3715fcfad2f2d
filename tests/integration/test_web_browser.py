"""The results UI in a real browser: Debian's headless Chromium driven by playwright, against
uvicorn serving a temporary archive on 127.0.0.1. Checks what a person sees, not status codes."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import sample_data
import web_harness

from pgrig.archive.store import Archive
from pgrig.web.app import create_app

pytestmark = pytest.mark.integration
playwright_api = pytest.importorskip("playwright.sync_api")
if not Path(web_harness.CHROMIUM).exists():
    pytest.skip(
        "Debian's chromium is not installed (PGRIG_WITH_BROWSER=1 scripts/setup.sh)",
        allow_module_level=True,
    )

PORTS = (26900, 26949)
XSS = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, int]]]:
    """Base URL of the served archive, and the ids worth visiting."""
    home = tmp_path_factory.mktemp("web-browser")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PGRIG_HOME", str(home))
        mp.delenv("PGRIG_ARCHIVE", raising=False)
        url = f"sqlite:///{home / 'archive.sqlite'}"
        archive = Archive(url)
        sample_data.fill(archive, 60, with_details=False)
        rng = random.Random(8)
        a = sample_data.store(
            archive, sample_data.make_run(1, rng, tps=1000.0, note=f"note {XSS}", tpcc=False)
        )
        b = sample_data.store(
            archive,
            sample_data.make_run(
                2, rng, tps=1300.0, note="tuned", tpcc=False, settings={"shared_buffers": "262144"}
            ),
        )
        sample_data.iteration_study(archive, name="tune")
        sample_data.sweep_study(archive, name="pool")
        archive.close()
        app = create_app(url)
        with web_harness.running(app, web_harness.free_port(*PORTS)) as base:
            yield base, {"a": a, "b": b}
        app.state.archive.close()


@pytest.fixture(scope="module")
def browser(site: tuple[str, dict[str, int]]) -> Iterator[object]:
    with playwright_api.sync_playwright() as pw:
        b = web_harness.launch_chromium(pw)
        yield b
        b.close()


@pytest.fixture
def page(browser: object, site: tuple[str, dict[str, int]]) -> Iterator[object]:
    """A fresh page that fails the test on any dialog (an executed alert), any request that
    leaves the site, and any console error (a CSP violation shows up there)."""
    base = site[0]
    problems: list[str] = []
    pg = browser.new_page(viewport={"width": 1440, "height": 900})
    pg.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    pg.on("request", lambda r: r.url.startswith(base) or problems.append(f"request {r.url}"))
    pg.on("console", lambda m: m.type == "error" and problems.append(f"console: {m.text}"))
    yield pg
    pg.close()
    assert problems == []


def _charts_drawn(page: object, minimum: int) -> None:
    """At least `minimum` charts on screen, each with a visible line or dot."""
    charts = page.locator("svg.chart")
    assert charts.count() >= minimum
    for i in range(charts.count()):
        box = charts.nth(i).bounding_box()
        assert box and box["width"] > 300 and box["height"] > 150
        marks = charts.nth(i).locator("polyline, circle")
        assert marks.count() > 0
        mark = marks.first.bounding_box()
        assert mark and (mark["width"] > 1 or mark["height"] > 1)


def test_runs_page_sort_filter_page_and_compare(page: object, site: tuple) -> None:
    base, ids = site
    page.goto(base + "/runs?per=25")
    rows = page.locator("table.runs tbody tr")
    assert rows.count() == 25
    assert page.locator(".count").inner_text().startswith("Runs 1–25 of")

    page.click("th >> text=Result")  # sort by result, highest first
    cells = page.locator("table.runs tbody tr td:nth-child(6)").all_inner_texts()
    tps = [  # TPC-C runs show NOPM first and their TPS under it: the sort is by TPS
        float(t.split("\n")[-1].split()[0].replace(",", "")) for t in cells if t.strip() != "-"
    ]
    assert tps == sorted(tps, reverse=True) and len(tps) > 10

    page.select_option("select[name=status]", "ok")
    page.click("button:has-text('Filter')")
    statuses = page.locator("table.runs tbody .status").all_inner_texts()
    assert statuses and set(statuses) == {"ok"}
    assert "status=ok" in page.url and "sort=-result" in page.url  # the sort is kept

    page.click("a[rel=next]")
    assert "page=2" in page.url
    assert page.locator("table.runs tbody tr").count() > 0

    page.goto(base + "/runs")
    page.check(f"input[name=ids][value='{ids['a']}']")
    page.check(f"input[name=ids][value='{ids['b']}']")
    page.click("button:has-text('Compare selected')")
    assert page.locator("h1").inner_text() == "Compare runs"
    head = page.locator("table.compare thead").first.inner_text()
    assert f"#{ids['a']} baseline" in head and f"#{ids['b']}" in head  # the older run first


def test_run_page_charts(page: object, site: tuple) -> None:
    base, ids = site
    page.goto(f"{base}/runs/{ids['a']}")
    assert page.locator("h1").inner_text().startswith(f"Run {ids['a']}")
    assert page.locator(".note-block").inner_text() == f"note {XSS}"
    _charts_drawn(page, 10)
    assert page.locator("svg.chart rect.shade").count() >= 10  # warm-up shaded everywhere
    # the charts style themselves (presentation attributes, allowed by the CSP): lines are
    # strokes, not black filled shapes, and text uses the chart's font size
    line = page.locator("svg.chart polyline.line").first
    assert line.evaluate("e => getComputedStyle(e).fill") == "none"
    assert line.evaluate("e => getComputedStyle(e).stroke") != "none"
    title = page.locator("svg.chart text.ct").first
    assert title.evaluate("e => getComputedStyle(e).fontSize") == "13px"
    types = page.locator("section", has=page.locator("h2", has_text="Per transaction type"))
    assert "tpcb-like" in types.locator("table").inner_text()
    assert "pgbench -c" in page.locator("pre.command").inner_text()
    why = page.locator("section#why")  # this sample run has no insights: each part says so
    assert why.locator("h2").inner_text() == "Why" and "not collected" in why.inner_text()


def test_compare_page(page: object, site: tuple) -> None:
    base, ids = site
    page.goto(f"{base}/compare?ids={ids['a']},{ids['b']}")
    row = page.locator("table.compare tr", has=page.locator("th", has_text="TPS")).first
    text = row.inner_text()
    assert "faster (indicative)" in text and re.search(r"x1\.(2[5-9]|3[0-4])\d \[", text)
    _charts_drawn(page, 3)
    assert "shared_buffers" in page.locator("table.setup").last.inner_text()


def test_study_pages(page: object, site: tuple) -> None:
    base, _ = site
    page.goto(base + "/studies")
    page.click("a:has-text('tune')")
    assert page.locator("h1").inner_text().startswith("Study tune")
    _charts_drawn(page, 2)
    assert page.locator("svg.chart rect.bar").count() == 4  # TPS per iteration, as the report
    assert page.locator("table.study").first.locator("tbody tr").count() == 4
    page.goto(base + "/studies/pool")
    _charts_drawn(page, 2)
    legend = page.locator("svg.chart").first.text_content()
    assert "via=direct" in legend and "via=pgbouncer" in legend


def test_note_with_a_script_never_runs(page: object, site: tuple) -> None:
    base, ids = site
    for path in (
        "/runs",
        f"/runs/{ids['a']}",
        f"/compare?ids={ids['a']},{ids['b']}",
        "/runs?q=" + "%3Cscript%3E",
    ):
        page.goto(base + path)
        assert XSS in page.locator("main").inner_text()
    # the fixture fails the test if an alert dialog opened
