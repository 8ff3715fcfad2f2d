"""pgbouncer's own view of a run, once per sample: SHOW POOLS and SHOW STATS of every process.

A sampler Source (name "pooler") for metrics.sampler.Sampler. Each row sums the pools of the
benchmark database over all processes (several share a port with so_reuseport; each is asked
through its own Unix socket):

  levels   cl_active, cl_waiting, sv_active, sv_idle, sv_used, sv_login, maxwait_ms (max)
  rates    xact_per_s, query_per_s, wait_ms_per_s (client time spent waiting for a server, per
           second: the mean number of waiting clients x 1000), recv_bytes_per_s, sent_bytes_per_s
           from the deltas of the total_* counters
           wait_us_per_xact: mean wait for a server per transaction, from the same deltas
  pgbouncer's own averages (stats_period = 1 s): avg_xact_time_us (per transaction, weighted
           over processes by their transactions) and avg_wait_time_us (wait per second of the
           last period, summed over processes)
  processes_up: how many processes answered

The admin console speaks only the simple query protocol, hence psycopg's ClientCursor.
Totals over the whole sampling (summary()) go into RunRecord.extra["pooler"].
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from pgrig.errors import first_line

if TYPE_CHECKING:
    import psycopg

Row = dict[str, float | int | None]
# psycopg connect() keywords of one process's admin console (provision/pooler/client.py)
ConsoleParams = Mapping[str, str | int]
# a row of SHOW POOLS or SHOW STATS: the admin console sends text and integer columns only
ConsoleRow = dict[str, str | int | None]
LEVELS = ("cl_active", "cl_waiting", "sv_active", "sv_idle", "sv_used", "sv_login")
TOTALS = {  # SHOW STATS column -> rate column (per second)
    "total_xact_count": "xact_per_s",
    "total_query_count": "query_per_s",
    "total_wait_time": "wait_ms_per_s",  # microseconds -> ms below
    "total_received": "recv_bytes_per_s",
    "total_sent": "sent_bytes_per_s",
}
ADMIN_DB = "pgbouncer"


class PoolerSampler:
    """Source for Sampler: one row of pooler levels and rates per call (see module doc)."""

    name = "pooler"

    def __init__(
        self,
        params: Sequence[ConsoleParams],
        database: str | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        connect: Callable[[ConsoleParams], psycopg.Connection] | None = None,
    ) -> None:
        """params: psycopg connect() keywords per process (provision.pooler.console_params);
        database: count only pools of this database (None: every non-admin pool)."""
        self._params = list(params)
        self._database = database
        self._clock = clock
        self._connect = connect or _psycopg_connect
        self._conns: list[psycopg.Connection | None] = [None] * len(self._params)
        self._prev: list[dict[str, int] | None] = [None] * len(self._params)
        self._first: list[dict[str, int] | None] = [None] * len(self._params)
        self._prev_t: float | None = None
        self._max: dict[str, float] = {}
        self.last_error: str | None = None
        self.rows = 0

    # --- one sample ----------------------------------------------------------------------------
    def sample(self) -> Row:
        now = self._clock()
        dt = None if self._prev_t is None else now - self._prev_t
        self._prev_t = now
        row: Row = {k: 0 for k in LEVELS}
        row["maxwait_ms"] = 0.0
        rates: dict[str, float] = dict.fromkeys(TOTALS.values(), 0.0)
        rates_known = dt is not None and dt > 0
        avg_xact = avg_wait = weight = 0.0
        any_avg = False
        up = 0
        for i in range(len(self._params)):
            got = self._ask(i)
            if got is None:
                rates_known = False  # a process did not answer: its share is unknown
                continue
            up += 1
            pools, stats = got
            for p in pools:
                for k in LEVELS:
                    row[k] = int(row[k] or 0) + int(p.get(k) or 0)
                wait_ms = (
                    float(p.get("maxwait") or 0) * 1000 + float(p.get("maxwait_us") or 0) / 1000
                )
                row["maxwait_ms"] = max(float(row["maxwait_ms"] or 0), wait_ms)
            totals = {k: sum(int(s.get(k) or 0) for s in stats) for k in TOTALS}
            prev = self._prev[i]
            if prev is not None and all(totals[k] >= prev[k] for k in TOTALS):
                for k, col in TOTALS.items():
                    rates[col] += totals[k] - prev[k]
            else:
                rates_known = False  # first answer, or the process restarted (counters reset)
            self._prev[i] = totals
            if self._first[i] is None:
                self._first[i] = totals
            for s in stats:
                n = float(s.get("avg_xact_count") or 0)
                avg_xact += float(s.get("avg_xact_time") or 0) * n
                avg_wait += float(s.get("avg_wait_time") or 0)
                weight += n
                any_avg = True
        if up == 0:
            return {}
        row["processes_up"] = up
        for col, value in rates.items():
            if not rates_known:
                row[col] = None
            elif col == "wait_ms_per_s":
                row[col] = value / 1000.0 / dt  # type: ignore[operator]
            else:
                row[col] = value / dt  # type: ignore[operator]
        xacts = rates["xact_per_s"]  # `rates` still holds raw deltas (wait in microseconds)
        row["wait_us_per_xact"] = rates["wait_ms_per_s"] / xacts if rates_known and xacts else None
        row["avg_xact_time_us"] = avg_xact / weight if weight else None
        row["avg_wait_time_us"] = avg_wait if any_avg else None
        for k in ("cl_active", "cl_waiting", "sv_active", "maxwait_ms"):
            self._max[k] = max(self._max.get(k, 0.0), float(row[k] or 0))
        self.rows += 1
        return row

    def _ask(self, i: int) -> tuple[list[ConsoleRow], list[ConsoleRow]] | None:
        try:
            conn = self._conns[i]
            if conn is None:
                conn = self._conns[i] = self._connect(self._params[i])
            pools = [p for p in _rows(conn, "SHOW POOLS") if self._wanted(p)]
            stats = [s for s in _rows(conn, "SHOW STATS") if self._wanted(s)]
            return pools, stats
        except Exception as e:  # a pooler going away must not break the run
            self.last_error = first_line(e, named=True)
            self._close(i)
            return None

    def _wanted(self, row: ConsoleRow) -> bool:
        db = row.get("database")
        if db == ADMIN_DB:
            return False
        return self._database is None or db == self._database

    # --- totals and clean-up -------------------------------------------------------------------
    def summary(self) -> dict[str, int | float | str]:
        """Totals from the first to the last answer of each process, and the peaks seen
        (RunRecord.extra["pooler"]["totals"])."""
        out: dict[str, int | float | str] = {"processes": len(self._params), "samples": self.rows}
        wait_us = 0
        for k in TOTALS:
            total = 0
            for first, last in zip(self._first, self._prev, strict=True):
                if first is not None and last is not None and last[k] >= first[k]:
                    total += last[k] - first[k]
            if k == "total_wait_time":  # microseconds: said in seconds, after the counts
                wait_us = total
            else:
                out[k.replace("total_", "")] = total
        out["wait_time_s"] = wait_us / 1e6
        out.update({f"max_{k}": v for k, v in self._max.items()})
        if self.last_error:
            out["last_error"] = self.last_error
        return out

    def _close(self, i: int) -> None:
        conn, self._conns[i] = self._conns[i], None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def close(self) -> None:
        for i in range(len(self._conns)):
            self._close(i)


def _rows(conn: psycopg.Connection, query: str) -> list[ConsoleRow]:
    cur = conn.cursor()
    cur.execute(query)
    names = [d.name for d in cur.description or []]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def _psycopg_connect(params: ConsoleParams) -> psycopg.Connection:
    import psycopg
    from psycopg.conninfo import make_conninfo

    return psycopg.connect(
        make_conninfo("", **{k: str(v) for k, v in params.items()}),  # libpq's are text
        autocommit=True,
        cursor_factory=psycopg.ClientCursor,
    )
