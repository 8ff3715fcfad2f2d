"""Issue 30 leftovers: a trk- environment a user made is refused before a series exists; the
backends a run left on its server are described as they waited."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pgrig.errors import NotFound, PgrigError
from pgrig.load.core import left_backends
from pgrig.record.documents import BackendEnded
from pgrig.track import flow, runner
from pgrig.track.versions import VersionPoint


class NoSeries:
    """An archive without the series (nothing of it may be made)."""

    url = "sqlite:///fake"

    def __init__(self) -> None:
        self.made: list[str] = []

    def study_runs(self, name: str) -> list[Any]:
        raise NotFound(name)

    def get_study(self, name: str) -> Any:
        raise NotFound(name)

    def create_study(self, rec: Any) -> None:
        self.made.append(rec.name)


def _env(home: Path, name: str, mark: str | None = None) -> None:
    d = home / "envs" / name
    d.mkdir(parents=True)
    (d / "env.json").write_text(json.dumps({"name": name, "version": "18.6"}))
    if mark is not None:
        (d / runner.SERIES_MARK).write_text(mark + "\n")


def test_a_users_trk_environment_is_refused_before_the_series_exists(
    pgrig_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _env(pgrig_home, "trk-mine-18.6")
    archive = NoSeries()
    monkeypatch.setattr(flow, "plan", lambda text, bisect: ([VersionPoint("18.6", "18.6")], {}))
    monkeypatch.setattr(flow, "check_settings", lambda spec, points, install=None: None)
    spec = flow.make_spec(
        "mine", workload="pgbench:select-only", clients=1, threads=1, duration=1, warmup=0,
        protocol="simple", scale=1, repeat=1, profile="default", settings={},
    )  # fmt: skip
    with pytest.raises(PgrigError, match="made by a user, not by a series: series 'mine'"):
        flow.run(archive, "mine", spec, "18.6")  # type: ignore[arg-type]
    assert archive.made == []  # no series, so no run row either


def test_the_series_own_and_another_series_environments(pgrig_home: Path) -> None:
    _env(pgrig_home, "trk-s-18.6", mark="s")
    _env(pgrig_home, "trk-s-17.2", mark="other")
    runner.refuse_foreign_environments(NoSeries(), "s", ["18.6", "16.1"])  # its own; none
    with pytest.raises(PgrigError, match="made by series 'other'"):
        runner.refuse_foreign_environments(NoSeries(), "s", ["18.6", "17.2"])


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
