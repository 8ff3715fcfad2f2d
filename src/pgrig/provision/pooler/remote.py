"""The pooler of an environment on another host (kind "remote"), driven from the control machine.

pgbouncer runs on the environment's own host or on a host of its own (`--pooler-on HOST`,
`env pooler NAME add --on HOST`), listening on that host's address as well as 127.0.0.1, so
that load hosts reach it. The host's pgrig sets it up (`env pooler NAME add --listen ADDRESS
--verifiers-stdin [--server ADDRESS:PORT]`); on a host of its own, pgbouncer reaches the server
over TCP and logs in with the client's SCRAM keys (its auth file holds the verifier the server
stores).

The passwords of the pool role and of the stats user are generated here and stay here, in
<home>/envs/NAME/pooler.pgpass (0600): the pooler's host receives only their SCRAM verifiers, on
stdin; the role is created on the server from here, over the environment's scram-sha-256
connection. Load hosts get the passfile's text over their SSH session, as for the server.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pgrig.errors import PgrigError
from pgrig.format import pgrig_command
from pgrig.provision.pooler import auth, layout
from pgrig.provision.pooler.capacity import check_pool_fits, server_limits
from pgrig.provision.pooler.config import PoolerConfig, config_of, no_pooler_error
from pgrig.provision.state.environment import Environment

if TYPE_CHECKING:
    from pgrig.hosts.registry import Host


def is_remote(env: Environment) -> bool:
    """An environment whose server (and pooler) another host's pgrig runs."""
    return env.kind == "remote"


def pooler_host(env: Environment) -> str | None:
    """The host pgbouncer runs on (None: no pooler)."""
    cfg = config_of(env)
    return (cfg.on or env.on) if cfg is not None else None


def elsewhere(env: Environment) -> bool:
    """The pooler runs on a host of its own, not the server's."""
    cfg = config_of(env)
    return cfg is not None and bool(cfg.on) and cfg.on != env.on


def _host(name: str) -> Host:
    from pgrig.hosts import provisioning, registry

    host = registry.get(name)
    if provisioning.provisioned(host.name) is None:
        raise PgrigError(
            f"host {host.name} is not provisioned: run "
            f"`{pgrig_command('host', 'provision', host.name)}` "
            "(it installs pgbouncer and pgrig there)"
        )
    return host


def _run(host: Host, argv: list[str], what: str, input: str | None = None) -> str:
    """The host's pgrig runs argv (returns what it printed); its one-line error otherwise."""
    from pgrig.hosts import remote

    r = remote.run(host, argv, input=input, timeout=120)
    if r.rc != 0:
        lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
        last = lines[-1].strip().removeprefix("error: ") if lines else f"exit status {r.rc}"
        raise PgrigError(f"host {host.name}: {what} failed: {last}")
    return f"{r.stdout}\n{r.stderr}"


def add(env: Environment, cfg: PoolerConfig, on: str | None = None) -> Environment:
    """pgbouncer on host `on` (default: the server's host) in front of env, all or nothing."""
    if env.pooler:
        raise PgrigError(
            f"environment {env.name!r} already has a {env.pooler.get('kind')} pooler "
            f"(see "
            f"`{pgrig_command('env', 'pooler', env.name, 'show')}`; remove it first to change it)"
        )
    if cfg.processes > 1:
        raise PgrigError(
            "--processes > 1 is not supported for a pooler on a host yet: its statistics "
            "console is reached over TCP, which lands on one of the processes at random"
        )
    host_name = on or env.on
    if not host_name:
        raise PgrigError(f"environment {env.name!r} is not on a host")
    host = _host(host_name)
    check_pool_fits(env, cfg, server_limits(env))  # the server answers from here, too
    pool_pw, stats_pw = auth.new_passwords()
    stored = auth.set_role(env, cfg, auth.scram_verifier(pool_pw))
    argv = ["env", "pooler", env.name, "add", cfg.kind, "--mode", cfg.mode]
    argv += ["--pool-size", str(cfg.pool_size), "--max-client-conn", str(cfg.max_client_conn)]
    argv += ["--listen", host.address, "--verifiers-stdin"]
    if cfg.port:
        argv += ["--port", str(cfg.port)]
    if host_name != env.on:
        argv += ["--server", f"{env.host}:{env.port}"]
    placed = replace(cfg, listen=host.address, on=host_name, auth_from="control")
    try:
        _run(host, argv, "pooler add", input=f"{stored}\n{auth.scram_verifier(stats_pw)}\n")
        shown = _show(host, env.name)
        placed = replace(placed, port=int((shown.get("config") or {}).get("port") or 0))
        if not placed.port:
            raise PgrigError(f"host {host.name}: the pooler shows no port")
        auth.write_private(
            layout.passfile(env), auth.passfile_text(placed, pool_pw, stats_pw), owner_server=False
        )
        env.pooler = placed.as_dict()
        env.save()
    except BaseException:
        with contextlib.suppress(Exception):
            _teardown_there(env, placed)
        with contextlib.suppress(Exception):
            auth.drop_role(env, cfg)
        layout.passfile(env).unlink(missing_ok=True)
        env.pooler = None
        raise
    return env


