"""Connections and the tpcc_meta row (load-time constants and load status)."""

from __future__ import annotations

from dataclasses import dataclass

import psycopg
from psycopg.conninfo import conninfo_to_dict

from pgrig.errors import PgrigError, first_line


def connect(conninfo: str) -> psycopg.Connection:
    """An autocommit connection; connection errors become one-line PgrigErrors.

    The message names host, port and database only (never the password).
    """
    try:
        return psycopg.connect(conninfo, autocommit=True)
    except psycopg.OperationalError as e:
        first = first_line(e, default="connection failed")
        raise PgrigError(f"cannot connect to {describe(conninfo)}: {first}") from None


def describe(conninfo: str) -> str:
    """host:port/dbname of a conninfo, for messages."""
    try:
        p = conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError:
        return "the database"
    return f"{p.get('host', 'localhost')}:{p.get('port', 5432)}/{p.get('dbname', '')}"


@dataclass(frozen=True)
class Meta:
    warehouses: int
    c_last_load: int
    c_id_load: int
    ol_i_id_load: int
    partitions: int
    finished: bool


def read_meta(conn: psycopg.Connection) -> Meta:
    """The load record; PgrigError when the database holds no complete TPC-C load."""
    has = conn.execute("SELECT to_regclass('tpcc_meta') IS NOT NULL").fetchone()
    if not has or not has[0]:
        raise PgrigError(
            # no command to paste: this reader knows neither the environment nor the size
            "the database holds no TPC-C data (no tpcc_meta table): "
            "generate it first (`pgrig db generate` with --scenario tpcc)"
        )
    row = conn.execute(
        "SELECT warehouses, c_last_load, c_id_load, ol_i_id_load, partitions,"
        " finished_at IS NOT NULL FROM tpcc_meta"
    ).fetchone()
    if row is None:
        raise PgrigError("the TPC-C load record (tpcc_meta) is empty: generate the data again")
    meta = Meta(*row)
    if not meta.finished:
        raise PgrigError("the TPC-C load of this database did not finish: generate the data again")
    return meta
