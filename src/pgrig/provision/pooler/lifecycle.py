"""The pooler's life: add, remove, restart, ensure (studies) and describe.

The pieces (options, files, credentials, processes, limits) come from the sibling modules;
here they are put together all or nothing: a pooler that cannot start leaves no process, role
or file behind.
"""

from __future__ import annotations

import contextlib
import resource
import shutil
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pgrig.errors import PgrigError
from pgrig.format import pgrig_command
from pgrig.provision.pooler import auth, daemon, layout, remote
from pgrig.provision.pooler.capacity import check_pool_fits, server_limits
from pgrig.provision.pooler.config import (
    POOL_ROLE,
    PoolerConfig,
    config_of,
    no_pooler_error,
    write_config,
)
from pgrig.provision.pooler.layout import SOCKET_PATH_MAX
from pgrig.provision.server import ports, postmaster
from pgrig.provision.state.environment import Environment, require_managed
from pgrig.provision.system import osuser
from pgrig.request.values import ascii_digits


def _choose_port(env: Environment, wanted: int) -> int:
    taken = ports.pooler_ports(env.name) | {env.port or 0}
    if wanted:
        if wanted in taken:
            raise PgrigError(f"port {wanted} is used by another environment or pooler")
        problem = ports.port_problem(wanted, ignore_env=env.name)
        if problem:
            raise PgrigError(problem)
        return wanted
    return ports.free_port(exclude=taken)


def _require_running(env: Environment, cfg: PoolerConfig | None = None) -> None:
    """A pooler needs its server up: callers start it (cluster.running_environment)."""
    if not env.managed and cfg is not None and cfg.auth_from == "control":
        _require_reachable(env)  # a pooler on its own host: the server is on another one
        return
    require_managed(env, "run a pooler for it")
    if not postmaster.is_running(env):
        raise PgrigError(
            f"the server of {env.name!r} is not running: "
            f"`{pgrig_command('env', 'start', env.name)}` first"
        )


def _require_reachable(env: Environment, timeout_s: float = 5.0) -> None:
    """The server of a pooler on its own host answers TCP connections from here."""
    import socket

    try:
        with socket.create_connection((env.host, int(env.port or 0)), timeout=timeout_s):
            pass
    except OSError as e:
        raise PgrigError(
            f"the server of {env.name!r} at {env.host}:{env.port} cannot be reached from this "
            f"host: {e.strerror or e}"
        ) from None


def parse_server(text: str) -> tuple[str, int]:
    """ADDRESS:PORT of `--server` (an IP address: the pooler's host reaches it over TCP)."""
    import ipaddress

    address, _, port = text.rpartition(":")
    try:
        ipaddress.ip_address(address)
    except ValueError:
        raise PgrigError(f"--server {text!r}: expected ADDRESS:PORT (an IP address)") from None
    if not ascii_digits(port) or not 1 <= int(port) <= 65535:
        raise PgrigError(f"--server {text!r}: expected ADDRESS:PORT (a port 1..65535)")
    return address, int(port)


def check_server_record(env: Environment, server: str) -> None:
    """env is the record of a pooler on its own host for `server` (and nothing else)."""
    host, port = parse_server(server)
    cfg = config_of(env)
    if env.managed or (env.host, env.port) != (host, port) or cfg is None:
        raise PgrigError(
            f"environment {env.name!r} on this host is not the record of a pooler for "
            f"{host}:{port}: left alone"
        )


def for_server(name: str, host: str, port: int) -> Environment:
    """The record, on a pooler's own host, of the server it points at (an external environment
    that holds only the pooler: `env pooler NAME remove --server ADDRESS:PORT` there stops it
    and removes both)."""
    from pgrig import paths
    from pgrig.provision.state.environment import check_name

    check_name(name)
    if (paths.envs_dir() / name / "env.json").exists():
        env = Environment.load(name)
        if env.managed or (env.host, env.port) != (host, port):
            raise PgrigError(
                f"environment {name!r} already exists on this host and is not the pooler's "
                f"record of {host}:{port}"
            )
        return env
    env = Environment(
        name=name, kind="external", host=host, port=port, user=POOL_ROLE,
        dsn=f"host={host} port={port} user={POOL_ROLE} dbname=postgres",
    )  # fmt: skip
    env.save()
    return env


