"""Merging several pgbench generators (analysis/txlog_merge.py) on two real logs captured at the
same time against one server (tests/fixtures/pgbench/merge/README.md), one of them moved onto a
clock 2.35 s ahead, as a load host's clock may be. Every figure is checked against a plain
Python/numpy computation over the raw lines of both generators."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import numpy as np
import pytest

from pgrig.analysis.txlog import TxlogStream
from pgrig.analysis.txlog_merge import (
    LOCAL_CLOCK,
    ClockOffset,
    TxlogMerge,
    clock_offset,
    launch_origin_us,
    launch_skew_us,
)
from pgrig.analysis.window import US, WindowPlan

ROOT = Path(__file__).parents[1] / "fixtures" / "pgbench" / "merge"
ORIGIN = int((ROOT / "origin_us").read_text())
PLAN = WindowPlan.for_run(0, 3)  # -T 4: one second of lead-in, three measured
B_AHEAD_US = 2_345_678  # b's host clock runs this far ahead of the control clock
REL = 1e-3


def log(gen: str, thread: int) -> bytes:
    return gzip.decompress((ROOT / f"{gen}.txlog.{thread}.gz").read_bytes())


def shifted(data: bytes, shift_us: int) -> bytes:
    """The same lines as a host whose clock is shift_us ahead would have stamped them."""
    out = []
    for line in data.decode().splitlines():
        f = line.split()
        end = int(f[4]) * US + int(f[5]) + shift_us
        f[4], f[5] = str(end // US), str(end % US)
        out.append(" ".join(f))
    return ("\n".join(out) + "\n").encode()


def rows(gen: str) -> list[list[str]]:
    return [line.split() for t in (0, 1) for line in log(gen, t).decode().splitlines()]


def stream() -> TxlogStream:
    return TxlogStream(
        origin_us=ORIGIN,
        plan=PLAN,
        has_lag=False,
        has_retries=False,
        script_names=["select-only", "update"],
        expected_sources=4,
    )


def merged(chunk: int = 1 << 30) -> tuple[TxlogMerge, TxlogStream]:
    s = stream()
    m = TxlogMerge(s, {"a": LOCAL_CLOCK, "b": ClockOffset(B_AHEAD_US, 50, 100, 5)})
    files = {("a", t): log("a", t) for t in (0, 1)} | {
        ("b", t): shifted(log("b", t), B_AHEAD_US) for t in (0, 1)
    }
    # feed in pieces of whole lines, the generators interleaved as readers would
    pieces = {k: _pieces(v, chunk) for k, v in files.items()}
    while any(pieces.values()):
        for (gen, t), rest in pieces.items():
            if rest:
                m.feed(gen, [(f"txlog.{t}", rest.pop(0))])
    return m, s


def _pieces(data: bytes, size: int) -> list[bytes]:
    lines = data.splitlines(keepends=True)
    n = max(1, size // 40)
    return [b"".join(lines[i : i + n]) for i in range(0, len(lines), n)]


def summary_total(gen: str, what: str) -> int:
    text = (ROOT / f"{gen}.stdout").read_text()
    return int(re.search(rf"^number of {what}: (\d+)", text, re.M).group(1))  # type: ignore[union-attr]


# --- clock offsets -------------------------------------------------------------------------------


def test_clock_offset_takes_the_shortest_round_trip_and_bounds_its_error() -> None:
    true_offset = 1_234_567
    rng = np.random.default_rng(1)
    samples = []
    for i in range(20):
        sent = 1_000_000 * i
        out, back = (int(x) for x in rng.integers(50, 5000, 2))  # asymmetric delays
        samples.append((sent, sent + out + true_offset, sent + out + back))
    got = clock_offset(samples)
    best = min(samples, key=lambda s: s[2] - s[0])
    assert got.rtt_us == best[2] - best[0]
    assert got.offset_us == round(best[1] - (best[0] + best[2]) / 2)
    assert abs(got.offset_us - true_offset) <= got.error_us <= got.rtt_us // 2 + 1
    assert got.samples == 20
    assert got.to_control(5_000_000 + true_offset) == pytest.approx(5_000_000, abs=got.error_us)


def test_clock_offset_needs_a_round_trip() -> None:
    with pytest.raises(ValueError, match="no round trip"):
        clock_offset([(10, 5, 9)])  # received before sent: not a round trip


def test_launch_origin_and_skew_on_the_control_clock() -> None:
    offsets = {"a": ClockOffset(0, 100, 200, 3), "b": ClockOffset(2_000_000, 300, 600, 3)}
    launches = {"a": 10_000_000, "b": 12_000_000 + 40_000}  # b launched 40 ms after a
    assert launch_skew_us(launches, offsets) == 40_000
    assert launch_origin_us(launches, offsets) == 10_000_000 - 100  # earliest, less its error
    assert launch_skew_us({"a": 5}, {"a": LOCAL_CLOCK}) == 0


# --- the merge -----------------------------------------------------------------------------------


def test_merge_sums_counts_and_merges_histograms_exactly() -> None:
    _m, s = merged()
    got = s.finish(completed=True)
    assert got is not None
    w0, w1 = ORIGIN + PLAN.lead_in_s * US, ORIGIN + (PLAN.lead_in_s + 3) * US
    assert (got.window_start_us, got.window_end_us) == (w0, w1)

    everything = rows("a") + rows("b")  # b's lines on the control clock: its own, unshifted
    inside = [r for r in everything if w0 <= int(r[4]) * US + int(r[5]) < w1]
    ok = [r for r in inside if r[2].isdigit()]
    assert got.transactions == len(ok)
    assert got.failed == got.serialization_failures == sum(r[2] == "serialization" for r in inside)
    assert got.failed > 0
    for script in got.scripts:  # per-type counts of both generators
        assert script.transactions == sum(int(r[3]) == script.script_no for r in ok)
    lat = np.array([int(r[2]) for r in ok])
    for name, q in {"p50": 0.5, "p95": 0.95, "p99": 0.99}.items():
        exact = float(np.quantile(lat, q)) / 1000.0
        assert getattr(got.latency, name) == pytest.approx(exact, rel=REL)

    # per second: the two generators' counts summed on one clock
    t, tps = got.whole_seconds
    assert len(t) == 3
    for sec, value in zip(t, tps, strict=True):
        lo = w0 + int(sec) * US
        expected = sum(1 for r in ok if lo <= int(r[4]) * US + int(r[5]) < lo + US)
        assert value == expected


def test_merge_is_the_same_whatever_the_offset_and_the_chunking() -> None:
    plain = stream()
    for gen in ("a", "b"):
        for t in (0, 1):
            plain.feed(log(gen, t), f"{gen}:txlog.{t}")
    want = plain.finish(completed=True)
    for chunk in (1 << 30, 50_000):
        _m, s = merged(chunk)
        got = s.finish(completed=True)
        assert got is not None and want is not None
        assert got.transactions == want.transactions
        assert got.latency == want.latency
        assert got.series == want.series
        assert [x.transactions for x in got.scripts] == [x.transactions for x in want.scripts]


def test_generator_counts_match_each_pgbench_summary() -> None:
    m, _s = merged()
    for gen in ("a", "b"):
        c = m.counts[gen]
        assert c.transactions == summary_total(gen, "transactions actually processed")
        assert c.failed == summary_total(gen, "failed transactions")
        assert c.lines == len(rows(gen))
    # b's first transaction is on the control clock: within a second of a's, not 2.35 s off
    skew = m.first_tx_skew_us()
    assert skew is not None and 0 <= skew < US
    assert m.counts["b"].first_start_us is not None
    assert m.counts["b"].first_start_us - ORIGIN < US


def test_averaged_percentiles_are_not_the_merged_percentile() -> None:
    """Why the merge adds histograms: a fast generator (990 transactions of 1 ms) and a slow one
    (10 of 100 ms). Of the 1,000 transactions, 99% took 1 ms: the p99 is about 1 ms, where the
    mean of each generator's p99 (1 ms and 100 ms) would say 50 ms."""
    s = TxlogStream(
        origin_us=ORIGIN, plan=WindowPlan.for_run(0, None), has_lag=False, has_retries=False
    )
    m = TxlogMerge(s, {"fast": LOCAL_CLOCK, "slow": LOCAL_CLOCK})
    end = ORIGIN + 200_000

    def lines(n: int, lat: int) -> bytes:
        return b"".join(
            b"0 %d %d 0 %d %d\n" % (i, lat, (end + i) // US, (end + i) % US) for i in range(n)
        )

    m.feed("fast", [("log", lines(990, 1000))])
    m.feed("slow", [("log", lines(10, 100_000))])
    got = s.finish(completed=True)
    assert got is not None and got.transactions == 1000
    assert got.latency.p50 == pytest.approx(1.0)
    assert got.latency.p99 is not None and got.latency.p99 < 2.0
    assert m.counts["slow"].transactions == 10
