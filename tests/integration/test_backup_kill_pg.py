"""kill -9 of pgrig in the middle of a real pg_basebackup: the tool dies with it (PDEATHSIG),
the partial backup directory stays (nothing of pgrig runs after SIGKILL), and the next command
finds it through the in-progress marker: `pgrig runs list` (which marks the run lost) removes it
and says so, the catalogue never lists it, and the next backup run works."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import servers
from servers import pgrig

pytestmark = pytest.mark.integration

MARKER = "backup-in-progress.json"


def _pg_dir() -> str:
    if os.environ.get("PGRIG_PG_DIR"):
        return os.environ["PGRIG_PG_DIR"]
    return "/var/lib/pgrig/pg" if os.geteuid() == 0 else str(Path.home() / ".pgrig" / "pg")


@pytest.fixture(scope="module")
def home() -> Iterator[Path]:
    if not list(Path(_pg_dir()).glob("18.*/bin/postgres")):
        pytest.skip("PostgreSQL 18 is not in the build cache (run `pgrig pg install 18`)")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PGRIG_PG_DIR", _pg_dir())
        mp.setenv("PGRIG_PORT_RANGE", "21900-21949")  # a slice of its own
        with servers.scratch_home("pgrig-backup-kill-") as h:
            pgrig("env", "create", "kb", "--pg", "18", "--no-insights")
            pgrig("db", "generate", "kb", "--scenario", "pgbench", "--scale", "3")
            yield h


def _backup_tools(home: Path) -> list[int]:
    out = []
    for p in psutil.process_iter(["name", "cmdline"]):
        with_home = any(str(home) in a for a in p.info["cmdline"] or [])
        if p.info["name"] == "pg_basebackup" and with_home:
            out.append(p.pid)
    return out


def _kill_mid_backup(home: Path) -> Path | None:
    """Start a backup run, SIGKILL pgrig once pg_basebackup writes; the partial directory
    (None: the backup ended before it could be caught)."""
    marker = home / "envs" / "kb" / MARKER
    proc = subprocess.Popen(
        ["pgrig", "run", "kb", "--workload", "backup:basebackup-full", "--json"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                dest = Path(json.loads(marker.read_text())["path"])
            except (OSError, ValueError):
                time.sleep(0.005)
                continue
            if (dest / "base").is_dir():
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(10)
                return dest
            time.sleep(0.005)
        return None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_kill_9_mid_backup_the_next_command_removes_the_partial_backup(home: Path) -> None:
    for _ in range(3):
        partial = _kill_mid_backup(home)
        if partial is not None:
            break
    else:
        pytest.skip("the backup always ended before pgrig could be killed in it")
    assert partial.is_dir() and (home / "envs" / "kb" / MARKER).exists()
    assert not (home / "envs" / "kb" / "backups.json").exists()  # never catalogued
    # pg_basebackup itself dies with pgrig (PDEATHSIG); its forked WAL receiver may linger
    # for seconds: the next command ends it before removing the directory

    listed = pgrig("runs", "list", "--json")
    assert _backup_tools(home) == [], "a backup process outlived the next command"
    assert f"removed the partial pg_basebackup backup {partial}" in listed.stderr
    assert "never catalogued" in listed.stderr
    runs = json.loads(listed.stdout)
    assert [r["status"] for r in runs if r["workload"] == "backup:basebackup-full"][:1] == ["lost"]
    assert not partial.exists()
    assert not (home / "envs" / "kb" / MARKER).exists()

    done = json.loads(pgrig("run", "kb", "--workload", "backup:basebackup-full", "--json").stdout)
    assert done["status"] == "ok"
    catalogued = json.loads((home / "envs" / "kb" / "backups.json").read_text())
    assert len(catalogued) == 1  # the new one only; the partial one never
    left = sorted(p.name for p in (home / "envs" / "kb" / "backups").iterdir())
    assert left == [Path(catalogued[0]["path"]).name]
