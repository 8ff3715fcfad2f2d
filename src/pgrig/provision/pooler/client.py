"""How clients reach the pooler: libpq variables for pgbench, console parameters for the sampler.

Through the pooler the password comes from PGPASSFILE: never on a command line.
"""

from __future__ import annotations

from typing import Any

from pgrig.provision.pooler import layout
from pgrig.provision.pooler.config import config_of, no_pooler_error, normalize_via
from pgrig.provision.state.environment import Environment


def client_env(env: Environment, dbname: str, via: str, connect: str) -> dict[str, str]:
    """libpq variables for pgbench: the server or the pooler, over TCP or a Unix socket."""
    base = env.libpq_env(dbname)
    if normalize_via(via) == "direct":
        if connect == "socket" and env.managed:
            base["PGHOST"] = str(env.socket_dir)
        return base
    cfg = config_of(env)
    if cfg is None:
        raise no_pooler_error(env)
    return {
        # a pooler on a host: that host's address, where the load hosts connect
        "PGHOST": _tcp_host(env, cfg.address)
        if connect == "tcp"
        else str(layout.socket_dir(env, 0)),
        "PGPORT": str(cfg.port),
        "PGUSER": cfg.user,
        "PGDATABASE": dbname,
        "PGPASSFILE": str(layout.passfile(env)),
        "PGCONNECT_TIMEOUT": base.get("PGCONNECT_TIMEOUT", "5"),
    }


def _tcp_host(env: Environment, address: str) -> str:
    return address if env.kind == "remote" else "127.0.0.1"


def console_params(env: Environment) -> list[dict[str, Any]]:
    """psycopg connect() parameters for the admin console of each process (its Unix socket)."""
    cfg = config_of(env)
    if cfg is None:
        return []
    if env.kind == "remote":  # pgbouncer on another host: its console over TCP (one process)
        return [
            {
                "host": cfg.address,
                "port": cfg.port,
                "dbname": "pgbouncer",
                "user": cfg.stats_user,
                "passfile": str(layout.passfile(env)),
                "connect_timeout": 5,
            }
        ]
    return [
        {
            "host": str(layout.socket_dir(env, i)),
            "port": cfg.port,
            "dbname": "pgbouncer",
            "user": cfg.stats_user,
            "passfile": str(layout.passfile(env)),
            "connect_timeout": 5,
        }
        for i in range(cfg.processes)
    ]
