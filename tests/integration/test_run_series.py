"""Per-second series of real runs: whole seconds only, drift only when real, and the streamed
per-transaction figures equal to an exact computation over the kept log (real pgbench, PG15).

Managed environments pick their own ports; this module needs no port range of its own
(26950-26999 is reserved for it should it start servers.Server clusters).
"""

from __future__ import annotations

import gzip
import json
import os
import statistics
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import servers
from servers import pgrig

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def lab() -> Iterator[str]:
    with servers.scratch_home("pgrig-series-test-"):
        pgrig("env", "create", "lab", "--pg", "15")
        pgrig("db", "generate", "lab", "--scenario", "pgbench", "--scale", "1")
        yield "lab"


def run(lab: str, *args: str) -> dict:
    out = pgrig("run", lab, "--workload", "pgbench:select-only", *args, "--json", timeout=300)
    return json.loads(out.stdout)


def exported(run_id: int) -> dict:
    return json.loads(pgrig("runs", "export", str(run_id), "--format", "json").stdout)


@pytest.mark.quiet_host
def test_five_stable_runs_have_whole_seconds_and_no_drift(lab: str) -> None:
    """The bar of issue 9: five 20 s select-only runs; drift flagged in at most one; every
    exported series has exactly 20 points at t >= 0 (t = 0..19), none below half the median."""
    flagged = 0
    for _ in range(5):
        rec = run(lab, "-c", "4", "-j", "2", "--duration", "20", "--txlog", "full")  # whole seconds
        assert rec["status"] == "ok" and rec["measured_s"] == 20.0
        full = exported(rec["id"])
        series = full["series"]["pgbench"]
        measured = [(t, y) for t, y in zip(series["t"], series["tps"], strict=True) if t >= 0]
        assert [t for t, _ in measured] == list(range(20))
        median = statistics.median(y for _, y in measured)
        assert min(y for _, y in measured) >= 0.5 * median, measured
        assert min(series["t"]) < 0  # the lead-in second is kept for the chart
        # TPS is the window's transactions over its 20 s, and the series adds up to them
        assert sum(y for _, y in measured) == rec["transactions"]
        stability = full["extra"]["stability"]
        assert stability["seconds"] == 20
        assert stability["cv"] == pytest.approx(
            np.std([y for _, y in measured], ddof=1) / np.mean([y for _, y in measured])
        )
        flagged += bool(stability["drift_flagged"])
        assert full["extra"]["txlog"]["max_backlog_bytes"] < 64 << 20
    assert flagged <= 1


def test_streamed_figures_equal_the_kept_log(lab: str) -> None:
    """--keep-txlog keeps the log (gzip, as read); recomputing from it with numpy gives the
    same counts and percentiles within 0.1%."""
    rec = run(lab, "-c", "2", "-j", "2", "--duration", "3", "--warmup", "1", "--keep-txlog")
    assert rec["status"] == "ok"
    full = exported(rec["id"])
    names = sorted(k for k in full["artifacts"] if k.startswith("txlog."))
    assert names == ["txlog.0", "txlog.1"]  # one per pgbench thread
    root = Path(os.environ["PGRIG_HOME"]) / "artifacts"
    lines = []
    for name in names:
        lines += gzip.decompress((root / full["artifacts"][name]).read_bytes()).split(b"\n")[:-1]
    rows = [line.split() for line in lines]
    window = full["extra"]["window"]
    inside = [
        int(r[2])
        for r in rows
        if window["start_us"] <= int(r[4]) * 1_000_000 + int(r[5]) < window["end_us"]
    ]
    assert full["extra"]["txlog"]["lines"] == len(rows)
    assert rec["transactions"] == len(inside) > 0
    assert window["end_us"] - window["start_us"] == 3_000_000
    lat = rec["latency_ms"]
    assert lat["avg"] == pytest.approx(np.mean(inside) / 1000, rel=1e-9)
    assert lat["max"] == max(inside) / 1000
    for name, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99)):
        assert lat[name] == pytest.approx(np.quantile(inside, q) / 1000, rel=1e-3)
