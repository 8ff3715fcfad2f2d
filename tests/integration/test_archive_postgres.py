"""The archive suite on both back ends: SQLite and a real PostgreSQL 15 archive database.

A PostgreSQL 15 server is started once for this module (OS user postgres, data under /tmp,
127.0.0.1 only, password authentication) and every test gets a fresh database in it.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import psycopg
import pytest
import servers
from servers import PG15

from pgrig.archive.records import RunRecord
from pgrig.archive.store import SCHEMA_HEAD, Archive
from pgrig.errors import PgrigError

PORTS = range(26440, 26500)
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


class ArchiveServer(servers.Server):
    """PostgreSQL 15 with password (SCRAM) authentication for the archive's own user."""

    def __init__(self) -> None:
        super().__init__(PG15, PORTS, "pgrig-archive-pg15-")
        pwfile = self.dir / "pw"
        pwfile.write_text(PASSWORD + "\n")
        pwfile.chmod(0o644)
        self.initdb_args = (
            "-U", USER, f"--pwfile={pwfile}", "--auth-local=scram-sha-256",
            "--auth-host=scram-sha-256", "--no-sync",
        )  # fmt: skip


@pytest.fixture(scope="module")
def pg15() -> Iterator[ArchiveServer]:
    with servers.running(ArchiveServer()) as server:
        yield server


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
        return _fresh_database(request.getfixturevalue("pg15").port)


def test_postgres_url_forms_and_masking(pg15: ArchiveServer, pgrig_home: Path) -> None:
    url = _fresh_database(pg15.port)
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
    pg15: ArchiveServer, pgrig_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = _fresh_database(pg15.port)
    monkeypatch.setenv("PGRIG_ARCHIVE", url)
    with Archive() as a:
        a.finish_run(RunRecord(env_name="e", workload="w", clients=1, threads=1, status="ok"))
    with Archive(url) as b:
        assert b.count_runs() == 1
    assert not (pgrig_home / "archive.sqlite").exists()


def test_an_archive_created_at_head_is_the_migrated_one_on_postgres(pg15: ArchiveServer) -> None:
    """A new PostgreSQL archive made from the models and stamped has the schema every
    revision in turn makes (keys, indexes and constraints by name)."""
    from alembic import command
    from archive_schema import schema_of

    from pgrig.archive.store import SCHEMA_HEAD, alembic_config

    made, migrated = _fresh_database(pg15.port), _fresh_database(pg15.port)
    with Archive(made) as a:
        assert a.schema_revision() == SCHEMA_HEAD
    command.upgrade(alembic_config(url=migrated), "head")
    assert schema_of(made) == schema_of(migrated)


def test_migrated_schema_matches_the_models_on_postgres(pg15: ArchiveServer) -> None:
    """Every revision (0003 retypes columns to text) ends where the models are, on PostgreSQL
    too; and an archive at 0002 holding runs keeps them through an explicit upgrade."""
    from alembic import command
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    from sqlalchemy import create_engine, text

    from pgrig.archive.models import metadata
    from pgrig.archive.store import VERSION_TABLE, alembic_config, normalize_url

    url = _fresh_database(pg15.port)
    command.upgrade(alembic_config(url=url), "0002")
    with Archive(url, upgrade=True) as a:  # what `pgrig archive upgrade` does
        assert a.schema_before == "0002"
    engine = create_engine(normalize_url(url))
    with engine.connect() as conn:
        ctx = MigrationContext.configure(
            conn, opts={"compare_type": True, "version_table": VERSION_TABLE}
        )
        assert compare_metadata(ctx, metadata) == []
        kind = conn.execute(
            text(
                "SELECT data_type FROM information_schema.columns "
                "WHERE table_name = 'runs' AND column_name = 'server_version'"
            )
        ).scalar()
    engine.dispose()
    assert kind == "text"
