"""sysbench as a load engine: its workloads (`sysbench:oltp_read_write`, `sysbench:PATH.lua`),
its data (`db generate --scenario sysbench`: sysbench's own `prepare`) and its command line.

Connection: sysbench's pgsql driver calls libpq's PQsetdbLogin with its --pgsql-* options;
libpq ignores the empty ones and takes PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD or
PGPASSFILE from the environment instead. pgrig passes every --pgsql-* option empty, so no host,
user, database or password ever appears in argv, `ps` or the archived command, and a run through
the pooler or a Unix socket takes the same variables as pgbench does.

The bundled tests are the Lua scripts Debian's sysbench package ships in /usr/share/sysbench
(sysbench 1.0.20 there, built with the pgsql driver); every oltp_* test shares oltp_common.lua,
whose `prepare` creates sbtest1..N with N = --tables rows of --table-size.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from psycopg import sql

from pgrig.errors import PgrigError
from pgrig.provision.state.environment import Environment
from pgrig.provision.system.child_process import die_with_parent
from pgrig.record.documents import DatasetDoc
from pgrig.workloads import database

PREFIX = "sysbench:"
BUNDLED_DIR = Path("/usr/share/sysbench")
OLTP_TESTS = (
    "oltp_read_write",
    "oltp_read_only",
    "oltp_write_only",
    "oltp_point_select",
    "oltp_update_index",
    "oltp_update_non_index",
    "oltp_insert",
    "oltp_delete",
)
# --pgsql-* given empty: libpq then reads the PG* variables (see the module doc)
DRIVER_ARGS = (
    "--db-driver=pgsql",
    "--pgsql-host=",
    "--pgsql-port=",
    "--pgsql-user=",
    "--pgsql-db=",
)
DEFAULT_TABLES = 1
DEFAULT_TABLE_SIZE = 10_000
_VERSION_RE = re.compile(r"sysbench\s+(\d+\.\d+(?:\.\d+)?)")

Progress = Callable[[float, float, str], None]


def is_sysbench(workload: str) -> bool:
    return workload.strip().startswith(PREFIX)


def binary() -> str:
    found = shutil.which("sysbench")
    if found is None:
        raise PgrigError(
            "sysbench is not installed (Debian: apt-get install sysbench; scripts/setup.sh "
            "installs it)"
        )
    return found


@functools.lru_cache(maxsize=4)
def version(sysbench: str) -> str | None:
    """sysbench's version ("1.0.20"), None if it cannot run."""
    try:
        out = subprocess.run(
            [sysbench, "--version"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    m = _VERSION_RE.search(out.stdout)
    return m.group(1) if m else None


def script_path(workload: str) -> tuple[str, Path]:
    """(display name, Lua script) of `sysbench:NAME` (a bundled test) or `sysbench:PATH.lua`."""
    what = workload.strip()[len(PREFIX) :]
    if not what:
        raise PgrigError(
            f"workload {workload!r} names no sysbench test (e.g. sysbench:oltp_read_write)"
        )
    if what.endswith(".lua"):
        path = Path(what).expanduser()
        if not path.is_file():
            raise PgrigError(f"sysbench script not found: {what}")
        return f"{PREFIX}{path.name}", path.resolve()
    if what not in OLTP_TESTS:
        raise PgrigError(
            f"unknown sysbench test {what!r} (choose from {', '.join(OLTP_TESTS)}, "
            "or give sysbench:PATH.lua)"
        )
    path = BUNDLED_DIR / f"{what}.lua"
    if not path.is_file():
        raise PgrigError(f"sysbench's {what} test is missing ({path}): is sysbench installed?")
    return f"{PREFIX}{what}", path


def generate(
    env: Environment,
    dbname: str,
    tables: int,
    table_size: int,
    progress: Progress | None = None,
    jobs: int = 1,
) -> DatasetDoc:
    """sysbench's own `prepare` (oltp_common.lua) into dbname, replacing sbtest1..N."""
    if tables < 1 or table_size < 1:
        raise PgrigError("--tables and --table-size must be >= 1")
    sysbench = binary()
    database.ensure_database(env, dbname)
    _drop_tables(env, dbname)
    _name, script = script_path(f"{PREFIX}oltp_read_write")
    argv = [
        sysbench, str(script), *DRIVER_ARGS, f"--tables={tables}", f"--table-size={table_size}",
        f"--threads={jobs}", "prepare",
    ]  # fmt: skip
    start = time.monotonic()
    if progress:
        progress(0, tables, "prepare")
    proc = subprocess.run(
        argv, env=env.client_process_env(dbname), capture_output=True, text=True, check=False,
        preexec_fn=die_with_parent,  # a killed `db generate` leaves no prepare loading on
    )  # fmt: skip
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "FATAL" in ln]
        raise PgrigError(
            "sysbench prepare failed: "
            + (lines[-1].strip() if lines else f"exit {proc.returncode}")
        )
    with database.connect(env, dbname) as conn:
        conn.execute("ANALYZE")
    if progress:
        progress(tables, tables, "done")
    return {
        "scenario": "sysbench",
        "tables": tables,
        "table_size": table_size,
        "jobs": jobs,
        "sysbench_version": version(sysbench),
        "seconds": round(seconds, 3),
        "size_bytes": database.database_size(env, dbname),
    }


def _drop_tables(env: Environment, dbname: str) -> None:
    """sysbench's prepare refuses existing tables: drop every sbtestN first."""
    with database.connect(env, dbname) as conn:
        rows = conn.execute(
            "SELECT relname FROM pg_class JOIN pg_namespace n ON n.oid = relnamespace"
            " WHERE relkind IN ('r', 'p') AND relname ~ '^sbtest[0-9]+$'"
            " AND nspname = current_schema()"
        ).fetchall()
        for (name,) in rows:
            conn.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(name)))
