"""Wait events of a run, finer than the once-a-second PostgreSQL sampler sees them.

Two sources for the Sampler (metrics/sampler.py), each giving one row per second:

- WaitSampler: its own thread reads pg_stat_activity `hz` times a second (10 for short runs,
  choose_hz) on its own connection, one prepared statement per snapshot, and the Sampler's
  tick takes the second's sums: `snapshots`, `active` (active backend states seen) and
  `wait.<type>:<event>` counts (`wait.CPU`: active, not waiting). Snapshots are offset half a
  step from whole seconds, where the other samplers query.
- WaitSamplingSource: where the pg_wait_sampling extension is loaded, the growth over the last
  second of its profile (its collector samples every backend every profile_period, 10 ms by
  default, inside the server) for client backends, without pgrig's own sessions. Idle
  backends waiting for their client's next statement (Client:ClientRead) are counted apart
  (`idle`): they are not active time. pg_wait_sampling before 1.1.6 does not sample
  backends on CPU (no `pg_wait_sampling.sample_cpu`): its shares are of waiting time then.

pgrig's own monitoring sessions (application_name pgrig-*) are never counted. Neither source
raises out of sample(): a lost connection is a row of nothing ({}), like PgSampler.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from typing import TYPE_CHECKING, Any

from pgrig import interrupts
from pgrig.errors import first_line
from pgrig.metrics.pg_metrics import WAIT_PREFIX
from pgrig.metrics.pg_snapshot import WORKLOAD_BACKENDS_SQL
from pgrig.record.documents import WaitSamplerStats, WaitSamplingFound

if TYPE_CHECKING:
    import psycopg

APPLICATION_NAME = "pgrig-waits"
MAX_HZ = 50
DEFAULT_HZ = 10
TARGET_SNAPSHOTS = 600  # what the default rate aims at over the measured window
STATEMENT_TIMEOUT_MS = 1000

ACTIVITY_SQL = f"""
SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU'), count(*)::int4
FROM pg_stat_activity
WHERE state = 'active' AND {WORKLOAD_BACKENDS_SQL}
GROUP BY 1
"""

PROFILE_SQL = f"""
SELECT p.pid, coalesce(p.event_type || ':' || p.event, 'CPU'), sum(p.count)::int8
FROM pg_wait_sampling_profile p JOIN pg_stat_activity a USING (pid)
WHERE {WORKLOAD_BACKENDS_SQL}
GROUP BY 1, 2
"""
IDLE_EVENT = "Client:ClientRead"


def choose_hz(window_s: float | None, requested: float | None = None) -> tuple[float, str]:
    """The snapshot rate of pg_stat_activity and why: the request, else enough snapshots for
    the window (TARGET_SNAPSHOTS: 10 Hz up to a minute, 1 Hz from 10 minutes)."""
    if requested is not None:
        return float(requested), f"--waits-hz {requested:g}"
    if window_s is None:
        return float(DEFAULT_HZ), "run bounded by transactions: 10 Hz"
    hz = min(DEFAULT_HZ, max(1, math.ceil(TARGET_SNAPSHOTS / max(window_s, 1.0))))
    snapshots = round(hz * window_s)  # what this rate takes over this window, not the aim
    return float(hz), f"{hz} Hz for a {window_s:g} s window ({snapshots} snapshots)"


def _connect(conninfo: str, dbname: str) -> Any:
    import psycopg

    from pgrig.provision.settings.insights_layer import QUIET_SESSION_SQL

    conn = psycopg.connect(
        conninfo, dbname=dbname, autocommit=True, application_name=APPLICATION_NAME,
        connect_timeout=3,
    )  # fmt: skip
    try:
        conn.execute(f"SET statement_timeout = {STATEMENT_TIMEOUT_MS}")
        with contextlib.suppress(psycopg.Error):
            conn.execute(QUIET_SESSION_SQL)
    except BaseException:
        conn.close()
        raise
    return conn


class WaitSampler:
    """pg_stat_activity `hz` times a second, summed per second (see the module docstring)."""

    name = "waits"
    sparse_prefixes: tuple[str, ...] = (WAIT_PREFIX,)

    def __init__(self, conninfo: str, dbname: str, hz: float) -> None:
        if not 0 < hz <= MAX_HZ:
            raise ValueError(f"wait sampling rate must be in (0, {MAX_HZ}] Hz, got {hz!r}")
        self.hz = float(hz)
        self._conninfo, self._dbname = conninfo, dbname
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._bucket: dict[str, int] = {}
        self._snapshots = 0
        self._thread: threading.Thread | None = None
        self.last_error: str | None = None
        self.snapshots = 0  # all snapshots taken
        self.missed = 0  # ticks skipped because a snapshot overran its step
        self.cpu_seconds = 0.0  # this thread's CPU (psycopg included)
        self.query_seconds = 0.0  # wall time of the snapshots' round trips

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="pgrig-waits", daemon=True)
            self._thread.start()

    def sample(self) -> dict[str, Any]:
        """The sums since the last call; {} when no snapshot was taken (the source is down)."""
        if self._thread is None:  # the Sampler's priming call: it starts the thread, and what
            self.start()  # the thread takes from now on goes to the next row, never lost here
            return {}
        with self._lock:
            bucket, n = self._bucket, self._snapshots
            self._bucket, self._snapshots = {}, 0
        if n == 0:
            return {}
        row: dict[str, Any] = {"snapshots": n, "active": sum(bucket.values())}
        row.update({WAIT_PREFIX + k: v for k, v in bucket.items()})
        return row

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            interrupts.join(self._thread, timeout=STATEMENT_TIMEOUT_MS / 1000 + 5)

    def stats(self) -> WaitSamplerStats:
        return {
            "hz": self.hz,
            "snapshots": self.snapshots,
            "missed_ticks": self.missed,
            "cpu_ms_per_snapshot": round(1000 * self.cpu_seconds / self.snapshots, 3)
            if self.snapshots else None,
            "query_ms_per_snapshot": round(1000 * self.query_seconds / self.snapshots, 3)
            if self.snapshots else None,
            "error": self.last_error,
        }  # fmt: skip

    def _run(self) -> None:
        step = 1.0 / self.hz
        conn = None
        try:
            conn = _connect(self._conninfo, self._dbname)
            tick = _next_tick(time.time(), step)
            while not self._stop.wait(max(0.0, tick - time.time())):
                c0, w0 = time.thread_time(), time.perf_counter()
                rows = conn.execute(ACTIVITY_SQL, prepare=True).fetchall()
                self.query_seconds += time.perf_counter() - w0
                with self._lock:
                    for key, n in rows:
                        self._bucket[key] = self._bucket.get(key, 0) + int(n)
                    self._snapshots += 1
                self.snapshots += 1
                self.cpu_seconds += time.thread_time() - c0
                tick += step
                now = time.time()
                if tick <= now:  # overran: skip to the next tick ahead, never a burst
                    later = _next_tick(now, step)
                    self.missed += round((later - tick) / step)
                    tick = later
        except Exception as e:  # never out of the thread: the rows stop, the run goes on
            self.last_error = first_line(e)
        finally:
            if conn is not None:
                with contextlib.suppress(Exception):
                    conn.close()


def _next_tick(now: float, step: float) -> float:
    """The next multiple of `step` shifted by half a step (off the whole seconds)."""
    return math.floor((now - step / 2) / step) * step + step + step / 2


class WaitSamplingSource:
    """pg_wait_sampling's profile, its growth per second (see the module docstring)."""

    name = "wait_sampling"
    sparse_prefixes: tuple[str, ...] = (WAIT_PREFIX,)

    def __init__(self, conn: psycopg.Connection | None) -> None:
        self._conn = conn
        self._prev: dict[tuple[int, str], int] | None = None
        self.last_error: str | None = None

    def sample(self) -> dict[str, Any]:
        if self._conn is None:
            return {}
        try:
            rows = self._conn.execute(PROFILE_SQL, prepare=True).fetchall()
        except Exception as e:
            self.last_error = first_line(e)
            if self._conn.broken or self._conn.closed:
                self.close()
            return {}
        cur = {(int(pid), str(key)): int(n) for pid, key, n in rows}
        prev, self._prev = self._prev, cur
        if prev is None:
            return {}  # the baseline
        sums: dict[str, int] = {}
        for k, n in cur.items():
            d = n - prev.get(k, 0)
            if d > 0:  # a new pid starts from 0; a pid gone leaves its last second out
                sums[k[1]] = sums.get(k[1], 0) + d
        idle = sums.pop(IDLE_EVENT, 0)
        row: dict[str, Any] = {"active": sum(sums.values()), "idle": idle}
        row.update({WAIT_PREFIX + k: v for k, v in sums.items()})
        return row

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()


