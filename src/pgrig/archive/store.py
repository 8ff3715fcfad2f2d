"""The archive: every run, whatever its outcome, in SQLite (local) or PostgreSQL (teams).

Modelled on optuna's RDB storage: SQLAlchemy 2 over the tables in models.py, Alembic
migrations shipped inside the package and applied automatically when an archive is opened.
Opening an archive that is already at the head revision costs one query and imports neither
Alembic nor the ORM (the store works on the Core tables), so `pgrig runs list` stays fast.

Concurrency: a run inserts its row at once (`begin_run` commits) so other processes see it, and
writes its results in one transaction (`finish_run`). On SQLite the journal is WAL with a busy
timeout, so listing works while a run is writing; write transactions take the lock up front
(BEGIN IMMEDIATE) instead of failing half-way when another writer got there first.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import fields
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    Connection,
    CursorResult,
    Engine,
    RowMapping,
    create_engine,
    delete,
    event,
    exists,
    func,
    insert,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, OperationalError

from pgrig import paths
from pgrig.archive import lease
from pgrig.archive.export import SCRIPT_FIGURES, script_figures
from pgrig.archive.models import BLOB_KINDS, LATENCY_COLUMNS
from pgrig.archive.models import blobs as blobs_t
from pgrig.archive.models import runs as runs_t
from pgrig.archive.models import scripts as scripts_t
from pgrig.archive.models import series as series_t
from pgrig.archive.models import studies as studies_t
from pgrig.archive.models import tags as tags_t
from pgrig.archive.records import (
    LATENCY_FIELDS,
    LatencyStats,
    RunFilter,
    RunRecord,
    ScriptResult,
    StudyRecord,
)
from pgrig.errors import NotFound, PgrigError

if TYPE_CHECKING:
    from alembic.config import Config

__all__ = [
    "MARKABLE_STATUSES",
    "MIGRATIONS_DIR",
    "RUN_STATUSES",
    "SCHEMA_HEAD",
    "STUDY_STATUSES",
    "VERSION_TABLE",
    "Archive",
    "alembic_config",
    "mask_url",
    "normalize_url",
]

# Alembic's version table, under a name of our own so an archive can live in a database that
# other Alembic-managed applications also use.
VERSION_TABLE = "pgrig_schema_version"
# The newest revision in migrations/versions/ (a unit test keeps the two in step). Knowing it
# without Alembic lets an up-to-date archive open with a single SELECT.
SCHEMA_HEAD = "0003"
MIGRATIONS_DIR = Path(__file__).parent / "migrations"

RUN_STATUSES = ("running", "ok", "failed", "aborted", "lost")
# What `pgrig runs mark` may set: the ends of a run pgrig could not record itself.
MARKABLE_STATUSES = ("aborted", "failed", "lost")
# A run begun by a pgrig older than revision 0003 has no lease: it is lost once this old.
_LEGACY_STALE = timedelta(days=1)
STUDY_STATUSES = ("running", "done", "interrupted", "failed")
_PG_LOCK_KEY = 0x70677269  # "pgri": serialises concurrent schema upgrades on PostgreSQL
_SQLITE_TIMEOUT_S = 30  # how long a write waits for another process's write lock
_COMPRESS_ABOVE = 256  # bytes of JSON; smaller documents are stored as plain JSON

_RECORD_FIELDS = {f.name for f in fields(RunRecord)}
# Columns of `runs` that map 1:1 onto a RunRecord field of the same name.
_PLAIN_COLUMNS = tuple(
    c.name
    for c in runs_t.columns
    if c.name in _RECORD_FIELDS and c.name not in ("id", "started_at", "ended_at")
)
_LEASE_COLUMNS = ("lease_host", "lease_pid", "lease_pid_started", "heartbeat_at")
_LIGHT_COLUMNS = (
    *(c for c in runs_t.columns if c.name not in _LEASE_COLUMNS),
    studies_t.c.name.label("study_name"),
)


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


# --- encoding of blobs and series --------------------------------------------------------------


def _encode(obj: Any) -> tuple[str, bytes]:
    raw = json.dumps(obj, separators=(",", ":"), default=str).encode()
    if len(raw) < _COMPRESS_ABOVE:
        return "json", raw
    return "zlib-json", zlib.compress(raw, 1)  # 4.5x on series at ~6x the speed of level 6


def _decode(codec: str, data: bytes) -> Any:
    if codec == "zlib-json":
        data = zlib.decompress(data)
    elif codec != "json":
        raise PgrigError(f"archive holds data in an unknown encoding {codec!r}: upgrade pgrig")
    return json.loads(data)


# --- conversions between records and rows --------------------------------------------------


def _db_time(dt: datetime | None, sqlite: bool) -> datetime | None:
    """UTC for storage; naive input is taken as local time. SQLite stores naive UTC text."""
    if dt is None:
        return None
    dt = dt.astimezone(UTC)
    return dt.replace(tzinfo=None) if sqlite else dt


def _record_time(dt: datetime | None) -> datetime | None:
    if dt is None:
        return None
    if dt.tzinfo is None:
        return dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def _host_summary(host: Mapping[str, Any]) -> tuple[str | None, int | None]:
    """Host name and logical CPU count from the host facts, whatever key the sampler used."""
    name = next((host[k] for k in ("hostname", "host_name", "name") if host.get(k)), None)
    cpus = next(
        (host[k] for k in ("cpus", "cpu_logical", "cpu_count", "logical_cpus") if host.get(k)),
        None,
    )
    try:
        cpus = int(cpus) if cpus is not None else None
    except (TypeError, ValueError):
        cpus = None
    return (str(name) if name is not None else None), cpus


def _check_status(status: str) -> None:
    if status not in RUN_STATUSES:
        raise PgrigError(
            f"unknown run status {status!r}: expected one of {', '.join(RUN_STATUSES)}"
        )


def _run_row(rec: RunRecord, study_id: int | None, sqlite: bool) -> dict[str, Any]:
    row: dict[str, Any] = {name: getattr(rec, name) for name in _PLAIN_COLUMNS}
    row["started_at"] = _db_time(rec.started_at, sqlite)
    row["ended_at"] = _db_time(rec.ended_at, sqlite)
    row["study_id"] = study_id
    for col, f in zip(LATENCY_COLUMNS, LATENCY_FIELDS, strict=True):
        row[col] = getattr(rec.latency, f)
    row["host_name"], row["host_cpus"] = _host_summary(rec.host)
    return row


def _inserted_id(result: CursorResult[Any]) -> int:
    """The primary key of the one row an INSERT made."""
    key = result.inserted_primary_key
    if key is None:
        raise PgrigError("the archive did not return the new row's id")
    return int(key[0])


def _record_from_row(row: RowMapping) -> RunRecord:
    """A light record: scalars only (tags, scripts, blobs and series are loaded separately)."""
    rec = RunRecord(**{name: row[name] for name in _PLAIN_COLUMNS})
    rec.id = row["id"]
    rec.managed = bool(row["managed"])
    rec.started_at = _record_time(row["started_at"])
    rec.ended_at = _record_time(row["ended_at"])
    rec.study = row["study_name"]
    rec.latency = LatencyStats(
        **{f: row[c] for c, f in zip(LATENCY_COLUMNS, LATENCY_FIELDS, strict=True)}
    )
    # Light records carry the host summary under canonical keys; get_run replaces it with the
    # full host facts as they were recorded.
    rec.host = {k: v for k, v in (("hostname", row["host_name"]), ("cpus", row["host_cpus"])) if v}
    return rec


def _script_row(run_id: int, s: ScriptResult) -> dict[str, Any]:
    row = {"run_id": run_id, **script_figures(s)}
    for col, f in zip(LATENCY_COLUMNS, LATENCY_FIELDS, strict=True):
        row[col] = getattr(s.latency, f)
    return row


def _script_from_row(row: RowMapping) -> ScriptResult:
    return ScriptResult(
        **{name: row[name] for name in SCRIPT_FIGURES},
        latency=LatencyStats(
            **{f: row[c] for c, f in zip(LATENCY_COLUMNS, LATENCY_FIELDS, strict=True)}
        ),
    )


def _study_from_row(row: RowMapping) -> StudyRecord:
    return StudyRecord(
        id=row["id"],
        name=row["name"],
        kind=row["kind"],
        spec=row["spec"],
        status=row["status"],
        created_at=_record_time(row["created_at"]),
        extra=json.loads(row["extra"]) if row["extra"] else {},
    )


def _filter_clauses(flt: RunFilter | None) -> list[Any]:
    if flt is None:
        return []
    where: list[Any] = []
    if flt.env_name is not None:
        where.append(runs_t.c.env_name == flt.env_name)
    if flt.status is not None:
        _check_status(flt.status)
        where.append(runs_t.c.status == flt.status)
    if flt.study is not None:
        where.append(studies_t.c.name == flt.study)
    if flt.workload is not None:
        where.append(runs_t.c.workload == flt.workload)
    if flt.server_major is not None:
        where.append(runs_t.c.server_major == flt.server_major)
    if flt.tag is not None:
        key, value = flt.tag
        where.append(
            exists().where(
                tags_t.c.run_id == runs_t.c.id, tags_t.c.key == key, tags_t.c.value == value
            )
        )
    if flt.text:
        pattern = "%" + flt.text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        where.append(runs_t.c.note.ilike(pattern, escape="\\"))
    return where


def _order_clause(order: str) -> list[Any]:
    name = order.lstrip("+-")
    if name not in runs_t.c:
        raise PgrigError(
            f"cannot order runs by {name!r}: use a column such as id, started_at, tps "
            "(prefix - for descending)"
        )
    col = runs_t.c[name]
    desc = order.startswith("-")
    primary = col.desc() if desc else col.asc()
    if name == "id":
        return [primary]
    # NULLs last either way; id breaks ties so paging is stable.
    return [col.is_(None), primary, runs_t.c.id.desc() if desc else runs_t.c.id.asc()]


# --- the store -----------------------------------------------------------------------------


class Archive:
    """All runs and studies. `Archive()` opens the default archive (PGRIG_ARCHIVE or SQLite in
    the pgrig home).

    Schema: a new (empty) archive is created at this code's revision. An SQLite archive (one
    user's file) is upgraded automatically; a PostgreSQL archive is shared, so an older schema
    is upgraded only when asked (`upgrade=True`: `pgrig archive upgrade`), never behind the
    back of the team's other, older clients. A schema newer than this code is refused.

    Opening also recovers what dead runs left (`recover`): spooled records of this archive are
    imported, then runs whose owner died are marked "lost" (archive/lease.py, spool.py).
    """

    def __init__(
        self, url: str | None = None, *, upgrade: bool | None = None, recover: bool = True
    ) -> None:
        self._url = normalize_url(url)
        self.url = mask_url(self._url)  # safe to show
        try:
            parsed = make_url(self._url)
        except ArgumentError:
            raise PgrigError(f"invalid archive URL {self.url}") from None
        backend = parsed.get_backend_name()
        if backend not in ("sqlite", "postgresql"):
            raise PgrigError(
                f"unsupported archive URL {self.url}: use sqlite:///path or postgresql://..."
            )
        self._sqlite = backend == "sqlite"
        self._engine = self._make_engine(parsed)
        self.recovered: list[str] = []  # what recover() did, one line each, for the CLI to show
        self.lost_runs: list[int] = []  # the runs recover() marked lost (their envs: to undo)
        self.schema_before: str | None = None  # the revision opening found
        try:
            self._ensure_schema(self._sqlite if upgrade is None else upgrade)
            if recover:
                self.recover()
        except BaseException:
            self._engine.dispose()
            raise

    def __repr__(self) -> str:
        return f"Archive({self.url!r})"

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._engine.dispose()

    # --- engine and transactions -------------------------------------------------------------

    def _make_engine(self, url: Any) -> Engine:
        if not self._sqlite:
            return create_engine(url, pool_pre_ping=True)
        db = url.database
        memory = not db or db == ":memory:"
        if not memory:
            try:
                Path(db).expanduser().parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise PgrigError(f"cannot create the archive directory for {self.url}: {e}") from e
        kwargs: dict[str, Any] = {
            "connect_args": {"timeout": _SQLITE_TIMEOUT_S, "check_same_thread": False}
        }
        if memory:
            from sqlalchemy.pool import StaticPool

            kwargs["poolclass"] = StaticPool
        engine = create_engine(url, **kwargs)

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
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
    def _read(self) -> Iterator[Connection]:
        try:
            with self._engine.connect() as conn:
                yield conn
        except OperationalError as e:
            raise self._db_error(e) from e

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        """One transaction: committed when the block ends, rolled back on any exception."""
        try:
            with self._engine.connect() as conn, self._write_on(conn):
                yield conn
        except OperationalError as e:
            raise self._db_error(e) from e

    @contextmanager
    def _write_on(self, conn: Connection) -> Iterator[None]:
        conn.execution_options(pgrig_write=True)
        with conn.begin():
            yield

    @contextmanager
    def _migration_connection(self) -> Iterator[Connection]:
        """A connection for migrations. On SQLite, foreign keys are off while it migrates
        (SQLite's procedure for altering tables): a batch rebuild drops the old table, which
        would cascade to the rows referencing it. The pragma only works outside a transaction,
        hence on the driver's connection before SQLAlchemy begins one."""
        with self._engine.connect() as conn:
            raw = conn.connection.driver_connection if self._sqlite else None
            if raw is not None:
                raw.execute("PRAGMA foreign_keys=OFF")
            try:
                yield conn
            finally:
                if raw is not None:
                    raw.execute("PRAGMA foreign_keys=ON")

    def _check_foreign_keys(self, conn: Connection) -> None:
        broken = conn.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
        if broken:
            raise PgrigError(f"archive {self.url}: migration broke references: {broken[:3]}")

    @contextmanager
    def _try_write(self, wait_s: float) -> Iterator[Connection]:
        """A write transaction that waits at most `wait_s` for the lock (SQLite; PostgreSQL
        row locks are short): housekeeping must not hang a command behind another writer."""
        try:
            with self._engine.connect() as conn:
                raw = conn.connection.driver_connection if self._sqlite else None
                if raw is not None:
                    raw.execute(f"PRAGMA busy_timeout={int(wait_s * 1000)}")
                try:
                    with self._write_on(conn):
                        if not self._sqlite:
                            ms = int(wait_s * 1000)
                            conn.execute(text(f"SET LOCAL lock_timeout = '{ms}ms'"))
                        yield conn
                finally:
                    if raw is not None:
                        raw.execute(f"PRAGMA busy_timeout={_SQLITE_TIMEOUT_S * 1000}")
        except OperationalError as e:
            raise self._db_error(e) from e

    def _db_error(self, e: DBAPIError) -> PgrigError:
        return PgrigError(f"archive {self.url}: {_detail(e)}")

    # --- schema ------------------------------------------------------------------------------

    def _read_revision(self, conn: Connection) -> str | None:
        if not inspect(conn).has_table(VERSION_TABLE):
            return None
        return conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()

    def schema_revision(self) -> str | None:
        with self._read() as conn:
            return self._read_revision(conn)

    def _ensure_schema(self, upgrade: bool) -> None:
        try:
            with self._engine.connect() as conn:
                revision = self._read_revision(conn)
                empty = revision is None and not inspect(conn).get_table_names()
        except DBAPIError as e:
            raise PgrigError(f"cannot open archive {self.url}: {_detail(e)}") from e
        self.schema_before = revision  # what opening found (`pgrig archive upgrade` says it)
        if revision == SCHEMA_HEAD:
            return
        self._check_known(revision)
        if not (upgrade or empty):
            raise PgrigError(
                f"archive {self.url} has schema revision {revision!r}, older than this pgrig's "
                f"{SCHEMA_HEAD!r}: run `pgrig archive upgrade` (every client of this archive "
                f"then needs a pgrig that knows {SCHEMA_HEAD!r})"
            )
        self._upgrade()

    def _check_known(self, revision: str | None) -> None:
        from alembic.script import ScriptDirectory

        script = ScriptDirectory.from_config(alembic_config())
        known = {s.revision for s in script.walk_revisions()}
        if revision is not None and revision not in known:
            raise PgrigError(
                f"archive {self.url} has schema revision {revision!r}, newer than this pgrig "
                f"knows (up to {SCHEMA_HEAD!r}): this pgrig is too old for it, upgrade pgrig"
            )

    def _upgrade(self) -> None:
        from alembic import command

        cfg = alembic_config()
        try:
            with self._migration_connection() as conn, self._write_on(conn):
                if not self._sqlite:
                    conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK_KEY})
                # Another process may have migrated while we waited for the lock.
                if self._read_revision(conn) != SCHEMA_HEAD:
                    cfg.attributes["connection"] = conn
                    command.upgrade(cfg, "head")
                if self._sqlite:
                    self._check_foreign_keys(conn)
        except DBAPIError as e:
            raise PgrigError(
                f"cannot bring archive {self.url} to schema revision {SCHEMA_HEAD}: {_detail(e)}"
            ) from e

    # --- runs --------------------------------------------------------------------------------

    def _study_id(self, conn: Connection, name: str | None) -> int | None:
        if name is None:
            return None
        sid = conn.execute(select(studies_t.c.id).where(studies_t.c.name == name)).scalar()
        if sid is None:
            raise NotFound(f"study {name!r} is not in archive {self.url}")
        return sid

    def begin_run(self, rec: RunRecord) -> int:
        """Insert the run with status "running" and commit, so other processes see it at once.

        Sets rec.id, rec.status and rec.started_at (now, if unset); stores the tags too, so a
        running run can be found by tag.
        """
        if rec.id is not None:
            raise ValueError(f"run {rec.id} was already begun")
        rec.status = "running"
        rec.started_at = rec.started_at or datetime.now(UTC)
        with self._write() as conn:
            row = _run_row(rec, self._study_id(conn, rec.study), self._sqlite)
            row.update(lease.Owner.me().as_columns(), heartbeat_at=self._now())
            run_id = _inserted_id(conn.execute(insert(runs_t).values(row)))
            if rec.tags:
                conn.execute(insert(tags_t), _tag_rows(run_id, rec.tags))
        rec.id = run_id
        return run_id

    def finish_run(self, rec: RunRecord, *, wait_s: float | None = None) -> None:
        """Store everything about a run in ONE transaction: the row, scripts, tags, blobs, series.

        On any error nothing of it is written (a begun run stays as it was). A record that was
        never begun (rec.id is None, e.g. an import) is inserted whole and gets its id.
        Sets rec.ended_at (now, if unset and the run is no longer running). `wait_s`: wait at
        most this long for another writer's lock (default: the archive's usual timeout).
        """
        _check_status(rec.status)
        if rec.status != "running" and rec.ended_at is None:
            rec.ended_at = datetime.now(UTC)
        rec.started_at = rec.started_at or rec.ended_at or datetime.now(UTC)
        # Encode before the transaction: the write lock is held as briefly as possible.
        blobs = [(kind, *_encode(getattr(rec, kind))) for kind in BLOB_KINDS if getattr(rec, kind)]
        series = [(kind, *_encode(cols)) for kind, cols in rec.series.items()]
        with self._write() if wait_s is None else self._try_write(wait_s) as conn:
            row = _run_row(rec, self._study_id(conn, rec.study), self._sqlite)
            if rec.id is None:
                run_id = _inserted_id(conn.execute(insert(runs_t), row))
            else:
                run_id = rec.id
                done = conn.execute(update(runs_t).where(runs_t.c.id == run_id), row)
                if done.rowcount != 1:
                    raise NotFound(f"run {run_id} is not in archive {self.url}")
                for table in (tags_t, blobs_t, series_t, scripts_t):
                    conn.execute(delete(table).where(table.c.run_id == run_id))
            if rec.tags:
                conn.execute(insert(tags_t), _tag_rows(run_id, rec.tags))
            if blobs:
                conn.execute(
                    insert(blobs_t),
                    [{"run_id": run_id, "kind": k, "codec": c, "data": d} for k, c, d in blobs],
                )
            if series:
                conn.execute(
                    insert(series_t),
                    [{"run_id": run_id, "kind": k, "codec": c, "data": d} for k, c, d in series],
                )
            if rec.scripts:
                conn.execute(insert(scripts_t), [_script_row(run_id, s) for s in rec.scripts])
        rec.id = run_id

    def get_run(self, run_id: int) -> RunRecord:
        """The whole run: scalars, tags, scripts, settings, host, artifacts, extra and series."""
        with self._read() as conn:
            recs = self._select_runs(conn, [runs_t.c.id == run_id])
            if not recs:
                raise NotFound(f"run {run_id} is not in archive {self.url}")
            rec = recs[0]
            rec.scripts = [
                _script_from_row(r)
                for r in conn.execute(
                    select(scripts_t)
                    .where(scripts_t.c.run_id == run_id)
                    .order_by(scripts_t.c.script_no)
                ).mappings()
            ]
            for kind, codec, data in conn.execute(
                select(blobs_t.c.kind, blobs_t.c.codec, blobs_t.c.data).where(
                    blobs_t.c.run_id == run_id
                )
            ):
                if kind in BLOB_KINDS:
                    setattr(rec, kind, _decode(codec, data))
            rec.series = self._series(conn, run_id)
        return rec

    def run_series(self, run_id: int, kinds: list[str] | None = None) -> dict[str, Any]:
        """Series of one run, {kind: {column: [values]}}; only `kinds` if given."""
        with self._read() as conn:
            if conn.execute(select(runs_t.c.id).where(runs_t.c.id == run_id)).scalar() is None:
                raise NotFound(f"run {run_id} is not in archive {self.url}")
            return self._series(conn, run_id, kinds)

    def _series(self, conn: Connection, run_id: int, kinds: list[str] | None = None) -> dict:
        q = select(series_t.c.kind, series_t.c.codec, series_t.c.data).where(
            series_t.c.run_id == run_id
        )
        if kinds is not None:
            q = q.where(series_t.c.kind.in_(kinds))
        return {kind: _decode(codec, data) for kind, codec, data in conn.execute(q)}

    def _select_runs(
        self,
        conn: Connection,
        where: list[Any],
        order: str = "-id",
        limit: int | None = None,
        offset: int = 0,
    ) -> list[RunRecord]:
        q = (
            select(*_LIGHT_COLUMNS)
            .select_from(runs_t.outerjoin(studies_t, runs_t.c.study_id == studies_t.c.id))
            .where(*where)
            .order_by(*_order_clause(order))
        )
        if limit:
            q = q.limit(limit)
        if offset:
            q = q.offset(offset)
        recs = [_record_from_row(r) for r in conn.execute(q).mappings()]
        if recs:
            by_id = {r.id: r for r in recs}
            for run_id, key, value in conn.execute(
                select(tags_t.c.run_id, tags_t.c.key, tags_t.c.value)
                .where(tags_t.c.run_id.in_(list(by_id)))
                .order_by(tags_t.c.run_id, tags_t.c.key)
            ):
                by_id[run_id].tags[key] = value
        return recs

    def list_runs(
        self,
        filter: RunFilter | None = None,
        limit: int | None = 50,
        offset: int = 0,
        order: str = "-id",
    ) -> list[RunRecord]:
        """Light records (scalars and tags; no scripts, blobs or series), newest first by
        default. `order` is a runs column, "-" prefixed for descending; limit None: all."""
        if (limit is not None and limit < 0) or offset < 0:
            raise PgrigError("limit and offset must not be negative")
        with self._read() as conn:
            return self._select_runs(conn, _filter_clauses(filter), order, limit, offset)

    def count_runs(self, filter: RunFilter | None = None) -> int:
        q = (
            select(func.count())
            .select_from(runs_t.outerjoin(studies_t, runs_t.c.study_id == studies_t.c.id))
            .where(*_filter_clauses(filter))
        )
        with self._read() as conn:
            return conn.execute(q).scalar_one()

    def delete_run(self, run_id: int) -> None:
        """Remove a run and everything stored with it in one transaction, then its artifact
        files in this home. A live run (its owner still runs it) is refused."""
        from pgrig.archive.artifacts import remove_run_artifacts

        with self._write() as conn:
            self._refuse_live(conn, run_id, "delete")
            for table in (tags_t, blobs_t, series_t, scripts_t):
                conn.execute(delete(table).where(table.c.run_id == run_id))
            if conn.execute(delete(runs_t).where(runs_t.c.id == run_id)).rowcount != 1:
                raise NotFound(f"run {run_id} is not in archive {self.url}")
        remove_run_artifacts(run_id)

    def mark_run(self, run_id: int, status: str, reason: str) -> None:
        """Set the status of a run pgrig could not finish (`pgrig runs mark`); a live run is
        refused. `reason` becomes its error unless it has one."""
        if status not in MARKABLE_STATUSES:
            raise PgrigError(
                f"--status {status!r}: a run can be marked {', '.join(MARKABLE_STATUSES)}"
            )
        with self._write() as conn:
            row = self._refuse_live(conn, run_id, "mark")
            values: dict[str, Any] = {"status": status, "error": row["error"] or reason}
            if row["ended_at"] is None:
                values["ended_at"] = row["heartbeat_at"] or row["started_at"]
            conn.execute(update(runs_t).where(runs_t.c.id == run_id).values(**values))

    # --- leases: see archive/lease.py ------------------------------------------------------------

    def _now(self) -> Any:
        """The archive's clock on PostgreSQL (hosts sharing it agree on it), else ours."""
        return func.now() if not self._sqlite else _db_time(datetime.now(UTC), True)

    def heartbeat(self, run_id: int) -> None:
        """Stamp a running run as alive (its heartbeat thread calls this every few seconds)."""
        with self._write() as conn:
            conn.execute(
                update(runs_t)
                .where(runs_t.c.id == run_id, runs_t.c.status == "running")
                .values(heartbeat_at=self._now())
            )

    def _lease_rows(self, conn: Connection, where: list[Any]) -> list[RowMapping]:
        q = select(
            runs_t.c.id,
            runs_t.c.status,
            runs_t.c.error,
            runs_t.c.started_at,
            runs_t.c.ended_at,
            runs_t.c.study_id,
            *(runs_t.c[c] for c in _LEASE_COLUMNS),
        ).where(*where)
        return list(conn.execute(q).mappings())

    def _clock(self, conn: Connection) -> datetime:
        if self._sqlite:
            return datetime.now(UTC)
        return _record_time(conn.execute(select(func.now())).scalar_one()) or datetime.now(UTC)

    def _lost(self, row: RowMapping, now: datetime) -> bool:
        """Whether a running run's owner is gone (the rules are in archive/lease.py)."""
        if row["lease_pid"] is None:  # begun by a pgrig older than schema revision 0003
            started = _record_time(row["started_at"])
            return started is None or now - started > _LEGACY_STALE
        gone = lease.is_gone(lease.Owner.from_columns(row))
        if gone is None:
            return lease.expired(_record_time(row["heartbeat_at"]), now)
        return gone

    def _refuse_live(self, conn: Connection, run_id: int, verb: str) -> RowMapping:
        rows = self._lease_rows(conn, [runs_t.c.id == run_id])
        if not rows:
            raise NotFound(f"run {run_id} is not in archive {self.url}")
        row = rows[0]
        if row["status"] == "running" and not self._lost(row, self._clock(conn)):
            raise PgrigError(
                f"cannot {verb} run {run_id}: it is running (pgrig pid {row['lease_pid']} on "
                f"{row['lease_host']}); stop that run first"
            )
        return row

    def running_owner(self, run_id: int) -> str | None:
        """ "pid N on HOST" when the run is live (running and its owner alive), else None."""
        with self._read() as conn:
            rows = self._lease_rows(conn, [runs_t.c.id == run_id])
            if not rows or rows[0]["status"] != "running":
                return None
            row = rows[0]
            if self._lost(row, self._clock(conn)):
                return None
            return f"pid {row['lease_pid']} on {row['lease_host']}"

    def mark_lost_runs(self, wait_s: float = 1.0) -> list[int]:
        """Mark "lost" every running run whose owner is gone, with the partial series it
        spooled (spool.py), and its running study "interrupted" (resumable). Costs one indexed
        SELECT when nothing is running. A run whose row another writer holds for more than
        `wait_s` is left for the next command."""
        from pgrig.archive import spool
        from pgrig.archive.artifacts import run_artifacts_dir

        with self._read() as conn:
            running = self._lease_rows(conn, [runs_t.c.status == "running"])
            now = self._clock(conn) if running else datetime.now(UTC)
        dead = [r for r in running if self._lost(r, now)]
        marked = []
        for row in dead:
            series = spool.read_partial_series(row["id"])
            encoded = [(kind, *_encode(cols)) for kind, cols in series.items()]
            try:
                with self._try_write(wait_s) as conn:
                    done = conn.execute(
                        update(runs_t)
                        .where(runs_t.c.id == row["id"], runs_t.c.status == "running")
                        .values(
                            status="lost",
                            ended_at=row["heartbeat_at"] or row["started_at"],
                            error=_lost_reason(row),
                        )
                    )
                    if done.rowcount != 1:
                        continue  # finished or marked meanwhile
                    if row["study_id"] is not None:  # its study died with it: resumable
                        conn.execute(
                            update(studies_t)
                            .where(
                                studies_t.c.id == row["study_id"], studies_t.c.status == "running"
                            )
                            .values(status="interrupted")
                        )
                    if encoded:
                        conn.execute(delete(series_t).where(series_t.c.run_id == row["id"]))
                        conn.execute(
                            insert(series_t),
                            [
                                {"run_id": row["id"], "kind": k, "codec": c, "data": d}
                                for k, c, d in encoded
                            ],
                        )
            except PgrigError:
                continue
            marked.append(row["id"])
            spool.PartialSeries(run_artifacts_dir(row["id"], create=False)).remove()
        return marked

    def import_spooled(self, path: Path) -> int:
        """Import one spooled record (spool.py) in one transaction and remove the file.

        Refuses a spool of another archive, or one whose run id holds another run here."""
        from pgrig.archive import spool

        owner_url, rec = spool.read_spool(path)
        if owner_url != self.url:
            raise PgrigError(
                f"{path} belongs to archive {owner_url}, not {self.url}: open that archive "
                "(--archive or PGRIG_ARCHIVE) to import it"
            )
        return self._import_record(rec, path)

    def _import_record(self, rec: RunRecord, path: Path, wait_s: float | None = None) -> int:
        from pgrig.archive import spool

        assert rec.id is not None  # write_spool refuses records without one
        with self._read() as conn:
            found = self._select_runs(conn, [runs_t.c.id == rec.id])
        if not found:
            raise NotFound(f"run {rec.id} of {path} is not in archive {self.url} (deleted?)")
        here = found[0]
        if here.env_name != rec.env_name or here.started_at != _record_time(rec.started_at):
            raise PgrigError(f"run {rec.id} in archive {self.url} is not the run spooled in {path}")
        self.finish_run(rec, wait_s=wait_s)
        path.unlink(missing_ok=True)  # the file imported (it may have been given by path)
        spool.forget(rec.id)
        (path.parent / spool.PARTIAL_SERIES).unlink(missing_ok=True)
        return rec.id

    def recover(self) -> None:
        """Import this archive's spooled records, then mark dead runs lost. Each step is
        skipped when the archive is busy (said in `recovered`): the next command tries again."""
        from pgrig.archive import spool

        for path in spool.pending_spools():
            try:
                owner_url, rec = spool.read_spool(path)
                if owner_url != self.url:
                    continue  # another archive's: imported when that one is opened
                run_id = self._import_record(rec, path, wait_s=1.0)
            except PgrigError as e:
                self.recovered.append(f"spooled run not imported: {e}")
                continue
            self.recovered.append(f"run {run_id} imported from {path}")
        for run_id in self.mark_lost_runs():
            self.lost_runs.append(run_id)
            self.recovered.append(f"run {run_id} marked lost: its pgrig process is gone")

    # --- studies -----------------------------------------------------------------------------

    def create_study(self, rec: StudyRecord, resume: bool = False) -> StudyRecord:
        """Create a study; its name must be new unless `resume`, which returns the stored one."""
        if not rec.name or not rec.name.strip():
            raise PgrigError("a study needs a name")
        with self._write() as conn:
            row = conn.execute(select(studies_t).where(studies_t.c.name == rec.name)).mappings()
            existing = row.first()
            if existing is not None:
                if resume:
                    return _study_from_row(existing)
                raise PgrigError(
                    f"study {rec.name!r} already exists in archive {self.url}: resume it or "
                    "choose another name"
                )
            created = rec.created_at or datetime.now(UTC)
            try:
                sid = _inserted_id(
                    conn.execute(
                        insert(studies_t).values(
                            name=rec.name,
                            kind=rec.kind,
                            spec=rec.spec,
                            status=rec.status,
                            created_at=_db_time(created, self._sqlite),
                            extra=json.dumps(rec.extra, default=str) if rec.extra else None,
                        )
                    )
                )
            except IntegrityError:  # created concurrently by another process
                raise PgrigError(
                    f"study {rec.name!r} already exists in archive {self.url}"
                ) from None
        return StudyRecord(
            name=rec.name,
            kind=rec.kind,
            spec=rec.spec,
            id=sid,
            created_at=_record_time(created),
            status=rec.status,
            extra=dict(rec.extra),
        )

    def get_study(self, name: str) -> StudyRecord:
        with self._read() as conn:
            row = conn.execute(select(studies_t).where(studies_t.c.name == name)).mappings().first()
        if row is None:
            raise NotFound(f"study {name!r} is not in archive {self.url}")
        return _study_from_row(row)

    def list_studies(self) -> list[StudyRecord]:
        with self._read() as conn:
            rows = conn.execute(select(studies_t).order_by(studies_t.c.id)).mappings().all()
        return [_study_from_row(r) for r in rows]

    def set_study_status(self, name: str, status: str) -> None:
        if status not in STUDY_STATUSES:
            raise PgrigError(
                f"unknown study status {status!r}: expected one of {', '.join(STUDY_STATUSES)}"
            )
        with self._write() as conn:
            done = conn.execute(
                update(studies_t).where(studies_t.c.name == name).values(status=status)
            )
            if done.rowcount != 1:
                raise NotFound(f"study {name!r} is not in archive {self.url}")

    def delete_empty_study(self, name: str) -> bool:
        """Remove a study that holds no run (one whose first run could not start), so a
        corrected command can create it again; True if it was removed."""
        with self._write() as conn:
            sid = self._study_id(conn, name)
            if conn.execute(select(runs_t.c.id).where(runs_t.c.study_id == sid).limit(1)).first():
                return False
            conn.execute(delete(studies_t).where(studies_t.c.id == sid))
            return True

    def update_study_extra(self, name: str, values: Mapping[str, Any]) -> None:
        """Merge `values` into a study's extra (a tuning study keeps its trials there)."""
        with self._write() as conn:
            row = conn.execute(select(studies_t.c.extra).where(studies_t.c.name == name)).first()
            if row is None:
                raise NotFound(f"study {name!r} is not in archive {self.url}")
            extra = {**(json.loads(row[0]) if row[0] else {}), **values}
            conn.execute(
                update(studies_t)
                .where(studies_t.c.name == name)
                .values(extra=json.dumps(extra, default=str))
            )

    def study_runs(self, name: str) -> list[RunRecord]:
        """Light records of a study's runs in the order they were made (study_point, repeat
        are set on each), with their warnings (a report names the runs of a busy host)."""
        with self._read() as conn:
            self._study_id(conn, name)
            recs = self._select_runs(conn, [studies_t.c.name == name], order="id")
            self._add_warnings(conn, recs)
            return recs

    def add_warnings(self, recs: list[RunRecord]) -> list[RunRecord]:
        """Light records (list_runs) given their extra["warnings"], in one query."""
        with self._read() as conn:
            self._add_warnings(conn, recs)
        return recs

    def add_blobs(self, recs: list[RunRecord], kinds: Sequence[str]) -> list[RunRecord]:
        """Light records given their blobs of these kinds (e.g. host, insights), in one query."""
        unknown = set(kinds) - set(BLOB_KINDS)
        if unknown:
            raise ValueError(f"unknown blob kinds {sorted(unknown)}")
        by_id = {r.id: r for r in recs if r.id is not None}
        if not by_id or not kinds:
            return recs
        q = select(blobs_t.c.run_id, blobs_t.c.kind, blobs_t.c.codec, blobs_t.c.data).where(
            blobs_t.c.kind.in_(list(kinds)), blobs_t.c.run_id.in_(list(by_id))
        )
        with self._read() as conn:
            for run_id, kind, codec, data in conn.execute(q):
                setattr(by_id[run_id], kind, _decode(codec, data))
        return recs

    def _add_warnings(self, conn: Connection, recs: list[RunRecord]) -> None:
        by_id = {r.id: r for r in recs if r.id is not None}
        if not by_id:
            return
        q = select(blobs_t.c.run_id, blobs_t.c.codec, blobs_t.c.data).where(
            blobs_t.c.kind == "extra", blobs_t.c.run_id.in_(list(by_id))
        )
        for run_id, codec, data in conn.execute(q):
            warnings = _decode(codec, data).get("warnings")
            if warnings:
                by_id[run_id].extra["warnings"] = warnings


