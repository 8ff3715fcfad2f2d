"""Issue 25, must-fix 4: a page-corrupted SQLite archive gives one clear error naming the file
and what to do, in every command (the archive layer says it once), never a traceback."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from pgrig.archive.records import RunRecord, StudyRecord
from pgrig.archive.store import Archive, ArchiveDamaged


def _damaged_archive(path: Path) -> Path:
    with Archive(str(path)) as archive:
        for _ in range(3):
            rec = RunRecord(env_name="e", workload="pgbench:tpcb", clients=1, threads=1)
            archive.begin_run(rec)
            rec.status, rec.tps = "ok", 100.0
            archive.finish_run(rec)
        archive.create_study(StudyRecord(name="s", kind="study", spec="x"))
    db = sqlite3.connect(path)
    pages = dict(db.execute("SELECT name, rootpage FROM sqlite_master WHERE type='table'"))
    page_size = db.execute("PRAGMA page_size").fetchone()[0]
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    with open(path, "r+b") as f:  # the b-tree pages of runs and studies, not the schema
        for table in ("runs", "studies"):
            f.seek((pages[table] - 1) * page_size)
            f.write(b"\x0d\x00\xff\xff\xff\xff" * 10)
    return path


def test_the_archive_layer_names_the_file_and_the_way_out(tmp_path: Path) -> None:
    path = _damaged_archive(tmp_path / "a.sqlite")
    with pytest.raises(ArchiveDamaged) as damaged:
        Archive(str(path))  # said when opened: before a command acts
    message = str(damaged.value)
    assert f"archive {path} is damaged" in message
    assert f"sqlite3 {path} .recover" in message and "fresh archive" in message


@pytest.mark.parametrize(
    "command",
    [
        ["runs", "list"],
        ["runs", "show", "1"],
        ["study", "list"],
        ["run", "nowhere", "-w", "pgbench:select-only", "-T", "1"],
        ["serve", "--port", "1"],
    ],
)
def test_every_command_says_it_in_one_line(tmp_path: Path, command: list[str]) -> None:
    path = _damaged_archive(tmp_path / "a.sqlite")
    main = [sys.executable, "-c", "from pgrig.cli.app import main; main()"]
    done = subprocess.run(
        [*main, *command, "--archive", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PGRIG_HOME": str(tmp_path / "home")},
    )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and "sqlalche.me" not in done.stderr
    assert done.stderr.startswith(f"error: archive {path} is damaged"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