def open_wait_sampling(conninfo: str, dbname: str, managed: bool) -> tuple[Any, WaitSamplingFound]:
    """(a WaitSamplingSource or None, what was found): pg_wait_sampling's profile when the
    library is loaded; CREATE EXTENSION in the run's database of a managed environment."""
    try:
        conn = _connect(conninfo, dbname)
    except Exception as e:
        return None, {"used": False, "reason": f"cannot connect: {first_line(e)}"}
    found: WaitSamplingFound
    try:
        found = _wait_sampling_state(conn, dbname, managed)
    except Exception as e:
        found = {"used": False, "reason": first_line(e)}
    if not found["used"]:
        conn.close()
        return None, found
    source = WaitSamplingSource(conn)
    return source, found


def _wait_sampling_state(conn: psycopg.Connection, dbname: str, managed: bool) -> WaitSamplingFound:
    row = conn.execute(
        "SELECT current_setting('shared_preload_libraries'),"
        " (SELECT default_version FROM pg_available_extensions WHERE name = 'pg_wait_sampling'),"
        " (SELECT extversion FROM pg_extension WHERE extname = 'pg_wait_sampling')"
    ).fetchone()
    assert row is not None  # a SELECT without FROM: one row
    libraries = [x.strip().strip('"') for x in (row[0] or "").split(",")]
    available, created = row[1], row[2]
    if "pg_wait_sampling" not in libraries:
        if available is None:
            why = (
                "this PostgreSQL build has no pg_wait_sampling (Debian's "
                "postgresql-NN-pg-wait-sampling has it; the PyPI builds do not)"
            )
        else:
            why = (
                "pg_wait_sampling is installed but not loaded: add it to "
                "shared_preload_libraries and restart"
            )
        return {"used": False, "reason": why}
    notes = []
    if created is None:
        if not managed:
            return {
                "used": False,
                "reason": f"pg_wait_sampling is loaded but not created in database {dbname} "
                "(CREATE EXTENSION pg_wait_sampling)",
            }
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_wait_sampling")
        notes.append(f"created extension pg_wait_sampling in database {dbname}")
    settings: dict[str, str] = {
        str(name): str(value)
        for name, value in conn.execute(
            "SELECT name, setting FROM pg_settings WHERE name LIKE 'pg\\_wait\\_sampling.%'"
        ).fetchall()
    }
    if settings.get("pg_wait_sampling.profile_pid", "on") != "on":
        return {
            "used": False,
            "reason": "pg_wait_sampling.profile_pid is off: its profile cannot be told apart "
            "per backend",
        }
    found = conn.execute(
        "SELECT extversion FROM pg_extension WHERE extname = 'pg_wait_sampling'"
    ).fetchone()
    version = found[0] if found else None  # dropped meanwhile by another session
    period = settings.get("pg_wait_sampling.profile_period")
    cpu = settings.get("pg_wait_sampling.sample_cpu")
    return {
        "used": True,
        "version": version,
        "profile_period_ms": int(period) if period is not None else None,
        "samples_cpu": cpu == "on",
        "notes": notes,
    }
