"""metrics/wait_sampler.py on real rows (tests/fixtures/waits/pg15_rows.json, captured by
capture.py next to it from PostgreSQL 15 with pg_wait_sampling under pgbench tpcb): the 10 Hz
sampler's per-second sums, pg_wait_sampling's per-second growth, the choice of rate, and the
profile every surface renders from them."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pgrig.insights import summary, waits
from pgrig.metrics import wait_sampler

ROWS = json.loads((Path(__file__).parents[1] / "fixtures" / "waits" / "pg15_rows.json").read_text())


class _Replay:
    """A connection answering ACTIVITY_SQL or PROFILE_SQL with the captured rows in turn."""

    def __init__(self, answers: list[list[list[Any]]]) -> None:
        self.answers = list(answers)
        self.lock = threading.Lock()
        self.broken = self.closed = False

    def execute(self, sql: str, prepare: bool = False) -> _Replay:
        with self.lock:
            self.rows = self.answers.pop(0) if self.answers else []
        return self

    def fetchall(self) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self.rows]

    def close(self) -> None:
        self.closed = True


def test_the_sampler_sums_its_snapshots_per_second(monkeypatch: pytest.MonkeyPatch) -> None:
    snapshots = ROWS["activity"]
    conn = _Replay(snapshots)
    monkeypatch.setattr(wait_sampler, "_connect", lambda *_: conn)
    sampler = wait_sampler.WaitSampler("", "pgrig", hz=50)
    assert sampler.sample() == {}  # the Sampler's priming call starts the thread
    deadline = time.time() + 30
    # every captured snapshot summed (waited for: a fixed pause after the last answer was
    # taken could end before a loaded machine's sampler thread had added it)
    while sampler.snapshots < len(snapshots) and time.time() < deadline:
        time.sleep(0.05)
    row = sampler.sample()
    sampler.close()
    expected: dict[str, int] = {}
    for snap in snapshots:
        for key, n in snap:
            expected[key] = expected.get(key, 0) + n
    taken = row["snapshots"]
    assert taken >= len(snapshots)  # the replay answers [] once the capture is used up
    assert {k[5:]: v for k, v in row.items() if k.startswith("wait.")} == expected
    assert row["active"] == sum(expected.values())
    stats = sampler.stats()
    assert stats["hz"] == 50 and stats["snapshots"] == taken and stats["error"] is None


def test_pg_wait_sampling_rows_are_the_profiles_growth() -> None:
    before, after = ROWS["profile"]
    source = wait_sampler.WaitSamplingSource(_Replay([before, after]))
    assert source.sample() == {}  # the baseline
    row = source.sample()
    old = {(pid, key): n for pid, key, n in before}
    grown: dict[str, int] = {}
    for pid, key, n in after:
        d = n - old.get((pid, key), 0)
        if d > 0:
            grown[key] = grown.get(key, 0) + d
    idle = grown.pop("Client:ClientRead", 0)
    assert row["idle"] == idle and row["active"] == sum(grown.values()) > 0
    assert {k[5:]: v for k, v in row.items() if k.startswith("wait.")} == grown
    assert "wait.CPU" not in row  # pg_wait_sampling 1.1.4 does not sample backends on CPU


def test_the_rate_follows_the_window() -> None:
    assert wait_sampler.choose_hz(10)[0] == 10
    assert wait_sampler.choose_hz(60)[0] == 10
    assert wait_sampler.choose_hz(120)[0] == 5
    assert wait_sampler.choose_hz(600)[0] == 1
    assert wait_sampler.choose_hz(3600)[0] == 1
    assert wait_sampler.choose_hz(None)[0] == 10
    assert wait_sampler.choose_hz(3600, 20) == (20.0, "--waits-hz 20")
    with pytest.raises(ValueError):
        wait_sampler.WaitSampler("", "x", hz=500)


def _series() -> dict[str, list[Any]]:
    """Two seconds of the captured snapshots (10 each), as the Sampler stores the rows."""
    rows = []
    for second in (ROWS["activity"][:10], ROWS["activity"][10:20]):
        sums: dict[str, int] = {}
        for snap in second:
            for key, n in snap:
                sums[key] = sums.get(key, 0) + n
        rows.append(sums)
    keys = sorted({k for r in rows for k in r})
    series: dict[str, list[Any]] = {"t": [1.0, 2.0], "up": [1, 1], "snapshots": [10, 10]}
    for k in keys:
        series["wait." + k] = [r.get(k, 0) for r in rows]
    return series


def test_the_profile_and_its_surfaces_carry_bounds_and_counts() -> None:
    series = _series()
    doc = waits.profile(None, 0, 2.5, waits=series, sampling={"hz": 10, "why": "10 Hz"})
    total = sum(sum(v) for k, v in series.items() if k.startswith("wait."))
    assert doc["samples"] == 20 and doc["active_seen"] == total
    for e in doc["events"]:
        assert e["low_pct"] <= e["share_pct"] <= e["high_pct"]
        assert e["share_pct"] == pytest.approx(
            100 * sum(series["wait." + e["event"]]) / total, abs=0.01
        )
    top = doc["events"][0]
    lines = dict(summary.why({"waits": doc}))
    assert lines["waits"].startswith(f"{top['event']} {summary.wait_share(top)}")
    assert f"(of {total:,} samples; pg_stat_activity, sampled 10 times a second)" in lines["waits"]
    (table,) = next(p for p in summary.why_parts({"waits": doc}) if p.key == "waits").tables
    assert table.rows[0][2].text == summary.wait_share(top, doc)
    assert f"of {total:,} samples" in table.rows[0][2].text
