"""CH-benCHmark's mixed run through the CLI against a real PostgreSQL 18 on 2 warehouses: the
TPC-C mix alone (--analytic-clients 0) and with one analytic stream, each recorded with NOPM
and the analytic figures, those figures checked against a computation of our own from the
recorded per-query rows and the run's window; the two runs compared; bad input refused before
anything is archived."""

from __future__ import annotations

import itertools
import json
import statistics
from collections.abc import Iterator

import pytest
import servers
from servers import ok_run, pgrig

from pgrig.archive.records import RunRecord

pytestmark = pytest.mark.integration

RUN = ("--db", "ch", "-w", "chbench", "-c", "2", "-T", "8", "--warmup", "1")


@pytest.fixture(scope="module")
def lab() -> Iterator[str]:
    with servers.pg18_lab("pgrig-chbench-run-test-", "lab"):
        pgrig("db", "generate", "lab", "--scenario", "chbench", "--warehouses", "2",
              "--db", "ch", timeout=300)  # fmt: skip
        yield "lab"


@pytest.fixture(scope="module")
def runs(lab: str) -> tuple[RunRecord, RunRecord]:
    alone = ok_run(lab, *RUN, "--analytic-clients", "0")
    mixed = ok_run(lab, *RUN, "--analytic-clients", "1", "--query-timeout", "60")
    return alone, mixed


def test_both_runs_record_tpcc_figures_and_the_mixed_one_its_analytic_side(
    runs: tuple[RunRecord, RunRecord],
) -> None:
    alone, mixed = runs
    for rec in runs:
        assert rec.scenario == "chbench" and rec.scale == 2
        assert rec.nopm and rec.nopm > 0 and rec.tpm and rec.tpm > rec.nopm
        assert rec.latency.p95 is not None and len(rec.scripts) == 6  # the TPC-C types
    zero = alone.extra["chbench"]
    assert zero["analytic_clients"] == 0 and zero["qph"] is None and zero["queries"] == []
    doc = mixed.extra["chbench"]
    assert doc["analytic_clients"] == 1 and doc["query_timeout_s"] == 60
    assert doc["completed"] >= 1 and not doc["errors"] and doc["streams_exit"] == 0
    assert doc["cut"] <= 1  # one stream: at most its query in flight at the window's end


def test_the_analytic_figures_agree_with_our_own_count_of_the_recorded_rows(
    runs: tuple[RunRecord, RunRecord],
) -> None:
    _, rec = runs
    doc = rec.extra["chbench"]
    rows = doc["queries"]
    start = rec.extra["window"]["start_us"] / 1e6
    assert rec.measured_s is not None
    end = start + rec.measured_s
    done = [r for r in rows if r["status"] == "ok" and start <= r["ended_at"] < end]
    assert doc["completed"] == len(done)
    assert doc["qph"] == pytest.approx(len(done) * 3600 / rec.measured_s, abs=0.05)
    for q in {r["query"] for r in done}:
        secs = [r["seconds"] for r in done if r["query"] == q]
        figures = doc["per_query"][f"Q{q}"]
        assert figures["completed"] == len(secs)
        assert figures["median_s"] == pytest.approx(statistics.median(secs), abs=1e-6)
        assert figures["max_s"] == pytest.approx(max(secs), abs=1e-6)
    # one stream: its queries follow each other, in its cycle's order, all reported
    for before, after in itertools.pairwise(rows):
        assert after["started_at"] >= before["ended_at"]
        assert after["query"] == before["query"] % 22 + 1
    # the streams connected before pgbench's launch and began at it, before their first query
    launched = rec.extra["pgbench_launched_at"]
    assert doc["ready_at"] < launched <= doc["started_at"] <= rows[0]["started_at"]
    assert rows[0]["query"] == 1


def test_every_surface_says_the_same(lab: str, runs: tuple[RunRecord, RunRecord]) -> None:
    alone, mixed = runs
    shown = json.loads(pgrig("runs", "show", str(mixed.id), "--json").stdout)
    assert shown["chbench"]["qph"] == mixed.extra["chbench"]["qph"]
    line = shown["summary"]["results"]["analytic"]
    assert line.startswith("analytic queries per hour ") and "by 1 stream" in line
    text = pgrig("runs", "show", str(mixed.id)).stdout
    assert "analytic queries (ch-benchmark) over the measured window" in text.lower()
    printed = pgrig("run", lab, *RUN, "--analytic-clients", "1").stdout
    assert "analytic queries per hour" in printed and "NOPM" in printed
    listed = json.loads(pgrig("runs", "list", "--json").stdout)
    assert {r["id"]: r["nopm"] for r in listed}[alone.id] == alone.nopm
    compared = json.loads(pgrig("runs", "compare", str(alone.id), str(mixed.id), "--json").stdout)
    assert compared["metrics"]["nopm"]["a"] == alone.nopm
    assert compared["metrics"]["nopm"]["b"] == mixed.nopm
    assert compared["context"]["clients"] == {"a": "2 / 1 + 0 analytic", "b": "2 / 1 + 1 analytic"}


def test_bad_input_is_refused_before_anything_is_archived(lab: str) -> None:
    before = len(json.loads(pgrig("runs", "list", "--json").stdout))
    no_data = pgrig("run", lab, "-w", "chbench", "--analytic-clients", "1", "-T", "2",
                    check=False)  # fmt: skip
    assert no_data.returncode != 0
    assert "holds no CH-benCHmark data (it holds pgbench)" in no_data.stderr
    for args, said in (
        (("--analytic-clients", "-1"), "--analytic-clients"),
        ((), "--analytic-clients is required with --workload chbench"),
    ):
        proc = pgrig("run", lab, *RUN, *args, check=False)
        assert proc.returncode != 0 and said in proc.stderr
    other = pgrig("run", lab, "--db", "ch", "-w", "tpcc", "--analytic-clients", "1", "-T", "2",
                  check=False)  # fmt: skip
    assert "--analytic-clients applies only to --workload chbench" in other.stderr
    assert len(json.loads(pgrig("runs", "list", "--json").stdout)) == before
