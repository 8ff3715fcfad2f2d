"""A run's life cycle against real servers and a real pgbench: kill -9 mid-run, a locked
SQLite archive at the end of a run, and runs on a PostgreSQL archive.

Environment "lab" (PostgreSQL 15, pgbench scale 1) in a scratch home for the module; the
PostgreSQL archive is a throwaway PostgreSQL 15 cluster on this module's ports.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import psycopg
import pytest
import servers
from servers import PG15, pgrig

PORTS = range(27000, 27050)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not (PG15 / "postgres").exists(), reason="PostgreSQL 15 not installed"),
]


@pytest.fixture(scope="module")
def lab() -> Iterator[str]:
    with servers.pgbench_lab("pgrig-lifecycle-test-") as name:
        yield name


@pytest.fixture(scope="module")
def pg_archive() -> Iterator[servers.Server]:
    with servers.running(servers.Server(PG15, PORTS, "pgrig-lifecycle-archive-")) as server:
        yield server


def _work_dirs_of(pid: int) -> list[Path]:
    found = []
    for path in Path("/dev/shm").glob("pgrig-run-*"):
        with contextlib.suppress(OSError, ValueError):
            if json.loads((path / "OWNER").read_text())["lease_pid"] == pid:
                found.append(path)
    return found


def _show(run_id: int, *archive: str) -> dict:
    return json.loads(pgrig("runs", "show", str(run_id), "--json", *archive).stdout)


def test_kill_9_mid_run_leaves_a_lost_run_with_its_partial_series(lab: str) -> None:
    proc = servers.start_long_run(lab)
    try:
        run = servers.wait_for_running()
        _wait_for_partial_series(run["id"], {"pgbench", "os", "pg"})
        children = psutil.Process(proc.pid).children(recursive=True)
        work = _work_dirs_of(proc.pid)
        assert len(work) == 1
        proc.kill()
        proc.wait(timeout=10)
    finally:
        with contextlib.suppress(Exception):
            proc.kill()
        for child in children:  # pgbench outliving pgrig is another issue's (PDEATHSIG)
            with contextlib.suppress(psutil.Error):
                child.kill()
    listed = pgrig("runs", "list", "--json")
    (lost,) = [r for r in json.loads(listed.stdout) if r["id"] == run["id"]]
    assert lost["status"] == "lost", listed.stderr
    assert f"run {run['id']} marked lost" in listed.stderr
    assert not work[0].exists()
    shown = _show(run["id"])
    assert {"pgbench", "os", "pg"} <= set(shown["series_kinds"])
    assert "ended without finishing" in shown["error"]
    again = pgrig("runs", "list", "--status", "running", "--json")
    assert json.loads(again.stdout) == []


def _wait_for_partial_series(run_id: int, kinds: set[str], timeout: float = 60) -> None:
    """Until the run's heartbeat has put a row of each series kind in its partial file."""
    home = Path(os.environ["PGRIG_HOME"])
    path = home / "artifacts" / "home" / str(run_id) / "series.partial.jsonl"
    deadline = time.time() + timeout
    while time.time() < deadline:
        with contextlib.suppress(OSError):
            # the text after the last newline may be a line being written
            seen = {json.loads(line)["k"] for line in path.read_text().split("\n")[:-1]}
            if kinds <= seen:
                return
        time.sleep(0.2)
    raise AssertionError(f"run {run_id}'s partial series has no rows of {sorted(kinds)}")


