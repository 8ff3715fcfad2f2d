"""The pgbouncer processes: the binary, starting and stopping them, their status and logs.

Processes run as the server's unprivileged OS user with RLIMIT_NOFILE raised for
max_client_conn. Several processes share the port with so_reuseport (pgbouncer is
single-threaded: one core each), each with its own socket dir, pid and log file.
"""

from __future__ import annotations

import re
import resource
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pgrig.errors import PgrigError
from pgrig.provision.pooler import auth, layout
from pgrig.provision.pooler.config import (
    PoolerConfig,
    config_of,
    no_pooler_error,
    write_config,
)
from pgrig.provision.server.daemon import PGBOUNCER, Daemon
from pgrig.provision.state.environment import Environment
from pgrig.provision.system import osuser

START_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 10.0


# --- the binary --------------------------------------------------------------------------------


def binary() -> str:
    """Path of pgbouncer (Debian installs it in /usr/sbin, often not on a user's PATH)."""
    found = shutil.which("pgbouncer") or shutil.which("pgbouncer", path="/usr/sbin:/usr/bin")
    if not found:
        raise PgrigError(
            "pgbouncer is not installed: run scripts/setup.sh or `apt-get install -y pgbouncer`"
        )
    return found


def version(exe: str | None = None) -> str | None:
    """ "1.18.0" from `pgbouncer --version` (None if it cannot be asked)."""
    try:
        out = subprocess.run(
            [exe or binary(), "--version"], capture_output=True, text=True, timeout=10
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"PgBouncer\s+(\d+\.\d+(?:\.\d+)?)", out)
    return m.group(1) if m else None


# --- status ------------------------------------------------------------------------------------


def _daemon(env: Environment, i: int) -> Daemon | None:
    """Process i of the pooler if it runs (a stale pid file or a zombie gives None)."""
    return Daemon.from_file(layout.pid_file(env, i), PGBOUNCER)


def pids(env: Environment) -> list[int]:
    """Pids of the pooler processes that are running (for process CPU tracking)."""
    cfg = config_of(env)
    if cfg is None:
        return []
    return [d.pid for i in range(cfg.processes) if (d := _daemon(env, i)) is not None]


def pids_callable(env: Environment) -> Callable[[], list[int]]:
    """For OsSampler.track_processes: re-read the pid files at every sample."""
    return lambda: pids(env)


def status(env: Environment) -> str:
    """none | running | stopped | partial (some processes down)."""
    cfg = config_of(env)
    if cfg is None:
        return "none"
    n = len(pids(env))
    return "running" if n == cfg.processes else ("stopped" if n == 0 else "partial")


def is_running(env: Environment) -> bool:
    return status(env) == "running"


# --- open files --------------------------------------------------------------------------------


