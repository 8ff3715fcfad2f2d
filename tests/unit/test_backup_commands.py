"""Backups without a server: where a backup may be written, and what a backup run says
(load/backup, provision/server/backups.py, cli/backup.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgrig.errors import PgrigError


def test_an_empty_backup_dir_is_refused_not_taken_for_the_default() -> None:
    """`--backup-dir "$UNSET"` put the backups in the environment's directory, unasked (and
    `env destroy` removes them with it)."""
    from pgrig.load.backup import backup_run

    with pytest.raises(PgrigError, match="--backup-dir is empty"):
        backup_run.check_flags(["backup:basebackup-full"], None, "")
    backup_run.check_flags(["backup:basebackup-full"], None, None)  # the default: fine


def test_a_backup_dir_inside_the_data_directory_is_refused(pgrig_home: Path) -> None:
    """Backups inside PGDATA: each base backup copies the ones before it."""
    from pgrig.provision.server import backups
    from pgrig.provision.state.environment import Environment

    env = Environment(name="bk", port=5999)
    env.datadir.mkdir(parents=True)
    with pytest.raises(PgrigError, match="inside the server's data directory"):
        backups.root(env, str(env.datadir))
    with pytest.raises(PgrigError, match="inside the server's data directory"):
        backups.root(env, str(env.datadir / ".." / "data"))


def test_backup_kinds_take_their_article() -> None:
    from pgrig.provision.server.pgbackrest import _a

    assert _a("incr") == "an incr" and _a("diff") == "a diff"


def test_a_backup_runs_summary_is_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    from pgrig.archive.records import RunRecord
    from pgrig.cli.backup import print_backup

    rec = RunRecord(env_name="e", workload="backup:basebackup-full", clients=0, threads=0, id=3)
    rec.status = "ok"
    rec.extra["backup"] = {"tool": "pg_basebackup", "type": "full", "duration_s": 0.4,
                           "backup_bytes": 1 << 20, "source_bytes": 1 << 20}  # fmt: skip
    print_backup(rec)
    out = capsys.readouterr()
    assert "run 3 backup:basebackup-full ok" in out.out and "pg_basebackup full" in out.out
    assert out.err == ""
