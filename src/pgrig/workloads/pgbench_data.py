"""`pgrig db generate --scenario pgbench`: pgbench's own initialisation, generated server-side.

`-I dtGvp` drops, creates, generates rows inside the server (G: no rows through the client),
vacuums and adds primary keys. pgbench prints no progress for G, so progress is estimated from
the database size growing towards the expected size (about 15 MB per scale unit).

G runs as one statement in the server: a pgbench that dies (Ctrl-C, SIGTERM, kill -9 of pgrig)
leaves its backend generating on for as long as the data takes, filling the disk and holding
locks the next generate waits for. Its session is named (application_name
pgrig-generate-<pgrig's pid>) so that pgrig ends it: at once when the generate is interrupted,
and at the next generate on the environment when pgrig itself was killed.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable

from pgrig.errors import PgrigError
from pgrig.provision.state.environment import Environment, dbname_arg
from pgrig.provision.system.child_process import die_with_parent
from pgrig.record.documents import DatasetDoc
from pgrig.workloads import database

BYTES_PER_SCALE = 15_000_000  # tables + primary keys, measured on PostgreSQL 15-18
SESSION_PREFIX = "pgrig-generate-"

Progress = Callable[[float, float, str], None]  # (done, total, phase)


def generate(
    env: Environment,
    dbname: str,
    scale: int,
    partitions: int | None = None,
    progress: Progress | None = None,
) -> DatasetDoc:
    if scale < 1:
        raise PgrigError(f"--scale must be >= 1 (got {scale})")
    if partitions is not None and partitions < 1:
        raise PgrigError(f"--partitions must be >= 1 (got {partitions})")
    database.ensure_database(env, dbname)
    end_generating_sessions(env, dead_only=True)  # a killed pgrig's, still generating
    argv = [env.binary("pgbench"), "-i", "-s", str(scale), "-I", "dtGvp", "-q"]
    if partitions:
        argv += ["--partitions", str(partitions)]
    argv.append(dbname_arg(dbname))
    expected = scale * BYTES_PER_SCALE
    start = time.monotonic()
    proc = subprocess.Popen(
        argv,
        env={**env.client_process_env(dbname), "PGAPPNAME": f"{SESSION_PREFIX}{os.getpid()}"},
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
    try:
        out, err = proc.communicate()
    except BaseException:  # Ctrl-C, SIGTERM: pgbench stops, and so must its server-side work
        proc.kill()
        proc.wait()
        end_generating_sessions(env)
        raise
    finally:
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


def end_generating_sessions(env: Environment, dead_only: bool = False) -> list[int]:
    """Terminate the server sessions of this pgrig's pgbench -i (`dead_only`: of pgrig
    processes that no longer exist); the backends' pids. Never raises: a server that cannot be
    reached has no session to end."""
    import psutil

    if dead_only and not env.managed:
        return []  # an external server may serve pgrig on other machines: pids mean nothing
    query = (
        "SELECT pid, application_name FROM pg_stat_activity "
        "WHERE application_name LIKE %s AND pid <> pg_backend_pid()"
    )
    ended = []
    try:
        with database.connect(env, "postgres", connect_timeout=5) as conn:
            for pid, name in conn.execute(query, (SESSION_PREFIX + "%",)).fetchall():
                owner = name.removeprefix(SESSION_PREFIX)
                if not owner.isdigit():
                    continue
                if dead_only and psutil.pid_exists(int(owner)):
                    continue  # another live pgrig's generate (its own environment lock aside)
                if not dead_only and int(owner) != os.getpid():
                    continue
                conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
                ended.append(int(pid))
    except Exception:
        return ended
    return ended
