"""PgSampler's delta/rate arithmetic on fake readings, and pg_snapshot's pure helpers."""

from __future__ import annotations

import socket

import pytest

from pgrig.errors import PgrigError
from pgrig.metrics import pg_metrics
from pgrig.metrics.pg_metrics import PG_COLUMNS, PgSampler, sample_query
from pgrig.metrics.pg_snapshot import (
    DB_COUNTERS,
    SERVER_COUNTERS,
    checkpoint_sql,
    counters_delta,
    hit_ratio,
    major_of,
    short_version,
)

N = len(pg_metrics._COUNTERS)
NAMES = [c[0] for c in pg_metrics._COUNTERS]


def reading(levels=(0, 0, 0), waits=None, **values: float) -> tuple:
    """A row shaped like the sample query's: counters, 3 levels, the wait-event json."""
    counters = [float(values.get(name, 0.0)) for name in NAMES]
    return (*counters, *levels, waits)


def unconnected() -> PgSampler:
    return PgSampler("host=127.0.0.1 port=1", "bench", connect=False)


def test_first_reading_gives_levels_only_then_rates():
    s = unconnected()
    first = s._row(reading(levels=(3, 10, 1), waits={"CPU": 2, "Lock:tuple": 1}), 100.0)
    assert first["commits"] is None and first["hit_ratio"] is None
    assert first["active_backends"] == 3 and first["backends"] == 10
    assert first["idle_in_xact"] == 1
    assert first["wait.CPU"] == 2 and first["wait.Lock:tuple"] == 1
    s._own_pending = 0
    row = s._row(
        reading(
            xact_commit=2000,
            xact_rollback=4,
            blks_hit=9000,
            blks_read=1000,
            tup_inserted=50,
            temp_bytes=8192,
            deadlocks=1,
            checkpoints_req=1,
            buffers_written=300,
            wal_bytes=2_000_000,
            autovacuum_count=2,
        ),
        102.0,
    )
    assert row["commits"] == pytest.approx(1000.0)  # per second over 2 s
    assert row["rollbacks"] == pytest.approx(2.0)
    assert row["blks_hit"] == pytest.approx(4500.0) and row["blks_read"] == pytest.approx(500.0)
    assert row["hit_ratio"] == pytest.approx(90.0)
    assert row["tup_inserted"] == pytest.approx(25.0)
    assert row["temp_bytes"] == pytest.approx(4096.0)
    assert row["wal_bytes"] == pytest.approx(1_000_000.0)
    assert row["buffers_written"] == pytest.approx(150.0)
    # events are plain counts over the interval, not rates
    assert row["deadlocks"] == 1 and row["checkpoints_req"] == 1 and row["autovacuum"] == 2
    assert row["checkpoints_timed"] == 0
    assert not any(k.startswith("wait.") for k in row)  # no active backend: no wait column
    assert set(row) - {"active_backends", "backends", "idle_in_xact"} <= set(PG_COLUMNS)


def test_own_sampling_transactions_are_taken_off_commits():
    s = unconnected()
    s._row(reading(xact_commit=100), 0.0)
    s._own_pending = 1  # the previous sample's own query committed after its reading
    row = s._row(reading(xact_commit=111), 1.0)
    assert row["commits"] == pytest.approx(10.0)
    assert s._own_pending == 0
    # our commit not yet visible (statistics are flushed late): carried, never negative
    s._own_pending = 2
    row = s._row(reading(xact_commit=111), 2.0)
    assert row["commits"] == 0.0 and s._own_pending == 2
    row = s._row(reading(xact_commit=115), 3.0)
    assert row["commits"] == pytest.approx(2.0) and s._own_pending == 0
    assert s.totals()["commits"] == pytest.approx(12.0)


def test_counter_reset_gives_none_not_negative():
    s = unconnected()
    s._row(reading(xact_commit=5000, blks_hit=100, wal_bytes=10_000), 0.0)
    row = s._row(reading(xact_commit=10, blks_hit=150, wal_bytes=20_000), 1.0)  # after a crash
    assert row["commits"] is None
    assert row["blks_hit"] == pytest.approx(50.0)
    assert row["hit_ratio"] == pytest.approx(100.0)
    assert row["wal_bytes"] == pytest.approx(10_000.0)


