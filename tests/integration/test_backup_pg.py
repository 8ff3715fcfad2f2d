"""Backup and restore runs against real servers (load/backup/backup_run.py): pg_basebackup full and
incremental with a pg_combinebackup restore (PG18), pgBackRest full/incr and restore (PG15,
Debian's 2.45), a backup under load, and the faults: summarize_wal off, no full backup, a
backup target that fills up (a small tmpfs), pgBackRest too old for PG18."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import servers
from servers import pgrig

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def home() -> Iterator[Path]:
    with servers.pg18_lab("pgrig-backup-test-", "bk") as h:
        yield h


def run(*args: str, check: bool = True) -> tuple[int, dict]:
    out = pgrig("run", "bk", *args, "--json", check=False, timeout=300)
    if check and out.returncode != 0:
        raise AssertionError(out.stderr)
    return out.returncode, (json.loads(out.stdout) if out.stdout.strip() else {})


def catalog(home: Path, env: str = "bk") -> list[dict]:
    f = home / "envs" / env / "backups.json"
    return json.loads(f.read_text()) if f.exists() else []


def lsn(text: str) -> int:
    hi, lo = text.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def test_incremental_refused_until_summarize_wal_and_a_full_backup(home: Path) -> None:
    out = pgrig("run", "bk", "-w", "backup:basebackup-incremental", check=False)
    assert out.returncode != 0 and "summarize_wal = on" in out.stderr
    pgrig("env", "set", "bk", "summarize_wal=on")
    out = pgrig("run", "bk", "-w", "backup:basebackup-incremental", check=False)
    assert out.returncode != 0 and "no full backup of bk to build on" in out.stderr
    runs = json.loads(pgrig("runs", "list", "--json").stdout)
    assert runs == []  # bad input: nothing archived


def test_full_incremental_and_restore(home: Path) -> None:
    _, full = run("-w", "backup:basebackup-full")
    b = full["backup"]
    assert full["status"] == "ok" and full["workload"] == "backup:basebackup-full"
    on_disk = sum(f.stat().st_size for f in Path(b["path"]).rglob("*") if f.is_file())
    assert b["backup_bytes"] == on_disk
    manifest = json.loads((Path(b["path"]) / "backup_manifest").read_text())
    assert b["start_lsn"] == manifest["WAL-Ranges"][0]["Start-LSN"]
    assert b["wal_bytes"] == lsn(b["stop_lsn"]) - lsn(b["start_lsn"])
    # the LSN advance counts the segment switch's padding; the figure is pg_stat_wal's records
    advance = lsn(b["wal_lsn_after"]) - lsn(b["wal_lsn_before"])
    assert b["wal_lsn_advance_bytes"] == advance > 0
    assert b["wal_generated_what"].startswith("records written, pg_stat_wal")
    assert 0 < b["wal_generated_bytes"] <= advance
    assert b["throughput_bytes_per_s"] == round(b["backup_bytes"] / b["duration_s"])
    assert full["measured_s"] == b["duration_s"] > 0

    _, inc = run("-w", "backup:basebackup-incremental")
    assert inc["backup"]["parent"] == b["name"]
    assert inc["backup"]["backup_bytes"] < b["backup_bytes"]
    assert [c["kind"] for c in catalog(home)] == ["full", "incremental"]

    before = len(servers.postmasters_under(home))
    _, rest = run("-w", "backup:restore")
    r = rest["backup"]
    assert rest["status"] == "ok"
    assert r["chain"] == [b["name"], inc["backup"]["name"]]  # pg_combinebackup full + incr
    assert r["restore_method"] == "pg_combinebackup"
    assert r["verify"]["ok"] and r["verify"]["amcheck"] == "ok"
    assert r["verify"]["counts"]["pgrig.pgbench_accounts"] == {"expected": 100000,
                                                              "found": 100000}  # fmt: skip
    assert r["restore_total_s"] >= r["restore_s"]
    assert not Path(r["scratch"]).exists() and len(servers.postmasters_under(home)) == before

    shown = pgrig("runs", "show", str(inc["id"])).stdout
    assert "backup" in shown and inc["backup"]["start_lsn"] in shown


def test_a_full_backup_target_fails_the_run_and_keeps_nothing(home: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    small = Path(tempfile.mkdtemp(prefix="pgrig-small-", dir="/tmp"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(small)], check=True)
    try:
        listed = catalog(home)
        rc, rec = run("-w", "backup:basebackup-full", "--backup-dir", str(small), check=False)
        assert rc == 1 and rec["status"] == "failed"
        assert "No space left on device" in rec["error"] and "is full" in rec["error"]
        assert rec["backup"]["duration_s"] > 0  # what was measured is kept
        assert catalog(home) == listed  # never counted as a backup
        assert list((small / "pgrig-bk").iterdir()) == []  # the partial backup is removed
    finally:
        subprocess.run(["umount", str(small)], check=False)
        small.rmdir()


def test_backup_under_load_is_compared_with_the_load_alone(home: Path) -> None:
    _, rec = run("-w", "backup:basebackup-full", "--during", "pgbench:select-only",
                 "-c", "2", "-T", "3")  # fmt: skip
    d = rec["during"]
    assert rec["status"] == "ok" and d["load"]["status"] == "ok" and d["load"]["tps"] > 0
    assert len(d["baseline_runs"]) == 1 and len(d["load_runs"]) == 1
    assert 0 < d["covered_fraction"] <= 1
    tps = d["comparison"]["tps"]
    # single 4 s runs: the engine gives a ratio but, under 30 s, no verdict (and says why)
    assert tps["ratio"] > 0 and tps["verdict"] is None and "30" in tps["advice"]
    base = json.loads(pgrig("runs", "show", str(d["baseline_runs"][0]), "--json").stdout)
    assert base["workload"] == "pgbench:select-only" and base["tags"]["during"] == "none"


def test_pgbackrest_full_incr_restore_on_15(home: Path) -> None:
    if shutil.which("pgbackrest") is None:
        pytest.skip("pgBackRest is not installed")
    out = pgrig("run", "bk", "-w", "backup:pgbackrest-full", check=False)
    assert out.returncode != 0 and "does not support PostgreSQL 18" in out.stderr
    servers.pgbench_env("br")
    out = pgrig("run", "br", "-w", "backup:pgbackrest-incr", check=False)
    assert "no full pgBackRest backup of br" in out.stderr
    for kind in ("full", "incr"):
        rec = json.loads(pgrig("run", "br", "-w", f"backup:pgbackrest-{kind}", "--json",
                               timeout=300).stdout)  # fmt: skip
        b = rec["backup"]
        assert rec["status"] == "ok" and b["pgbackrest_type"] == kind
        assert b["compression_ratio"] > 1  # gzip in the repository
        assert lsn(b["stop_lsn"]) > lsn(b["start_lsn"])
    rec = json.loads(pgrig("run", "br", "-w", "backup:restore", "--json", timeout=300).stdout)
    assert rec["status"] == "ok" and rec["backup"]["verify"]["ok"]
    shown = json.loads(pgrig("env", "show", "br", "--json").stdout)
    assert shown["effective"]["archive_mode"] == {"value": "on", "layer": "topology"}


def test_a_lone_full_basebackup_restores_on_15(home: Path) -> None:
    """PostgreSQL 15 has no pg_combinebackup: a lone full backup is restored by a copy."""
    if not (home / "envs" / "br").exists():
        servers.pgbench_env("br")
    full = json.loads(pgrig("run", "br", "-w", "backup:basebackup-full", "--json",
                            timeout=300).stdout)  # fmt: skip
    assert full["status"] == "ok"
    before = len(servers.postmasters_under(home))
    rec = json.loads(pgrig("run", "br", "-w", "backup:restore", "--json", timeout=300).stdout)
    r = rec["backup"]
    assert rec["status"] == "ok", rec.get("error")
    assert r["chain"] == [full["backup"]["name"]] and r["restore_method"] == "cp -a"
    assert r["verify"]["ok"]
    assert not Path(r["scratch"]).exists() and len(servers.postmasters_under(home)) == before
