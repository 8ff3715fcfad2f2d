"""The archive store: a back-end independent suite (ArchiveSuite) run here on SQLite and, in
tests/integration/test_archive_postgres.py, on both SQLite and a real PostgreSQL 15."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from pgrig import paths
from pgrig.archive.artifacts import run_artifacts_dir
from pgrig.archive.lease import GRACE_S
from pgrig.archive.records import (
    LatencyStats,
    RunFilter,
    RunRecord,
    ScriptResult,
    StudyRecord,
)
from pgrig.archive.spool import PartialSeries, pending_spools, write_spool
from pgrig.archive.store import SCHEMA_HEAD, Archive, mask_url, normalize_url
from pgrig.errors import NotFound, PgrigError
from pgrig.request import LOAD_FIELDS, LoadParams, load_values

CHILD_TABLES = ("run_scripts", "run_tags", "run_blobs", "run_series")

# A value for every load parameter of the run request, none of them its default: a field added
# to the model fails test_every_load_parameter_is_stored_and_read_back until it is added here,
# and then until the archive stores it.
LOAD_SAMPLE = {
    "workload": "tpcc",
    "via": "pgbouncer",
    "clients": 16,
    "threads": 4,
    "duration_s": 30.5,
    "transactions_per_client": 1000,
    "warmup_s": 5.0,
    "rate": 1500.5,
    "latency_limit_ms": 25.0,
    "protocol": "prepared",
    "max_tries": 10,
    "connect": "socket",
    "server_cpus": "0-1",
    "client_cpus": "2,3",
    "defines": {"tpcc_w": "1", "c_last": "157"},
    "extra_pgbench_args": ["--random-seed=7"],
    "tpcc_mix": {
        "new_order": 45,
        "payment": 43,
        "order_status": 4,
        "delivery": 4,
        "stock_level": 4,
    },
    "all_warehouses": True,
    "tpcc_stock_level": "hammerdb",
    "keep_txlog": True,
    "txlog": "sampled",
}


def full_record(**overrides: object) -> RunRecord:
    """A run as the runner would fill it: every kind of field set, series included."""
    n = 30
    rec = RunRecord(
        env_name="pg15",
        workload="pgbench:tpcb-like",
        clients=20,
        threads=2,
        started_at=datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC),
        managed=False,
        target="postgresql://bench@10.0.0.5:5432/testdb?password=***",
        server_version="15.14",
        server_major=15,
        pgbench_version="pgbench (PostgreSQL) 15.14",
        database="testdb",
        scenario="pgbench",
        scale=100,
        db_size_bytes=1_567_000_000,
        via="pgbouncer",
        duration_s=60.0,
        transactions_per_client=None,
        warmup_s=10.0,
        rate=5000.0,
        latency_limit_ms=50.0,
        protocol="prepared",
        command="pgbench -c 20 -j 2 -T 70 -M prepared -b tpcb-like testdb",
        note="shared_buffers 4GB, 'quoted' text",
        owner="tester",
        tags={"iteration": "3", "purpose": "tuning"},
        measured_s=60.0,
        tps=1234.5678,
        transactions=74074,
        failed=3,
        retried=2,
        skipped=1,
        rollbacks=0,
        nopm=None,
        tpm=None,
        latency=LatencyStats(16.2, 4.1, 15.0, 21.0, 24.5, 31.2, 55.0, 120.7),
        cpu_user=55.5,
        cpu_system=20.25,
        cpu_iowait=3.0,
        cpu_idle=21.25,
        hit_ratio=99.87,
        scripts=[
            ScriptResult(
                0, "pgbench:tpcb-like", 1, 70000, 3, 2, 1, 0, 1166.7, LatencyStats(p95=24.0)
            ),
            ScriptResult(1, "select.sql", 3, 4074, 0, 0, 0, 0, 67.9, LatencyStats(1.0, max=9.5)),
        ],
        settings={
            "shared_buffers": {
                "setting": "524288",
                "unit": "8kB",
                "boot_val": "1024",
                "source": "configuration file",
                "context": "postmaster",
            },
            "work_mem": {"setting": "4096", "unit": "kB", "boot_val": "4096", "source": "default"},
        },
        settings_layers={"profile": {"shared_buffers": "4GB"}, "run": {"work_mem": "4MB"}},
        host={"hostname": "bench1", "cpu_logical": 12, "ram_bytes": 64 << 30, "disks": [{"a": 1}]},
        series={
            "pgbench": {
                "t": list(range(-5, n - 5)),
                "tps": [1200.0 + i * 0.5 for i in range(n)],
                "p95": [None if i == 7 else 24.0 + i / 10 for i in range(n)],
            },
            "os": {"t": [i + 0.01 for i in range(-5, n - 5)], "cpu_user": [50.0] * n},
            "pg": {"t": list(range(-5, n - 5)), "xact_commit": list(range(0, n * 1000, 1000))},
        },
        artifacts={"server.log": "1/server.log.gz"},
        extra={"dataset": {"kind": "pgbench", "scale": 100}, "defines": {"x": "1"}},
    )
    for k, v in overrides.items():
        setattr(rec, k, v)
    return rec


def light(rec: RunRecord) -> RunRecord:
    """What list_runs gives for `rec`: no scripts, blobs or series; host summary only."""
    return RunRecord(
        **{
            **rec.__dict__,
            "scripts": [],
            "settings": {},
            "settings_layers": {},
            "series": {},
            "artifacts": {},
            "extra": {},
            "host": {"hostname": "bench1", "cpus": 12},
            "latency": rec.latency,
        }
    )


def child_rows(url: str, run_id: int) -> dict[str, int]:
    engine = create_engine(normalize_url(url))
    try:
        with engine.connect() as conn:
            return {
                t: conn.execute(
                    text(f"SELECT count(*) FROM {t} WHERE run_id = :i"), {"i": run_id}
                ).scalar_one()
                for t in CHILD_TABLES
            }
    finally:
        engine.dispose()


def dead_pid() -> int:
    """The pid of a process that has exited."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def set_study_lease(url: str, name: str, pid: int, host: str | None = None) -> None:
    """Rewrite a running study's lease (extra["lease"]) as another process would have left it."""
    engine = create_engine(normalize_url(url))
    try:
        with engine.begin() as conn:
            extra = json.loads(
                conn.execute(
                    text("SELECT extra FROM studies WHERE name = :n"), {"n": name}
                ).scalar()
                or "{}"
            )
            extra["lease"] = {**extra["lease"], "lease_pid": pid}
            if host is not None:
                extra["lease"]["lease_host"] = host
            conn.execute(
                text("UPDATE studies SET extra = :e WHERE name = :n"),
                {"e": json.dumps(extra), "n": name},
            )
    finally:
        engine.dispose()