def test_hit_ratio_is_none_without_block_access_and_totals_accumulate():
    s = unconnected()
    s._row(reading(), 0.0)
    row = s._row(reading(), 1.0)
    assert row["hit_ratio"] is None
    s._row(reading(blks_hit=30, blks_read=10), 2.0)
    s._row(reading(blks_hit=100, blks_read=10), 3.0)
    totals = s.totals()
    assert totals["blks_hit"] == 100 and totals["blks_read"] == 10
    assert totals["hit_ratio"] == pytest.approx(100 * 100 / 110)
    assert totals["seconds"] == pytest.approx(3.0)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_unreachable_server_fails_early_with_a_clear_error():
    with pytest.raises(PgrigError, match="cannot connect the PostgreSQL sampler"):
        PgSampler(f"host=127.0.0.1 port={free_port()} user=nobody", "bench")


def test_lost_server_gives_empty_rows_and_bounded_reconnects():
    s = PgSampler(f"host=127.0.0.1 port={free_port()}", "bench", connect=False)
    assert s.sample() == {}
    if s._connecting is not None:
        s._connecting.join(10)
    assert s.last_error  # why, for the run's log
    first_attempt = s._last_attempt
    assert s.sample() == {}  # within the reconnect interval: no new attempt
    assert s._last_attempt == first_attempt
    s.close()
    assert s.sample() == {}  # closed: no attempts at all


def test_query_is_version_aware():
    assert "pg_stat_bgwriter" in checkpoint_sql(160004)
    assert "pg_stat_checkpointer" in checkpoint_sql(170000)
    assert "pg_stat_checkpointer" in sample_query(180001)
    q = sample_query(150014)
    assert "pg_backend_pid()" in q and "pg_stat_bgwriter" in q


def test_versions_and_ratio():
    assert major_of(150014) == 15 and major_of(180001) == 18
    assert short_version(150014) == "15.14" and short_version(90624) == "9.6.24"
    assert hit_ratio(99, 1) == pytest.approx(99.0)
    assert hit_ratio(0, 0) is None and hit_ratio(None, 5) is None


def test_hit_ratio_never_exceeds_100_when_nothing_was_read() -> None:
    # Per-second rates are arbitrary floats: (100 * h) / h rounds above 100 for about 6% of them.
    rates = [417564.75290540245, 746857.1773513015, *(i / 7.3 for i in range(1, 5000))]
    assert all(hit_ratio(h, 0.0) == 100.0 for h in rates)
    assert all(0.0 <= hit_ratio(h, r) <= 100.0 for h in rates for r in (1e-9, 0.5, 3.0))


def snap(ts: float, reset: str | None = "2026-01-01", **values: float) -> dict:
    base: dict = dict.fromkeys((*DB_COUNTERS, *SERVER_COUNTERS), 0.0)
    base.update(autovacuum_count=None, autoanalyze_count=None)
    base.update(values)
    return {"ts": ts, "stats_reset": reset, **base}


def test_counters_delta_window_totals():
    start = snap(100.0, xact_commit=1000, blks_hit=900, blks_read=100, wal_bytes=5e6)
    end = snap(160.0, xact_commit=7000, blks_hit=9900, blks_read=100, wal_bytes=6e6)
    d = counters_delta(start, end)
    assert d["seconds"] == 60.0
    assert d["xact_commit"] == 6000
    assert d["commits_per_s"] == pytest.approx(100.0)
    assert d["commits_per_min"] == pytest.approx(6000.0)
    assert d["hit_ratio"] == pytest.approx(100.0)
    assert d["wal_bytes"] == 1e6
    assert d["autovacuum_count"] is None
    assert d["stats_reset_changed"] is False


def test_counters_delta_voids_db_figures_after_a_reset():
    start = snap(0.0, xact_commit=1000, wal_bytes=10.0)
    end = snap(10.0, reset="2026-01-02", xact_commit=2000, wal_bytes=20.0)
    d = counters_delta(start, end)
    assert d["stats_reset_changed"] is True
    assert d["xact_commit"] is None and d["commits_per_s"] is None and d["hit_ratio"] is None
    assert d["wal_bytes"] == 10.0  # server-wide counters are not reset with the database's
    crashed = counters_delta(snap(0.0, xact_commit=1000), snap(10.0, xact_commit=3))
    assert crashed["stats_reset_changed"] is True and crashed["xact_commit"] is None
