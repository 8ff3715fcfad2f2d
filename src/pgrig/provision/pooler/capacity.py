"""What fits: the server's connection limits, the pool's server connections, a run's clients.

Checked before anything starts, so a run that cannot work is refused with the setting to
change, never discovered as a wall of connection errors mid-run.
"""

from __future__ import annotations

from pgrig.errors import PgrigError, first_line
from pgrig.format import pgrig_command
from pgrig.provision.pooler.config import (
    PoolerConfig,
    config_of,
    no_pooler_error,
    normalize_via,
)
from pgrig.provision.state.environment import Environment, require_managed
from pgrig.request.vocabulary import CONNECTS

STATS_CONNECTIONS = 1  # the sampler's console connection to each process


def server_limits(env: Environment, overrides: dict[str, str] | None = None) -> tuple[int, int]:
    """(max_connections, slots reserved for superusers) of the running server.

    `overrides` (a run's own settings) win over the server's current values.
    """
    import psycopg

    names = ("max_connections", "superuser_reserved_connections", "reserved_connections")
    try:
        with psycopg.connect(env.conninfo("postgres"), autocommit=True) as conn:
            rows = dict(
                conn.execute(
                    "SELECT name, setting FROM pg_settings WHERE name = ANY(%s)", (list(names),)
                ).fetchall()
            )
    except psycopg.Error as e:
        first = first_line(e)
        raise PgrigError(f"cannot read connection limits of {env.name!r}: {first}") from None
    for k, v in (overrides or {}).items():
        if k.lower() in names:
            rows[k.lower()] = v
    try:
        mc = int(rows["max_connections"])
        reserved = int(rows.get("superuser_reserved_connections", 3)) + int(
            rows.get("reserved_connections", 0)
        )
    except (KeyError, ValueError) as e:
        raise PgrigError(f"cannot read connection limits of {env.name!r}: {e}") from None
    return mc, reserved


def _suggest_max_connections(needed: int, reserved: int) -> int:
    return -(-(needed + reserved + 10) // 100) * 100  # round up to a hundred


def _raise_max_connections(env: Environment, needed: int, reserved: int) -> str:
    """The `pgrig env set` that makes room for `needed` connections."""
    value = _suggest_max_connections(needed, reserved)
    return pgrig_command("env", "set", env.name, f"max_connections={value}")


def check_pool_fits(env: Environment, cfg: PoolerConfig, limits: tuple[int, int]) -> None:
    mc, reserved = limits
    usable = mc - reserved
    if cfg.server_connections > usable:
        procs = f" x {cfg.processes} processes" if cfg.processes > 1 else ""
        raise PgrigError(
            f"a pool of {cfg.pool_size}{procs} = {cfg.server_connections} server connections "
            f"exceeds max_connections={mc} on env {env.name} ({reserved} reserved): raise it "
            f"with `{_raise_max_connections(env, cfg.server_connections, reserved)}` or use a "
            "smaller --pool-size"
        )


def check_run(
    env: Environment,
    *,
    clients: int,
    via: str,
    connect: str,
    protocol: str,
    run_settings: dict[str, str] | None = None,
) -> str:
    """Reject a run that cannot work, before anything starts. Returns the normalized via."""
    via = normalize_via(via)
    if connect not in CONNECTS:
        raise PgrigError(f"--connect must be tcp or socket (got {connect!r})")
    if connect == "socket":
        require_managed(env, "reach it over a Unix socket (--connect socket; use tcp)")
    if via == "direct":
        mc, reserved = server_limits(env, run_settings)
        if clients > mc - reserved:
            raise PgrigError(
                f"{clients} clients exceed max_connections={mc} on env {env.name} "
                f"({reserved} reserved for superusers): raise it with "
                f"`{_raise_max_connections(env, clients, reserved)}` or use --via pooler"
            )
        return via
    cfg = config_of(env)
    if cfg is None:
        raise no_pooler_error(env)
    if cfg.kind != via:
        raise PgrigError(f"environment {env.name!r} has a {cfg.kind} pooler, not {via}")
    if connect == "socket" and cfg.processes > 1:
        raise PgrigError(
            f"--connect socket reaches only one of the {cfg.processes} pgbouncer processes "
            "(each has its own socket): use --connect tcp to spread clients over all"
        )
    room = cfg.max_client_conn - STATS_CONNECTIONS
    if clients > room:
        raise PgrigError(
            f"{clients} clients exceed max_client_conn={cfg.max_client_conn} of the pgbouncer "
            f"on env {env.name} ({STATS_CONNECTIONS} kept for statistics): "
            f"`{pgrig_command('env', 'pooler', env.name, 'remove')}`, then add it with "
            f"--max-client-conn {clients + 100}"
        )
    if protocol == "prepared" and cfg.mode != "session":
        raise PgrigError(
            f"--protocol prepared does not work through pgbouncer in {cfg.mode} mode "
            "(prepared statements need max_prepared_statements, pgbouncer 1.21+): "
            "use --protocol simple or extended"
        )
    if cfg.mode == "session" and clients > cfg.server_connections:
        raise PgrigError(
            f"{clients} clients through a session-mode pool of {cfg.server_connections} "
            "server connections: the others would wait forever; use --mode transaction "
            "or a larger --pool-size"
        )
    check_pool_fits(env, cfg, server_limits(env, run_settings))
    return via