def set_lease(
    url: str,
    run_id: int,
    *,
    pid: int | None = None,
    host: str | None = None,
    heartbeat_age_s: float | None = None,
) -> None:
    """Rewrite a run's lease as another process or host would have left it."""
    values: dict[str, object] = {}
    if pid is not None:
        values["lease_pid"] = pid
    if host is not None:
        values["lease_host"] = host
    if heartbeat_age_s is not None:
        at = datetime.now(UTC) - timedelta(seconds=heartbeat_age_s)
        values["heartbeat_at"] = at.replace(tzinfo=None) if url.startswith("sqlite") else at
    engine = create_engine(normalize_url(url))
    try:
        with engine.begin() as conn:
            sets = ", ".join(f"{k} = :{k}" for k in values)
            conn.execute(text(f"UPDATE runs SET {sets} WHERE id = :id"), {**values, "id": run_id})
    finally:
        engine.dispose()


class ArchiveSuite:
    """Checks every back end must pass. Subclasses provide `archive_url` (a fresh archive)."""

    @pytest.fixture
    def archive(self, archive_url: str) -> Iterator[Archive]:
        with Archive(archive_url) as a:
            yield a

    def test_round_trip_of_a_full_record(self, archive: Archive) -> None:
        rec = full_record()
        run_id = archive.begin_run(rec)
        assert rec.id == run_id and rec.status == "running"
        rec.status = "ok"
        rec.ended_at = datetime(2026, 3, 1, 12, 1, 10, tzinfo=UTC)
        archive.finish_run(rec)
        got = archive.get_run(run_id)
        assert got == rec
        assert got.non_default_settings() == {"shared_buffers": rec.settings["shared_buffers"]}
        assert archive.run_series(run_id) == rec.series
        assert archive.run_series(run_id, ["os"]) == {"os": rec.series["os"]}

    def test_every_load_parameter_is_stored_and_read_back(self, archive: Archive) -> None:
        assert set(LOAD_SAMPLE) == set(LOAD_FIELDS)
        defaults = LoadParams.model_construct(workload="w")
        assert all(LOAD_SAMPLE[k] != getattr(defaults, k) for k in LOAD_FIELDS)
        # Storage is not validation: a record holds what ran (duration and transactions here).
        params = LoadParams.model_construct(**LOAD_SAMPLE)
        rec = RunRecord(**load_values(params), env_name="e", status="ok")
        archive.finish_run(rec)
        for got in (archive.get_run(rec.id), archive.list_runs()[0]):
            assert {k: getattr(got, k) for k in LOAD_FIELDS} == LOAD_SAMPLE

    def test_list_is_light(self, archive: Archive) -> None:
        rec = full_record(status="ok")
        archive.finish_run(rec)
        (listed,) = archive.list_runs()
        assert listed == light(rec)

    def test_running_run_is_visible_at_once_to_another_process(
        self, archive: Archive, archive_url: str
    ) -> None:
        rec = full_record()
        archive.begin_run(rec)
        with Archive(archive_url) as other:
            (seen,) = other.list_runs(RunFilter(status="running", tag=("purpose", "tuning")))
            assert seen.id == rec.id and seen.ended_at is None and seen.tps == rec.tps

    def test_failed_run_is_kept_with_its_error(self, archive: Archive) -> None:
        rec = RunRecord(env_name="e", workload="tpcc", clients=1, threads=1)
        archive.begin_run(rec)
        rec.status, rec.error = "failed", "pgbench: connection to server failed"
        archive.finish_run(rec)
        got = archive.get_run(rec.id)
        assert (got.status, got.error) == ("failed", "pgbench: connection to server failed")
        assert got.ended_at is not None and got.tps is None
        assert [r.id for r in archive.list_runs(RunFilter(status="failed"))] == [rec.id]

    def test_finish_failure_leaves_no_partial_rows(
        self, archive: Archive, archive_url: str
    ) -> None:
        rec = full_record()
        run_id = archive.begin_run(rec)
        rec.status = "ok"
        # Two scripts with the same number violate the primary key of run_scripts, which is
        # written last: the run row, tags, blobs and series written before must roll back.
        rec.scripts = [ScriptResult(0, "a"), ScriptResult(0, "b")]
        with pytest.raises(Exception, match=r"(?i)unique|duplicate"):
            archive.finish_run(rec)
        got = archive.get_run(run_id)
        assert got.status == "running" and got.ended_at is None
        counts = child_rows(archive_url, run_id)
        assert counts == {"run_scripts": 0, "run_tags": 2, "run_blobs": 0, "run_series": 0}
        assert got.tags == rec.tags  # the tags stored by begin_run are intact

    def test_finish_without_begin_inserts_the_whole_run(self, archive: Archive) -> None:
        rec = full_record(status="aborted", error="interrupted")
        archive.finish_run(rec)
        assert rec.id is not None and rec.ended_at is not None
        assert archive.get_run(rec.id) == rec

    def test_finish_twice_replaces_children(self, archive: Archive, archive_url: str) -> None:
        rec = full_record(status="ok")
        archive.finish_run(rec)
        rec.tags = {"only": "one"}
        rec.series = {"pgbench": {"t": [0], "tps": [1.0]}}
        rec.scripts = rec.scripts[:1]
        archive.finish_run(rec)
        assert archive.get_run(rec.id) == rec
        counts = child_rows(archive_url, rec.id)
        assert counts == {"run_scripts": 1, "run_tags": 1, "run_blobs": 5, "run_series": 1}

    def test_list_filters(self, archive: Archive) -> None:
        archive.create_study(StudyRecord(name="s1", kind="sweep", spec="[study]"))
        made = [
            full_record(env_name="a", status="ok", server_major=15, tags={"k": "1"}),
            full_record(env_name="b", status="failed", server_major=18, workload="tpcc"),
            full_record(env_name="a", status="ok", server_major=18, study="s1", note="the 100%"),
            full_record(env_name="b", status="aborted", server_major=15, tags={"k": "2"}),
        ]
        for rec in made:
            archive.finish_run(rec)
        ids = [r.id for r in made]

        def listed(**kw: object) -> list[int]:
            return [r.id for r in archive.list_runs(RunFilter(**kw), order="id")]

        assert listed() == ids
        assert listed(env_name="a") == [ids[0], ids[2]]
        assert listed(status="failed") == [ids[1]]
        assert listed(workload="tpcc") == [ids[1]]
        assert listed(server_major=15) == [ids[0], ids[3]]
        assert listed(study="s1") == [ids[2]]
        assert listed(tag=("k", "2")) == [ids[3]]
        assert listed(text="100%") == [ids[2]]
        assert listed(text="100_") == []
        assert listed(env_name="a", server_major=18) == [ids[2]]
        assert listed(env_name="nope") == []
        assert archive.count_runs() == 4
        assert archive.count_runs(RunFilter(env_name="b")) == 2
        assert archive.list_runs()[0].id == ids[-1]  # newest first by default
        assert [r.id for r in archive.list_runs(limit=2, offset=1)] == [ids[2], ids[1]]
        assert archive.list_runs(RunFilter(study="s1"))[0].study == "s1"

    def test_order_by_results(self, archive: Archive) -> None:
        for tps in (10.0, None, 30.0, 20.0):
            archive.finish_run(full_record(status="ok", tps=tps))
        assert [r.tps for r in archive.list_runs(order="-tps")] == [30.0, 20.0, 10.0, None]
        assert [r.tps for r in archive.list_runs(order="tps")] == [10.0, 20.0, 30.0, None]
        with pytest.raises(PgrigError, match="cannot order runs by 'bogus'"):
            archive.list_runs(order="-bogus")

    def test_bad_input_is_a_clear_error(self, archive: Archive) -> None:
        with pytest.raises(PgrigError, match="unknown run status 'done'"):
            archive.list_runs(RunFilter(status="done"))
        with pytest.raises(NotFound, match="study 'ghost' is not in archive"):
            archive.begin_run(full_record(study="ghost"))
        assert archive.count_runs() == 0
        with pytest.raises(NotFound, match="run 999 is not in archive"):
            archive.get_run(999)
        with pytest.raises(NotFound, match="run 999 is not in archive"):
            archive.run_series(999)

    def test_delete_run(self, archive: Archive, archive_url: str) -> None:
        keep, gone = full_record(status="ok"), full_record(status="ok")
        archive.finish_run(keep)
        archive.finish_run(gone)
        archive.delete_run(gone.id)
        assert [r.id for r in archive.list_runs()] == [keep.id]
        assert child_rows(archive_url, gone.id) == dict.fromkeys(CHILD_TABLES, 0)
        assert archive.get_run(keep.id) == keep
        with pytest.raises(NotFound):
            archive.delete_run(gone.id)

    def test_studies(self, archive: Archive) -> None:
        spec = '[study]\nname = "tune"\n'
        made = archive.create_study(
            StudyRecord(name="tune", kind="iterations", spec=spec, extra={"n": 12})
        )
        assert made.id is not None and made.created_at is not None
        with pytest.raises(PgrigError, match=r"study 'tune' already exists.*resume it"):
            archive.create_study(StudyRecord(name="tune", kind="sweep", spec=""))
        resumed = archive.create_study(StudyRecord(name="tune", kind="x", spec=""), resume=True)
        assert resumed == made
        assert archive.get_study("tune") == made
        archive.create_study(StudyRecord(name="other", kind="sweep", spec=""))
        assert [s.name for s in archive.list_studies()] == ["tune", "other"]
        archive.set_study_status("tune", "done")
        assert archive.get_study("tune").status == "done"
        with pytest.raises(PgrigError, match="unknown study status"):
            archive.set_study_status("tune", "weird")
        with pytest.raises(NotFound, match="study 'nope'"):
            archive.get_study("nope")
        with pytest.raises(NotFound):
            archive.set_study_status("nope", "done")
        for point in ("base", "sb=4GB"):
            for repeat in (0, 1):
                archive.finish_run(
                    full_record(status="ok", study="tune", study_point=point, repeat=repeat)
                )
        archive.finish_run(full_record(status="ok", study="other"))
        runs = archive.study_runs("tune")
        assert [(r.study_point, r.repeat) for r in runs] == [
            ("base", 0),
            ("base", 1),
            ("sb=4GB", 0),
            ("sb=4GB", 1),
        ]
        assert all(r.study == "tune" and not r.series for r in runs)
        with pytest.raises(NotFound):
            archive.study_runs("nope")

    def test_study_extra_updates_and_empty_study_removal(self, archive: Archive) -> None:
        archive.create_study(StudyRecord(name="t", kind="tune", spec="{}", extra={"a": 1}))
        archive.update_study_extra("t", {"b": [1, 2], "a": 3})
        assert archive.get_study("t").extra == {"a": 3, "b": [1, 2]}
        with pytest.raises(NotFound):
            archive.update_study_extra("nope", {})
        archive.create_study(StudyRecord(name="used", kind="tune", spec="{}"))
        archive.finish_run(full_record(status="ok", study="used"))
        assert not archive.delete_empty_study("used")  # it holds a run: kept
        assert archive.delete_empty_study("t")
        assert [s.name for s in archive.list_studies()] == ["used"]

    # --- the life cycle: leases, lost runs, spooled records (archive/lease.py, spool.py) ---------

    def test_a_begun_run_holds_a_live_lease(self, archive: Archive, archive_url: str) -> None:
        rec = full_record()
        archive.begin_run(rec)
        owner = archive.running_owner(rec.id)
        assert owner == f"pid {os.getpid()} on {socket.gethostname()}"
        archive.heartbeat(rec.id)
        with Archive(archive_url) as again:  # opening recovers: a live run is left alone
            assert again.mark_lost_runs() == [] and again.recovered == []
        with pytest.raises(PgrigError, match=rf"cannot delete run {rec.id}: it is running"):
            archive.delete_run(rec.id)
        with pytest.raises(PgrigError, match=rf"cannot mark run {rec.id}: it is running"):
            archive.mark_run(rec.id, "lost", "by hand")

    def test_a_run_whose_owner_died_is_lost_with_its_partial_series(
        self, archive: Archive, archive_url: str
    ) -> None:
        rec = full_record()
        archive.begin_run(rec)
        set_lease(archive_url, rec.id, pid=dead_pid())
        partial = PartialSeries(run_artifacts_dir(rec.id, archive=archive.url))
        partial.append({"pgbench": {"t": [0.0, 1.0], "tps": [10.0, 12.0]}})
        partial.append({"pgbench": {"t": [0.0, 1.0, 2.0], "tps": [10.0, 12.0, 11.0]}})
        with partial.path.open("a") as f:
            f.write('{"k": "pgbench", "r": {"t"')  # the writer died mid-line
        with Archive(archive_url) as again:
            assert again.recovered == [f"run {rec.id} marked lost: its pgrig process is gone"]
            got = again.get_run(rec.id)
            assert got.status == "lost" and "ended without finishing" in (got.error or "")
            assert got.ended_at is not None
            assert got.series == {"pgbench": {"t": [0.0, 1.0, 2.0], "tps": [10.0, 12.0, 11.0]}}
            assert again.mark_lost_runs() == []  # once
            assert [r.id for r in again.list_runs(RunFilter(status="lost"))] == [rec.id]

    def test_a_lost_run_interrupts_its_study(self, archive: Archive, archive_url: str) -> None:
        archive.create_study(StudyRecord(name="s", kind="sweep", spec="x"))
        rec = full_record(study="s")
        archive.begin_run(rec)
        set_lease(archive_url, rec.id, pid=dead_pid())
        assert archive.mark_lost_runs() == [rec.id]
        assert archive.get_study("s").status == "interrupted"

    def test_a_study_whose_process_died_between_runs_is_interrupted(
        self, archive: Archive, archive_url: str
    ) -> None:
        """No running run tells of a study killed between two runs (kill -9): its own lease
        does; a live one, another host's, an older pgrig's (no lease) and one with a running
        run (whose own lease decides) are left running."""
        for name in ("dead", "alive", "elsewhere", "old", "busy"):
            archive.create_study(StudyRecord(name=name, kind="sweep", spec="x", extra={"k": 1}))
        assert archive.get_study("alive").extra == {"k": 1}  # the lease is the archive's own
        set_study_lease(archive_url, "dead", dead_pid())
        set_study_lease(archive_url, "elsewhere", dead_pid(), host="another-host")
        set_study_lease(archive_url, "busy", dead_pid())
        archive.set_study_status("old", "running")
        engine = create_engine(normalize_url(archive_url))
        with engine.begin() as conn:  # a study begun by an older pgrig: no lease
            conn.execute(text("UPDATE studies SET extra = NULL WHERE name = 'old'"))
        engine.dispose()
        run = full_record(study="busy")
        archive.begin_run(run)  # this process: alive
        with Archive(archive_url) as again:
            said = "study dead marked interrupted: its pgrig process is gone (resumable)"
            assert said in again.recovered
            status = {s.name: s.status for s in again.list_studies()}
            assert status == {
                "dead": "interrupted",
                "alive": "running",
                "elsewhere": "running",
                "old": "running",
                "busy": "running",
            }
            assert again.mark_abandoned_studies() == []  # once
            again.set_study_status("dead", "running")  # resumed: this process's lease
            assert again.mark_abandoned_studies() == []
            assert again.get_study("dead").extra == {"k": 1}

    def test_another_hosts_run_is_lost_only_when_its_heartbeat_expired(
        self, archive: Archive, archive_url: str
    ) -> None:
        rec = full_record()
        archive.begin_run(rec)
        set_lease(archive_url, rec.id, host="another-host", heartbeat_age_s=5)
        assert archive.mark_lost_runs() == []
        set_lease(archive_url, rec.id, host="another-host", heartbeat_age_s=GRACE_S + 30)
        assert archive.mark_lost_runs() == [rec.id]

    def test_a_run_without_lease_is_lost_after_a_day(self, archive: Archive) -> None:
        old = full_record(started_at=datetime.now(UTC) - timedelta(days=2))
        fresh = full_record(started_at=None)
        archive.finish_run(old)  # status "running", inserted without begin_run: no lease
        archive.finish_run(fresh)
        assert archive.mark_lost_runs() == [old.id]
        assert "older pgrig" in (archive.get_run(old.id).error or "")
        assert archive.get_run(fresh.id).status == "running"

    def test_mark_and_delete(self, archive: Archive, archive_url: str) -> None:
        rec = full_record()
        archive.begin_run(rec)
        set_lease(archive_url, rec.id, host="another-host", heartbeat_age_s=GRACE_S + 30)
        with pytest.raises(PgrigError, match=r"--status 'ok': a run can be marked aborted"):
            archive.mark_run(rec.id, "ok", "x")
        archive.mark_run(rec.id, "aborted", "marked aborted by me")
        got = archive.get_run(rec.id)
        assert (got.status, got.error) == ("aborted", "marked aborted by me")
        assert got.ended_at is not None
        run_artifacts_dir(rec.id, archive=archive.url).joinpath("server.log").write_text("x")
        archive.delete_run(rec.id)
        assert not run_artifacts_dir(rec.id, create=False, archive=archive.url).exists()
        assert child_rows(archive_url, rec.id) == dict.fromkeys(CHILD_TABLES, 0)
        with pytest.raises(NotFound):
            archive.mark_run(rec.id, "lost", "x")

    def test_a_spooled_record_is_imported_once_whole(
        self, archive: Archive, archive_url: str
    ) -> None:
        rec = full_record()
        archive.begin_run(rec)
        rec.status, rec.ended_at = "ok", datetime(2026, 3, 1, 12, 1, 10, tzinfo=UTC)
        path = write_spool(rec, archive.url, "OperationalError: database is locked")
        set_lease(archive_url, rec.id, pid=dead_pid())  # the run's process has exited since
        with Archive(archive_url) as again:
            assert again.recovered == [f"run {rec.id} imported from {path}"]
            assert again.get_run(rec.id) == rec
        assert not path.exists() and pending_spools(archive.url) == []
        assert not list(paths.spooled_dir().iterdir())  # its marker went with it
        counts = child_rows(archive_url, rec.id)
        write_spool(rec, archive.url, "again")  # importing twice writes the same rows
        assert archive.import_spooled(path) == (rec.id, True)  # imported before
        assert child_rows(archive_url, rec.id) == counts and archive.get_run(rec.id) == rec

    def test_a_spool_of_another_archive_or_run_is_refused(self, archive: Archive) -> None:
        rec = full_record()
        archive.begin_run(rec)
        path = write_spool(rec, "sqlite:///elsewhere.sqlite", "x")
        with pytest.raises(PgrigError, match=r"belongs to archive sqlite:///elsewhere.sqlite"):
            archive.import_spooled(path)
        rec.env_name = "not-this-one"
        path = write_spool(rec, archive.url, "x")
        with pytest.raises(PgrigError, match=rf"run {rec.id} in archive .* is not the run"):
            archive.import_spooled(path)
        assert path.exists() and archive.get_run(rec.id).status == "running"

    def test_long_server_versions_and_names_are_stored(self, archive: Archive) -> None:
        version = (
            "PostgreSQL 18.6 on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14) "
            "12.2.0, 64-bit"
        )
        assert len(version) > 64
        rec = full_record(status="ok", server_version=version, owner="o" * 300)
        rec.tags = {"k" * 300: "v"}
        archive.finish_run(rec)
        got = archive.get_run(rec.id)
        assert (got.server_version, got.owner, got.tags) == (version, "o" * 300, rec.tags)

    def test_reopening_is_idempotent(self, archive: Archive, archive_url: str) -> None:
        archive.finish_run(full_record(status="ok"))
        for _ in range(2):
            with Archive(archive_url) as again:
                assert again.schema_revision() == SCHEMA_HEAD
                assert again.count_runs() == 1

    def test_concurrent_writers(self, archive: Archive, archive_url: str) -> None:
        errors: list[BaseException] = []

        def write() -> None:
            try:
                with Archive(archive_url) as a:
                    for _ in range(5):
                        rec = full_record()
                        a.begin_run(rec)
                        rec.status = "ok"
                        a.finish_run(rec)
            except BaseException as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=write) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert archive.count_runs(RunFilter(status="ok")) == 15


