"""The archive's database: its URL, the SQLAlchemy engine (SQLite in WAL mode with a busy
timeout, or PostgreSQL), read and write transactions, the archive's clock, and the one message
for each database error (a damaged SQLite file names the ways out). No table knowledge here:
the schema is archive/schema.py, the rows archive/rows.py.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, Connection, Engine, create_engine, event, func, select, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DatabaseError, DBAPIError, IntegrityError

from pgrig import paths
from pgrig.archive.rows import db_time, record_time
from pgrig.errors import PgrigError, first_line

if TYPE_CHECKING:
    import sqlite3

SQLITE_TIMEOUT_S = 30.0  # how long a write waits for another process's write lock


def sqlite_timeout_s() -> float:
    """How long a write to a SQLite archive waits for another process's write lock before
    it gives up (a run's record is then spooled): 30 s, or PGRIG_ARCHIVE_WAIT_S seconds."""
    given = os.environ.get("PGRIG_ARCHIVE_WAIT_S")
    if not given:
        return SQLITE_TIMEOUT_S
    try:
        seconds = float(given)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= 3600:
        raise PgrigError(
            f"PGRIG_ARCHIVE_WAIT_S={given}: a number of seconds, over 0 and at most 3600"
        )
    return seconds


# What SQLite says of a damaged file (a corrupted page, garbage where text was, not a database).
_DAMAGED = re.compile(
    r"malformed|not a database|file is encrypted|database corruption|Could not decode to UTF-8",
    re.I,
)


class ArchiveDamaged(PgrigError):
    """An SQLite archive file that SQLite cannot read: what to do is in the message."""


# --- URLs ----------------------------------------------------------------------------------


def normalize_url(url: str | None) -> str:
    """An SQLAlchemy URL for the archive: None → the default; postgresql:// → psycopg 3 driver.

    A bare path (no "://") means an SQLite file.
    """
    url = url or paths.default_archive_url()
    if "://" not in url:
        return f"sqlite:///{Path(url).expanduser().resolve()}"
    for prefix in ("postgresql://", "postgres://", "postgresql+psycopg2://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def mask_url(url: str) -> str:
    """The URL as it may be shown: any password replaced by ***."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<invalid archive URL>"


# --- the database --------------------------------------------------------------------------


class Database:
    """One archive database: `url` is safe to show (password masked), `raw_url` is not."""

    def __init__(self, url: str | None) -> None:
        self.raw_url = normalize_url(url)
        self.url = mask_url(self.raw_url)  # safe to show
        try:
            parsed = make_url(self.raw_url)
        except ArgumentError:
            raise PgrigError(f"invalid archive URL {self.url}") from None
        backend = parsed.get_backend_name()
        if backend not in ("sqlite", "postgresql"):
            raise PgrigError(
                f"unsupported archive URL {self.url}: use sqlite:///path or postgresql://..."
            )
        self.sqlite = backend == "sqlite"
        self.engine = self._make_engine(parsed)

    def close(self) -> None:
        self.engine.dispose()

    def _make_engine(self, url: URL) -> Engine:
        if not self.sqlite:
            return create_engine(url, pool_pre_ping=True)
        db = url.database
        memory = not db or db == ":memory:"
        if not memory and db:
            try:  # read-only commands refuse a missing file first (cli/common.reading_archive)
                Path(db).expanduser().parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise PgrigError(f"cannot create the archive directory for {self.url}: {e}") from e
        kwargs: dict[str, Any] = {
            "connect_args": {"timeout": sqlite_timeout_s(), "check_same_thread": False}
        }
        if memory:
            from sqlalchemy.pool import StaticPool

            kwargs["poolclass"] = StaticPool
        engine = create_engine(url, **kwargs)

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: sqlite3.Connection, _record: object) -> None:
            # Let SQLAlchemy (not pysqlite) decide where transactions begin, so DDL is
            # transactional and writers can BEGIN IMMEDIATE.
            dbapi_conn.isolation_level = None
            cur = dbapi_conn.cursor()
            if not memory:
                cur.execute("PRAGMA journal_mode=WAL")
                cur.execute("PRAGMA synchronous=NORMAL")  # safe with WAL; fsync at checkpoints
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn: Connection) -> None:
            write = conn.get_execution_options().get("pgrig_write", False)
            conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

        return engine

    @contextmanager
    def read(self) -> Iterator[Connection]:
        try:
            with self.engine.connect() as conn:
                yield conn
        except IntegrityError:
            raise
        except DatabaseError as e:  # OperationalError, or a damaged file (DatabaseError)
            raise self.error(e) from e

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """One transaction: committed when the block ends, rolled back on any exception."""
        try:
            with self.engine.connect() as conn, self.write_on(conn):
                yield conn
        except IntegrityError:
            raise
        except DatabaseError as e:
            raise self.error(e) from e

    @contextmanager
    def write_on(self, conn: Connection) -> Iterator[None]:
        conn.execution_options(pgrig_write=True)
        with conn.begin():
            yield

    @contextmanager
    def try_write(self, wait_s: float) -> Iterator[Connection]:
        """A write transaction that waits at most `wait_s` for the lock (SQLite; PostgreSQL
        row locks are short): housekeeping must not hang a command behind another writer."""
        try:
            with self.engine.connect() as conn:
                raw = conn.connection.driver_connection if self.sqlite else None
                if raw is not None:
                    raw.execute(f"PRAGMA busy_timeout={int(wait_s * 1000)}")
                try:
                    with self.write_on(conn):
                        if not self.sqlite:
                            ms = int(wait_s * 1000)
                            conn.execute(text(f"SET LOCAL lock_timeout = '{ms}ms'"))
                        yield conn
                finally:
                    if raw is not None:
                        raw.execute(f"PRAGMA busy_timeout={int(sqlite_timeout_s() * 1000)}")
        except IntegrityError:
            raise
        except DatabaseError as e:
            raise self.error(e) from e

    def error(self, e: DBAPIError) -> PgrigError:
        damaged = self.damaged(e)
        return damaged or PgrigError(f"archive {self.url}: {driver_detail(e)}")

    def damaged(self, e: BaseException) -> PgrigError | None:
        """The one message for an SQLite archive whose file is damaged (a corrupted page, a
        file that is not a database), naming the file and the ways out; None otherwise."""
        detail = driver_detail(e) if isinstance(e, DBAPIError) else str(e)
        if not self.sqlite or not _DAMAGED.search(detail):
            return None
        file = make_url(self.raw_url).database or self.url
        if "not a database" in detail:  # another file, or its first page is gone
            return ArchiveDamaged(
                f"cannot open archive {self.url}: {detail} (is --archive the right file? if "
                f"it is a damaged archive: `sqlite3 {file} .recover | sqlite3 "
                f"{file}.recovered`; or move {file} away and pgrig starts a fresh archive)"
            )
        return ArchiveDamaged(
            f"archive {file} is damaged ({detail}): recover what it holds with "
            f"`sqlite3 {file} .recover | sqlite3 {file}.recovered` and use --archive "
            f"{file}.recovered, or move {file} away and pgrig starts a fresh archive"
        )

    def now(self) -> ColumnElement[datetime] | datetime | None:
        """The archive's clock on PostgreSQL (hosts sharing it agree on it), else ours."""
        return func.now() if not self.sqlite else db_time(datetime.now(UTC), True)

    def clock(self, conn: Connection) -> datetime:
        if self.sqlite:
            return datetime.now(UTC)
        return record_time(conn.execute(select(func.now())).scalar_one()) or datetime.now(UTC)


def driver_detail(e: DBAPIError) -> str:
    """The driver's own first line, without the SQL and parameters SQLAlchemy appends."""
    return first_line(e.orig) if e.orig is not None else type(e).__name__
