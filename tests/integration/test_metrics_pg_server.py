"""Samplers against real PostgreSQL servers: load, wait events, snapshots, a crash, PG 17+.

Servers run as OS user postgres under /tmp on ports 26300-26389, listen on 127.0.0.1 only
and are always removed, even when a test fails half-way.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
import servers
from servers import PG15

from pgrig.errors import PgrigError
from pgrig.metrics import pg_snapshot
from pgrig.metrics.os_metrics import OsSampler, fixed_pids, pids_from_file
from pgrig.metrics.pg_metrics import PgSampler
from pgrig.metrics.sampler import Sampler, window_summary

pytestmark = pytest.mark.integration

PORTS = range(26300, 26390)


class Server(servers.Server):
    """A throwaway PostgreSQL server for one test module or test, which a test may crash."""

    def __init__(self, bindir: Path) -> None:
        super().__init__(bindir, PORTS, "pgrig-metrics-it-")
        self.conninfo = f"host=127.0.0.1 port={self.port} user=postgres connect_timeout=5"
        self._orphans: list[int] = []

    def postmaster_pid(self) -> int:
        return pids_from_file(self.pid_file)()[0]

    def kill9(self) -> None:
        """Crash: SIGKILL the postmaster; its orphaned children exit on their own."""
        pid = self.postmaster_pid()
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        self._orphans = [int(k) for k in kids]
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        for kid in self._orphans:
            while Path(f"/proc/{kid}").exists() and time.monotonic() < deadline:
                time.sleep(0.05)

    def cleanup(self) -> None:
        super().cleanup()
        for kid in self._orphans:  # only if a crashed server's children outlived it
            if Path(f"/proc/{kid}").exists():
                with contextlib.suppress(OSError):
                    os.kill(kid, signal.SIGKILL)

    def env(self) -> dict[str, str]:
        return {**os.environ, "PGHOST": "127.0.0.1", "PGPORT": str(self.port), "PGUSER": "postgres"}

    def pgbench(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen(
            [str(PG15 / "pgbench"), *args, "postgres"],
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )


@pytest.fixture(scope="module")
def server15() -> Iterator[Server]:
    """One PostgreSQL 15, shared by the module's tests (the crash test restarts it)."""
    with servers.throwaway(PG15, Server) as server:
        yield server


def wait_for(pred: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.05)


def wait_samples(s: Sampler, n: int) -> None:
    target = s.samples + n
    wait_for(lambda: s.samples >= target)


def test_sampler_during_pgbench_load(server15):
    init = server15.pgbench("-i", "-s", "1", "-q")
    assert init.wait(120) == 0, init.stdout.read() if init.stdout else ""
    os_s = OsSampler()
    os_s.track_processes("server", pids_from_file(server15.pid_file))
    pg = PgSampler(server15.conninfo, "postgres")
    s = Sampler(os_s, pg, interval=0.5)
    s.start()
    # a backend sure to be seen waiting: pg_sleep is the Timeout:PgSleep wait event
    sleeper = threading.Thread(
        target=lambda: (
            psycopg.connect(server15.conninfo, dbname="postgres", autocommit=True)
            .execute("SELECT pg_sleep(1.5)")
            .fetchall()
        )
    )
    sleeper.start()
    bench = server15.pgbench("-n", "-T", "3", "-c", "4", "-j", "2")
    os_s.track_processes("pgbench", fixed_pids(bench.pid), children=False)
    out, _ = bench.communicate(timeout=120)
    assert bench.returncode == 0, out
    sleeper.join(30)
    wait_samples(s, 3)  # the backends' statistics are flushed when they exit
    live = s.latest()
    series = s.stop()
    assert not s.errors
    assert live["pg"]["ts"] > 0 and "cpu_user" in live["os"]

    osr, pgr = series["os"], series["pg"]
    for kind in (osr, pgr):
        assert all(len(col) == len(kind["ts"]) for col in kind.values())
    assert set(osr["up"]) == {1} and set(pgr["up"]) == {1}
    assert max(v for v in pgr["commits"] if v is not None) > 0
    ratios = [v for v in pgr["hit_ratio"] if v is not None]
    assert ratios and all(0.0 <= v <= 100.0 for v in ratios)
    assert max(pgr["wait.Timeout:PgSleep"]) >= 1
    waits = [k for k in pgr if k.startswith("wait.")]
    assert all(isinstance(v, int) for k in waits for v in pgr[k])  # sparse: 0, never None
    assert max(pgr["backends"]) >= 4
    assert max(v for v in osr["proc_server_cpu"] if v is not None) > 0
    assert max(v for v in osr["proc_pgbench_cpu"] if v is not None) > 0
    assert max(v for v in pgr["wal_bytes"] if v is not None) > 0

    done = int(re.search(r"transactions actually processed: (\d+)", out).group(1))
    totals = pg.totals()
    assert totals["commits"] >= done  # every pgbench commit seen; the sampler's own are not
    assert 0 <= totals["hit_ratio"] <= 100
    summary = window_summary(series, series["os"]["ts"][0], series["os"]["ts"][-1])
    assert summary["cpu_user"] is not None and summary["hit_ratio"] is not None