class TestSqliteArchive(ArchiveSuite):
    @pytest.fixture
    def archive_url(self, pgrig_home: Path) -> str:
        return f"sqlite:///{pgrig_home / 'sub' / 'archive.sqlite'}"


def test_default_archive_is_sqlite_in_home(pgrig_home: Path) -> None:
    with Archive() as a:
        assert a.url == f"sqlite:///{pgrig_home / 'archive.sqlite'}"
    assert (pgrig_home / "archive.sqlite").is_file()


def test_sqlite_uses_wal(pgrig_home: Path) -> None:
    url = f"sqlite:///{pgrig_home / 'a.sqlite'}"
    Archive(url).close()
    engine = create_engine(url)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    engine.dispose()


def test_urls_are_normalised_and_masked(pgrig_home: Path) -> None:
    assert normalize_url("postgresql://u:pw@h/db") == "postgresql+psycopg://u:pw@h/db"
    assert normalize_url("postgres://u@h/db") == "postgresql+psycopg://u@h/db"
    assert normalize_url(str(pgrig_home / "x.sqlite")) == f"sqlite:///{pgrig_home}/x.sqlite"
    assert mask_url("postgresql+psycopg://u:secret@h:5432/db") == (
        "postgresql+psycopg://u:***@h:5432/db"
    )
    with pytest.raises(PgrigError, match=r"unsupported archive URL mysql://u:\*\*\*@h/db"):
        Archive("mysql://u:secret@h/db")


def test_unreadable_archive_is_a_clear_error(pgrig_home: Path) -> None:
    bad = pgrig_home / "junk.sqlite"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(PgrigError, match=r"cannot open archive sqlite:///.*junk.sqlite"):
        Archive(f"sqlite:///{bad}")


def test_the_sqlite_write_wait_is_30_s_or_the_one_given(monkeypatch: pytest.MonkeyPatch) -> None:
    from pgrig.archive.engine import sqlite_timeout_s

    monkeypatch.delenv("PGRIG_ARCHIVE_WAIT_S", raising=False)
    assert sqlite_timeout_s() == 30
    monkeypatch.setenv("PGRIG_ARCHIVE_WAIT_S", "2.5")
    assert sqlite_timeout_s() == 2.5
    for bad in ("0", "-1", "nan", "3601", "soon"):
        monkeypatch.setenv("PGRIG_ARCHIVE_WAIT_S", bad)
        with pytest.raises(PgrigError, match=f"PGRIG_ARCHIVE_WAIT_S={bad}: a number of seconds"):
            sqlite_timeout_s()
