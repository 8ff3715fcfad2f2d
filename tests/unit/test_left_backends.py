"""The backends a run left on its server (load/core/left_backends.py): described by what they
waited for, and only those still there after the settle time ended."""

from __future__ import annotations

from typing import Any

from pgrig.load.core import left_backends
from pgrig.record.documents import BackendEnded


def test_backends_left_are_said_by_what_they_waited_for() -> None:
    ended: list[BackendEnded] = [
        {"server": "lab", "pid": 1, "state": "active", "wait": "IPC:SyncRep"},
        {"server": "lab", "pid": 2, "state": "active", "wait": "Lock:transactionid"},
        {"server": "lab", "pid": 3, "state": "active", "wait": "Lock:transactionid"},
    ]
    text = left_backends.describe(ended)
    assert text == (
        "3 backends on lab (1 in IPC:SyncRep (a synchronous commit with no synchronous replica "
        "answering); 2 in Lock:transactionid)"
    )
    assert left_backends.waited_for_replicas(ended)
    assert not left_backends.session_name("pgbench").startswith("pgrig-")  # the workload's


class FakeConn:
    """pg_stat_activity with two sessions of the run: one leaves, one waits in SyncRep."""

    def __init__(self) -> None:
        self.calls = 0
        self.terminated: list[int] = []

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        conn = self

        class Result:
            def fetchall(self) -> list[tuple[Any, ...]]:
                conn.calls += 1
                rows = [(20, "active", "IPC:SyncRep", 12.0)]
                return rows if conn.calls > 1 else [(10, "active", None, 0.1), *rows]

            def fetchone(self) -> tuple[bool]:
                conn.terminated.append(int(params[0]))
                return (True,)

        return Result()


def test_only_the_sessions_still_there_after_the_settle_time_are_ended() -> None:
    conn = FakeConn()
    ended = left_backends._end_on(conn, "lab", "pgbench-of-pgrig-1", settle_s=0.3)
    assert conn.terminated == [20]
    assert ended == [{"server": "lab", "pid": 20, "state": "active", "wait": "IPC:SyncRep",
                      "query_seconds": 12.0}]  # fmt: skip
