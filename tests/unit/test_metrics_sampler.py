"""The Sampler's columnar recording, its thread and window summaries, with fake sources."""

from __future__ import annotations

import threading
import time

import pytest

from pgrig.metrics.sampler import Sampler, Source, _Columns, next_tick, window_summary


class FakeSource:
    def __init__(self, name: str, rows: list[dict | Exception], sparse: tuple[str, ...] = ()):
        self.name = name
        self.rows = rows
        self.sparse_prefixes = sparse
        self.calls = 0
        self.closed = False

    def sample(self) -> dict:
        row = self.rows[min(self.calls, len(self.rows) - 1)]
        self.calls += 1
        if isinstance(row, Exception):
            raise row
        return row

    def close(self) -> None:
        self.closed = True


def test_fake_source_satisfies_the_protocol():
    assert isinstance(FakeSource("x", [{}]), Source)


def test_columns_backfill_and_pad():
    c = _Columns(())
    c.append(1.0, {"a": 1})
    c.append(2.0, {"a": 2, "b": 20})  # b appears late: backfilled with None
    c.append(3.0, {"b": 30})  # a missing: padded with None
    c.append(4.0, None)  # source down
    assert c.data == {
        "ts": [1.0, 2.0, 3.0, 4.0],
        "up": [1, 1, 1, 0],
        "a": [1, 2, None, None],
        "b": [None, 20, 30, None],
    }


def test_sparse_columns_are_zero_when_the_source_answered():
    c = _Columns(("wait.",))
    c.append(1.0, {"active": 1})
    c.append(2.0, {})  # down: {} is "no data"
    c.append(3.0, {"active": 2, "wait.Lock:tuple": 2})
    c.append(4.0, {"active": 0})
    assert c.data["wait.Lock:tuple"] == [0, None, 2, 0]
    assert c.data["active"] == [1, None, 2, 0]


def test_reserved_names_stay_the_samplers():
    c = _Columns(())
    c.append(1.0, {"ts": 99.0, "up": 0, "x": 1})
    assert c.data == {"ts": [1.0], "up": [1], "x": [1]}


def wait_for(pred, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.01)


def test_sampler_thread_records_every_source_and_survives_errors():
    good = FakeSource("os", [{"cpu_user": 1.5}])
    bad = FakeSource("pg", [{"commits": 5.0}, RuntimeError("server gone"), {"commits": 7.0}])
    s = Sampler(good, bad, interval=0.02)
    s.start()
    assert s.running
    wait_for(lambda: s.samples >= 4)
    live = s.latest()
    assert live["os"]["cpu_user"] == 1.5 and "ts" in live["os"]
    series = s.stop()
    assert not s.running
    assert good.closed and bad.closed
    n = len(series["os"]["ts"])
    assert n >= 4
    for kind in ("os", "pg"):
        assert all(len(col) == len(series[kind]["ts"]) for col in series[kind].values())
    ts = series["os"]["ts"]
    assert ts == sorted(ts) and all(isinstance(t, float) for t in ts)
    # the first row the thread recorded came after the priming call (rows[0]), so the
    # failure is row 0 of the series: None and up=0; the run went on
    assert series["pg"]["up"][0] == 0 and series["pg"]["commits"][0] is None
    assert series["pg"]["commits"][-1] == 7.0
    assert "server gone" in s.errors["pg"]
    assert s.cpu_ms_per_sample() is not None
    assert s.stop() == series  # idempotent


def test_ticks_are_aligned_to_the_interval_grid():
    assert next_tick(1700000012.3, 1.0) == 1700000013.0
    assert next_tick(1700000013.0, 1.0) == 1700000014.0
    assert next_tick(1700000013.2, 0.5) == 1700000013.5
    assert next_tick(1700000013.2, 5.0) == 1700000015.0


def test_stop_does_not_hang_on_a_stuck_source():
    release = threading.Event()

    class Stuck:
        name = "pg"
        calls = 0
        closed = False

        def sample(self) -> dict:
            self.calls += 1
            if self.calls > 2:  # the priming call and the first tick answer, then it hangs
                release.wait(30)
            return {"commits": 1.0}

        def close(self) -> None:
            self.closed = True

    stuck = Stuck()
    s = Sampler(FakeSource("os", [{"cpu_user": 1.0}]), stuck, interval=0.02)
    s.stop_timeout = 0.1
    s.start()
    wait_for(lambda: stuck.calls > 2)
    series = s.stop()
    release.set()
    assert not stuck.closed  # never closed under a thread still using it
    assert "sampler" in s.errors
    lengths = {len(col) for kind in series.values() for col in kind.values()}
    assert len(lengths) == 1 and lengths.pop() >= 1


def test_extra_sources_and_validation():
    pooler = FakeSource("pooler", [{"cl_active": 3}])
    s = Sampler(FakeSource("os", [{}]), None, interval=1.0, extra=[pooler])
    with pytest.raises(ValueError):
        s.add_source(FakeSource("pooler", [{}]))
    with pytest.raises(ValueError):
        Sampler(None, interval=0)
    assert set(s.stop()) == {"os", "pooler"}  # stop before start: empty series, no error


def test_add_source_after_start_is_refused():
    s = Sampler(FakeSource("os", [{}]), interval=5.0)
    s.start()
    try:
        with pytest.raises(RuntimeError):
            s.add_source(FakeSource("late", [{}]))
    finally:
        s.stop()


def test_window_summary_means_and_hit_ratio():
    series = {
        "os": {
            "ts": [1.0, 2.0, 3.0, 4.0],
            "cpu_user": [90.0, 10.0, 20.0, None],
            "cpu_system": [5.0, 5.0, 7.0, 9.0],
            "cpu_iowait": [0.0, 0.0, 0.0, 0.0],
            "cpu_idle": [5.0, 85.0, 73.0, 91.0],
        },
        "pg": {
            "ts": [1.0, 2.0, 3.0, 4.0],
            "blks_hit": [0.0, 90.0, None, 60.0],
            "blks_read": [1000.0, 10.0, 5.0, 40.0],
        },
    }
    out = window_summary(series, 1.0, 4.0)  # (t0, t1]: the first row is warm-up
    assert out["cpu_user"] == pytest.approx(15.0)
    assert out["cpu_system"] == pytest.approx(7.0)
    assert out["cpu_steal"] is None
    assert out["hit_ratio"] == pytest.approx(100 * 150 / 200)
    assert window_summary({}, 0, 10) == {
        "cpu_user": None,
        "cpu_system": None,
        "cpu_iowait": None,
        "cpu_idle": None,
        "cpu_steal": None,
        "hit_ratio": None,
    }
