"""The archive suite on both back ends: SQLite and a real PostgreSQL 15 archive database.

A PostgreSQL 15 server is started once for this module (OS user postgres, data under /tmp,
127.0.0.1 only, password authentication) and every test gets a fresh database in it.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import psycopg
import pytest

from pgrig.archive.records import RunRecord
from pgrig.archive.store import SCHEMA_HEAD, Archive
from pgrig.errors import PgrigError

PG15 = Path("/usr/lib/postgresql/15/bin")
PORTS = range(56440, 56500)
USER, PASSWORD = "pgrig_archive", "s3cret-Pa55"

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not (PG15 / "postgres").exists(), reason="PostgreSQL 15 not installed"),
]


def _load_suite() -> ModuleType:
    """The back-end independent suite lives with the unit tests (tests/ is not a package)."""
    path = Path(__file__).parents[1] / "unit" / "test_archive_store.py"
    spec = importlib.util.spec_from_file_location("pgrig_archive_suite", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


suite = _load_suite()


def _free_port() -> int:
    for port in PORTS:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {PORTS}")


def _as_postgres(argv: list[str]) -> subprocess.CompletedProcess[str]:
    if os.geteuid() == 0:
        argv = ["su", "postgres", "-s", "/bin/sh", "-c", " ".join(f"'{a}'" for a in argv)]
    return subprocess.run(argv, capture_output=True, text=True, check=True, timeout=120)


@pytest.fixture(scope="module")
def pg15() -> Iterator[dict[str, object]]:
    root = Path(tempfile.mkdtemp(prefix="pgrig-archive-pg15-", dir="/tmp"))
    root.chmod(0o777)
    data = root / "data"
    pwfile = root / "pw"
    pwfile.write_text(PASSWORD + "\n")
    pwfile.chmod(0o644)
    port = _free_port()
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
    _as_postgres(
        [
            str(PG15 / "initdb"),
            "-D",
            str(data),
            "-U",
            USER,
            f"--pwfile={pwfile}",
            "--auth-local=scram-sha-256",
            "--auth-host=scram-sha-256",
            "--no-sync",
        ]
    )
    opts = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
    _as_postgres(
        [str(PG15 / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-o", opts, "-w", "start"]
    )
    try:
        yield {"port": port, "root": root}
    finally:
        subprocess.run(
            ["su", "postgres", "-s", "/bin/sh", "-c", f"{PG15}/pg_ctl -D {data} -m immediate stop"]
            if os.geteuid() == 0
            else [str(PG15 / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True,
            check=False,
        )
        shutil.rmtree(root, ignore_errors=True)


_db_numbers = itertools.count(1)


def _fresh_database(port: int) -> str:
    name = f"archive_{os.getpid()}_{next(_db_numbers)}"
    with psycopg.connect(
        host="127.0.0.1",
        port=port,
        user=USER,
        password=PASSWORD,
        dbname="postgres",
        autocommit=True,
    ) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{port}/{name}"


class TestArchiveOnBothBackends(suite.ArchiveSuite):
    @pytest.fixture(params=["sqlite", "postgresql"])
    def archive_url(self, request: pytest.FixtureRequest, pgrig_home: Path) -> str:
        if request.param == "sqlite":
            return f"sqlite:///{pgrig_home / 'archive.sqlite'}"
        return _fresh_database(request.getfixturevalue("pg15")["port"])


def test_postgres_url_forms_and_masking(pg15: dict[str, object], pgrig_home: Path) -> None:
    url = _fresh_database(pg15["port"])
    with Archive(url) as a:  # postgresql:// is served by psycopg 3
        assert PASSWORD not in a.url and "***" in a.url and a.url.startswith("postgresql+psycopg")
        assert PASSWORD not in repr(a)
        assert a.schema_revision() == SCHEMA_HEAD
        rec = RunRecord(env_name="e", workload="w", clients=1, threads=1, status="ok")
        a.finish_run(rec)
        assert a.get_run(rec.id).status == "ok"
    wrong = url.replace(PASSWORD, "not-the-password")
    with pytest.raises(PgrigError, match="cannot open archive") as info:
        Archive(wrong)
    assert "not-the-password" not in str(info.value) and PASSWORD not in str(info.value)


def test_pgrig_archive_env_selects_postgres(
    pg15: dict[str, object], pgrig_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = _fresh_database(pg15["port"])
    monkeypatch.setenv("PGRIG_ARCHIVE", url)
    with Archive() as a:
        a.finish_run(RunRecord(env_name="e", workload="w", clients=1, threads=1, status="ok"))
    with Archive(url) as b:
        assert b.count_runs() == 1
    assert not (pgrig_home / "archive.sqlite").exists()