def _first_running(read: Callable[[], tuple | None], where: str, timeout: float = 60) -> int:
    """The id of the running run, `read` from the archive itself every 50 ms: these tests act
    within a run of 4-5 s, and on a loaded machine one `pgrig runs list` (what
    servers.wait_for_running polls with) can take longer than that."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        with contextlib.suppress(sqlite3.Error, psycopg.Error):
            row = read()
            if row is not None:
                return int(row[0])
        time.sleep(0.05)
    raise AssertionError(f"no running run appeared in {where}")


RUNNING = "SELECT id FROM runs WHERE status = 'running'"


def _running_in(archive: Path) -> int:
    def read() -> tuple | None:
        with contextlib.closing(sqlite3.connect(archive, timeout=5)) as db:
            return db.execute(RUNNING).fetchone()

    return _first_running(read, str(archive))


def _running_on(port: int) -> int:
    dsn = f"host=127.0.0.1 port={port} user=postgres dbname=postgres connect_timeout=5"

    def read() -> tuple | None:
        with psycopg.connect(dsn) as conn:
            return conn.execute(RUNNING).fetchone()

    return _first_running(read, "the PostgreSQL archive")


def test_a_run_ending_on_a_locked_archive_is_imported_complete(lab: str) -> None:
    argv = ["pgrig", "run", lab, "--workload", "pgbench:select-only", "-c", "2"]
    proc = subprocess.Popen(
        [*argv, "--duration", "4", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PGRIG_ARCHIVE_WAIT_S": "3"},  # the lock is never let go: 3 s, not 30
    )
    archive = Path(os.environ["PGRIG_HOME"]) / "archive.sqlite"
    try:
        run_id = _running_in(archive)
        holder = sqlite3.connect(archive, isolation_level=None, timeout=60)
        holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        out, err = proc.communicate(timeout=180)
        reader = sqlite3.connect(archive, timeout=60)
        status = reader.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
        reader.close()
    finally:
        with contextlib.suppress(Exception):
            proc.kill()
        with contextlib.suppress(Exception):
            holder.rollback()
            holder.close()
    assert proc.returncode == 0, err
    assert status == ("running",)  # the archive could not take the results...
    home = Path(os.environ["PGRIG_HOME"])
    spooled = home / "artifacts" / "home" / str(run_id) / "record.spool.json"
    assert "is unavailable" in err and str(spooled) in " ".join(err.split()), err
    printed = json.loads(out)
    listed = pgrig("runs", "list", "--json")  # ...the next command imports them
    assert f"run {run_id} imported from" in " ".join(listed.stderr.split())
    (summary,) = [r for r in json.loads(listed.stdout) if r["id"] == run_id]
    assert summary["status"] == "ok" and not spooled.exists()
    got = _show(run_id)
    for key in ("tps", "transactions", "measured_s", "latency_ms", "scripts", "warnings"):
        assert got[key] == printed[key], key
    assert printed["transactions"] > 0 and "pgbench.stdout" in got["artifacts"]
    assert got["settings_layers"] and got["host"]  # blobs too
    assert {"pgbench", "os", "pg"} <= set(got["series_kinds"])


def test_runs_on_a_postgresql_archive(lab: str, pg_archive: servers.Server) -> None:
    url = f"postgresql://postgres@127.0.0.1:{pg_archive.port}/postgres"
    on_pg = ("--archive", url)
    runs = []
    for _ in range(2):
        done = pgrig("run", lab, "--workload", "pgbench:select-only", "-c", "2",
                     "--duration", "2", "--json", *on_pg)  # fmt: skip
        runs.append(json.loads(done.stdout))
    assert [r["status"] for r in runs] == ["ok", "ok"]
    listed = json.loads(pgrig("runs", "list", "--json", *on_pg).stdout)
    assert sorted(r["id"] for r in listed) == sorted(r["id"] for r in runs)
    shown = _show(runs[0]["id"], *on_pg)
    assert len(shown["server_version"]) > 64  # VARCHAR(64) before revision 0003
    assert shown["tps"] == runs[0]["tps"] and {"pgbench", "os"} <= set(shown["series_kinds"])
    compared = json.loads(
        pgrig("runs", "compare", str(runs[0]["id"]), str(runs[1]["id"]), "--json", *on_pg).stdout
    )
    assert [g["runs"][0]["status"] for g in (compared["a"], compared["b"])] == ["ok", "ok"]
    assert compared["metrics"]["tps"]["a"] == runs[0]["tps"]  # a 2 s run may get no verdict
    human = pgrig("runs", "list", *on_pg)
    assert str(runs[1]["id"]) in human.stdout and "postgresql+psycopg" in human.stderr
    pgrig("runs", "mark", str(runs[0]["id"]), "--status", "failed", *on_pg, check=False)
    gone = pgrig("runs", "delete", str(runs[1]["id"]), "--yes", *on_pg)
    assert f"run {runs[1]['id']} deleted" in gone.stderr
    assert [r["id"] for r in json.loads(pgrig("runs", "list", "--json", *on_pg).stdout)] == [
        runs[0]["id"]
    ]


def test_a_run_ending_while_the_postgresql_archive_is_down_is_imported(
    lab: str, pg_archive: servers.Server
) -> None:
    on_pg = ("--archive", f"postgresql://postgres@127.0.0.1:{pg_archive.port}/postgres")
    argv = ["pgrig", "run", lab, "--workload", "pgbench:select-only", "-c", "2"]
    proc = subprocess.Popen(
        [*argv, "--duration", "5", "--json", *on_pg],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    pg_ctl = str(PG15 / "pg_ctl")
    try:
        _running_on(pg_archive.port)  # then the archive goes down within the run's 5 s
        servers.as_postgres(pg_ctl, "-D", str(pg_archive.data), "-m", "fast", "-w", "stop")
        out, err = proc.communicate(timeout=120)
    finally:
        with contextlib.suppress(Exception):
            proc.kill()
        pg_archive.start()
    assert proc.returncode == 0 and "is unavailable" in err, err
    printed = json.loads(out)
    listed = pgrig("runs", "list", "--json", *on_pg)
    assert f"run {printed['id']} imported from" in " ".join(listed.stderr.split())
    got = _show(printed["id"], *on_pg)
    assert got["status"] == "ok" and got["tps"] == printed["tps"] and got["scripts"]


STUDY = """
[study]
name = "on-pg"
repeats = 1
[environment]
name = "lab"
create = false
version = "15"
[dataset]
scenario = "pgbench"
scale = 1
[run]
workload = "pgbench:select-only"
clients = 1
threads = 1
duration = "2s"
[sweep]
clients = [1, 2]
"""


def test_a_study_on_a_postgresql_archive(
    lab: str, pg_archive: servers.Server, tmp_path: Path
) -> None:
    on_pg = ("--archive", f"postgresql://postgres@127.0.0.1:{pg_archive.port}/postgres")
    study = tmp_path / "on-pg.toml"
    study.write_text(STUDY)
    pgrig("study", "run", str(study), "--no-report", *on_pg, timeout=300)
    listed = json.loads(pgrig("runs", "list", "--study", "on-pg", "--json", *on_pg).stdout)
    assert sorted(r["clients"] for r in listed) == [1, 2]
    assert {r["status"] for r in listed} == {"ok"}
    report = pgrig("study", "report", "on-pg", "--out", str(tmp_path / "report"), *on_pg)
    assert report.stdout.strip()


def test_kill_9_of_a_study_leaves_it_resumable(lab: str, tmp_path: Path) -> None:
    study = tmp_path / "killed.toml"
    study.write_text(STUDY.replace('"on-pg"', '"killed"').replace('"2s"', '"6s"'))
    proc = subprocess.Popen(
        ["pgrig", "study", "run", str(study), "--no-report"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        run = servers.wait_for_running(timeout=60)
        children = psutil.Process(proc.pid).children(recursive=True)
        proc.kill()
        proc.wait(timeout=10)
    finally:
        with contextlib.suppress(Exception):
            proc.kill()
        for child in children:
            with contextlib.suppress(psutil.Error):
                child.kill()
    listed = json.loads(pgrig("runs", "list", "--study", "killed", "--json").stdout)
    assert [(r["id"], r["status"]) for r in listed] == [(run["id"], "lost")]
    from pgrig.archive.store import Archive

    with Archive() as archive:
        assert archive.get_study("killed").status == "interrupted"
    pgrig("study", "run", str(study), "--resume", "--no-report", timeout=300)
    again = json.loads(pgrig("runs", "list", "--study", "killed", "--json").stdout)
    assert sorted(r["status"] for r in again) == ["lost", "ok", "ok"]


# pgrig killed with kill -9 as soon as its first run is archived: between two runs of a study
_KILLED_AFTER_FIRST_RUN = """
import os, signal, sys
from pgrig.archive.runs import RunTable
from pgrig.cli.app import main

