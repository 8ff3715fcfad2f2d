"""`db generate --scenario tpcc`: the spec's initial database, generated inside the server.

N connections (jobs) take tasks from one queue: the item table, then per warehouse its stock
and two halves of its districts (customers, history, orders, order lines, new orders). Rows
are made by INSERT ... SELECT in the server (load.sql), so nothing passes through Python and
memory stays flat whatever the warehouse count (each task is one transaction of at most
half a warehouse). Indexes are built after the data, in parallel across jobs, then every
table is vacuumed and analyzed, again in parallel.
"""

from __future__ import annotations

import contextlib
import queue
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import psycopg

from pgrig.errors import PgrigError, first_line
from pgrig.record.documents import DatasetDoc
from pgrig.workloads.database import current_size
from pgrig.workloads.tpcc import sql
from pgrig.workloads.tpcc.meta import connect

Progress = Callable[[int, int, str], None]

# Per loading session: no commit waits (a crash means reloading anyway), more memory for
# sorts and index builds (per job; 128 MB x jobs stays modest).
SESSION_SETTINGS = (
    "SET synchronous_commit = off",
    "SET maintenance_work_mem = '128MB'",
    "SET work_mem = '64MB'",
)
MAX_JOBS = 64


@dataclass(frozen=True)
class Task:
    label: str
    statement: str


def load_tasks(warehouses: int, c_last_load: int) -> list[Task]:
    """The data tasks, items first (every job can start at once)."""
    tasks = [Task("item", "SELECT tpcc_load_item()")]
    for w in range(1, warehouses + 1):
        tasks.append(Task(f"warehouse {w} stock", f"SELECT tpcc_load_stock({w})"))
        for lo, hi in ((1, 5), (6, 10)):
            tasks.append(
                Task(
                    f"warehouse {w} districts {lo}-{hi}",
                    f"SELECT tpcc_load_districts({w}, {lo}, {hi}, {c_last_load})",
                )
            )
    return tasks


def vacuum_tasks(partitions: int) -> list[Task]:
    """VACUUM (ANALYZE) of every leaf table, biggest first; partitioned parents get ANALYZE.

    Plain VACUUM also sets hint bits and the visibility map, so the first benchmark run does
    not pay for them.
    """
    order = ("order_line", "stock", "customer", "orders", "history", "item", "new_order")
    rest = tuple(t for t in sql.TABLES if t not in order)
    tasks = []
    for table in (*order, *rest):
        for leaf in sql.leaves(table, partitions):
            tasks.append(Task(f"vacuum {leaf}", f"VACUUM (ANALYZE) {leaf}"))
    for table in sql.TABLES:
        if len(sql.leaves(table, partitions)) > 1:
            tasks.append(Task(f"analyze {table}", f"ANALYZE {table}"))
    return tasks


