"""Environments on another host: `pgrig env create NAME --on HOST` and every env/db command on
them afterwards, done by the pgrig of that host (the control machine forwards the command).

The control machine keeps a record of each such environment (<home>/envs/NAME/env.json, kind
"remote": its host, the address and port of its server, version, profile, settings) and a
libpq passfile (<home>/envs/NAME/pgpass, 0600) with the password of the server's superuser.
The password is generated here, never printed, never in argv or in the archive; the host's
pgrig receives only its SCRAM verifier, on stdin. Load hosts get the passfile pushed (0600).
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgrig.errors import HostCommandFailed, PgrigError
from pgrig.format import pgrig_command
from pgrig.hosts import registry, remote, ssh
from pgrig.hosts.registry import Host
from pgrig.provision.state.environment import Environment

if TYPE_CHECKING:
    from pgrig.request.environment import EnvironmentRequest

Say = Callable[[str], None]


def record(name: str) -> Environment | None:
    """The record of a remote environment NAME, None when NAME is not one (or not there)."""
    from pgrig import paths

    f = paths.envs_dir() / name / "env.json"
    if not f.is_file():
        return None
    try:
        doc = json.loads(f.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("kind") != "remote":
        return None
    return Environment.load(name)


def host_of(env: Environment) -> Host:
    if not env.on:
        raise PgrigError(f"environment {env.name} has no host")
    return registry.get(env.on)


def forward_rc(env: Environment, argv: list[str], stdin: bytes | None = None) -> int:
    """The host's pgrig runs `argv` (its output streamed here): its exit status."""
    return remote.forward(host_of(env), argv, stdin)


def forward(
    env: Environment,
    argv: list[str],
    *,
    say: Say,
    refresh_after: bool = False,
    replicas_too: Callable[[str], list[str]] | None = None,
    replicas_first: bool = False,
    pooler: str = "",
) -> int:
    """An env command on an environment on another host: its pgrig runs `argv`; the worst exit
    status. `refresh_after`: the record here then follows what the host shows (set, repair,
    restart). `replicas_too(name)`: the same command for each replica on another host
    (replicas.py), before the primary's (`replicas_first`, env stop) or after it. `pooler`
    "start"/"stop": a pooler on a host of its own starts after its server, stops before it (it
    never outlives it)."""
    from pgrig.provision.pooler import remote as remote_pooler
    from pgrig.provision.remote import replicas as remote_replicas

    pooled = pooler if remote_pooler.elsewhere(env) else ""
    fanned = replicas_too is not None and bool(remote_replicas.on_other_hosts(env))
    if pooled == "stop":
        remote_pooler.stop(env)
    rc = 0
    if fanned and replicas_first and replicas_too is not None:
        rc = remote_replicas.fan_out(env, replicas_too, say)
    rc = max(rc, forward_rc(env, argv))
    if fanned and not replicas_first and replicas_too is not None:
        rc = max(rc, remote_replicas.fan_out(env, replicas_too, say))
    if pooled == "start" and rc == 0:
        remote_pooler.start(env)
    if refresh_after:
        with contextlib.suppress(PgrigError):
            refresh(env)
    return rc


def same_for_replicas(argv: list[str]) -> Callable[[str], list[str]]:
    """The command `argv` (["env", COMMAND, NAME, ...]) for another member: a replica."""
    return lambda member: [*argv[:2], member, *argv[3:]]


def refresh(env: Environment) -> Environment:
    shown = remote.run_json(host_of(env), ["env", "show", env.name, "--json"])
    env.port = int(shown.get("port") or env.port or 0)
    env.version = shown.get("version") or env.version
    env.profile = shown.get("profile") or env.profile
    env.settings = dict((shown.get("layers") or {}).get("environment") or {})
    env.sync = str(shown.get("sync") or env.sync)
    if not any(r.get("env") for r in env.replicas):  # the host's own (env repair re-clones)
        from pgrig.provision.remote import replicas as remote_replicas

        env.replicas = remote_replicas.primary_host_replicas(env, shown)
    env.save()
    return env


def _check_provisioned(host: Host, pg: str) -> None:
    from pgrig.hosts import provisioning

    done = provisioning.provisioned(host.name)
    if done is None:
        raise PgrigError(
            f"host {host.name} is not provisioned: run "
            f"`{pgrig_command('host', 'provision', host.name, '--pg', pg)}`"
        )
    major = pg.split(".")[0]
    if not any(v.split(".")[0] == major for v in done.get("pg", [])):
        have = ", ".join(done.get("pg", [])) or "none"
        raise PgrigError(
            f"PostgreSQL {pg} is not installed on host {host.name} (it has {have}): run "
            f"`{pgrig_command('host', 'provision', host.name, '--pg', pg)}`"
        )


