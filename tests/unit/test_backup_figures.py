"""Backup figures: ratios from what was measured, the one text every surface shows, faults."""

from __future__ import annotations

import shutil

import pytest

from pgrig.archive.records import RunRecord
from pgrig.errors import PgrigError
from pgrig.load.backup import backup_run
from pgrig.provision.server import basebackup, pgbackrest
from pgrig.provision.server.backups import ToolResult
from pgrig.views import backup_figures


def test_lsn_bytes_is_pg_wal_lsn_diff() -> None:
    # SELECT pg_wal_lsn_diff('1/0', '0/FFFFFF00') = 256
    assert basebackup.lsn_bytes("1/0") - basebackup.lsn_bytes("0/FFFFFF00") == 256


def test_rates_of_a_plain_and_a_compressed_backup() -> None:
    plain = basebackup.rates(
        {"backup_bytes": 1000, "duration_s": 2.0, "source_bytes": 700, "backup_wal_bytes": 300}
    )
    assert plain == {"throughput_bytes_per_s": 500, "compression_ratio": 1.0, "size_ratio": 1.0}
    rest = basebackup.rates(
        {"backup_bytes": 100, "copied_bytes": 600, "duration_s": 3.0, "source_bytes": 1200}
    )
    assert rest["throughput_bytes_per_s"] == 200  # what was read, uncompressed, per second
    assert rest["compression_ratio"] == 6.0 and rest["size_ratio"] == 12.0


def test_the_first_error_is_the_cause_and_a_full_disk_wins() -> None:
    err = (
        "pg_basebackup: error: could not write: No space left on device\n"
        "pg_basebackup: error: background process terminated unexpectedly\n"
    )
    r = ToolResult(1, "", err, 1.0)
    assert "No space left" in r.last_error()


def test_backup_workloads_are_parsed_strictly() -> None:
    assert backup_run.parse(["backup:basebackup-full"]) == "basebackup-full"
    with pytest.raises(PgrigError, match="unknown backup workload 'backup:tar'"):
        backup_run.parse(["backup:tar"])
    with pytest.raises(PgrigError, match="exactly one"):
        backup_run.parse(["backup:restore", "pgbench:tpcb"])


def test_pgbackrest_missing_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    with pytest.raises(PgrigError, match="pgBackRest is not installed"):
        pgbackrest.binary()


def test_rows_and_summary_of_a_backup_run() -> None:
    rec = RunRecord(env_name="lab", workload="backup:basebackup-full", clients=0, threads=0)
    assert backup_figures.rows(rec) == [] and backup_figures.summary(rec) == ""
    rec.extra["backup"] = {
        "tool": "pg_basebackup", "type": "full", "name": "001", "duration_s": 2.0,
        "backup_bytes": 3 * 1048576, "start_lsn": "0/3000028", "stop_lsn": "0/3000120",
        "compression_ratio": 1.0,
    }  # fmt: skip
    rows = dict(backup_figures.rows(rec))
    assert rows["backup size"] == "3.0 MiB" and rows["start LSN"] == "0/3000028"
    assert backup_figures.summary(rec) == "full 3.0 MiB in 2.0 s"


def test_wal_during_a_backup_is_the_records_written_not_the_switch_padding() -> None:
    # an idle PG18: pg_stat_wal grew 326 B while the backup's segment switch moved the LSN
    # 19.7 MiB (captured from `run solo -w backup:basebackup-full`)
    before = {"wal_lsn": "0/3000028", "wal_bytes": 1000}
    after = {"wal_lsn": "0/4400000", "wal_bytes": 1326}
    wal = basebackup.wal_figures(before, after)
    assert wal["wal_generated_bytes"] == 326
    assert wal["wal_lsn_advance_bytes"] == 0x4400000 - 0x3000028
    assert "no segment-switch padding" in wal["wal_generated_what"]
    rec = RunRecord(env_name="lab", workload="backup:basebackup-full", clients=0, threads=0)
    rec.extra["backup"] = {"tool": "pg_basebackup", "type": "full", **wal}
    rows = dict(backup_figures.rows(rec))
    assert rows["WAL generated"].startswith("326 B (records written, pg_stat_wal")
    assert rows["LSN advance"].startswith("20.0 MiB (with the padding")
    # a server without pg_stat_wal (13): the LSN advance, said to include the padding
    old = basebackup.wal_figures({"wal_lsn": "0/3000028", "wal_bytes": None}, after)
    assert old["wal_generated_bytes"] == old["wal_lsn_advance_bytes"]
    assert "with segment-switch padding" in old["wal_generated_what"]
