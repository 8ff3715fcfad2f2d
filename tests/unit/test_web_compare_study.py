"""Compare and study pages: figures side by side with ratio and verdict, overlays, settings diff,
the iteration table and chart, the sweep chart."""

from __future__ import annotations

import random
import re

import pytest
import sample_data
from fastapi.testclient import TestClient

from pgrig.archive.store import Archive


def _pair(archive: Archive) -> tuple[int, int]:
    rng = random.Random(11)
    a = sample_data.make_run(1, rng, tps=1000.0, clients=8, note="defaults", tpcc=False)
    b = sample_data.make_run(
        2,
        rng,
        tps=1500.0,
        clients=8,
        note="tuned",
        tpcc=False,
        settings={"shared_buffers": "262144", "work_mem": "65536"},
    )
    return sample_data.store(archive, a), sample_data.store(archive, b)


def test_compare_two_runs(archive: Archive, client: TestClient) -> None:
    a, b = _pair(archive)
    r = client.get(f"/compare?ids={a},{b}")
    assert r.status_code == 200
    html = r.text
    assert f'href="/runs/{a}">#{a}</a> <span class="muted">baseline' in html
    # TPS side by side, the ratio and a verdict from the comparison engine
    row = html.split("<th>TPS</th>")[1].split("</tr>")[0]
    assert "1,000" in row and "1,500" in row
    m = re.search(r'<div class="ratio">x([0-9.]+) \[([0-9.]+), ([0-9.]+)\]</div>', row)
    ratio, lo, hi = (float(g) for g in m.groups())
    assert 1.4 < lo <= ratio <= hi < 1.6
    assert "faster (indicative)" in row and 'class="n good"' in row
    assert "single runs, 6 vs 6 blocks of &gt;= 10 s" in row  # single 60 s runs: block means
    lat = html.split("<th>Latency p95, ms</th>")[1].split("</tr>")[0]
    assert "faster (indicative)" in lat  # lower latency is better: the verdict flips
    # overlaid series: one line per run on each chart
    tps_chart = re.search(r'<svg class="chart".*?</svg>', html, re.S).group(0)
    assert tps_chart.count("<polyline") == 2
    assert f"#{a} defaults" in tps_chart and f"#{b} tuned" in tps_chart
    # settings diff: only what differs, with both values
    diff = html.split("Settings diff")[1]
    assert "shared_buffers" in diff and "128 MiB" in diff and "2 GiB" in diff
    assert "work_mem" in diff and "4 MiB" in diff and "64 MiB" in diff
    assert "max_connections" not in diff


def test_compare_links_to_the_repeats_of_study_points(archive: Archive, client: TestClient) -> None:
    ids = sample_data.iteration_study(archive)
    html = client.get(f"/compare?ids={ids[0]},{ids[-1]}").text  # iteration 0 vs the unsafe one
    row = html.split("<th>TPS</th>")[1].split("</tr>")[0]
    assert "3 vs 3 repeats" not in row  # the runs asked for, nothing else: as `runs compare`
    url = re.search(r'<a href="(/compare\?group=[^"]+)">compare all the repeats', html).group(1)
    assert url == "/compare?group=1,2,3&amp;group=10,11,12"
    grouped = client.get(url.replace("&amp;", "&")).text
    row = grouped.split("<th>TPS</th>")[1].split("</tr>")[0]
    assert "3 vs 3 repeats" in row and "faster" in row
    assert '<a href="/runs/1">#1</a>, <a href="/runs/2">#2</a>, <a href="/runs/3">#3</a>' in grouped
    assert 'href="/compare?group=10,11,12&amp;group=1,2,3"' in grouped  # make this the baseline
    setup = grouped.split("<h2>Set-up</h2>")[1]
    assert "<th>#1, #2, #3</th>" in setup


@pytest.mark.parametrize(
    ("query", "status", "message"),
    [
        ("ids=1", 400, "at least two runs"),
        ("", 400, "at least two runs"),
        ("ids=1,2&group=1,2", 400, "not both"),
        ("group=1,2&group=2,3", 400, "run 2 is listed twice"),
        ("group=1-3&group=x", 400, "bad run list"),
        ("ids=1,x", 400, "whole numbers"),
        ("ids=" + ",".join(str(i) for i in range(1, 20)), 400, "at most 12"),
        ("ids=1,999", 404, "run 999 is not in archive"),
    ],
)
def test_compare_bad_input(
    archive: Archive, client: TestClient, query: str, status: int, message: str
) -> None:
    _pair(archive)
    r = client.get(f"/compare?{query}")
    assert r.status_code == status
    assert message in r.text


