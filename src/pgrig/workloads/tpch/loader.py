"""TPC-H data into PostgreSQL: tpchgen-cli (a Rust port of dbgen, the same rows) streamed
straight into COPY, one table per connection, largest first; then the primary and foreign
keys clause 1.5.7 permits (indexes.sql), then ANALYZE.

Each table is loaded with COPY ... FREEZE in the transaction that truncated it: its rows are
written frozen and all-visible, so the first query does not rewrite every page to set hint
bits and no VACUUM is needed before a run (a load and a VACUUM would read the data twice).
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import IO

import psycopg

from pgrig.errors import PgrigError, first_line
from pgrig.record.documents import DatasetDoc

Progress = Callable[[float, float, str], None]

# Load order and relative size (share of SF 1's bytes): the largest starts first so the
# connections finish together.
TABLES: tuple[str, ...] = (
    "lineitem", "orders", "partsupp", "part", "customer", "supplier", "nation", "region",
)  # fmt: skip
ROWS_PER_SF = {
    "supplier": 10_000,
    "part": 200_000,
    "partsupp": 800_000,
    "customer": 150_000,
    "orders": 1_500_000,
    "lineitem": 6_000_000,  # about: 1..7 lines per order (6,001,215 at SF 1)
}
FIXED_ROWS = {"nation": 25, "region": 5}
# Tables, keys and indexes of one scale factor, measured at SF 1 on PostgreSQL 18 (1.1 GB of
# CSV becomes about 1.4 GB of heap and 0.4 GB of indexes): what the disk must hold per SF.
BYTES_PER_SF = 2_000_000_000
COPY_CHUNK = 1 << 18
STREAMED = "lineitem"


def tpchgen() -> str:
    """The tpchgen-cli binary: beside this Python (its wheel puts it there), else on PATH."""
    beside = Path(sys.executable).parent / "tpchgen-cli"
    if beside.is_file():
        return str(beside)
    found = shutil.which("tpchgen-cli")
    if found is None:
        raise PgrigError("tpchgen-cli not found (TPC-H's data generator): pip install tpchgen-cli")
    return found


def generator_version(binary: str | None = None) -> str:
    out = subprocess.run(
        [binary or tpchgen(), "--version"], capture_output=True, text=True, timeout=30, check=False
    )
    return (out.stdout.strip() or out.stderr.strip()).removeprefix("tpchgen-cli ").strip()


def check_scale_factor(sf: float) -> None:
    """A scale factor dbgen can make, refused otherwise: the dataset request's --scale-factor
    (request/dataset.py) holds the limits, this asks it (one place says them)."""
    from pgrig.request import DatasetRequest, from_flags

    from_flags(DatasetRequest, scenario="tpch", scale_factor=sf)


def generate_command(table: str, sf: float, threads: int = 1) -> list[str]:
    """tpchgen-cli writing one table as CSV (a header line, quoted text) on its stdout."""
    return [
        tpchgen(), "csv", "-s", f"{sf:g}", "-T", table, "--stdout", "-q",
        "-n", str(threads),
    ]  # fmt: skip


@dataclass
class TableLoad:
    table: str
    rows: int = 0
    bytes: int = 0
    seconds: float = 0.0


def load(conninfo: str, sf: float, jobs: int = 2, progress: Progress | None = None) -> DatasetDoc:
    """Replace the TPC-H tables of the database with scale factor `sf`'s data; the figures of
    the load (seconds per phase and per table, rows, bytes) returned."""
    check_scale_factor(sf)
    if jobs < 1:
        raise PgrigError("--jobs must be at least 1")
    binary = tpchgen()
    steps = 2 + len(index_statements()) + len(TABLES)  # copies, indexes, analyze
    done = 0

    def step(label: str) -> None:
        nonlocal done
        done += 1
        if progress:
            progress(min(done, steps), steps, label)

    started = time.monotonic()
    with psycopg.connect(conninfo, autocommit=True) as conn:
        _prepare(conn, sf)
    phases: dict[str, float] = {}
    t0 = time.monotonic()
    loads = {t: TableLoad(t) for t in TABLES}
    # Each tpchgen-cli process first spends about 1.3 s of CPU on dbgen's text pool, whatever
    # it writes: lineitem (three quarters of the bytes) is streamed by a process of its own,
    # the other seven tables written by one process into files while lineitem loads.
    rest = [loads[t] for t in TABLES if t != STREAMED]
    with tempfile.TemporaryDirectory(prefix="pgrig-tpch-") as tmp, _generator(
        [binary, "csv", "-s", f"{sf:g}", "-T", ",".join(lo.table for lo in rest), "-o", tmp,
         "-q", "-n", "1"]
    ) as gen:  # fmt: skip
        _parallel(
            conninfo,
            [
                (STREAMED, _stream_task(binary, sf, loads[STREAMED])),
                ("the other tables", _files_task(gen, Path(tmp), rest)),
            ],
            jobs,
            lambda label: step(f"loaded {label}"),
        )
    phases["copy_s"] = time.monotonic() - t0
    t0 = time.monotonic()
    statements = index_statements()
    index_s: dict[str, float] = {}
    _parallel(
        conninfo,
        [(_index_label(s), _statement_task(s)) for s in statements],
        jobs,
        lambda label: step(label),
        index_s,
    )
    phases["indexes_s"] = time.monotonic() - t0
    t0 = time.monotonic()
    _parallel(
        conninfo,
        [(t, _statement_task(f"ANALYZE {t}")) for t in TABLES],
        jobs,
        lambda label: step(f"analyzed {label}"),
    )
    phases["analyze_s"] = time.monotonic() - t0
    seconds = time.monotonic() - started
    with psycopg.connect(conninfo, autocommit=True) as conn:
        size = _tables_size(conn)
        conn.execute(
            "UPDATE tpch_meta SET finished_at = now(), load_seconds = %s, size_bytes = %s",
            (seconds, size),
        )
    return {
        "scale_factor": sf,
        "generator": f"tpchgen-cli {generator_version(binary)}",
        "jobs": jobs,
        "seconds": round(seconds, 3),
        "phases": {k: round(v, 3) for k, v in phases.items()},
        "tables": {
            t: {"rows": lo.rows, "csv_bytes": lo.bytes, "copy_s": round(lo.seconds, 3)}
            for t, lo in loads.items()
        },
        "indexes": {label: round(v, 3) for label, v in index_s.items()},
        "size_bytes": size,
    }


def _prepare(conn: psycopg.Connection, sf: float) -> None:
    """Drop an earlier TPC-H load and create the empty tables; tables of the same names that
    pgrig did not make are refused, not dropped."""
    existing = {
        r[0]
        for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            " AND tablename = ANY(%s)",
            (["tpch_meta", *TABLES],),
        ).fetchall()
    }
    if existing - {"tpch_meta"} and "tpch_meta" not in existing:
        raise PgrigError(
            "the database already has tables named "
            + ", ".join(sorted(existing))
            + " that pgrig's TPC-H loader did not create: use an empty database"
        )
    with conn.transaction():
        conn.execute("DROP TABLE IF EXISTS tpch_meta, " + ", ".join(TABLES))
        conn.execute(_text("schema.sql"))
        conn.execute(
            "CREATE TABLE tpch_meta (scale_factor double precision NOT NULL,"
            " started_at timestamptz NOT NULL DEFAULT now(), finished_at timestamptz,"
            " load_seconds double precision, size_bytes bigint)"
        )
        conn.execute("INSERT INTO tpch_meta (scale_factor) VALUES (%s)", (sf,))
        for t in TABLES:  # loaded once: autovacuum's analyze would only redo ours
            conn.execute(f"ALTER TABLE {t} SET (autovacuum_enabled = off)")


def _stream_task(binary: str, sf: float, into: TableLoad) -> Callable[[psycopg.Connection], None]:
    """tpchgen-cli's CSV of one table streamed into COPY FREEZE as it is generated."""

    def run(conn: psycopg.Connection) -> None:
        t0 = time.monotonic()
        argv = generate_command(into.table, sf)
        argv[0] = binary
        with _generator(argv) as proc:
            assert proc.stdout is not None
            _copy(conn, into, proc.stdout)
            if proc.wait() != 0:
                err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                raise PgrigError(f"tpchgen-cli failed on {into.table}: {_first(err)}")
        into.seconds = time.monotonic() - t0

    return run


