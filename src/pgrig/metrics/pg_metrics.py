"""PostgreSQL activity while load runs: one query per sample on one persistent connection.

The query reads pg_stat_database (target database), the checkpoint counters (pg_stat_bgwriter
up to 16, pg_stat_checkpointer from 17), the WAL position, autovacuum/autoanalyze counts of the
target database's tables and pg_stat_activity, and sample() turns differences between two
readings into per-second rates (volumes) or plain differences (events). The sampler's own
backend is left out of the activity figures, and its own transactions (one per sample) are
subtracted from commits, which matters when a server does 0.016 transactions per second.
pgrig's own monitoring sessions (application_name pgrig-*: this sampler, the wait sampler,
the insights collector) are left out of the activity figures and the wait events.
Its own catalog reads still count in blks_hit and tup_* (a few per sample).

A lost connection (server crash, restart) never raises out of sample(): the row is empty
(the Sampler records None everywhere) and a reconnect is tried in a short-lived helper thread
at most once per reconnect_interval, so a server that hangs on connect cannot stall the OS
sampling running in the same Sampler thread. Rates resume one sample after the reconnect.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from pgrig.errors import PgrigError, first_line
from pgrig.metrics.pg_snapshot import (
    TABLE_COUNTERS_SQL,
    WORKLOAD_BACKENDS_SQL,
    checkpoint_sql,
    hit_ratio,
    wal_bytes_sql,
)
from pgrig.provision.settings.insights_layer import QUIET_SESSION_SQL

APPLICATION_NAME = "pgrig-sampler"
WAIT_PREFIX = "wait."

# (cumulative source column, output column, kind): "rate" -> per second, "delta" -> count
_COUNTERS: tuple[tuple[str, str, str], ...] = (
    ("xact_commit", "commits", "rate"),
    ("xact_rollback", "rollbacks", "rate"),
    ("blks_hit", "blks_hit", "rate"),
    ("blks_read", "blks_read", "rate"),
    ("tup_returned", "tup_returned", "rate"),
    ("tup_fetched", "tup_fetched", "rate"),
    ("tup_inserted", "tup_inserted", "rate"),
    ("tup_updated", "tup_updated", "rate"),
    ("tup_deleted", "tup_deleted", "rate"),
    ("temp_bytes", "temp_bytes", "rate"),
    ("deadlocks", "deadlocks", "delta"),
    ("checkpoints_timed", "checkpoints_timed", "delta"),
    ("checkpoints_req", "checkpoints_req", "delta"),
    ("buffers_written", "buffers_written", "rate"),
    ("wal_bytes", "wal_bytes", "rate"),
    ("autovacuum_count", "autovacuum", "delta"),
    ("autoanalyze_count", "autoanalyze", "delta"),
)
_N = len(_COUNTERS)
_LEVELS = ("active_backends", "backends", "idle_in_xact")

# Units of PgSampler.sample()'s columns; wait.<type>:<event> columns are counts of active
# backends seen in that wait at the sample instant (wait.CPU: active, not waiting).
PG_COLUMNS: dict[str, str] = {
    **{out: ("1/s" if kind == "rate" else "count") for _, out, kind in _COUNTERS},
    "temp_bytes": "B/s",
    "buffers_written": "buffers/s",
    "wal_bytes": "B/s",
    "hit_ratio": "%",
    "active_backends": "count",
    "backends": "count",
    "idle_in_xact": "count",
}


def sample_query(server_version_num: int) -> str:
    """The one statement run per sample, for this server version."""
    db = ", ".join(
        f"d.{c}::float8"
        for c, _, _ in _COUNTERS[:11]  # the pg_stat_database ones
    )
    return f"""
WITH a AS (
  SELECT state, backend_type, wait_event_type, wait_event
  FROM pg_stat_activity WHERE {WORKLOAD_BACKENDS_SQL}
)
SELECT {db},
  c.checkpoints_timed::float8, c.checkpoints_req::float8, c.buffers_written::float8,
  {wal_bytes_sql(server_version_num)},
  t.autovacuum_count, t.autoanalyze_count,
  (SELECT count(*) FROM a WHERE state = 'active'),
  (SELECT count(*) FROM a WHERE backend_type = 'client backend'),
  (SELECT count(*) FROM a WHERE state LIKE 'idle in transaction%'),
  (SELECT json_object_agg(k, n) FROM (
     SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') AS k, count(*) AS n
     FROM a WHERE state = 'active' GROUP BY 1) w)