def _show(host: Host, name: str) -> dict[str, Any]:
    from pgrig.hosts import remote

    doc = remote.run_json(host, ["env", "pooler", name, "show", "--json"])
    return doc if isinstance(doc, dict) else {}


def _teardown_there(env: Environment, cfg: PoolerConfig) -> None:
    """Stop and remove pgbouncer on its host (on a host of its own: the record there too)."""
    from pgrig.hosts import registry

    host = registry.get(cfg.on or env.on or "")
    argv = ["env", "pooler", env.name, "remove"]
    if cfg.on and cfg.on != env.on:  # only the record made for it, never another environment
        argv += ["--server", f"{env.host}:{env.port}"]
    _run(host, argv, "pooler remove")


def remove(env: Environment) -> Environment:
    """Stop pgbouncer on its host, drop the role (from here) and delete the passfile."""
    cfg = config_of(env)
    if cfg is None:
        raise PgrigError(f"environment {env.name!r} has no pooler to remove")
    _teardown_there(env, cfg)
    with contextlib.suppress(Exception):
        auth.drop_role(env, cfg)
    layout.passfile(env).unlink(missing_ok=True)
    env.pooler = None
    env.save()
    return env


def forget(env: Environment) -> None:
    """The record's pooler, dropped here only (its host is gone or unreachable)."""
    layout.passfile(env).unlink(missing_ok=True)
    env.pooler = None
    env.save()


def start(env: Environment) -> bool:
    """Start pgbouncer on its host when it is down (the host says whether it was)."""
    cfg = config_of(env)
    if cfg is None:
        raise no_pooler_error(env)
    from pgrig.hosts import registry

    try:
        out = _run(
            registry.get(pooler_host(env) or ""), ["env", "pooler", env.name, "start"], "start"
        )
    except PgrigError as e:  # unreachable, not provisioned...: one line naming the pooler
        raise PgrigError(f"the pooler of {env.name}: {e}") from None
    return "already running" not in out


def stop(env: Environment) -> None:
    cfg = config_of(env)
    if cfg is None:
        return
    from pgrig.hosts import registry

    _run(registry.get(pooler_host(env) or ""), ["env", "pooler", env.name, "stop"], "stop")


def restart(env: Environment) -> Environment:
    """Removed and added again with the same options on the same host: fresh passwords."""
    cfg = config_of(env)
    if cfg is None:
        raise no_pooler_error(env)
    on = cfg.on or env.on
    remove(env)
    return add(env, replace(cfg, listen="", on="", auth_from="here"), on=on)


def ensure(env: Environment, wanted: PoolerConfig) -> Environment:
    """The pooler as `wanted` (port aside) and running, for studies: re-added if different
    (on the host it was on, else the server's)."""
    cfg = config_of(env)
    if (
        cfg is not None
        and replace(cfg, port=wanted.port or cfg.port).options()
        == replace(wanted, port=wanted.port or cfg.port).options()
    ):
        start(env)
        return env
    on = cfg.on if cfg is not None else None
    if cfg is not None:
        remove(env)
    return add(env, wanted, on=on)


def describe(env: Environment) -> dict[str, Any]:
    """What the pooler's host shows, with where it runs and how clients reach it from here."""
    cfg = config_of(env)
    if cfg is None:
        return {"env": env.name, "pooler": None}
    from pgrig.hosts import registry

    doc = _show(registry.get(pooler_host(env) or ""), env.name)
    doc["env"] = env.name
    doc["on"] = pooler_host(env)
    doc["target"] = cfg.target
    doc.setdefault("paths", {})["passfile"] = str(layout.passfile(env))
    return doc


# --- its log, which stays on its host --------------------------------------------------------


def log_path(env: Environment) -> str:
    """pgbouncer's log on the pooler's host (one process there: `add` refuses more)."""
    from pgrig.hosts.remote import REMOTE_HOME

    return f"{REMOTE_HOME}/envs/{env.name}/pooler/pgbouncer-0.log"


def log_offsets(env: Environment) -> list[int]:
    """The size of the log on the pooler's host now (0: no log yet); a HostError (one line
    naming the host) when it cannot be asked."""
    from pgrig.hosts import registry, remote

    host = registry.get(pooler_host(env) or "")
    return [remote.file_size(host, log_path(env), "the pooler log")]


def log_since(env: Environment, offsets: list[int], feed: Callable[[str], None]) -> str | None:
    """What pgbouncer logged on its host since `offsets`, streamed line by line into `feed`
    (hosts/remote.read_since): why it stopped early (None: read to the end)."""
    from pgrig.hosts import registry, remote

    if not offsets:
        return None
    host = registry.get(pooler_host(env) or "")
    return remote.read_since(host, log_path(env), offsets[0], feed, "the pooler log")