def _files_task(
    gen: subprocess.Popen[bytes], out: Path, loads: Sequence[TableLoad]
) -> Callable[[psycopg.Connection], None]:
    """The tables one tpchgen-cli process writes into `out`, each copied once all are there."""

    def run(conn: psycopg.Connection) -> None:
        t0 = time.monotonic()
        _, err = gen.communicate()
        if gen.returncode != 0:
            raise PgrigError(f"tpchgen-cli failed: {_first(err.decode(errors='replace'))}")
        generated = time.monotonic() - t0
        for into in loads:
            t1 = time.monotonic()
            with (out / f"{into.table}.csv").open("rb") as f:
                _copy(conn, into, f)
            into.seconds = time.monotonic() - t1 + generated
            generated = 0.0  # the wait for the generator is the first table's

    return run


def _copy(conn: psycopg.Connection, into: TableLoad, source: IO[bytes]) -> None:
    """One table's CSV into COPY FREEZE, in the transaction that emptied it (see module doc)."""
    with conn.transaction(), conn.cursor() as cur:
        cur.execute(f"TRUNCATE {into.table}")
        with cur.copy(
            f"COPY {into.table} FROM STDIN (FORMAT csv, HEADER true, FREEZE true)"
        ) as copy:
            while chunk := source.read(COPY_CHUNK):
                into.bytes += len(chunk)
                copy.write(chunk)
        # the server's own count of the rows COPY wrote (its command tag): a count(*) would
        # read the table once more (lineitem: seconds at SF 1)
        into.rows = max(cur.rowcount, 0)


