"""Small database-level helpers shared by the data generators."""

from __future__ import annotations

import psycopg
from psycopg import sql

from pgrig.errors import PgrigError, first_line
from pgrig.provision.state.environment import Environment


def connect(env: Environment, dbname: str | None = None, **kw: object) -> psycopg.Connection:
    try:
        return psycopg.connect(env.conninfo(dbname), autocommit=True, **kw)  # type: ignore[arg-type]
    except psycopg.OperationalError as e:
        first = first_line(e, default="connection failed")
        raise PgrigError(f"cannot connect to {env.masked_target()}: {first}") from None


def ensure_database(env: Environment, dbname: str) -> bool:
    """Create the database if missing; True when it was created."""
    with connect(env, "postgres") as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (dbname,)).fetchone()
        if exists:
            return False
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
        return True


def database_size(env: Environment, dbname: str) -> int:
    with connect(env, dbname) as conn:
        return current_size(conn)


def current_size(conn: psycopg.Connection) -> int:
    """Size of the connection's database in bytes."""
    row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    return int(row[0]) if row else 0


def drop_database(env: Environment, dbname: str) -> None:
    """Drop a database pgrig created (its sessions ended first: WITH (FORCE), 13+)."""
    with connect(env, "postgres") as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(dbname))
        )
