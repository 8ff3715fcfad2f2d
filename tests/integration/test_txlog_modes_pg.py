"""--txlog full|sampled|off against a real PostgreSQL 15: in sampled and off modes every count
and TPS is pgbench's own summary (never the sample), percentiles say what they rest on."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from pgrig.archive.records import RunRecord
from tests.integration.servers import ok_run, pgbench_lab

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def lab() -> Iterator[str]:
    with pgbench_lab("pgrig-txlog-") as name:
        yield name


def _run(lab: str, *flags: str) -> RunRecord:
    return ok_run(lab, "--workload", "pgbench:select-only", "-c", "2", "-j", "2",
                  "-T", "2", "--warmup", "1", *flags)  # fmt: skip


def test_sampled_counts_are_pgbenchs_own(lab: str) -> None:
    rec = _run(lab, "--txlog", "sampled")
    summary = rec.extra["pgbench_summary"]
    assert rec.txlog == "sampled"
    assert rec.transactions == summary["processed"] > 0 and rec.tps == summary["tps"]
    assert rec.latency.avg == summary["latency_avg_ms"]
    rate = rec.extra["txlog_mode"]["sampling_rate"]
    assert f"--sampling-rate={rate:g}" in (rec.command or "")
    basis = rec.extra["latency_basis"]
    n, total = basis["samples"], basis["population"]
    assert total == rec.transactions
    assert abs(n - total * rate) < 6 * math.sqrt(total * rate * (1 - rate)) + 10
    lo, hi = basis["bounds"]["p50"]
    assert lo <= rec.latency.p50 <= hi
    assert rec.latency.max is None and basis["sample_max_ms"] > 0
    assert rec.series["pgbench"]["tps"]  # pgbench's -P 1


def test_off_has_no_percentiles_and_says_so(lab: str) -> None:
    rec = _run(lab, "--txlog", "off")
    summary = rec.extra["pgbench_summary"]
    assert rec.txlog == "off" and "-l" not in (rec.command or "").split()
    assert rec.transactions == summary["processed"] and rec.tps == summary["tps"]
    assert rec.latency.p95 is None and rec.latency.avg == summary["latency_avg_ms"]
    assert "unavailable" in rec.extra["latency_basis"]["rests_on"]


def test_full_and_auto(lab: str) -> None:
    full = _run(lab, "--txlog", "full")
    assert full.txlog == "full"
    basis = full.extra["latency_basis"]
    assert basis["samples"] == basis["population"] == full.transactions
    auto = _run(lab)  # the expected rate is the newest comparable run's TPS
    choice = auto.extra["txlog_mode"]
    assert choice["basis"].startswith(f"run {full.id} ")
    assert auto.txlog == ("sampled" if full.tps and full.tps >= 10_000 else "full")
