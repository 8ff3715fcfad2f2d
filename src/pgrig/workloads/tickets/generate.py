"""`pgrig db generate --scenario tickets --rows N`: seed 003's database shape, synthetic.

The seed downloaded a 5M-ticket "Thai bus" dump; here the same tables are generated inside the
server: schema and name tables first, then book.tickets in chunks of ids over `jobs` parallel
connections (generate_series, nothing through the client), then the primary key, the id
sequence moved past the last row, VACUUM ANALYZE. Reads pick ids in 1..rows; writes continue
from rows + 1.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pgrig.errors import PgrigError
from pgrig.provision.state.environment import Environment
from pgrig.record.documents import DatasetDoc
from pgrig.request.dataset import TICKETS_ROWS
from pgrig.workloads import database

HERE = Path(__file__).parent
CHUNK_ROWS = 250_000
NAMES = 110  # rows in book.fam and book.nam: the write script indexes 1..110

DEFAULT_ROWS = TICKETS_ROWS

Progress = Callable[[float, float, str], None]  # (done, total, phase)


def chunks(rows: int, size: int = CHUNK_ROWS) -> list[tuple[int, int]]:
    """Inclusive id ranges covering 1..rows."""
    return [(lo, min(lo + size - 1, rows)) for lo in range(1, rows + 1, size)]


def load_sql(lo: int, hi: int) -> str:
    return (HERE / "load.sql").read_text().format(lo=int(lo), hi=int(hi))


def generate(
    env: Environment,
    dbname: str,
    rows: int = DEFAULT_ROWS,
    jobs: int = 2,
    progress: Progress | None = None,
) -> DatasetDoc:
    """Create book.* in `dbname` (replacing it) with `rows` tickets; returns the dataset info."""
    if rows < 1:
        raise PgrigError(f"--rows must be >= 1 (got {rows})")
    if jobs < 1:
        raise PgrigError(f"--jobs must be >= 1 (got {jobs})")
    say = progress or (lambda _d, _t, _p: None)
    database.ensure_database(env, dbname)
    start = time.monotonic()
    total = float(rows)
    with database.connect(env, dbname) as conn:
        conn.execute((HERE / "schema.sql").read_text())
    say(0, total, "tickets")
    done = 0
    lock = threading.Lock()

    def load(span: tuple[int, int]) -> None:
        nonlocal done
        with database.connect(env, dbname) as c:
            c.execute("SET synchronous_commit = off")
            c.execute(load_sql(*span))
        with lock:
            done += span[1] - span[0] + 1
            say(done * 0.9, total, "tickets")

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for f in [pool.submit(load, span) for span in chunks(rows)]:
            f.result()  # the first failure stops here with its own message
    say(total * 0.9, total, "primary key")
    with database.connect(env, dbname) as conn:
        conn.execute("ALTER TABLE book.tickets ADD PRIMARY KEY (id)")
        conn.execute("SELECT setval(pg_get_serial_sequence('book.tickets', 'id'), %s)", (rows,))
        say(total * 0.95, total, "vacuum analyze")
        conn.execute("VACUUM (ANALYZE) book.fam, book.nam, book.tickets")
    seconds = time.monotonic() - start
    size = database.database_size(env, dbname)
    say(total, total, "done")
    return {
        "scenario": "tickets",
        "rows": rows,
        "names": NAMES,
        "seconds": round(seconds, 3),
        "size_bytes": size,
    }