def create(request: EnvironmentRequest, *, say: Say) -> Environment:
    """`env create NAME --on HOST`: everything checked first (the host and every replica or
    pooler host known, by IP address, provisioned, reachable), then made on every host, all or
    nothing. The record here, with its replicas and pooler."""
    import ipaddress

    from pgrig import paths
    from pgrig.provision.remote import replicas as remote_replicas
    from pgrig.provision.server import binaries, remote_access
    from pgrig.provision.state.environment import check_new_name

    name, on, pg, profile = request.name, request.on, request.pg, request.profile
    replica_count, sync, pooler_on = request.replicas, request.sync, request.pooler_on
    if on is None:
        raise PgrigError(f"environment {name!r}: no host to create it on (--on HOST)")
    check_new_name(name)
    host = registry.get(on)
    if (paths.envs_dir() / name).exists():
        raise PgrigError(
            f"environment {name!r} already exists (see `{pgrig_command('env', 'show', name)}`)"
        )
    try:
        ipaddress.ip_address(host.address)
    except ValueError:
        raise PgrigError(
            f"host {on}: its address {host.address!r} must be an IP address (the server "
            "listens on it)"
        ) from None
    _check_provisioned(host, pg)
    pooler_cfg = _pooler_options(request.pooler, pooler_on)  # checked before anything is made
    layout = remote_replicas.plan(replica_count, list(request.replica_on))
    if layout:  # everything checked before anything is made, on any host
        for rep, _host in layout:
            remote_replicas.standby_env_name(name, rep)
        remote_replicas.check_hosts([h for _, h in layout], pg, _check_provisioned)
    password = remote_access.generate_password()
    verifier = remote_access.scram_verifier(password)
    argv = ["env", "create", name, "--pg", pg, "--profile", profile]
    argv += ["--listen", host.address, "--password-stdin"]
    argv += request.settings_args()
    argv += _create_options(request.port, None, request.insights)  # the pooler: from here
    if replica_count and not layout:  # the primary's host runs them itself
        argv += ["--replicas", str(replica_count), "--sync", sync]
    rc = remote.forward(host, argv, stdin=(verifier + "\n").encode())
    if rc != 0:
        raise HostCommandFailed(on, argv, rc)
    env = Environment(name=name, kind="remote", on=on, host=host.address, listen=host.address)
    try:
        shown = remote.run_json(host, ["env", "show", name, "--json"])
        env = Environment(
            name=name,
            kind="remote",
            on=on,
            major=shown.get("major"),
            version=shown.get("version"),
            host=host.address,
            port=int(shown["port"]),
            user="postgres",
            profile=shown.get("profile") or profile,
            settings=dict((shown.get("layers") or {}).get("environment") or {}),
            created_at=shown.get("created_at"),
            listen=host.address,
            sync=str(shown.get("sync") or "off"),
        )
        try:
            env.bindir = str(binaries.find_bindir(env.version or pg)[0])
        except PgrigError:
            env.bindir = None  # no client programs of that version here: none needed
        env.replicas = remote_replicas.primary_host_replicas(env, shown)
        env.save()
        remote_access.write_passfile(env.passfile, host.address, env.port or 0, env.user, password)
        for own in env.replicas:  # the primary's host's own replicas, at its address
            remote_access.add_passfile_line(
                env.passfile, host.address, int(own["port"]), env.user, password
            )
        if layout:
            remote_replicas.add(env, layout, request, superuser_password=password, say=say)
            if sync != "off":
                r = remote.run(host, ["env", "set", name, "--sync", sync])
                if r.rc != 0:
                    raise PgrigError(f"host {on}: --sync {sync}: {r.stderr.strip()[-300:]}")
                env.sync = sync
                env.save()
                say(f"synchronous replication: {sync}")
        _add_pooler(env, pooler_cfg, pooler_on)  # on the db host or its own, at its address
    except BaseException:
        with contextlib.suppress(Exception):  # all or nothing: every host's part too
            remote_replicas.rollback(env)
        with contextlib.suppress(Exception):
            remote.run(host, ["env", "destroy", name, "--yes", "--force"])
        shutil.rmtree(paths.envs_dir() / name, ignore_errors=True)
        raise
    return env


def created_lines(env: Environment) -> list[str]:
    """What `env create --on` says it made: the server, its replicas, its pooler."""
    where = "".join(
        f", replica {r['name']} on {r.get('on') or env.on} ({r['host']}:{r['port']})"
        for r in env.replicas
    )
    lines = [
        f"environment {env.name} on host {env.on}: PostgreSQL {env.version} on "
        f"{env.host}:{env.port}{where} (scram-sha-256; password in {env.passfile}, 0600)"
    ]
    if env.pooler:
        p = env.pooler
        lines.append(
            f"{p.get('kind')} on host {p.get('on')}: {p.get('listen')}:{p.get('port')} "
            f"(passwords in {env.dir / 'pooler.pgpass'}, 0600)"
        )
    return lines