original = RunTable.finish_run

def finish_then_die(self, rec, **kwargs):
    original(self, rec, **kwargs)
    if rec.status == "ok":
        os.kill(os.getpid(), signal.SIGKILL)

RunTable.finish_run = finish_then_die
sys.argv = ["pgrig", *sys.argv[1:]]
main()
"""


def test_kill_9_of_a_study_between_runs_leaves_it_resumable(lab: str, tmp_path: Path) -> None:
    """No run is running to tell that its study died: the study's own lease does."""
    study = tmp_path / "between.toml"
    study.write_text(STUDY.replace('"on-pg"', '"between"'))
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_AFTER_FIRST_RUN, "study", "run", str(study), "--no-report"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    listed = pgrig("runs", "list", "--study", "between", "--json")  # the next command
    assert [r["status"] for r in json.loads(listed.stdout)] == ["ok"]
    assert "study between marked interrupted: its pgrig process is gone" in listed.stderr
    from pgrig.archive.store import Archive

    with Archive() as archive:
        assert archive.get_study("between").status == "interrupted"
    pgrig("study", "run", str(study), "--resume", "--no-report", timeout=300)
    with Archive() as archive:
        assert archive.get_study("between").status == "done"
    again = json.loads(pgrig("runs", "list", "--study", "between", "--json").stdout)
    assert sorted(r["status"] for r in again) == ["ok", "ok"]


def test_a_shared_archive_is_upgraded_only_when_asked(pg_archive: servers.Server) -> None:
    from alembic import command

    from pgrig.archive.store import SCHEMA_HEAD, alembic_config

    servers.as_postgres(
        str(PG15 / "psql"), "-h", "127.0.0.1", "-p", str(pg_archive.port), "-U", "postgres",
        "-c", "CREATE DATABASE older",
    )  # fmt: skip
    url = f"postgresql://postgres@127.0.0.1:{pg_archive.port}/older"
    command.upgrade(alembic_config(url=url), "0002")
    refused = pgrig("runs", "list", "--archive", url, check=False)
    assert refused.returncode == 2
    message = " ".join(refused.stderr.split())
    assert f"schema revision '0002', older than this pgrig's '{SCHEMA_HEAD}'" in message
    assert "run `pgrig archive upgrade`" in message and "Traceback" not in refused.stderr
    upgraded = pgrig("archive", "upgrade", "--archive", url)
    assert f"schema from 0002 to {SCHEMA_HEAD}" in upgraded.stderr
    assert pgrig("runs", "list", "--archive", url).returncode == 0
