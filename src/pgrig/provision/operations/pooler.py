"""`env pooler NAME ...`: the environment a pooler command acts on (the record of one on a
host, else the one here), and adding or removing a pooler with the record made for it."""

from __future__ import annotations

import contextlib
import ipaddress
from dataclasses import replace

from pgrig.errors import PgrigError
from pgrig.provision import cluster, pooler
from pgrig.provision.pooler import PoolerConfig
from pgrig.provision.remote import environments as remote_env
from pgrig.provision.state.environment import Environment


def environment(name: str, running: bool) -> Environment:
    """The record of an environment on a host, else the one here (`running`: its server
    started first)."""
    remote = remote_env.record(name)
    if remote is not None:
        return remote
    return cluster.running_environment(name) if running else cluster.get_environment(name)


def listening_on(cfg: PoolerConfig, listen: str | None) -> PoolerConfig:
    """`--listen ADDRESS`: also listen on this address of this machine."""
    if listen is None:
        return cfg
    try:
        ipaddress.ip_address(listen)
    except ValueError:
        raise PgrigError(f"--listen {listen!r}: expected an IP address of this host") from None
    return replace(cfg, listen=listen)


def target(name: str, verifiers: tuple[str, str] | None, server: str | None) -> Environment:
    """The environment a pooler is added to: with `server` (ADDRESS:PORT of a server on
    another host) a record made for a pooler on a host of its own, else `name` running."""
    if server is None:
        return environment(name, running=True)
    if verifiers is None:
        raise PgrigError("--server ADDRESS:PORT goes with --verifiers-stdin")
    return pooler.for_server(name, *pooler.parse_server(server))


def add(
    env: Environment,
    cfg: PoolerConfig,
    verifiers: tuple[str, str] | None,
    on: str | None,
    *,
    own_record: bool,
) -> Environment:
    """Start the pooler in front of `env`; on failure a record made for it (`own_record`)
    goes too."""
    try:
        return pooler.add(env, cfg, verifiers, on=on)
    except BaseException:
        if own_record and not env.pooler:
            with contextlib.suppress(Exception):
                cluster.destroy_environment(env.name)
        raise


def remove(name: str, server: str | None) -> None:
    """Stop the pooler and delete its role, configuration and passwords; with `server` the
    record that held only that pooler goes with it."""
    env = environment(name, running=False)
    if server is not None:
        pooler.check_server_record(env, server)
    pooler.remove(env)
    if server is not None:
        cluster.destroy_environment(env.name)
