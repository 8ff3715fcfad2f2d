"""Alembic migrations of the archive: head, drift against the models, refusal of newer schemas."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect, text

from pgrig.archive.models import metadata
from pgrig.archive.store import (
    MIGRATIONS_DIR,
    SCHEMA_HEAD,
    VERSION_TABLE,
    Archive,
    alembic_config,
)
from pgrig.errors import PgrigError


@pytest.fixture
def url(pgrig_home: Path) -> str:
    return f"sqlite:///{pgrig_home / 'archive.sqlite'}"


def test_schema_head_constant_matches_the_migrations() -> None:
    script = ScriptDirectory.from_config(alembic_config())
    assert script.get_current_head() == SCHEMA_HEAD
    assert (MIGRATIONS_DIR / "script.py.mako").is_file()


def test_migrated_schema_matches_the_models(url: str) -> None:
    from alembic import command

    command.upgrade(alembic_config(url=url), "head")  # every revision, in turn
    engine = create_engine(url)
    with engine.connect() as conn:
        ctx = MigrationContext.configure(
            conn, opts={"compare_type": True, "version_table": VERSION_TABLE}
        )
        assert compare_metadata(ctx, metadata) == []
        tables = set(inspect(conn).get_table_names())
    engine.dispose()
    assert tables == {*metadata.tables, VERSION_TABLE}


def test_an_archive_created_at_head_is_the_migrated_one(pgrig_home: Path) -> None:
    """A new archive is made from the models and stamped (no Alembic loaded, no revision
    replayed): the same tables, columns, keys, indexes and constraints as the revisions make,
    at the same revision, and a later revision upgrades it as it would the migrated one."""
    from alembic import command
    from archive_schema import schema_of

    made, migrated = (f"sqlite:///{pgrig_home / n}.sqlite" for n in ("made", "migrated"))
    code = (
        "import sys; from pgrig.archive.store import Archive; "
        f"Archive({made!r}).close(); print('alembic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    command.upgrade(alembic_config(url=migrated), "head")
    assert schema_of(made) == schema_of(migrated)
    assert VERSION_TABLE in schema_of(made)
    with Archive(made) as a:
        assert a.schema_revision() == SCHEMA_HEAD


def test_upgrade_is_idempotent(url: str) -> None:
    for _ in range(3):
        with Archive(url) as a:
            assert a.schema_revision() == SCHEMA_HEAD


def test_a_newer_schema_is_refused(url: str) -> None:
    Archive(url).close()
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text(f"UPDATE {VERSION_TABLE} SET version_num = '9999_future'"))
    engine.dispose()
    newer = r"revision '9999_future', newer than this pgrig knows \(up to '0005'\): this pgrig is"
    with pytest.raises(PgrigError, match=newer):  # names both revisions
        Archive(url)


def test_opening_an_up_to_date_archive_does_not_load_alembic(url: str) -> None:
    Archive(url).close()
    code = (
        "import sys; from pgrig.archive.store import Archive; "
        f"Archive({url!r}).list_runs(); print('alembic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_declarative_models_map_the_same_tables(url: str) -> None:
    from sqlalchemy.orm import Session

    from pgrig.archive import models
    from pgrig.archive.records import RunRecord

    assert models.Run.__table__ is models.runs and models.Base.metadata is metadata
    with Archive(url) as a:
        rec = RunRecord(
            env_name="e", workload="w", clients=1, threads=1, status="ok", tags={"k": "v"}
        )
        a.finish_run(rec)
    engine = create_engine(url)
    with Session(engine) as session:
        run = session.get(models.Run, rec.id)
        assert run is not None and run.status == "ok" and run.env_name == "e"
        assert session.query(models.RunTag).filter_by(run_id=rec.id).one().value == "v"
    engine.dispose()


def test_revision_0002_adds_the_run_request_columns_and_keeps_old_runs(url: str) -> None:
    from alembic import command

    from pgrig.archive.records import RunRecord, ScriptResult
    from pgrig.request import LOAD_FIELDS

    _archive_with_an_old_run(url, "0001")
    with Archive(url) as a:
        assert a.schema_revision() == SCHEMA_HEAD
        old = a.get_run(1)
        assert (old.clients, old.threads, old.via) == (4, 2, "direct")
        added = set(LOAD_FIELDS) - {"workload", "via", "clients", "threads", "duration_s"}
        added -= {"transactions_per_client", "warmup_s", "rate", "latency_limit_ms", "protocol"}
        assert added and all(getattr(old, name) is None for name in added)  # not recorded
        assert [s.transactions for s in old.scripts] == [10]
        new = RunRecord(env_name="e", workload="w", clients=1, threads=1, status="ok")
        new.max_tries, new.defines, new.all_warehouses = 3, {"a": "1"}, False
        new.scripts = [ScriptResult(script_no=0, name="w", transactions=5)]
        a.finish_run(new)
        got = a.get_run(new.id)
        assert (got.max_tries, got.defines, got.all_warehouses) == (3, {"a": "1"}, False)
    command.downgrade(alembic_config(url=url), "0001")
    engine = create_engine(url)
    with engine.connect() as conn:
        columns = {c["name"] for c in inspect(conn).get_columns("runs")}
        kept = conn.execute(text("SELECT count(*) FROM run_scripts")).scalar()
    engine.dispose()
    assert "max_tries" not in columns and "clients" in columns
    assert kept == 2  # the downgrade dropped columns, not the runs' scripts


def _archive_with_an_old_run(url: str, revision: str) -> None:
    """An archive at `revision` holding run 1 (a script and a tag) as that revision wrote it."""
    from alembic import command

    command.upgrade(alembic_config(url=url), revision)
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO runs (id, started_at, status, env_name, managed, engine, workload,"
                " via, clients, threads, warmup_s, protocol, repeat, server_version) VALUES (1, "
                "'2026-01-01 00:00:00', 'ok', 'old', 1, 'postgresql', 'pgbench:tpcb-like', "
                "'direct', 4, 2, 0, 'simple', 0, 'PostgreSQL 15.1')"
            )
        )
        conn.execute(
            text(
                "INSERT INTO run_scripts (run_id, script_no, name, weight, transactions, failed,"
                " retried, skipped, rollbacks) VALUES (1, 0, 'pgbench:tpcb', 1, 10, 0, 0, 0, 0)"
            )
        )
        conn.execute(text("INSERT INTO run_tags (run_id, key, value) VALUES (1, 'k', 'v')"))
    engine.dispose()


def test_revision_0003_retypes_tables_without_losing_their_children(url: str) -> None:
    # SQLite rebuilds runs, run_tags and studies: with foreign keys on, dropping the old runs
    # would cascade to run_scripts and run_tags (the store migrates with them off).
    _archive_with_an_old_run(url, "0002")
    with Archive(url) as a:  # SQLite: upgraded when opened
        assert a.schema_before == "0002" and a.schema_revision() == SCHEMA_HEAD
        old = a.get_run(1)
        assert ([s.transactions for s in old.scripts], old.tags) == ([10], {"k": "v"})
    engine = create_engine(url)
    with engine.connect() as conn:
        columns = {c["name"]: c for c in inspect(conn).get_columns("runs")}
        fks = conn.exec_driver_sql("PRAGMA foreign_key_list(run_scripts)").fetchall()
        ctx = MigrationContext.configure(
            conn, opts={"compare_type": True, "version_table": VERSION_TABLE}
        )
        assert compare_metadata(ctx, metadata) == []  # rebuilt tables: same indexes, keys
    engine.dispose()
    assert {"lease_host", "lease_pid", "lease_pid_started", "heartbeat_at"} <= set(columns)
    assert str(columns["server_version"]["type"]) == "TEXT"
    assert fks and fks[0][2] == "runs"  # the children still reference the rebuilt table


def test_an_older_shared_schema_needs_an_explicit_upgrade(url: str) -> None:
    _archive_with_an_old_run(url, "0002")
    message = r"schema revision '0002', older than this pgrig's '0005': run `pgrig archive upg"
    with pytest.raises(PgrigError, match=message):
        Archive(url, upgrade=False)  # what a PostgreSQL archive gets by default
    with Archive(url, upgrade=True) as a:
        assert a.schema_revision() == SCHEMA_HEAD and a.get_run(1).env_name == "old"
