"""Data a run stands on, against a real PostgreSQL 15, pgbench scale 1, runs of 1-2 s (issue 30):

- a restore verifies against the data its backup holds, after the data was regenerated;
- an external environment added with `--dsn .../somedb` generates and runs in somedb.

Ports 23300-23349 (PGRIG_PORT_RANGE).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest
import servers
from servers import pgrig

pytestmark = pytest.mark.integration

PORTS = "23300-23349"


@pytest.fixture(scope="module")
def lab() -> Iterator[str]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PGRIG_PORT_RANGE", PORTS)
        with servers.pgbench_lab("pgrig-hostile-b-") as lab:
            yield lab


def _port(env: str) -> int:
    return int(json.loads(pgrig("env", "show", env, "--json").stdout)["port"])


def _psql(port: int, db: str, query: str) -> str:
    argv = ["psql", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-d", db, "-Atc", query]
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()


def test_a_restore_verifies_the_backups_data_after_a_regenerate(lab: str) -> None:
    pgrig("run", lab, "-w", "backup:basebackup-full", "--json")
    pgrig("db", "generate", lab, "--scenario", "pgbench", "--scale", "2")
    try:
        out = pgrig("run", lab, "-w", "backup:restore", "--json", check=False, timeout=300)
        doc = json.loads(out.stdout)
        assert doc["status"] == "ok", doc["error"]
        counts = doc["backup"]["verify"]["counts"]
        assert counts["pgrig.pgbench_branches"] == {"expected": 1, "found": 1}
        assert doc["scale"] == 1  # the restored data's, not the environment's now
    finally:
        pgrig("db", "generate", lab, "--scenario", "pgbench", "--scale", "1")


def test_an_external_environment_works_in_its_dsns_database(lab: str) -> None:
    port = _port(lab)
    _psql(port, "postgres", "CREATE DATABASE somedb")
    pgrig("env", "add", "ext", "--dsn", f"postgresql://postgres@127.0.0.1:{port}/somedb")
    try:
        pgrig("db", "generate", "ext", "--scenario", "pgbench", "--scale", "1")
        assert _psql(port, "somedb", "SELECT count(*) FROM pgbench_branches") == "1"
        rec = servers.ok_run("ext", "-w", "pgbench:select-only", "-T", "1", "-c", "1")
        assert rec.database == "somedb" and rec.scenario == "pgbench"
    finally:
        pgrig("env", "destroy", "ext", "--yes", check=False)
        _psql(port, "postgres", "DROP DATABASE IF EXISTS somedb WITH (FORCE)")
