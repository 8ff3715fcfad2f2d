"""Where the pooler's files live inside its environment's directory."""

from __future__ import annotations

from pathlib import Path

from pgrig.provision.state.environment import Environment
from pgrig.provision.system import osuser

SOCKET_PATH_MAX = 100  # sun_path is 108 bytes; a margin for ".s.PGSQL.NNNNN"


def pooler_dir(env: Environment) -> Path:
    return env.dir / "pooler"


def passfile(env: Environment) -> Path:
    """The clients' password file (libpq format), readable by the invoking user only."""
    return env.dir / "pooler.pgpass"


def auth_file(env: Environment) -> Path:
    return pooler_dir(env) / "userlist.txt"


def ini_file(env: Environment, i: int) -> Path:
    return pooler_dir(env) / f"pgbouncer-{i}.ini"


def pid_file(env: Environment, i: int) -> Path:
    return pooler_dir(env) / f"pgbouncer-{i}.pid"


def log_file(env: Environment, i: int) -> Path:
    return pooler_dir(env) / f"pgbouncer-{i}.log"


def socket_dir(env: Environment, i: int) -> Path:
    return pooler_dir(env) / f"run-{i}"


def make_dir(env: Environment) -> Path:
    """The pooler directory, owned by the server's OS user (pgbouncer writes there)."""
    d = pooler_dir(env)
    d.mkdir(exist_ok=True)
    osuser.give_to_server(d, 0o755)
    return d