def test_snapshots(server15):
    with psycopg.connect(server15.conninfo, dbname="postgres", autocommit=True) as conn:
        full, major, num = pg_snapshot.server_version(conn)
        assert major == 15 and full.startswith("PostgreSQL 15") and 150000 <= num < 160000
        settings = pg_snapshot.settings_snapshot(conn)
        assert len(settings) > 300
        sb = settings["shared_buffers"]
        assert set(sb) == set(pg_snapshot.SETTING_FIELDS)
        assert sb["unit"] == "8kB" and sb["context"] == "postmaster"
        assert settings["fsync"]["setting"] == "off" and settings["fsync"]["source"] != "default"
        assert pg_snapshot.database_size(conn, "postgres") > 1_000_000
        assert pg_snapshot.database_size(conn, "nope") is None
        pg_snapshot.checkpoint(conn)
        start = pg_snapshot.counters(conn, "postgres")
        for _ in range(20):
            conn.execute("SELECT 1")
        conn.execute("SELECT pg_stat_force_next_flush()")  # statistics flush at once (15+)
        end = pg_snapshot.counters(conn, "postgres")
        d = pg_snapshot.counters_delta(start, end)
        assert d["xact_commit"] >= 20 and d["commits_per_s"] > 0
        assert d["stats_reset_changed"] is False
        assert end["checkpoints_req"] >= 1 and end["autovacuum_count"] is not None
        other = pg_snapshot.counters(conn, "template1")  # another database: no table counters
        assert other["autovacuum_count"] is None and other["xact_commit"] is not None
        with pytest.raises(PgrigError, match="does not exist"):
            pg_snapshot.counters(conn, "nope")


def test_crash_gives_none_rows_then_reconnects(server15):
    """Last of the module's PG 15 tests: it crashes the server (and starts it again)."""
    crashable = server15
    os_s = OsSampler()
    os_s.track_processes("server", pids_from_file(crashable.pid_file))
    pg = PgSampler(crashable.conninfo, "postgres")
    s = Sampler(os_s, pg, interval=0.5)
    s.start()
    try:
        wait_samples(s, 2)
        crashable.kill9()
        wait_for(lambda: not pg.connected)
        wait_samples(s, 3)  # the server is down: rows keep coming
        assert s.running
        down_at = s.samples
        crashable.start()  # crash recovery, then the sampler reconnects by itself
        wait_for(lambda: pg.connected)
        wait_samples(s, 3)
    finally:
        series = s.stop()
    assert "pg" not in s.errors  # the PostgreSQL sampler never raised
    osr, pgr = series["os"], series["pg"]
    assert len(osr["ts"]) == len(pgr["ts"]) >= down_at + 3
    assert set(osr["up"]) == {1}
    up = pgr["up"]
    assert up[0] == 1 and up[-1] == 1 and 0 in up
    down = [i for i, u in enumerate(up) if u == 0]
    for i in down:
        assert pgr["commits"][i] is None and pgr["hit_ratio"][i] is None
        assert pgr["active_backends"][i] is None
        assert all(pgr[k][i] is None for k in pgr if k.startswith("wait."))
    assert pg.reconnects >= 1
    # after the restart, rates come back (the first row after reconnecting is a baseline)
    assert any(v is not None for v in pgr["commits"][down[-1] + 2 :])