def raise_nofile(needed: int) -> int:
    """Make this process's RLIMIT_NOFILE (inherited by the programs it starts) >= `needed`.

    Returns the soft limit in force. As root the hard limit is raised too; otherwise a hard
    limit below `needed` is a clear error.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= needed or soft == resource.RLIM_INFINITY:
        return soft
    if hard != resource.RLIM_INFINITY and hard < needed:
        if not osuser.is_root():
            raise PgrigError(
                f"{needed} open files are needed but the hard limit is {hard}: raise it "
                "(ulimit -Hn, LimitNOFILE=) or run pgrig as root"
            )
        hard = needed
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    except (ValueError, OSError) as e:
        raise PgrigError(f"cannot raise the open files limit to {needed}: {e}") from None
    return needed


# --- logs --------------------------------------------------------------------------------------


def _log_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _log_problems(path: Path, since: int) -> str:
    try:
        with path.open("rb") as f:
            f.seek(since)
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    bad = [ln.split(" ", 3)[-1] for ln in text.splitlines() if " FATAL " in ln or " ERROR " in ln]
    return " ".join(bad[-2:])


def log_offsets(env: Environment) -> list[int]:
    cfg = config_of(env)
    return [_log_size(layout.log_file(env, i)) for i in range(cfg.processes)] if cfg else []


def log_since(env: Environment, offsets: list[int], feed: Callable[[str], None]) -> None:
    """What the pooler processes logged since `offsets` (process-prefixed when several),
    line by line into `feed` (never the whole of it in memory)."""
    for i, off in enumerate(offsets):
        prefix = f"[{i}] " if len(offsets) > 1 else ""
        try:
            with layout.log_file(env, i).open("rb") as f:
                f.seek(off)
                for raw in f:
                    feed(prefix + raw.decode(errors="replace").rstrip("\n"))
        except OSError:
            continue


# --- start and stop ----------------------------------------------------------------------------


def start_one(env: Environment, cfg: PoolerConfig, i: int, exe: str) -> None:
    """Start process i as a daemon owned by the server user; wait until it answers."""
    if _daemon(env, i) is not None:
        return
    layout.pid_file(env, i).unlink(missing_ok=True)  # stale
    log = layout.log_file(env, i)
    mark = _log_size(log)
    kwargs: dict[str, Any] = {}
    if osuser.is_root():
        u = osuser.server_user()
        kwargs = {"user": u.uid, "group": u.gid, "extra_groups": [], "umask": 0o027}
    # The child inherits this process's open-files limit (raised here: no preexec needed).
    raise_nofile(cfg.nofile)
    try:
        proc = subprocess.run(
            [exe, "-d", str(layout.ini_file(env, i))],
            cwd=str(layout.pooler_dir(env)),
            env=osuser.server_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            timeout=START_TIMEOUT_S,
            check=False,
            **kwargs,
        )
    except (OSError, subprocess.SubprocessError) as e:
        raise PgrigError(f"cannot start pgbouncer for {env.name!r}: {e}") from None
    why = _log_problems(log, mark) or " ".join((proc.stderr or "").split())
    if proc.returncode != 0:
        raise PgrigError(
            f"pgbouncer of {env.name!r} did not start: {why or f'exit {proc.returncode}'} "
            f"(log: {log})"
        )
    deadline = time.monotonic() + START_TIMEOUT_S
    sock = layout.socket_dir(env, i) / f".s.PGSQL.{cfg.port}"
    while _daemon(env, i) is None or not sock.exists():
        if time.monotonic() > deadline:
            why = _log_problems(log, mark)
            raise PgrigError(
                f"pgbouncer of {env.name!r} did not start: {why or 'no pid file'} (log: {log})"
            )
        time.sleep(0.05)


def _stop_one(env: Environment, i: int) -> bool:
    daemon = _daemon(env, i)
    if daemon is not None:
        daemon.stop(STOP_TIMEOUT_S)  # SIGTERM: 1.18's immediate shutdown (benchmarks are over)
    layout.pid_file(env, i).unlink(missing_ok=True)
    return daemon is not None


def start(env: Environment) -> bool:
    """Start whatever pooler processes are down (False: all were running already)."""
    cfg = config_of(env)
    if cfg is None:
        raise no_pooler_error(env)
    if is_running(env):
        return False
    exe = binary()
    if cfg.auth_from != "here":  # the passwords are the control machine's: the file stays
        if not layout.auth_file(env).exists():
            raise PgrigError(
                f"the pooler of {env.name!r} lost its auth file: add it again from the control "
                "machine (`pgrig env pooler NAME remove`, then `add`)"
            )
    elif not layout.auth_file(env).exists() or not layout.passfile(env).exists():
        auth.credentials(env, cfg)
    launch(env, cfg, exe)
    return True


def launch(env: Environment, cfg: PoolerConfig, exe: str) -> None:
    """Write the config and start every process; if one fails, none is left running."""
    write_config(env, cfg)
    try:
        for i in range(cfg.processes):
            start_one(env, cfg, i, exe)
    except BaseException:
        stop(env)
        raise


def stop(env: Environment) -> bool:
    """Stop every pooler process (False: none was running)."""
    cfg = config_of(env)
    if cfg is None:
        return False
    stopped = False
    d = layout.pooler_dir(env)
    n = max(cfg.processes, len(list(d.glob("pgbouncer-*.ini"))) if d.exists() else 0)
    for i in range(n):
        stopped = _stop_one(env, i) or stopped
    return stopped