def _add_pooler(env: Environment, cfg: Any, on: str | None) -> None:
    if cfg is not None:
        from pgrig.provision import pooler as pooling

        pooling.add(env, cfg, on=on)


def _pooler_options(pooler: str | None, pooler_on: str | None) -> Any:
    """The pooler's options for `env create --pooler/--pooler-on`, checked (None: no pooler)."""
    if pooler is None:
        return None
    from pgrig.hosts import provisioning
    from pgrig.provision import pooler as pooling

    cfg = pooling.options(kind=pooler)
    if pooler_on is not None and provisioning.provisioned(registry.get(pooler_on).name) is None:
        raise PgrigError(
            f"host {pooler_on} is not provisioned: run "
            f"`{pgrig_command('host', 'provision', pooler_on)}` (it "
            "installs pgbouncer and pgrig there)"
        )
    return cfg


def _create_options(port: int | None, pooler: str | None, insights: bool) -> list[str]:
    out = ["--port", str(port)] if port is not None else []
    if pooler is not None:
        out += ["--pooler", pooler]
    return out + ([] if insights else ["--no-insights"])


def destroy(env: Environment, force: bool, say: Say) -> None:
    """The pooler on a host of its own and the replicas on their hosts first, then the primary
    (its slots and pg_hba lines go with it), then the record here. A pooler or replica host that
    cannot be reached is said; without --force the record keeps it (and the primary) so that
    `env destroy` can be run again."""
    from pgrig.provision.pooler import remote as remote_pooler
    from pgrig.provision.remote import replicas as remote_replicas

    if remote_pooler.elsewhere(env):  # the pooler's own host first: nothing left running there
        try:
            remote_pooler.remove(env)
        except PgrigError as e:
            if not force:
                raise PgrigError(
                    f"{e} (the environment is kept; `--force` destroys it anyway and leaves "
                    f"the pooler on host {remote_pooler.pooler_host(env)})"
                ) from None
            say(f"warning: {e}")
            remote_pooler.forget(env)
    problems = remote_replicas.remove(env, force=force)
    if problems and not force:
        env.save()
        for line in problems:
            say(line)
        raise PgrigError(
            f"{env.name}: {len(problems)} replica(s) could not be destroyed; the primary and "
            "the record are kept: run `env destroy` again when the host is back, or add --force "
            "to destroy the rest and forget them"
        )
    for line in problems:
        say(f"forgotten (--force): {line}")
    argv = ["env", "destroy", env.name, "--yes"] + (["--force"] if force else [])
    rc = forward_rc(env, argv)
    if rc != 0:
        env.save()
        raise HostCommandFailed(env.on or "", argv, rc)
    shutil.rmtree(env.dir, ignore_errors=True)


def show_json(env: Environment) -> dict[str, Any]:
    doc = remote.run_json(host_of(env), ["env", "show", env.name, "--json"])
    doc["on"] = env.on
    if env.replicas:  # each with its host (the primary's topology says state and lag)
        doc["replicas"] = [dict(r) for r in env.replicas]
    doc["kind"] = "remote"
    doc["target"] = env.masked_target()
    doc["host"], doc["port"] = env.host, env.port
    return dict(doc)


def psql_argv(env: Environment, dbname: str | None, args: list[str]) -> list[str]:
    """`env psql` as the host's pgrig runs it."""
    return ["env", "psql", env.name] + (["-d", dbname] if dbname else []) + args


def terminal_command(env: Environment, argv: list[str]) -> list[str]:
    """OpenSSH with a terminal (-t) running the host's pgrig `argv` (an interactive psql): the
    host key checked against the registry's known_hosts."""
    host = host_of(env)
    cmd = ["ssh", "-t", "-p", str(host.port), "-o", "StrictHostKeyChecking=yes"]
    cmd += ["-o", f"UserKnownHostsFile={host.known_hosts_path}"]
    if host.identity:
        cmd += ["-i", host.identity, "-o", "IdentitiesOnly=yes"]
    return [*cmd, f"{host.user}@{host.address}", "--", ssh.quote(remote.command(argv))]


def db_argv_files(argv: list[str], env: Environment, beside: Sequence[Path] = ()) -> list[str]:
    """`--sql FILE` names a file here: it is copied to the host and its copy is named.
    `--script PATH.lua` (sysbench) goes with the files `beside` it (the Lua modules it may
    require: workloads/sysbench_lua.shipped_files), all into one directory there, which the
    host's pgrig puts on the Lua path."""
    out = list(argv)
    for i, a in enumerate(out[:-1]):
        if a == "--sql":
            out[i + 1] = remote.put_temp(host_of(env), Path(out[i + 1]))
        elif a == "--script":
            script = Path(out[i + 1])
            for sibling in beside:
                if sibling.resolve() != script.resolve():
                    remote.put_temp(host_of(env), sibling)
            out[i + 1] = remote.put_temp(host_of(env), script)
    return out