def test_compare_accepts_repeated_ids_parameters(archive: Archive, client: TestClient) -> None:
    a, b = _pair(archive)  # what the runs page's checkboxes send, newest first
    html = client.get(f"/compare?ids={b}&ids={a}").text
    assert f'#{a}</a> <span class="muted">baseline' in html  # the older run is the baseline
    assert f'href="/compare?ids={b},{a}"' in html  # ... unless asked: "make this the baseline"
    assert f'#{b}</a> <span class="muted">baseline' in client.get(f"/compare?ids={b},{a}").text


def test_iteration_study_page(archive: Archive, client: TestClient) -> None:
    sample_data.iteration_study(archive, name="tune")
    r = client.get("/studies/tune")
    assert r.status_code == 200
    html = r.text
    assert "TPS per iteration" in html and "Latency per iteration" in html
    # the iteration table is the study report's own
    results = html.split("<h2>Results</h2>")[1].split("</table>")[0]
    rows = results.split("<tr>")[2:]
    assert len(rows) == 4
    assert "defaults" in rows[0] and "unsafe" in rows[3]
    assert "shared_buffers=2GB" in rows[1]  # what changed in the iteration
    # vs previous, from the repeats
    assert "faster" in rows[1] and re.search(r'class="[^"]*\bgood\b', rows[1])
    assert "inconclusive (about" in rows[2] and "repeats per side likely needed" in rows[2]
    assert "3/3" in rows[0]  # repeats done
    # the runs table links every run
    runs = html.split("<h2>Runs</h2>")[1]
    assert runs.count('<a href="/runs/') == 12
    chart = re.search(r'<svg class="chart".*?</svg>', html, re.S).group(0)
    assert chart.count('<circle class="dot"') == 12  # every repeat
    assert chart.count('<rect class="bar"') == 4  # every centre, with its bounds
    assert chart.count('<path class="whiskers"') == 1 and 'class="ref-band"' in chart
    assert "0: defaults" in chart
    listing = client.get("/studies").text
    assert 'href="/studies/tune"' in listing and ">12<" in listing
    # what pgrig itself took, per iteration: the section of the report and `study show`
    harness = html.split("<h2>Harness (pgrig&#39;s own cost, medians per point)</h2>")[1]
    harness = harness.split("<h2>")[0]
    assert all(name in harness for name in ("defaults", "unsafe")), harness


def test_sweep_study_page(archive: Archive, client: TestClient) -> None:
    sample_data.sweep_study(archive, name="pool")
    html = client.get("/studies/pool").text
    assert "TPS by clients" in html and "Latency by clients" in html
    chart = re.search(r'<svg class="chart".*?</svg>', html, re.S).group(0)
    assert chart.count("<polyline") == 2  # one line per target
    assert "via=direct" in chart and "via=pgbouncer" in chart
    results = html.split("<h2>Results</h2>")[1].split("</table>")[0]
    assert results.count("<tr>") == 1 + 8  # header and one row per point
    assert "via=pgbouncer" in results and "400" in results


def test_unknown_study_is_a_404(client: TestClient) -> None:
    r = client.get("/studies/nope")
    assert r.status_code == 404 and "study &#39;nope&#39; is not in archive" in r.text


def test_short_single_runs_get_a_ratio_and_no_verdict(archive: Archive, client: TestClient) -> None:
    rng = random.Random(12)
    ids = [
        sample_data.store(archive, sample_data.make_run(i, rng, tps=t, duration=10, tpcc=False))
        for i, t in ((1, 1000.0), (2, 1200.0))
    ]
    row = client.get(f"/compare?ids={ids[0]},{ids[1]}").text.split("<th>TPS</th>")[1]
    row = row.split("</tr>")[0]
    assert '<div class="ratio">x1.200</div>' in row
    assert "no verdict: single runs under 30 s (run 1: 10 s)" in row
    assert "faster" not in row
