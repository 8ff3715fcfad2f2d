"""Issue 25, must-fix 5 and 6: a run's files are keyed by its archive and its id. Two archives
never share <home>/artifacts/<run id>, the web serves each archive's own files, a spooled
record is never imported or deleted by a command of another archive, and files of runs
recorded before the key stay readable."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from pgrig.archive import artifacts, spool
from pgrig.archive.records import RunRecord
from pgrig.archive.store import Archive
from pgrig.web.app import create_app


def _run_with_file(archive: Archive, content: str) -> RunRecord:
    rec = RunRecord(env_name="e", workload="pgbench:tpcb", clients=1, threads=1)
    archive.begin_run(rec)
    assert rec.id is not None
    run_dir = artifacts.run_artifacts_dir(rec.id, archive=archive.url)
    (run_dir / "pgbench.stdout").write_text(content)
    rec.artifacts = {"pgbench.stdout": f"{artifacts.relative(run_dir)}/pgbench.stdout"}
    rec.status = "ok"
    archive.finish_run(rec)
    return rec


def test_two_archives_keep_their_run_1_apart_and_the_web_serves_each_its_own(
    pgrig_home: Path, tmp_path: Path
) -> None:
    home_url = f"sqlite:///{pgrig_home / 'archive.sqlite'}"
    other_url = f"sqlite:///{tmp_path / 'other.sqlite'}"
    with Archive(home_url) as home, Archive(other_url) as other:
        a, b = _run_with_file(home, "home's run 1"), _run_with_file(other, "other's run 1")
        assert a.id == b.id == 1
        assert a.artifacts != b.artifacts
    assert artifacts.archive_key(home_url) == "home"
    assert artifacts.archive_key(other_url) != artifacts.archive_key(home_url)
    pg = "postgresql+psycopg://bench:secret@db1:5432/lab"
    assert artifacts.archive_key(pg) == artifacts.archive_key(pg.replace("secret", "***"))
    assert artifacts.archive_key(pg) != artifacts.archive_key(pg.replace("db1", "db2"))
    for url, expected in ((home_url, "home's run 1"), (other_url, "other's run 1")):
        page = TestClient(create_app(url)).get("/runs/1/artifacts/pgbench.stdout")
        assert page.status_code == 200 and page.text == expected


def test_a_spool_is_never_imported_nor_deleted_by_another_archive(
    pgrig_home: Path, tmp_path: Path
) -> None:
    home_url = f"sqlite:///{pgrig_home / 'archive.sqlite'}"
    other_url = f"sqlite:///{tmp_path / 'other.sqlite'}"
    with Archive(home_url) as home:
        rec = RunRecord(env_name="e", workload="w", clients=1, threads=1)
        home.begin_run(rec)
        assert rec.id == 1
        rec.status, rec.tps = "ok", 42.0
        spooled = spool.write_spool(rec, home.url, "database is locked")
        with Archive(other_url, recover=False) as other:
            mine = RunRecord(env_name="e", workload="w", clients=1, threads=1)
            other.begin_run(mine)
            assert mine.id == 1
            mine.status = "ok"
            other.finish_run(mine)
    with Archive(other_url) as other:
        assert other.recovered == [] and spool.pending_spools(other.url) == []
        other.delete_run(1)
    assert spooled.exists()  # the home archive's spooled run 1 is still there
    with Archive(home_url) as home:
        assert home.recovered == [f"run 1 imported from {spooled}"]
        assert home.get_run(1).tps == 42.0


def test_files_of_runs_recorded_before_the_key_stay_readable(pgrig_home: Path) -> None:
    legacy = artifacts.legacy_run_dir(7)
    legacy.mkdir(parents=True)
    (legacy / "server.log").write_text("old")
    assert artifacts.artifact_path("7/server.log").read_text() == "old"
    url = f"sqlite:///{pgrig_home / 'archive.sqlite'}"
    artifacts.remove_run_artifacts(7, archive=url, recorded={"x": "home/7/x"})
    assert legacy.is_dir()  # not this run's record: left alone
    artifacts.remove_run_artifacts(7, archive=url, recorded={"server.log": "7/server.log"})
    assert not legacy.exists()


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:"])
def test_in_memory_archives_have_a_key(url: str) -> None:
    assert artifacts.archive_key(url) == "memory"
