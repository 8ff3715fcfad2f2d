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
    Archive(url).close()
    engine = create_engine(url)
    with engine.connect() as conn:
        ctx = MigrationContext.configure(
            conn, opts={"compare_type": True, "version_table": VERSION_TABLE}
        )
        assert compare_metadata(ctx, metadata) == []
        tables = set(inspect(conn).get_table_names())
    engine.dispose()
    assert tables == {*metadata.tables, VERSION_TABLE}


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
    with pytest.raises(PgrigError, match=r"schema revision '9999_future', newer than this pgrig"):
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