@contextlib.contextmanager
def _generator(argv: list[str]) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for f in (proc.stdout, proc.stderr):
            if f is not None:
                f.close()


def _statement_task(statement: str) -> Callable[[psycopg.Connection], None]:
    def run(conn: psycopg.Connection) -> None:
        conn.execute(statement)

    return run


def index_statements() -> list[str]:
    lines = _text("indexes.sql").splitlines()
    return [s for s in (line.strip() for line in lines) if s and not s.startswith("--")]


def _index_label(statement: str) -> str:
    words = statement.rstrip(";").split()
    if words[:2] == ["ALTER", "TABLE"]:
        return f"primary key of {words[2]}"
    return f"index {words[2]}"


def _parallel(
    conninfo: str,
    tasks: Sequence[tuple[str, Callable[[psycopg.Connection], None]]],
    jobs: int,
    step: Callable[[str], None],
    seconds: dict[str, float] | None = None,
) -> None:
    """Run the tasks on `jobs` connections in order (each one's time into `seconds`); the
    first failure cancels the others' statements and is raised (Ctrl-C likewise, re-raised)."""
    conns: list[psycopg.Connection] = []
    lock = threading.Lock()
    local = threading.local()
    stopping = threading.Event()

    def connection() -> psycopg.Connection:
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = psycopg.connect(conninfo, autocommit=True)
            # large sorts for the keys; the server's own parallel workers beside our jobs
            conn.execute("SET maintenance_work_mem = '512MB'")
            conn.execute("SET synchronous_commit = off")
            local.conn = conn
            with lock:
                conns.append(conn)
        return conn

    def run(label: str, task: Callable[[psycopg.Connection], None]) -> str:
        if stopping.is_set():
            return label
        conn = connection()
        t0 = time.monotonic()
        task(conn)
        if seconds is not None:
            seconds[label] = time.monotonic() - t0
        return label

    pool = ThreadPoolExecutor(max_workers=max(1, min(jobs, len(tasks))))
    futures: list[Future[str]] = [pool.submit(run, label, task) for label, task in tasks]
    try:
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, timeout=0.5, return_when=FIRST_EXCEPTION)
            for f in finished:
                if f.exception() is not None:
                    raise _failure(f, tasks, futures)
                step(f.result())
    except BaseException:
        stopping.set()
        with lock:
            for c in conns:
                with contextlib.suppress(Exception):
                    c.cancel_safe(timeout=5)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        for c in conns:
            with contextlib.suppress(Exception):
                c.close()


def _failure(
    f: Future[str],
    tasks: Sequence[tuple[str, Callable[[psycopg.Connection], None]]],
    futures: list[Future[str]],
) -> BaseException:
    err = f.exception()
    assert err is not None
    if isinstance(err, PgrigError):
        return err
    label = tasks[futures.index(f)][0]
    return PgrigError(f"TPC-H load failed ({label}): {first_line(err)}")


def _tables_size(conn: psycopg.Connection) -> int:
    row = conn.execute(
        "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c"
        " JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname = ANY(%s)",
        (list(TABLES),),
    ).fetchone()
    return int(row[0]) if row else 0


def _first(text: str) -> str:
    return next((line for line in text.splitlines() if line.strip()), "no message")


def _text(name: str) -> str:
    return resources.files("pgrig.workloads.tpch").joinpath(name).read_text()
