"""Start, stop, restart, reload and inspect the server of a managed environment.

pg_ctl runs as the server user with the environment's log file; `start` waits until the server
accepts connections. Failures quote the server's own FATAL line from the log, so "why did it not
start" is answered in one line.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from pgrig.errors import PgrigError
from pgrig.format import pgrig_command
from pgrig.provision.server.daemon import POSTGRES, Daemon
from pgrig.provision.state.environment import Environment, require_managed
from pgrig.provision.system import osuser


class StartError(PgrigError):
    """The server did not start; `reason` is the server's own FATAL line when there is one."""

    def __init__(self, env: Environment, reason: str) -> None:
        self.reason = reason
        if "TCP/IP socket" in reason and env.port and _port_taken(env.host, env.port):
            reason += (
                f" (port {env.port} on {env.host} is held by another process: stop it, or "
                "destroy and create the environment again to get a free port)"
            )
        super().__init__(f"server of {env.name!r} did not start: {reason} (log: {env.logfile})")


def _port_taken(host: str, port: int) -> bool:
    """Whether something listens on host:port now (the server that failed does not)."""
    import socket

    with socket.socket() as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def daemon(env: Environment) -> Daemon | None:
    """The running postmaster of `env`, or None (a zombie or a reused pid is not one)."""
    return Daemon.from_file(env.datadir / "postmaster.pid", POSTGRES) if env.managed else None


def pid(env: Environment) -> int | None:
    """PID of the running postmaster of `env`, or None."""
    found = daemon(env)
    return found.pid if found is not None else None


def is_running(env: Environment) -> bool:
    return env.managed and pid(env) is not None


def status(env: Environment, timeout: float = 2) -> str:
    """ "running"/"stopped" for managed, "reachable"/"unreachable" for external environments."""
    if env.managed:
        return "running" if is_running(env) else "stopped"
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(env.conninfo())
    params["connect_timeout"] = max(1, int(timeout))
    try:
        psycopg.connect(make_conninfo("", **params)).close()
        return "reachable"
    except psycopg.Error:
        return "unreachable"


def server_log_path(env: Environment) -> Path | None:
    """The server's log file (stderr of the postmaster), None for external environments."""
    return env.logfile if env.managed else None


def _log_size(env: Environment) -> int:
    try:
        return env.logfile.stat().st_size
    except OSError:
        return 0


def log_problems(env: Environment, since: int = 0, limit: int = 3) -> str:
    """The last FATAL/PANIC/ERROR lines (with DETAIL/HINT) written to the log after `since`."""
    try:
        with env.logfile.open("rb") as f:
            f.seek(since)
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    picked: list[str] = []
    for line in text.splitlines():
        if line.startswith(("postgres: ", "postmaster: ")):
            # checks made before logging starts (e.g. "superuser_reserved_connections (3)
            # must be less than max_connections (1)") come as "postgres: ..." alone
            picked.append("FATAL: " + line.split(": ", 1)[1].rstrip())
            continue
        for level in ("FATAL:", "PANIC:", "ERROR:", "DETAIL:", "HINT:"):
            if level in line:
                picked.append(level + line.split(level, 1)[1].rstrip())
                break
    # keep the last primary message and what follows it
    starts = [i for i, ln in enumerate(picked) if ln.startswith(("FATAL", "PANIC", "ERROR"))]
    if starts:
        picked = picked[starts[-1] :]
    return " ".join(" ".join(ln.split()) for ln in picked[:limit])


def _prepare_dirs(env: Environment) -> None:
    env.socket_dir.mkdir(parents=True, exist_ok=True)
    osuser.give_to_server(env.socket_dir, 0o755)
    if not env.logfile.exists():
        env.logfile.touch()
    osuser.give_to_server(env.logfile, 0o640)


