"""The archive's schema: portable types, one schema for SQLite and PostgreSQL.

A length is given (String(n)) only where the values come from pgrig's own vocabulary (status,
kinds, codecs, via, protocol); everything from users, servers or hosts is Text (a version()
string of PostgreSQL 18.6 is 97 characters).

`runs` stays narrow (scalars only) so listing 10,000 runs touches no large values; everything
bulky (settings snapshot, host facts, series) lives in side tables as zlib-compressed JSON, one
row per kind. Schema changes go through Alembic revisions in `migrations/versions/`; a unit test
checks that the migrated schema and these tables never drift apart.

The tables are SQLAlchemy Core objects (the single definition), and SQLAlchemy 2 declarative
models (`Base`, `Run`, `RunScript`, `RunTag`, `RunBlob`, `RunSeries`, `Study`) are mapped onto
them on first access. The store itself only needs Core: not importing the ORM keeps
`pgrig runs list` about a tenth of a second faster to start.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
)
from sqlalchemy.types import TypeEngine

from pgrig.request import LOAD_FIELDS, LoadParams

# The declarative models are deliberately not in __all__: a star import must not map them.
__all__ = [
    "BLOB_KINDS",
    "LATENCY_COLUMNS",
    "blobs",
    "metadata",
    "runs",
    "scripts",
    "series",
    "studies",
    "tags",
]

# Named constraints keep future ALTERs (Alembic batch mode on SQLite) deterministic.
NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
metadata = MetaData(naming_convention=NAMING)

# Latency columns of `runs` and `run_scripts`: latency_<field>, milliseconds.
LATENCY_COLUMNS = tuple(
    f"latency_{f}" for f in ("avg", "stddev", "p50", "p90", "p95", "p99", "p999", "max")
)

# Kinds of run_blobs rows: the non-scalar parts of a RunRecord other than series and scripts.
BLOB_KINDS = ("settings", "settings_layers", "host", "artifacts", "extra", "insights")


def _req(name: str, *args: Any, **kw: Any) -> Column:
    return Column(name, *args, nullable=False, **kw)


def _opt(name: str, *args: Any, **kw: Any) -> Column:
    return Column(name, *args, nullable=True, **kw)


def _latency() -> list[Column]:
    return [_opt(c, Float) for c in LATENCY_COLUMNS]


# Load parameters: one column per field of the run request, under the field's name. Types
# follow the field's Python type; the columns revision 0001 created keep their exact types and
# NOT NULL, the later ones are nullable (runs archived before them did not record the value).
_REVISION_0001_TYPES: dict[str, TypeEngine[Any]] = {
    "workload": Text(),
    "via": String(32),
    "clients": Integer(),
    "threads": Integer(),
    "duration_s": Float(),
    "transactions_per_client": BigInteger(),
    "warmup_s": Float(),
    "rate": Float(),
    "latency_limit_ms": Float(),
    "protocol": String(16),
}
_SQL_TYPES: dict[type, type[TypeEngine[Any]]] = {
    bool: Boolean,
    int: Integer,
    float: Float,
    str: Text,
    dict: JSON,
    list: JSON,
}


def _python_type(annotation: Any) -> tuple[type, bool]:
    """(the base Python type, whether None is allowed) of a field annotation."""
    args = typing.get_args(annotation)
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return _python_type(inner[0])[0], len(inner) < len(args)
    if origin is typing.Annotated:
        return _python_type(args[0])
    if origin is typing.Literal:
        return type(args[0]), False
    return (origin or annotation), False


def _load_columns() -> list[Column]:
    out = []
    for name in LOAD_FIELDS:
        base, optional = _python_type(LoadParams.model_fields[name].annotation)
        if name in _REVISION_0001_TYPES:
            out.append(Column(name, _REVISION_0001_TYPES[name], nullable=optional))
        else:
            out.append(_opt(name, _SQL_TYPES[base]))
    return out


def _run_fk() -> Column:
    return Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)


studies = Table(
    "studies",
    metadata,
    Column("id", Integer, primary_key=True),
    _req("name", Text, unique=True),
    _req("kind", String(32)),  # iterations | sweep
    _req("spec", Text),  # the study file, verbatim
    _req("status", String(16)),
    _req("created_at", DateTime(timezone=True)),
    _opt("extra", Text),  # JSON object
)

runs = Table(
    "runs",
    metadata,
    Column("id", Integer, primary_key=True),
    _req("started_at", DateTime(timezone=True)),
    _opt("ended_at", DateTime(timezone=True)),
    _req("status", String(16)),
    _opt("error", Text),
    # target
    _req("env_name", Text),
    _req("managed", Boolean),
    _opt("target", Text),  # masked DSN
    _req("engine", Text),
    _opt("server_version", Text),  # version(): 97 chars on 18.6
    _opt("server_major", Integer),
    _opt("pgbench_version", Text),
    _opt("database", Text),
    _opt("scenario", Text),
    _opt("scale", Integer),
    _opt("db_size_bytes", BigInteger),
    # load parameters: the run request's fields
    *_load_columns(),
    _opt("note", Text),
    _opt("owner", Text),
    # study membership
    _opt("study_id", Integer, ForeignKey("studies.id", ondelete="SET NULL")),
    _opt("study_point", Text),
    _req("repeat", Integer),
    # results over the measured window
    _opt("measured_s", Float),
    _opt("tps", Float),
    _opt("transactions", BigInteger),
    _opt("failed", BigInteger),
    _opt("retried", BigInteger),
    _opt("skipped", BigInteger),
    _opt("rollbacks", BigInteger),
    _opt("nopm", Float),
    _opt("tpm", Float),
    *_latency(),
    _opt("cpu_user", Float),
    _opt("cpu_system", Float),
    _opt("cpu_iowait", Float),
    _opt("cpu_idle", Float),
    _opt("hit_ratio", Float),
    # host summary (the full facts are a blob) and the exact command line
    _opt("host_cpus", Integer),
    _opt("host_name", Text),
    _opt("command", Text),
    _opt("disk_limit", JSON),  # the server's disk limit in force (revision 0005)
    # the lease of a running run (archive/lease.py): who runs it and its last sign of life
    _opt("lease_host", Text),
    _opt("lease_pid", Integer),
    _opt("lease_pid_started", Float),  # the process's start time: a reused pid is not it
    _opt("heartbeat_at", DateTime(timezone=True)),
    # the list filters
    Index(None, "started_at"),
    Index(None, "status"),
    Index(None, "env_name"),
    Index(None, "study_id"),
    Index(None, "workload"),
)

# Figures per pgbench script (transaction type) of a run.
scripts = Table(
    "run_scripts",
    metadata,
    _run_fk(),
    Column("script_no", Integer, primary_key=True),
    _req("name", Text),
    _req("weight", Integer),
    _req("transactions", BigInteger),
    _req("failed", BigInteger),
    _req("retried", BigInteger),
    _req("skipped", BigInteger),
    _req("rollbacks", BigInteger),
    _opt("tps", Float),
    *_latency(),
)

tags = Table(
    "run_tags",
    metadata,
    _run_fk(),
    Column("key", Text, primary_key=True),
    _req("value", Text),
    Index(None, "key", "value"),
)

# One JSON document per kind (see BLOB_KINDS), stored as `codec`-encoded bytes.
blobs = Table(
    "run_blobs",
    metadata,
    _run_fk(),
    Column("kind", String(32), primary_key=True),
    _req("codec", String(16)),  # "zlib-json" | "json"
    _req("data", LargeBinary),
)

# One columnar dict per kind ("pgbench", "os", "pg", "pooler"), `codec`-encoded bytes.
series = Table(
    "run_series",
    metadata,
    _run_fk(),
    Column("kind", String(32), primary_key=True),
    _req("codec", String(16)),
    _req("data", LargeBinary),
)


# --- declarative models, mapped on first access ------------------------------------------------

_MODELS = {
    "Study": studies,
    "Run": runs,
    "RunScript": scripts,
    "RunTag": tags,
    "RunBlob": blobs,
    "RunSeries": series,
}


def _declare() -> None:
    from sqlalchemy.orm import DeclarativeBase

    shared = metadata

    class Base(DeclarativeBase):
        metadata = shared  # the same tables, not a copy

    globals()["Base"] = Base
    for name, table in _MODELS.items():
        globals()[name] = type(name, (Base,), {"__table__": table, "__module__": __name__})


def __getattr__(name: str) -> Any:
    if name == "Base" or name in _MODELS:
        _declare()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
