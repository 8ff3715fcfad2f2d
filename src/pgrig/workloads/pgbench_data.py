"""`pgrig db generate --scenario pgbench`: pgbench's own initialisation, generated server-side.

`-I dtGvp` drops, creates, generates rows inside the server (G: no rows through the client),
vacuums and adds primary keys. pgbench prints no progress for G, so progress is estimated from
the database size growing towards the expected size (about 15 MB per scale unit).
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable

from pgrig.errors import PgrigError
from pgrig.provision.server.child_process import die_with_parent
from pgrig.provision.state.environment import Environment, dbname_arg
from pgrig.workloads import database

BYTES_PER_SCALE = 15_000_000  # tables + primary keys, measured on PostgreSQL 15-18

Progress = Callable[[float, float, str], None]  # (done, total, phase)


def generate(
    env: Environment,
    dbname: str,
    scale: int,
    partitions: int | None = None,
    progress: Progress | None = None,
) -> dict[str, object]:
    if scale < 1:
        raise PgrigError(f"--scale must be >= 1 (got {scale})")
    if partitions is not None and partitions < 1:
        raise PgrigError(f"--partitions must be >= 1 (got {partitions})")
    database.ensure_database(env, dbname)
    argv = [env.binary("pgbench"), "-i", "-s", str(scale), "-I", "dtGvp", "-q"]
    if partitions:
        argv += ["--partitions", str(partitions)]
    argv.append(dbname_arg(dbname))
    expected = scale * BYTES_PER_SCALE
    start = time.monotonic()
    proc = subprocess.Popen(
        argv,
        env=env.client_process_env(dbname),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=die_with_parent,  # a killed `db generate` leaves no pgbench -i loading on
    )
    stop = threading.Event()
    if progress:
        threading.Thread(
            target=_watch_size, args=(env, dbname, expected, progress, stop), daemon=True
        ).start()
    out, err = proc.communicate()
    stop.set()
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        lines = [
            ln for ln in (err or out).splitlines() if "error" in ln.lower()
        ] or err.splitlines()
        raise PgrigError(
            f"pgbench -i failed: {lines[-1] if lines else 'exit ' + str(proc.returncode)}"
        )
    size = database.database_size(env, dbname)
    if progress:
        progress(expected, expected, "done")
    return {
        "scenario": "pgbench",
        "scale": scale,
        "partitions": partitions,
        "seconds": round(seconds, 3),
        "size_bytes": size,
    }


def _watch_size(
    env: Environment, dbname: str, expected: int, progress: Progress, stop: threading.Event
) -> None:
    try:
        with database.connect(env, dbname) as conn:
            while not stop.wait(0.5):
                size = database.current_size(conn)
                progress(min(size, expected * 0.99), expected, "generating")
    except Exception:  # progress is cosmetic; the load itself reports real errors
        return