def add(
    env: Environment,
    cfg: PoolerConfig,
    verifiers: tuple[str, str] | None = None,
    on: str | None = None,
) -> Environment:
    """Put a pooler in front of a running managed environment and start it (all or nothing).

    `verifiers` (pool role, stats user): the control machine made the role and keeps the
    passwords (a pooler for clients on other hosts); only the auth file is written here.
    An environment on a host (kind "remote"): its pooler on that host or on host `on`
    (pooler/remote.py).
    """
    if remote.is_remote(env):
        return remote.add(env, cfg, on)
    if on:
        raise PgrigError(
            f"a pooler on host {on} needs an environment on a host "
            f"(`{pgrig_command('env', 'create', env.name, '--pooler-on', on, rest='--on HOST')}`): "
            f"{env.name!r} runs on this machine"
        )
    if verifiers is not None:
        cfg = replace(cfg, auth_from="control")
    _require_running(env, cfg)
    name = env.name
    if env.pooler:
        raise PgrigError(
            f"environment {name!r} already has a {env.pooler.get('kind')} pooler "
            f"(see `{pgrig_command('env', 'pooler', name, 'show')}`; remove it first to change it)"
        )
    exe = daemon.binary()
    cfg = replace(cfg, port=_choose_port(env, cfg.port))
    longest = layout.socket_dir(env, cfg.processes - 1) / f".s.PGSQL.{cfg.port}"
    if len(str(longest)) > SOCKET_PATH_MAX:
        raise PgrigError(
            f"socket path {longest} is too long for a Unix socket: use a shorter environment "
            "name or PGRIG_HOME"
        )
    if not osuser.is_root():
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard != resource.RLIM_INFINITY and hard < cfg.nofile:
            raise PgrigError(
                f"pgbouncer needs {cfg.nofile} open files for max_client_conn="
                f"{cfg.max_client_conn} but the hard limit is {hard}: raise it (ulimit -Hn) "
                "or run pgrig as root"
            )
    if env.managed:  # a server elsewhere: the control machine checked it
        check_pool_fits(env, cfg, server_limits(env))
    env.pooler = cfg.as_dict()
    try:
        if verifiers is None:
            auth.credentials(env, cfg)
        else:
            auth.write_auth_file(env, cfg, *verifiers)
        write_config(env, cfg)
        for i in range(cfg.processes):
            daemon.start_one(env, cfg, i, exe)
    except BaseException:
        _teardown(env, cfg)
        raise
    env.save()
    return env


def _teardown(env: Environment, cfg: PoolerConfig) -> None:
    with contextlib.suppress(Exception):
        daemon.stop(env)
    with contextlib.suppress(Exception):
        if cfg.auth_from == "here" and env.managed and postmaster.is_running(env):
            auth.drop_role(env, cfg)  # the control machine drops a role it made
    shutil.rmtree(layout.pooler_dir(env), ignore_errors=True)
    layout.passfile(env).unlink(missing_ok=True)
    env.pooler = None


def remove(env: Environment) -> Environment:
    """Stop the pooler, drop its role (when the server runs) and delete its files."""
    if remote.is_remote(env):
        return remote.remove(env)
    cfg = config_of(env)
    if cfg is None:
        raise PgrigError(f"environment {env.name!r} has no pooler to remove")
    _teardown(env, cfg)
    env.save()
    return env


def restart(env: Environment) -> Environment:
    """Stop, regenerate config and credentials (fresh passwords), start. The server runs."""
    if remote.is_remote(env):
        return remote.restart(env)
    cfg = config_of(env)
    if cfg is None:
        raise no_pooler_error(env)
    _require_running(env, cfg)
    exe = daemon.binary()
    daemon.stop(env)
    if cfg.auth_from == "here":  # else the passwords are the control machine's to change
        auth.credentials(env, cfg)
    daemon.launch(env, cfg, exe)
    return env


def ensure(env: Environment, wanted: PoolerConfig) -> Environment:
    """The pooler as `wanted` (port aside) and running, for studies: re-added if different."""
    if remote.is_remote(env):
        return remote.ensure(env, wanted)
    _require_running(env)
    cfg = config_of(env)
    if (
        cfg is not None
        and replace(cfg, port=wanted.port or cfg.port).options()
        == replace(wanted, port=wanted.port or cfg.port).options()
    ):
        daemon.start(env)
        return env
    if cfg is not None:
        remove(env)
    return add(env, wanted)


def describe(env: Environment) -> dict[str, Any]:
    """What `pooler show` prints (no password, ever)."""
    if remote.is_remote(env):
        return remote.describe(env)
    cfg = config_of(env)
    if cfg is None:
        return {"env": env.name, "pooler": None}
    return {
        "env": env.name,
        "pooler": cfg.kind,
        "version": daemon.version()
        if shutil.which("pgbouncer", path="/usr/sbin:/usr/bin")
        else None,
        "status": daemon.status(env),
        "pids": daemon.pids(env),
        "target": cfg.target,
        "config": {**cfg.as_dict(), "nofile": cfg.nofile},
        "paths": {
            "dir": str(layout.pooler_dir(env)),
            "ini": [str(layout.ini_file(env, i)) for i in range(cfg.processes)],
            "log": [str(layout.log_file(env, i)) for i in range(cfg.processes)],
            "socket_dir": [str(layout.socket_dir(env, i)) for i in range(cfg.processes)],
            "auth_file": str(layout.auth_file(env)),
            "passfile": str(layout.passfile(env)),
        },
    }


def start(env: Environment) -> bool:
    """Start whatever pooler processes are down, here or on the pooler's host."""
    if remote.is_remote(env):
        return remote.start(env)
    return daemon.start(env)


def stop(env: Environment) -> bool:
    """Stop every pooler process, here or on the pooler's host (False: none was running)."""
    if remote.is_remote(env):
        remote.stop(env)
        return True
    return daemon.stop(env)


def log_offsets(env: Environment) -> list[int]:
    """Where each pooler process's log ends now, here or on the pooler's host."""
    if remote.is_remote(env):
        return remote.log_offsets(env)
    return daemon.log_offsets(env)


def log_since(env: Environment, offsets: list[int], feed: Callable[[str], None]) -> str | None:
    """What the pooler logged since `offsets`, here or streamed from its host, line by line
    into `feed`; why the reading stopped before the end, if it did."""
    if remote.is_remote(env):
        return remote.log_since(env, offsets, feed)
    daemon.log_since(env, offsets, feed)
    return None
