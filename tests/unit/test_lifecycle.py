"""A run's life cycle when pgrig dies: work dirs, heartbeat, partial series, spooled results,
and the commands that act on it (`runs mark/delete/import`, `archive upgrade`)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from typer.testing import CliRunner

from pgrig.archive import lease, spool
from pgrig.archive.artifacts import run_artifacts_dir
from pgrig.archive.records import RunRecord
from pgrig.archive.store import Archive
from pgrig.cli.app import _register
from pgrig.cli.app import app as pgrig_app
from pgrig.errors import PgrigError
from pgrig.load.core import lifecycle
from pgrig.load.engines import work_dirs

runner = CliRunner()


def _dead_owner() -> lease.Owner:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return lease.Owner(lease.Owner.me().host, proc.pid, time.time())


def test_owner_identity_survives_pid_reuse() -> None:
    me = lease.Owner.me()
    assert lease.is_gone(me) is False
    assert lease.is_gone(lease.Owner(me.host, me.pid, me.started - 3600)) is True  # reused pid
    assert lease.is_gone(_dead_owner()) is True
    assert lease.is_gone(lease.Owner("another-host", me.pid, me.started)) is None
    assert lease.Owner.from_columns(me.as_columns()) == me


def test_work_dirs_of_dead_owners_are_removed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PGRIG_WORK_DIR", str(tmp_path))
    mine = work_dirs.work_dir()
    assert mine.parent == tmp_path and mine.name.startswith("pgrig-run-")
    dead = tmp_path / "pgrig-run-dead"
    dead.mkdir()
    (dead / work_dirs.OWNER_FILE).write_text(json.dumps(_dead_owner().as_columns()))
    (dead / "txlog.1").write_text("1 2 3")
    unknown = tmp_path / "pgrig-run-no-owner"  # being created, or another version's
    unknown.mkdir()
    assert work_dirs.remove_orphan_work_dirs() == [dead]
    assert mine.is_dir() and unknown.is_dir() and not dead.exists()


def test_heartbeat_stamps_and_spools_off_the_calling_thread(pgrig_home: Path) -> None:
    with Archive() as archive:
        rec = RunRecord(env_name="e", workload="w", clients=1, threads=1)
        archive.begin_run(rec)
        assert rec.id is not None
        rows = {"pgbench": {"t": [0.0], "tps": [5.0]}}
        run_lease = lifecycle.RunLease(
            archive, rec, run_artifacts_dir(rec.id, archive=archive.url), lambda: rows
        )
        run_lease._heartbeat.interval = 0.05
        before = _heartbeat_at(archive, rec.id)
        run_lease.start()

        def spooled() -> bool:  # waited for, not slept: a loaded machine delays the thread
            return spool.read_partial_series(rec.id, archive=archive.url) == rows

        _wait_until(spooled)
        rows["pgbench"] = {"t": [0.0, 1.0], "tps": [5.0, 6.0]}
        _wait_until(spooled)
        run_lease.stop()
        assert _heartbeat_at(archive, rec.id) > before
        assert (
            spool.read_partial_series(rec.id, archive=archive.url) == rows
        )  # each row written once


def _wait_until(done: Callable[[], bool], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.02)


def _heartbeat_at(archive: Archive, run_id: int) -> datetime:
    engine = create_engine(archive._url)
    with engine.connect() as conn:
        value = conn.execute(text(f"SELECT heartbeat_at FROM runs WHERE id = {run_id}")).scalar()
    engine.dispose()
    return datetime.fromisoformat(str(value))


def test_a_heartbeat_error_never_reaches_the_run() -> None:
    calls: list[int] = []

    def beat() -> None:
        calls.append(1)
        raise RuntimeError("database is locked")

    hb = lease.Heartbeat(beat, interval=0.02).start()
    deadline = time.monotonic() + 30
    while len(calls) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    hb.stop()
    assert len(calls) >= 2 and hb.last_error == "RuntimeError: database is locked"


def test_results_are_spooled_when_the_archive_cannot_take_them(
    pgrig_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Archive() as archive:
        rec = RunRecord(env_name="e", workload="w", clients=1, threads=1)
        archive.begin_run(rec)
        rec.status, rec.tps = "ok", 123.0
        rec.series = {"pgbench": {"t": [0.0], "tps": [123.0]}}

        class Locked:
            url = archive.url

            def finish_run(self, _rec: RunRecord) -> None:
                raise RuntimeError("archive: database is locked")

        path = lifecycle.finish_or_spool(Locked(), rec)
        assert path == run_artifacts_dir(rec.id, archive=archive.url) / spool.RECORD_SPOOL
        url, back = spool.read_spool(path)
        assert url == archive.url and back == rec
        assert lifecycle.finish_or_spool(archive, rec) is None  # the archive takes it

        def disk_full(*_args: object) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(spool, "write_spool", disk_full)  # nor the disk: one line, no trace
        with pytest.raises(PgrigError, match=r"could not be written to disk \(\[Errno 28\]"):
            lifecycle.finish_or_spool(Locked(), rec)


def test_spooled_runs_are_found_by_their_markers(pgrig_home: Path) -> None:
    rec = RunRecord(env_name="e", workload="w", clients=1, threads=1, id=7)
    path = spool.write_spool(rec, "sqlite:///x", "locked")
    assert spool.pending_spools("sqlite:///x") == [path]
    assert spool.pending_spools("sqlite:///y") == []  # another archive's: never seen
    path.unlink()  # removed by hand: the marker goes at the next look
    assert spool.pending_spools("sqlite:///x") == [] and not list(
        (pgrig_home / "spooled").iterdir()
    )


def _cli(*args: str, input: str | None = None) -> tuple[int, str]:
    _register()
    result = runner.invoke(pgrig_app, list(args), input=input)
    if isinstance(result.exception, PgrigError):  # what main() turns into one line, exit 2
        return 2, result.output + str(result.exception)
    return result.exit_code, result.output


def _lost_run(archive: Archive) -> int:
    rec = RunRecord(env_name="e", workload="w", clients=1, threads=1)
    archive.begin_run(rec)
    assert rec.id is not None
    owner = _dead_owner()
    engine = create_engine(archive._url)
    with engine.begin() as conn:
        conn.execute(text(f"UPDATE runs SET lease_pid = {owner.pid} WHERE id = {rec.id}"))
    engine.dispose()
    return rec.id


def test_runs_mark_delete_and_import(pgrig_home: Path) -> None:
    with Archive(recover=False) as archive:
        lost = _lost_run(archive)
        live = RunRecord(env_name="e", workload="w", clients=1, threads=1)
        archive.begin_run(live)
    code, out = _cli("runs", "list")
    assert code == 0 and f"run {lost} marked lost: its pgrig process is gone" in out
    code, out = _cli("runs", "mark", str(live.id), "--status", "aborted")
    assert code == 2 and f"cannot mark run {live.id}: it is running (pgrig pid {os.getpid()}" in out
    code, out = _cli("runs", "mark", str(lost), "--status", "failed")
    assert code == 0 and f"run {lost} marked failed" in out
    code, out = _cli("runs", "delete", str(live.id), "--yes")
    assert code == 2 and f"cannot delete run {live.id}: it is running" in out
    code, out = _cli("runs", "delete", str(lost))  # no terminal, no --yes
    assert code == 2 and "add --yes" in out
    code, out = _cli("runs", "delete", str(lost), "--yes")
    assert code == 0 and f"run {lost} deleted" in out
    code, out = _cli("runs", "import")
    assert code == 0 and "no spooled runs" in out


def test_runs_import_of_a_path(pgrig_home: Path) -> None:
    with Archive() as archive:
        rec = RunRecord(env_name="e", workload="w", clients=1, threads=1)
        archive.begin_run(rec)
        rec.status, rec.ended_at = "ok", datetime.now(UTC)
        path = spool.write_spool(rec, archive.url, "locked")
        rec.id = None
    code, out = _cli("runs", "import", str(path.parent), "--archive", f"{archive.url}x")
    assert code == 2 and "belongs to archive" in out
    with Archive(recover=False) as archive:
        code, out = _cli("runs", "import", str(path.parent))  # opening imports it first
    assert code == 0 and "imported from" in out and not path.exists()


def test_archive_upgrade_says_what_it_did(pgrig_home: Path) -> None:
    code, out = _cli("archive", "upgrade")
    from pgrig.archive.schema import SCHEMA_HEAD

    assert code == 0 and f"schema created at {SCHEMA_HEAD}" in out
    code, out = _cli("archive", "upgrade")
    assert code == 0 and f"already at {SCHEMA_HEAD}" in out


def test_a_tuning_studys_best_run_is_not_deleted_without_force(archive: Any, url: str) -> None:
    from study_fakes import make_record
    from typer.testing import CliRunner

    from pgrig.archive.records import StudyRecord
    from pgrig.cli.runs import app as runs_app

    rec = make_record(tps=1000.0)
    archive.finish_run(rec)
    archive.create_study(StudyRecord(name="tune-lab", kind="tune", spec="{}"))
    archive.update_study_extra("tune-lab", {"best": {"trial": 3, "run_id": rec.id}})
    refused = CliRunner().invoke(runs_app, ["delete", str(rec.id), "--yes", "--archive", url])
    assert refused.exit_code != 0
    assert "the best trial's run of tuning study 'tune-lab'" in str(refused.exception or "")
    archive.get_run(rec.id)  # still there
    done = CliRunner().invoke(
        runs_app, ["delete", str(rec.id), "--yes", "--force", "--archive", url]
    )
    assert done.exit_code == 0, done.output


def test_a_finished_run_cannot_be_marked_lost(pgrig_home: Path) -> None:
    from pgrig.archive.records import RunRecord
    from pgrig.archive.store import Archive

    with Archive(f"sqlite:///{pgrig_home / 'archive.sqlite'}") as archive:
        rec = RunRecord(env_name="e", workload="w", clients=1, threads=1)
        rec.started_at = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
        archive.begin_run(rec)
        rec.status, rec.ended_at = "ok", datetime(2026, 3, 1, 12, 1, tzinfo=UTC)
        archive.finish_run(rec)
        with pytest.raises(PgrigError, match=r"cannot mark run \d+ lost: it finished \(ok\)"):
            archive.mark_run(rec.id, "lost", "by hand")
        assert archive.get_run(rec.id).status == "ok"
        archive.mark_run(rec.id, "failed", "by hand")  # a judgment on a result stays allowed
        assert archive.get_run(rec.id).status == "failed"