FROM pg_stat_database d, ({checkpoint_sql(server_version_num)}) c, ({TABLE_COUNTERS_SQL}) t
WHERE d.datname = current_database()
"""


class PgSampler:
    """Per-second PostgreSQL rates from one query per sample(); see the module docstring."""

    name = "pg"
    sparse_prefixes: tuple[str, ...] = (WAIT_PREFIX,)

    def __init__(
        self,
        conninfo: str,
        dbname: str,
        *,
        connect: bool = True,
        reconnect_interval: float = 1.0,
        statement_timeout_ms: int = 2000,
        connect_timeout: int = 3,
    ) -> None:
        """Connect at once (connect=True) so a wrong target fails before the run starts,
        with a PgrigError; later losses of the connection are never raised."""
        self._conninfo = conninfo
        self._dbname = dbname
        self.reconnect_interval = reconnect_interval
        self._statement_timeout_ms = int(statement_timeout_ms)
        self._connect_timeout = connect_timeout
        self._conn: psycopg.Connection | None = None
        self._query = ""
        self._prev: tuple[Any, ...] | None = None
        self._prev_t = 0.0
        self._own_pending = 0  # our own commits not yet taken off `commits`
        self._last_attempt = float("-inf")
        self._connecting: threading.Thread | None = None
        self._new_conn: psycopg.Connection | None = None
        self._closed = False
        self._lock = threading.Lock()
        self.last_error: str | None = None
        self.server_version_num: int | None = None
        self.reconnects = 0
        self._totals = [0.0] * _N
        self._totals_s = 0.0
        if connect:
            try:
                self._install(self._open())
            except psycopg.Error as e:
                raise PgrigError(
                    f"cannot connect the PostgreSQL sampler to database {dbname!r}: {first_line(e)}"
                ) from None

    # --- connection ----------------------------------------------------------------------------
    def _open(self) -> psycopg.Connection:
        kwargs: dict[str, Any] = {
            "dbname": self._dbname,
            "autocommit": True,
            "application_name": APPLICATION_NAME,
        }
        if "connect_timeout" not in conninfo_to_dict(self._conninfo):
            kwargs["connect_timeout"] = self._connect_timeout
        conn = psycopg.connect(self._conninfo, **kwargs)
        try:
            conn.execute(
                "SELECT set_config('statement_timeout', %s, false)",
                (str(self._statement_timeout_ms),),
            )
        except BaseException:
            conn.close()
            raise
        with contextlib.suppress(psycopg.Error):  # not the workload's statements, not its plans
            conn.execute(QUIET_SESSION_SQL)
        return conn

    def _install(self, conn: psycopg.Connection) -> None:
        self._conn = conn
        self.server_version_num = conn.info.server_version
        self._query = sample_query(conn.info.server_version)
        self._prev = None  # rates restart from the next reading
        # Connecting and set_config are transactions of ours too; those already flushed
        # to the statistics before our first reading cannot be told apart, so only what
        # follows the first reading is subtracted.
        self._own_pending = 0

    def _drop(self) -> None:
        conn, self._conn, self._prev = self._conn, None, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def _reconnect_in_background(self) -> None:
        now = time.monotonic()
        if self._connecting is not None or now - self._last_attempt < self.reconnect_interval:
            return
        self._last_attempt = now

        def attempt() -> None:
            try:
                conn = self._open()
            except Exception as e:
                self.last_error = first_line(e)
                conn = None
            with self._lock:
                if conn is not None and self._closed:
                    conn.close()
                elif conn is not None:
                    self._new_conn = conn
                self._connecting = None

        t = threading.Thread(target=attempt, name="pgrig-sampler-connect", daemon=True)
        self._connecting = t
        t.start()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            new, self._new_conn = self._new_conn, None
        if new is not None:
            new.close()
        self._drop()

    @property
    def connected(self) -> bool:
        return self._conn is not None

    # --- sampling ------------------------------------------------------------------------------
    def sample(self) -> dict[str, Any]:
        """One row; {} when the server could not be read (the Sampler records None)."""
        if self._conn is None:
            with self._lock:
                new, self._new_conn = self._new_conn, None
            if new is None:
                if not self._closed:
                    self._reconnect_in_background()
                return {}
            self._install(new)
            self.reconnects += 1
        conn = self._conn
        assert conn is not None
        try:
            t = time.monotonic()
            row = conn.execute(self._query, prepare=True).fetchone()
        except Exception as e:  # never out of the sampler: a crash is a row of None
            self.last_error = first_line(e)
            if conn.broken or conn.closed:
                self._drop()
            return {}
        out = self._row(row, t) if row is not None else {}
        if row is None:  # the database disappeared
            self.last_error = f"database {self._dbname!r} not found in pg_stat_database"
        self._own_pending += 1  # this query commits after its own reading
        return out

    def _row(self, row: tuple[Any, ...], t: float) -> dict[str, Any]:
        cur = row[:_N]
        out: dict[str, Any] = {}
        prev, dt = self._prev, t - self._prev_t
        valid = prev is not None and dt > 0
        for i, (_, name, kind) in enumerate(_COUNTERS):
            a, b = (prev[i], cur[i]) if valid else (None, None)  # type: ignore[index]
            if a is None or b is None or b < a:  # unknown, or reset (crash, pg_stat_reset)
                out[name] = None
                continue
            d = b - a
            if i == 0:  # commits: take off our own sampling transactions
                mine = min(self._own_pending, d)
                if mine > 0:
                    d -= mine
                    self._own_pending -= mine
            self._totals[i] += d
            out[name] = d / dt if kind == "rate" else d
        if valid:
            self._totals_s += dt
        hit, read = out["blks_hit"], out["blks_read"]
        out["hit_ratio"] = hit_ratio(hit, read)
        levels = row[_N : _N + 3]
        for name, value in zip(_LEVELS, levels, strict=True):
            out[name] = value
        waits = row[_N + 3]
        if waits:
            for key, n in waits.items():
                out[WAIT_PREFIX + key] = n
        self._prev, self._prev_t = cur, t
        return out

    def totals(self) -> dict[str, float | None]:
        """Sums over every valid interval so far (own commits excluded), hit_ratio over them
        (the cumulative figure for the whole sampled time) and the seconds they cover."""
        out: dict[str, float | None] = {
            name: self._totals[i] for i, (_, name, _) in enumerate(_COUNTERS)
        }
        out["hit_ratio"] = hit_ratio(out["blks_hit"], out["blks_read"])
        out["seconds"] = self._totals_s
        return out