def _pg17_plus_bindir() -> Path | None:
    """A PostgreSQL 17+ build if one is around: pgrig's binaries cache or the lab's copy."""
    cache = servers.pg_build_cache()
    candidates = [d / "bin" for d in sorted(cache.glob("1[78].*"), reverse=True)]
    candidates.append(Path("/tmp/pgb/x/postgresql-18.6.0-x86_64-unknown-linux-gnu/bin"))
    for bindir in candidates:
        if not (bindir / "postgres").exists():
            continue
        out = servers.as_postgres(str(bindir / "postgres"), "--version", check=False)
        m = re.search(r"\) (\d+)", out.stdout)
        if m and int(m.group(1)) >= 17:
            return bindir
    return None


def test_checkpointer_view_on_pg17_plus():
    bindir = _pg17_plus_bindir() if servers.cannot_run(PG15) is None else None
    if bindir is None:
        pytest.skip("no PostgreSQL 17+ build here")
    with servers.throwaway(bindir, Server) as server:
        pg = PgSampler(server.conninfo, "postgres")
        assert pg.server_version_num >= 170000
        with psycopg.connect(server.conninfo, dbname="postgres", autocommit=True) as conn:
            pg.sample()
            pg_snapshot.checkpoint(conn)
            # The checkpointer publishes its statistics just after CHECKPOINT returns: the
            # checkpoint shows up in the next samples' deltas, not always the first one.
            deadline = time.monotonic() + 5
            row = pg.sample()
            while not row.get("checkpoints_req") and time.monotonic() < deadline:
                time.sleep(0.2)
                row = pg.sample()
            counters = pg_snapshot.counters(conn, "postgres")
        pg.close()
        assert row["checkpoints_req"] is not None and row["checkpoints_req"] >= 1
        assert row["wal_bytes"] is not None
        assert counters["checkpoints_req"] >= 1 and counters["buffers_written"] is not None


def test_wal_rate_counts_records_not_the_segment_switch_padding(server15):
    """pg_stat_wal's wal_bytes (14+), as backups count it: a segment switch pads the LSN by up
    to 16 MiB of nothing, which the LSN advance would report as WAL written."""
    with psycopg.connect(server15.conninfo, dbname="postgres", autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS wal_probe (v int)")
        conn.execute("SELECT pg_switch_wal()")  # start at a segment's beginning
        sampler = PgSampler(server15.conninfo, "postgres")
        try:
            start = pg_snapshot.counters(conn, "postgres")
            sampler.sample()  # the first reading: the rates start from it
            time.sleep(1.0)  # a second at least between the readings: a rate per second
            lsn = conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
            conn.execute("INSERT INTO wal_probe VALUES (1)")
            conn.execute("SELECT pg_switch_wal()")  # pads the rest of the segment
            conn.execute("SELECT pg_stat_force_next_flush()")
            advance = conn.execute(
                "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s)", (lsn,)
            ).fetchone()[0]
            end = pg_snapshot.counters(conn, "postgres")
            row = sampler.sample()
        finally:
            sampler.close()
    assert advance > 8 * 1024 * 1024  # the padding: most of a 16 MiB segment
    written = pg_snapshot.counters_delta(start, end)["wal_bytes"]
    assert written is not None and 0 < written < 1024 * 1024  # records and page images: kB
    assert row["wal_bytes"] is not None and row["wal_bytes"] < 1024 * 1024  # B/s, not 16 MiB