def generate(
    conninfo: str,
    warehouses: int,
    jobs: int = 2,
    partition: bool = False,
    progress: Progress | None = None,
) -> DatasetDoc:
    """Create and load a TPC-C database of `warehouses` warehouses with `jobs` connections.

    Replaces an earlier TPC-C load in the same database; refuses to touch a database whose
    tables of the same names were not made by pgrig. Returns the figures of the load.
    """
    _validate(warehouses, jobs)
    rng = random.SystemRandom()
    constants: dict[str, int] = {
        "c_last_load": rng.randint(0, 255),
        "c_id_load": rng.randint(0, 1023),
        "ol_i_id_load": rng.randint(0, 8191),
    }
    partitions = sql.partition_count(warehouses, partition)
    data = load_tasks(warehouses, constants["c_last_load"])
    builds = [Task(_index_label(s), s) for s in sql.index_build_statements(partitions)]
    vacuums = vacuum_tasks(partitions)
    total = len(data) + len(builds) + 1 + len(vacuums)
    done = 0

    def step(label: str) -> None:
        nonlocal done
        done += 1
        if progress:
            progress(done, total, label)

    started = time.monotonic()
    with connect(conninfo) as conn:
        _prepare(conn, warehouses, jobs, partitions, constants)
    if progress:
        progress(0, total, "schema created")
    phases = {}
    t0 = time.monotonic()
    run_parallel(conninfo, data, jobs, step)
    phases["data_s"] = time.monotonic() - t0
    t0 = time.monotonic()
    run_parallel(conninfo, builds, jobs, step)
    with connect(conninfo) as conn:
        for stmt in sql.index_finish_statements(partitions):
            conn.execute(stmt)
    step("primary keys")
    phases["indexes_s"] = time.monotonic() - t0
    t0 = time.monotonic()
    run_parallel(conninfo, vacuums, jobs, step)
    with connect(conninfo) as conn:
        for stmt in sql.autovacuum_statements(partitions, enabled=True):
            conn.execute(stmt)
    phases["vacuum_s"] = time.monotonic() - t0
    seconds = time.monotonic() - started

    with connect(conninfo) as conn:
        size = _size_bytes(conn)
        db_size = current_size(conn)
        rows = _row_estimates(conn)
        conn.execute(
            "UPDATE tpcc_meta SET finished_at = now(), load_seconds = %s, size_bytes = %s",
            (seconds, size),
        )
    return {
        "warehouses": warehouses,
        "jobs": jobs,
        "partition": bool(partitions),
        "partitions": partitions,
        "load_seconds": round(seconds, 3),
        "warehouses_per_minute": round(warehouses * 60 / seconds, 2) if seconds else None,
        "size_bytes": size,
        "database_size_bytes": db_size,
        "phases": {k: round(v, 3) for k, v in phases.items()},
        "rows_estimate": rows,
        "c_last_load": constants["c_last_load"],
        "c_id_load": constants["c_id_load"],
        "ol_i_id_load": constants["ol_i_id_load"],
    }


def _validate(warehouses: int, jobs: int) -> None:
    if not isinstance(warehouses, int) or isinstance(warehouses, bool) or warehouses < 1:
        raise PgrigError(f"TPC-C needs at least 1 warehouse (got {warehouses!r})")
    if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
        raise PgrigError(f"--jobs must be at least 1 (got {jobs!r})")
    if jobs > MAX_JOBS:
        raise PgrigError(f"--jobs must be at most {MAX_JOBS} (got {jobs})")


def _prepare(
    conn: psycopg.Connection, warehouses: int, jobs: int, partitions: int, constants: dict
) -> None:
    """Drop an earlier TPC-C load, create tables and functions, record the load constants."""
    existing = {
        r[0]
        for r in conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = current_schema() AND c.relname = ANY(%s)",
            (list((*sql.TABLES, sql.META_TABLE)),),
        )
    }
    if existing and sql.META_TABLE not in existing:
        raise PgrigError(
            "the database already has tables named "
            + ", ".join(sorted(existing))
            + " that pgrig's TPC-C loader did not create: use an empty database"
        )
    with conn.transaction():
        conn.execute(sql.drop_tables_statement())
        for (signature,) in conn.execute(
            sql.FUNCTION_SIGNATURES_SQL, {"names": list(sql.FUNCTIONS)}
        ).fetchall():
            conn.execute(f"DROP FUNCTION {signature}")
        for stmt in sql.schema_statements(warehouses, partitions):
            conn.execute(stmt)
        for stmt in sql.autovacuum_statements(partitions, enabled=False):
            conn.execute(stmt)
        conn.execute(sql.text("procedures.sql"))
        conn.execute(sql.text("load.sql"))
        from pgrig import __version__

        conn.execute(
            "INSERT INTO tpcc_meta (warehouses, c_last_load, c_id_load, ol_i_id_load,"
            " partitions, jobs, pgrig_version) VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (
                warehouses,
                constants["c_last_load"],
                constants["c_id_load"],
                constants["ol_i_id_load"],
                partitions,
                jobs,
                __version__,
            ),
        )