def pg_ctl(env: Environment, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return osuser.run_as_server(
        [env.binary("pg_ctl"), "-D", str(env.datadir), *args], timeout=timeout
    )


def start(env: Environment, timeout: int = 60) -> bool:
    """Start the server and wait until it accepts connections. False if it already ran."""
    require_managed(env, "start it")
    if is_running(env):
        return False
    _check_disk_limit(env)  # before the server runs: an error then means nothing started
    _clear_stale_lock(env)
    _prepare_dirs(env)
    mark = _log_size(env)
    proc = pg_ctl(env, "-l", str(env.logfile), "-w", "-t", str(timeout), "-s", "start",
                  timeout=timeout + 15)  # fmt: skip
    if proc.returncode != 0:
        why = log_problems(env, mark) or " ".join((proc.stderr or proc.stdout).split())
        raise StartError(env, why or f"pg_ctl exited {proc.returncode}")
    wait_ready(env, timeout)
    _limit_disk(env)
    return True


def _check_disk_limit(env: Environment) -> None:
    """The disk limit a start puts in force, checked before the server starts: a damaged
    record or a missing throttle is refused with nothing started (found after the start, it
    left a running server behind an error exit)."""
    if not env.disk_limit or env.member_dir:
        return
    from pgrig.provision.server import disk_throttle

    try:
        disk_throttle.limit_of(env)
        disk_throttle.check(env)
    except PgrigError as e:
        repair = pgrig_command("env", "repair", env.name)
        remove = pgrig_command("env", "set", env.name, "--disk-limit", "none")
        raise PgrigError(
            f"server of {env.name!r} not started: its disk limit cannot be put in force: {e} "
            f"(`{repair}` rebuilds a damaged record from the kernel's files; `{remove}` "
            "removes the limit)"
        ) from None


def _limit_disk(env: Environment) -> None:
    """A new postmaster (a new pid) goes into the environment's disk-limit cgroup with every
    process it forked so far; those it forks later inherit it."""
    if not env.disk_limit or env.member_dir:
        return
    from pgrig.provision.server import disk_throttle

    try:
        disk_throttle.apply(env, pid(env))
    except PgrigError as e:
        raise PgrigError(
            f"server of {env.name!r} started but its disk limit is not in force: {e} "
            f"(`{pgrig_command('env', 'set', env.name, '--disk-limit', 'none')}` removes the limit)"
        ) from None


def _clear_stale_lock(env: Environment, timeout: float = 15) -> None:
    """Remove the lock files left by a postmaster that died (kill -9, crash).

    PostgreSQL refuses to start while the PID in postmaster.pid or in the socket's lock file
    answers kill(pid, 0), which an unreaped zombie still does. The files are removed only
    when that PID runs no postmaster (daemon.py) and once the dead postmaster's shared memory
    has no process attached (its orphaned backends exit when they notice the postmaster's
    death), which is the same condition PostgreSQL checks. A live server's locks stay.
    """
    lock = env.datadir / "postmaster.pid"
    socket_lock = env.socket_dir / f".s.PGSQL.{env.port}.lock"
    if Daemon.from_file(socket_lock, POSTGRES) is None:
        socket_lock.unlink(missing_ok=True)  # its socket file is replaced by the next start
    try:
        lines = lock.read_text().splitlines()
        old_pid = int(lines[0])
    except (OSError, ValueError, IndexError):
        return
    if Daemon.find(old_pid, POSTGRES) is not None:
        return  # a real postmaster: let pg_ctl report it
    shmid = _lock_shmid(lines)
    deadline = time.monotonic() + timeout
    while shmid is not None and _shm_attached(shmid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if shmid is not None and _shm_attached(shmid):
        raise PgrigError(
            f"server of {env.name!r} crashed and its old backends are still running; "
            "try again in a few seconds"
        )
    lock.unlink(missing_ok=True)


def _shm_attached(shmid: str) -> bool:
    """Whether processes still use a System V segment (False when it is gone)."""
    return bool(_shm_nattch(shmid))


def _shm_nattch(shmid: str) -> int | None:
    """nattch of a System V segment from /proc/sysvipc/shm; None when there is no such one."""
    try:
        rows = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    except OSError:
        return None
    for row in rows:
        cols = row.split()
        if len(cols) > 6 and cols[1] == shmid:
            return int(cols[6])
    return None


def _lock_shmid(lines: list[str]) -> str | None:
    """The System V segment id on line 7 of postmaster.pid ("key id"), if any."""
    fields = lines[6].split() if len(lines) > 6 else []
    return fields[1] if len(fields) == 2 else None


def release_crashed_memory(env: Environment, timeout: float = 60) -> str | None:
    """Free the shared memory of a postmaster that was killed (-9, OOM killer) before its data
    directory is deleted; None when nothing is left, else what is and how to free it.

    PostgreSQL frees a dead server's System V block, and the /dev/shm segments it lists, when
    the next server starts on the same data directory (it finds the block by the directory's
    inode), and never otherwise: deleting the directory of a crashed server leaks both for good.
    A single-user backend (no port, no listener) does that start: it frees them, recovers and
    stops.
    """
    if not env.managed or is_running(env):
        return None
    try:
        shmid = _lock_shmid((env.datadir / "postmaster.pid").read_text().splitlines())
    except OSError:  # no lock file: the server stopped cleanly, or never ran
        return None
    if shmid is None or _shm_nattch(shmid) is None:
        return None  # nothing of the dead server is left
    try:
        _clear_stale_lock(env)
        osuser.run_as_server(
            [env.binary("postgres"), "--single", "-D", str(env.datadir), "postgres"],
            timeout=timeout,
        )
    except PgrigError:
        pass  # said below, by what is left
    if _shm_nattch(shmid) is None:
        return None
    return (
        f"the crashed server's shared memory could not be freed: `ipcrm -m {shmid}` "
        "(and its PostgreSQL.* files in /dev/shm) once nothing uses it"
    )


def wait_ready(env: Environment, timeout: float = 30) -> None:
    """Until a connection succeeds (pg_ctl -w already waited for "ready" in postmaster.pid)."""
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        try:
            psycopg.connect(env.conninfo("postgres")).close()
            return
        except psycopg.OperationalError as e:
            if time.monotonic() > deadline:
                msg = f"server of {env.name!r} is not accepting connections: {e}"
                raise PgrigError(msg) from None
            time.sleep(0.1)


def stop(env: Environment, mode: str = "fast", timeout: int = 60) -> bool:
    """Stop the server. False if it was not running."""
    require_managed(env, "stop it")
    if not is_running(env):
        return False
    lifted = _lift_disk_limit(env)
    proc = pg_ctl(env, "-m", mode, "-w", "-t", str(timeout), "-s", "stop", timeout=timeout + 15)
    if proc.returncode != 0 and is_running(env):
        if lifted:  # still running: held to its limit again
            _limit_disk(env)
        raise PgrigError(
            f"server of {env.name!r} did not stop: {(proc.stderr or proc.stdout).strip()}"
        )
    return True


def _lift_disk_limit(env: Environment) -> bool:
    """The disk limit lifted for a stop: the shutdown checkpoint writes every dirty page, and
    at the limit's pace that outlasted pg_ctl's wait (wiops=30 after a `db generate` of scale 6:
    60 s silent, then "did not stop", exit 2, and the server stopped just after). Nothing is
    measured across a stop; the next start puts the limit back (_limit_disk)."""
    if not env.disk_limit or env.member_dir:
        return False
    from pgrig.provision.server import disk_throttle

    try:
        disk_throttle.lift(env)
    except PgrigError:
        return False  # the stop goes on as it would have
    return True


def restart(env: Environment, timeout: int = 60) -> None:
    require_managed(env, "restart it")
    stop(env, timeout=timeout)
    start(env, timeout=timeout)


def reload(env: Environment, timeout: float = 10) -> None:
    """SIGHUP the server and wait until new sessions see the new files; then report settings
    the server refused (bad values found only on reload)."""
    require_managed(env, "reload it")
    if not is_running(env):
        return
    before = _conf_load_time(env)
    proc = pg_ctl(env, "-s", "reload", timeout=30)
    if proc.returncode != 0:
        raise PgrigError(f"reload of {env.name!r} failed: {(proc.stderr or proc.stdout).strip()}")
    # The postmaster handles SIGHUP asynchronously: a benchmark must not start before it did.
    deadline = time.monotonic() + timeout
    while before is not None and time.monotonic() < deadline:
        now = _conf_load_time(env)
        if now is None or now > before:
            break
        time.sleep(0.02)
    problems = file_setting_errors(env)
    if problems:
        raise PgrigError(f"server of {env.name!r} rejected settings on reload: {problems}")


def _conf_load_time(env: Environment) -> datetime | None:
    import psycopg

    try:
        with psycopg.connect(env.conninfo("postgres")) as conn:
            row = conn.execute("select pg_conf_load_time()").fetchone()
            return row[0] if row else None
    except psycopg.Error:
        return None


def file_setting_errors(env: Environment) -> str:
    """Errors pg_file_settings reports for the config files (empty when all is well)."""
    import psycopg

    try:
        with psycopg.connect(env.conninfo("postgres")) as conn:
            rows = conn.execute(
                "select name, error from pg_file_settings "
                "where error is not null and error <> 'setting could not be applied'"
            ).fetchall()
    except psycopg.Error:
        return ""
    return "; ".join(f"{n}: {e}" for n, e in rows)


def restart_or_reload(env: Environment, changed: Iterable[str]) -> str:
    """Apply changed settings the cheapest way their contexts allow.

    Returns "restart", "reload" or "none" (nothing changed, or the server is not running: the
    new pgrig.conf takes effect at the next start).
    """
    from pgrig.provision.settings import catalog

    changed = list(changed)
    if not changed or not is_running(env):
        return "none"
    cat = catalog.load_catalog(env.bindir or "", env.version or "")
    if any(cat.needs_restart(n) for n in changed):
        restart(env)
        return "restart"
    reload(env)
    return "reload"


def pending_restart(env: Environment) -> list[str]:
    """Settings changed in the files that wait for a restart (pg_settings.pending_restart)."""
    import psycopg

    with psycopg.connect(env.conninfo("postgres")) as conn:
        return [r[0] for r in conn.execute(
            "select name from pg_settings where pending_restart order by 1"
        ).fetchall()]  # fmt: skip


def checkpoint(env: Environment, dbname: str | None = None) -> None:
    """Run CHECKPOINT (before a measured run, so dirty buffers from loading do not count)."""
    import psycopg

    try:
        with psycopg.connect(env.conninfo(dbname or "postgres"), autocommit=True) as conn:
            conn.execute("CHECKPOINT")
    except psycopg.Error as e:
        raise PgrigError(f"CHECKPOINT on {env.name!r} failed: {str(e).strip()}") from e
