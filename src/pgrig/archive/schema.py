"""The archive's schema: its revision (Alembic's version table, under pgrig's own name), the
migrations shipped inside the package, and bringing an archive to this code's revision when it
is opened (an empty or SQLite archive at once; a shared PostgreSQL archive only when asked).
A developer writing a new revision runs Alembic through this module:
`python -m pgrig.archive.schema revision --autogenerate -m "..."`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import (
    Column,
    Connection,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    inspect,
    select,
    text,
)
from sqlalchemy.exc import DBAPIError

from pgrig import paths
from pgrig.archive.engine import Database, driver_detail, normalize_url
from pgrig.archive.models import runs as runs_t
from pgrig.archive.models import studies as studies_t
from pgrig.errors import PgrigError

if TYPE_CHECKING:
    from alembic.config import Config

# Alembic's version table, under a name of our own so an archive can live in a database that
# other Alembic-managed applications also use.
VERSION_TABLE = "pgrig_schema_version"
# The newest revision in migrations/versions/ (a unit test keeps the two in step). Knowing it
# without Alembic lets an up-to-date archive open with a single SELECT.
SCHEMA_HEAD = "0005"
MIGRATIONS_DIR = Path(__file__).parent / "migrations"
_PG_LOCK_KEY = 0x70677269  # "pgri": serialises concurrent schema upgrades on PostgreSQL


def alembic_config(connection: Connection | None = None, url: str | None = None) -> Config:
    """A programmatic Alembic Config for the migrations inside the package (no alembic.ini)."""
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    if url:
        cfg.set_main_option("sqlalchemy.url", normalize_url(url).replace("%", "%%"))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def read_revision(conn: Connection) -> str | None:
    if not inspect(conn).has_table(VERSION_TABLE):
        return None
    return conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()


def revision(db: Database) -> str | None:
    """The archive's schema revision now (None: no pgrig schema)."""
    with db.read() as conn:
        return read_revision(conn)


def ensure(db: Database, upgrade: bool) -> str | None:
    """Bring the archive to SCHEMA_HEAD if it is empty or `upgrade`; refuse an older schema
    otherwise, and a newer one always. Returns the revision opening found."""
    try:
        with db.engine.connect() as conn:
            found = read_revision(conn)
            empty = found is None and not inspect(conn).get_table_names()
    except DBAPIError as e:
        raise db.damaged(e) or PgrigError(
            f"cannot open archive {db.url}: {driver_detail(e)}"
        ) from e
    if found == SCHEMA_HEAD:
        return found
    _check_known(db, found)
    if not (upgrade or empty):
        raise PgrigError(
            f"archive {db.url} has schema revision {found!r}, older than this pgrig's "
            f"{SCHEMA_HEAD!r}: run `pgrig archive upgrade` (every client of this archive "
            f"then needs a pgrig that knows {SCHEMA_HEAD!r})"
        )
    _upgrade(db)
    return found


def probe(db: Database) -> None:
    """A damaged SQLite file is said when it is opened, before a command acts (a run would
    otherwise find out only after its settings were applied): the newest run and study
    rows are read, which touches the roots of both tables (a few pages, whatever the
    archive's size)."""
    if not db.sqlite:
        return
    with db.read() as conn:
        conn.execute(select(runs_t).order_by(runs_t.c.id.desc()).limit(1)).first()
        conn.execute(select(studies_t).order_by(studies_t.c.id.desc()).limit(1)).first()


def _check_known(db: Database, found: str | None) -> None:
    if found is None:  # no schema yet: nothing to know (and alembic is ~0.1 s to import)
        return
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config())
    known = {s.revision for s in script.walk_revisions()}
    if found not in known:
        raise PgrigError(
            f"archive {db.url} has schema revision {found!r}, newer than this pgrig "
            f"knows (up to {SCHEMA_HEAD!r}): this pgrig is too old for it, upgrade pgrig"
        )


def _upgrade(db: Database) -> None:
    try:
        with _migration_connection(db) as conn, db.write_on(conn):
            if not db.sqlite:
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK_KEY})
            # Another process may have migrated while we waited for the lock.
            found = read_revision(conn)
            if found is None and not inspect(conn).get_table_names():
                _create_at_head(conn)
            elif found != SCHEMA_HEAD:
                from alembic import command

                cfg = alembic_config()
                cfg.attributes["connection"] = conn
                command.upgrade(cfg, "head")
            if db.sqlite:
                _check_foreign_keys(db, conn)
    except DBAPIError as e:
        raise PgrigError(
            f"cannot bring archive {db.url} to schema revision {SCHEMA_HEAD}: {driver_detail(e)}"
        ) from e


def _create_at_head(conn: Connection) -> None:
    """An empty archive made at SCHEMA_HEAD from the models and stamped, as Alembic's
    cookbook builds a database from scratch ("create_all, then stamp head"), without loading
    Alembic and replaying every revision: about 0.2 CPU-s at each first run of a new home.
    The unit and PostgreSQL archive tests hold this schema equal to the migrated one."""
    from pgrig.archive.models import metadata

    metadata.create_all(conn)
    version = Table(  # Alembic's own version table (alembic/ddl/impl.py version_table_impl)
        VERSION_TABLE,
        MetaData(),
        Column("version_num", String(32), nullable=False),
        PrimaryKeyConstraint("version_num", name=f"{VERSION_TABLE}_pkc"),
    )
    version.create(conn)
    conn.execute(version.insert().values(version_num=SCHEMA_HEAD))


@contextmanager
def _migration_connection(db: Database) -> Iterator[Connection]:
    """A connection for migrations. On SQLite, foreign keys are off while it migrates
    (SQLite's procedure for altering tables): a batch rebuild drops the old table, which
    would cascade to the rows referencing it. The pragma only works outside a transaction,
    hence on the driver's connection before SQLAlchemy begins one."""
    with db.engine.connect() as conn:
        raw = conn.connection.driver_connection if db.sqlite else None
        if raw is not None:
            raw.execute("PRAGMA foreign_keys=OFF")
        try:
            yield conn
        finally:
            if raw is not None:
                raw.execute("PRAGMA foreign_keys=ON")


def _check_foreign_keys(db: Database, conn: Connection) -> None:
    broken = conn.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
    if broken:
        raise PgrigError(f"archive {db.url}: migration broke references: {broken[:3]}")


def alembic_main(argv: list[str] | None = None) -> None:
    """Alembic's own command line over the packaged migrations, for developers writing a new
    revision: `python -m pgrig.archive.schema revision --autogenerate -m "..."`
    (against PGRIG_ARCHIVE or the default archive)."""
    from alembic.config import CommandLine

    cli = CommandLine(prog="python -m pgrig.archive.schema")
    options = cli.parser.parse_args(argv)
    cli.run_cmd(alembic_config(url=paths.default_archive_url()), options)


if __name__ == "__main__":
    alembic_main()