def run_parallel(
    conninfo: str, tasks: Sequence[Task], jobs: int, step: Callable[[str], None]
) -> None:
    """Run tasks on `jobs` connections, each taking the next task when free.

    The first failure cancels the statements still running and is raised as PgrigError;
    Ctrl-C does the same and re-raises KeyboardInterrupt.
    """
    pool = _TaskPool(conninfo, tasks)
    threads = [
        threading.Thread(target=pool.worker, daemon=True, name=f"tpcc-load-{i}")
        for i in range(min(jobs, len(tasks)))
    ]
    for th in threads:
        th.start()
    try:
        pool.report(threads, step)
    except KeyboardInterrupt:
        pool.stop.set()
        pool.cancel()
        for th in threads:
            th.join(timeout=10)
        raise
    for th in threads:
        th.join()
    if pool.errors:
        label, err = pool.errors[0]
        raise PgrigError(f"TPC-C load failed ({label}): {first_line(err)}")


class _TaskPool:
    """The tasks left, the labels of those finished, and the first failure, shared by the
    worker threads of run_parallel (one connection each)."""

    def __init__(self, conninfo: str, tasks: Sequence[Task]) -> None:
        self.conninfo = conninfo
        self.todo: queue.Queue[Task] = queue.Queue()
        for t in tasks:
            self.todo.put(t)
        self.finished: queue.Queue[str] = queue.Queue()
        self.stop = threading.Event()
        self.errors: list[tuple[str, BaseException]] = []
        self.conns: list[psycopg.Connection] = []
        self.lock = threading.Lock()

    def worker(self) -> None:
        """One connection taking the next task until none is left or one failed."""
        try:
            conn = connect(self.conninfo)
        except BaseException as e:  # reported to the caller by run_parallel
            self.errors.append(("connect", e))
            self.stop.set()
            return
        with self.lock:
            self.conns.append(conn)
        try:
            for s in SESSION_SETTINGS:
                conn.execute(s)
            self._take_tasks(conn)
        finally:
            conn.close()

    def _take_tasks(self, conn: psycopg.Connection) -> None:
        while not self.stop.is_set():
            try:
                task = self.todo.get_nowait()
            except queue.Empty:
                return
            try:
                conn.execute(task.statement)
            except BaseException as e:  # first failure wins, reported by run_parallel
                if not self.stop.is_set():
                    self.errors.append((task.label, e))
                self.stop.set()
                return
            self.finished.put(task.label)

    def report(self, threads: list[threading.Thread], step: Callable[[str], None]) -> None:
        """Each finished task to `step` while the workers run; a failure cancels the rest."""
        while any(th.is_alive() for th in threads) or not self.finished.empty():
            with contextlib.suppress(queue.Empty):
                step(self.finished.get(timeout=0.2))
            if self.stop.is_set():
                self.cancel()

    def cancel(self) -> None:
        _cancel(self.conns, self.lock)


def _cancel(conns: list[psycopg.Connection], lock: threading.Lock) -> None:
    with lock:
        for c in conns:
            if not c.closed:
                # best effort: a worker that finished meanwhile stops anyway
                with contextlib.suppress(Exception):
                    c.cancel_safe(timeout=5)


def _index_label(stmt: str) -> str:
    # "CREATE [UNIQUE] INDEX name ON table (...)"
    words = stmt.split()
    return "index " + words[words.index("INDEX") + 1]


def _size_bytes(conn: psycopg.Connection) -> int:
    """Heap, indexes and TOAST of the nine tables (partitions included)."""
    row = conn.execute(
        "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint"
        " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = current_schema() AND c.relkind = 'r'"
        "   AND (c.relname = ANY(%(t)s) OR c.relname ~ %(p)s)",
        {"t": list(sql.TABLES), "p": "^(" + "|".join(sql.TABLES) + r")_p\d+$"},
    ).fetchone()
    return int(row[0]) if row else 0


def _row_estimates(conn: psycopg.Connection) -> dict[str, int]:
    """Row counts from the fresh statistics (reltuples): free, and exact unless autovacuum
    visited a table during the load (then VACUUM skips pages and extrapolates)."""
    out = {}
    for table in sql.TABLES:
        row = conn.execute(
            "SELECT coalesce(sum(c.reltuples), 0)::bigint FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = current_schema() AND c.relkind = 'r'"
            "   AND (c.relname = %s OR c.relname ~ %s)",
            (table, f"^{table}_p\\d+$"),
        ).fetchone()
        out[table] = int(row[0]) if row else 0
    return out
