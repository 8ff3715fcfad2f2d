"""Alembic environment of the archive.

pgrig runs migrations programmatically (pgrig.archive.schema.ensure): the caller passes an open
connection in `config.attributes["connection"]`, so no alembic.ini is needed at run time. For
writing a new revision, a developer can still run Alembic by hand, e.g.:

    python -m pgrig.archive.schema revision -m "add column x" --autogenerate
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine

from pgrig.archive.models import metadata
from pgrig.archive.schema import VERSION_TABLE

config = context.config


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        version_table=VERSION_TABLE,
        # SQLite cannot ALTER most things: batch mode rebuilds tables for later revisions.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    url = config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("alembic: no connection and no sqlalchemy.url to migrate")
    engine = create_engine(url)
    with engine.connect() as conn:
        _configure(conn)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    raise SystemExit("pgrig archive migrations run online only")
run_migrations_online()
