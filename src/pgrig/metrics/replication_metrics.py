"""Replica lag, once per sample, from the primary's pg_stat_replication.

A sampler Source (name "replication") for metrics.sampler.Sampler; one row per second with, for
every replica rN of the environment:

  rN_connected         1 when the replica streams (a row in pg_stat_replication), else 0
  rN_lag_bytes         pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn): WAL not yet replayed
  rN_flush_lag_bytes   ... not yet flushed on the replica
  rN_write_lag_ms, rN_flush_lag_ms, rN_replay_lag_ms   pg_stat_replication's own lag times

and lag_bytes_max over the replicas. The connection to the primary is kept open between
samples (a reconnect per second would cost the server more than the query).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from pgrig.provision.server.replicas import replication_rows
from pgrig.record.documents import ReplicaLag

Row = dict[str, float | int | None]
LAG_COLUMNS = {
    "replay_lag_bytes": "lag_bytes",
    "flush_lag_bytes": "flush_lag_bytes",
    "write_lag_ms": "write_lag_ms",
    "flush_lag_ms": "flush_lag_ms",
    "replay_lag_ms": "replay_lag_ms",
}


class ReplicationSampler:
    """Source for Sampler: one row of per-replica lag per call (see module doc)."""

    name = "replication"

    def __init__(self, conninfo: str, replicas: Sequence[str]) -> None:
        self._conninfo = conninfo
        self._replicas = list(replicas)
        self._conn: Any = None
        self.max_lag_bytes: dict[str, int] = {}
        self.disconnected: dict[str, int] = {}  # samples in which a replica did not stream

    def sample(self) -> Row:
        rows = replication_rows(self._connection())
        out: Row = {}
        worst: int | None = None
        for name in self._replicas:
            got = rows.get(name)
            streaming = got is not None and got.get("state") == "streaming"
            out[f"{name}_connected"] = 1 if streaming else 0
            if not streaming:
                self.disconnected[name] = self.disconnected.get(name, 0) + 1
            for src, col in LAG_COLUMNS.items():
                value = got.get(src) if got else None
                out[f"{name}_{col}"] = value
            lag = got.get("replay_lag_bytes") if got else None
            if lag is not None:
                lag = int(lag)
                worst = lag if worst is None else max(worst, lag)
                self.max_lag_bytes[name] = max(self.max_lag_bytes.get(name, 0), lag)
        out["lag_bytes_max"] = worst
        return out

    def _connection(self) -> Any:
        import psycopg

        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(self._conninfo, autocommit=True)
        return self._conn

    def close(self) -> None:
        with contextlib.suppress(Exception):
            if self._conn is not None:
                self._conn.close()

    def summary(self, samples: int) -> dict[str, ReplicaLag]:
        """Per replica: the largest replay lag in bytes and the samples it did not stream."""
        return {
            name: {
                "max_lag_bytes": self.max_lag_bytes.get(name),
                "samples_not_streaming": self.disconnected.get(name, 0),
                "samples": samples,
            }
            for name in self._replicas
        }
