"""What the percentiles rest on (issue 26 item 1): n and the order-statistic bounds of p95 and
p99, the same on `runs show`, the run page, `report run`, and in every comparison (`runs
compare` text and --json, the compare page, `report compare`)."""

from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np
from fastapi.testclient import TestClient
from scipy import stats
from study_fakes import make_record
from typer.testing import CliRunner

from pgrig import format as fmt
from pgrig.analysis import hdr, quantile_bounds
from pgrig.archive.records import RunRecord
from pgrig.archive.store import Archive
from pgrig.cli.runs import app as runs_app
from pgrig.reports import publish
from pgrig.views import latency


def _sampled(rec: RunRecord, seed: int, n: int = 2000, population: int = 50_000) -> list[int]:
    """A run whose percentiles rest on n sampled latencies (integer microseconds below 2048:
    the histogram holds them exactly)."""
    rng = np.random.default_rng(seed)
    us = rng.integers(300, 2000, n)
    counts = hdr.add(np.zeros(0, dtype=np.int64), hdr.bucket_index(us))
    ordered = np.sort(us)
    rec.latency.p95 = float(np.quantile(ordered, 0.95)) / 1000
    rec.latency.p99 = float(np.quantile(ordered, 0.99)) / 1000
    rec.extra["latency_basis"] = quantile_bounds.basis(
        "pgbench --sampling-rate 0.04",
        samples=n,
        population=population,
        bounds=quantile_bounds.hdr_bounds(counts),
        resolution="test",
    )
    return sorted(int(v) for v in us)


def _independent_bounds(ordered: list[int], q: float) -> str:
    """The 95% bounds by the binomial's quantiles, straight from scipy and the sorted sample."""
    n = len(ordered)
    lo = int(stats.binom.ppf(0.025, n, q))  # 1-based rank
    hi = int(stats.binom.ppf(0.975, n, q)) + 1
    return f"[{fmt.ms(ordered[lo - 1] / 1000)}, {fmt.ms(ordered[hi - 1] / 1000)}]"


def test_every_surface_says_what_the_percentiles_rest_on(
    url: str, archive: Archive, client: TestClient, tmp_path: Path
) -> None:
    a = make_record(tps=1000, seconds=20, seed=1)
    sample = _sampled(a, seed=1)
    b = make_record(tps=1100, seconds=20, seed=2)  # an older run: nothing recorded
    for rec in (a, b):
        archive.finish_run(rec)
    assert a.id is not None and b.id is not None
    p95 = f"p95 {fmt.ms(a.latency.p95)} {_independent_bounds(sample, 0.95)}"
    p99 = f"p99 {fmt.ms(a.latency.p99)} {_independent_bounds(sample, 0.99)}"
    rests = "2,000 of 50,000 transactions (sampled)"
    items = dict(latency.items(archive.get_run(a.id)))
    assert items["percentiles rest on"].startswith(rests)
    assert items["latency ms, 95% bounds"] == f"{p95}, {p99}"

    shown = CliRunner().invoke(runs_app, ["show", str(a.id), "--archive", url])
    assert shown.exit_code == 0, shown.output
    flat = " ".join(shown.stdout.split())
    assert rests in flat and f"{p95}, {p99}" in flat
    page = html.unescape(client.get(f"/runs/{a.id}").text)
    assert rests in page and f"{p95}, {p99}" in page
    (md,) = publish.run_report(archive, a.id, ["md"], tmp_path)
    assert f"**percentiles rest on**: {rests}" in md.read_text().replace("\\", "")
    assert f"{p95}, {p99}" in md.read_text()

    old = CliRunner().invoke(runs_app, ["show", str(b.id), "--archive", url]).stdout
    assert latency.NOT_RECORDED in " ".join(old.split())

    # the comparisons: the basis per column, the bounds beside a single run's percentiles
    out = CliRunner().invoke(runs_app, ["compare", str(a.id), str(b.id), "--archive", url])
    row = next(ln for ln in out.stdout.splitlines() if ln.startswith("percentiles rest on"))
    assert "2,000 of 50,000" in row and "not recorded" in row
    assert f"{fmt.ms(a.latency.p95)} {_independent_bounds(sample, 0.95)}" in out.stdout
    doc = json.loads(
        CliRunner()
        .invoke(runs_app, ["compare", str(a.id), str(b.id), "--json", "--archive", url])
        .stdout
    )
    assert doc["context"]["latency_basis"] == {"a": rests, "b": latency.NOT_RECORDED}
    web = html.unescape(client.get(f"/compare?ids={a.id},{b.id}").text)
    assert rests in web and _independent_bounds(sample, 0.95) in web
    (cmp_md,) = publish.compare_report(archive, [[a.id], [b.id]], ["md"], tmp_path)
    text = cmp_md.read_text().replace("\\", "")
    assert rests in text and _independent_bounds(sample, 0.95) in text


def test_repeats_say_the_range_of_samples_and_off_mode_says_why() -> None:
    runs = []
    for seed, n in ((1, 1500), (2, 1800)):
        rec = make_record(tps=1000, seconds=20, seed=seed)
        _sampled(rec, seed, n=n)
        runs.append(rec)
    assert latency.group_text(runs) == "2 runs, 1,500-1,800 samples each (sampled)"
    off = make_record(tps=1000, seconds=20, seed=3)
    off.latency.p95 = off.latency.p99 = off.latency.p50 = None
    off.extra["latency_basis"] = {
        "source": "none",
        "samples": 0,
        "population": 20_000,
        "rests_on": "percentiles unavailable: --txlog off keeps no per-transaction log",
    }
    assert latency.items(off) == [
        ("percentiles rest on", "percentiles unavailable: --txlog off keeps no per-transaction log")
    ]