def _lost_reason(row: RowMapping) -> str:
    if row["lease_pid"] is None:
        return "the run's pgrig process ended without finishing it (no lease: older pgrig)"
    return (
        f"lost: pgrig process {row['lease_pid']} on {row['lease_host']} ended without "
        "finishing the run (series up to its last heartbeat kept)"
    )


def _detail(e: DBAPIError) -> str:
    """The driver's own first line, without the SQL and parameters SQLAlchemy appends."""
    return str(e.orig).strip().splitlines()[0] if e.orig is not None else type(e).__name__


def _tag_rows(run_id: int, tags: Mapping[str, str]) -> list[dict[str, Any]]:
    return [{"run_id": run_id, "key": str(k), "value": str(v)} for k, v in tags.items()]


def alembic_main(argv: list[str] | None = None) -> None:
    """Alembic's own command line over the packaged migrations, for developers writing a new
    revision: `python -m pgrig.archive.store revision --autogenerate -m "..."`
    (against PGRIG_ARCHIVE or the default archive)."""
    from alembic.config import CommandLine

    cli = CommandLine(prog="python -m pgrig.archive.store")
    options = cli.parser.parse_args(argv)
    cli.run_cmd(alembic_config(url=paths.default_archive_url()), options)


if __name__ == "__main__":
    alembic_main()
