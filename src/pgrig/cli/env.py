"""`pgrig env`: environments (servers pgrig manages, or external ones it only points at)."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import typer

from pgrig.cli.common import (
    confirm,
    err_console,
    exclusive_env,
    out_console,
    print_json,
    recovered_env,
)
from pgrig.errors import PgrigError

if TYPE_CHECKING:
    from pgrig.provision.state.environment import Environment

app = typer.Typer(no_args_is_help=True)

FORCE = typer.Option(False, "--force", help="Even while a run is in progress on it.")
DISK_LIMIT_HELP = (
    "Block I/O caps of the server: riops=N,wiops=N,rbps=SIZE,wbps=SIZE (any of them; SIZE in "
    "bytes or with B/kB/MB/GB, 1024-based, per second), or none; put in force by the kernel's "
    "throttle (cgroup v2 io.max or v1 blkio) on the disks of the data directory and WAL."
)
REMOTE_DISK_LIMIT = (
    "--disk-limit is not supported for environments on other hosts: pgrig limits the disk of "
    "servers on this machine only (run `pgrig env create/set ... --disk-limit` on that host's "
    "pgrig instead)"
)


def _say(msg: str) -> None:
    err_console().print(f"[dim]·[/dim] {msg}", highlight=False)


def _remote(name: str) -> Environment | None:
    """The record of NAME when it is an environment on another host (provision/remote/)."""
    from pgrig.provision.remote import environments as remote_env

    return remote_env.record(name)


def _forward_if_remote(
    name: str,
    argv: list[str],
    refresh: bool = False,
    replicas_too: Callable[[str], list[str]] | None = None,
    replicas_first: bool = False,
    pooler: str = "",
) -> None:
    """An environment on another host: its pgrig runs `argv` (provision/remote/environments.py
    `forward`: replicas, pooler and refresh), and this command ends with its exit status."""
    remote = _remote(name)
    if remote is not None:
        from pgrig.provision.remote import environments as remote_env

        rc = remote_env.forward(
            remote, argv, say=_say, refresh_after=refresh, replicas_too=replicas_too,
            replicas_first=replicas_first, pooler=pooler,
        )  # fmt: skip
        raise SystemExit(rc)


def _flag(on: bool, flag: str) -> list[str]:
    return [flag] if on else []


def _same_for(argv: list[str]) -> Callable[[str], list[str]]:
    """The command `argv` (["env", COMMAND, NAME, ...]) for another member: a replica."""
    return lambda member: [*argv[:2], member, *argv[3:]]


@app.command("create")
def create(
    name: str = typer.Argument(..., help="Environment name."),
    pg: str = typer.Option("15", "--pg", help="PostgreSQL major (15) or exact version (18.6)."),
    profile: str = typer.Option("default", "--profile", help="Configuration profile."),
    sets: list[str] = typer.Option([], "--set", help="NAME=VALUE setting (repeatable)."),
    port: int | None = typer.Option(None, "--port", help="TCP port (default: a free one)."),
    with_pooler: str | None = typer.Option(
        None, "--pooler", help="Also start a pooler: pgbouncer (see `env pooler NAME add`)."
    ),
    pooler_on: str | None = typer.Option(
        None,
        "--pooler-on",
        help="With --on: run the pooler (pgbouncer unless --pooler says) on this host, "
        "listening on its address; without it --pooler runs on the server's host.",
    ),
    insights: bool = typer.Option(
        True,
        "--insights/--no-insights",
        help="pgrig's insights layer (pg_stat_statements, auto_explain, logging); "
        "change it later with `pgrig env set NAME --insights/--no-insights`.",
    ),
    replica_count: int = typer.Option(
        0, "--replicas", help="Streaming replicas on this machine (pg_basebackup, slots)."
    ),
    sync: str = typer.Option(
        "off", "--sync", help="Replication: off (async) | on | remote_write | remote_apply."
    ),
    on: str | None = typer.Option(
        None, "--on", help="On this host (`pgrig host add`; its pgrig does the work)."
    ),
    listen: str | None = typer.Option(
        None,
        "--listen",
        help="Also listen on this address of this machine (scram-sha-256; with "
        "--password-stdin: a SCRAM verifier on stdin). `--on` sets it up by itself.",
    ),
    password_stdin: bool = typer.Option(
        False, "--password-stdin", help="Read the superuser's SCRAM verifier from stdin."
    ),
    replica_on: list[str] = typer.Option(
        [],
        "--replica-on",
        help="With --on: put the replicas on this host (repeatable; replicas go to the hosts in "
        "turn; --replicas defaults to one per host).",
    ),
    standby_of: str | None = typer.Option(
        None,
        "--standby-of",
        hidden=True,
        help="ADDRESS:PORT: a replica of that primary (the replication password on stdin).",
    ),
    slot: str | None = typer.Option(None, "--slot", hidden=True),
    application_name: str | None = typer.Option(None, "--application-name", hidden=True),
    disk_limit: str | None = typer.Option(
        None, "--disk-limit", help=DISK_LIMIT_HELP + " Needs root and a cgroup I/O controller."
    ),
) -> None:
    """Create and start a managed PostgreSQL server (everything validated first)."""
    from pgrig.errors import PgrigError
    from pgrig.provision import cluster, pooler
    from pgrig.provision.server import standby
    from pgrig.provision.settings import config
    from pgrig.provision.state.environment import check_new_name
    from pgrig.request import disk_limit as disk_limits

    check_new_name(name)  # first: a reserved name is refused before anything is checked or made
    limit = disk_limits.parse(disk_limit) if disk_limit is not None else None
    if limit is not None and on is not None:
        raise PgrigError(REMOTE_DISK_LIMIT)
    if replica_on and on is None:
        raise PgrigError("--replica-on needs --on HOST (the primary's host)")
    if pooler_on is not None and on is None:
        raise PgrigError(
            "--pooler-on HOST needs --on HOST (the server must listen on a host's address "
            "for a pooler on another host to reach it)"
        )
    if on is not None:
        from pgrig.provision.remote import environments as remote_env

        if pooler_on is not None and with_pooler is None:
            with_pooler = "pgbouncer"
        made = remote_env.create(
            name, on, pg, profile=profile, sets=sets, port=port, pooler=with_pooler,
            insights=insights, replica_count=replica_count, sync=sync, replica_on=replica_on,
            pooler_on=pooler_on, say=_say,
        )  # fmt: skip
        for line in remote_env.created_lines(made):
            err_console().print(line, highlight=False)
        return
    source = None
    if standby_of is not None:
        source = standby.parse(standby_of, slot, application_name)
        if not password_stdin or with_pooler is not None:
            raise PgrigError("--standby-of takes the replication password on stdin, no --pooler")
    secret = sys.stdin.readline().strip() if password_stdin else None
    verifier = secret if source is None else None
    t0 = time.monotonic()
    settings = config.parse_assignments(sets)
    pooler_cfg = None
    if with_pooler is not None:  # pooler: checked before, added after the server (all or none)
        pooler_cfg = pooler.options(kind=with_pooler)
        pooler.binary()
    with err_console().status("creating environment…"):
        env = cluster.create_environment(
            name,
            pg,
            profile=profile,
            settings=settings,
            port=port,
            progress=_say,
            insights=insights,
            replica_count=replica_count,
            sync=sync,
            listen=listen,
            password_verifier=verifier,
            standby_of=source,
            replication_password=secret if source is not None else None,
            disk_limit=limit,
        )
        if pooler_cfg is not None:
            try:
                env = pooler.add(env, pooler_cfg)
            except BaseException:
                cluster.destroy_environment(name)
                raise
            _say(f"{pooler_cfg.kind} on 127.0.0.1:{(env.pooler or {}).get('port')}")
    members = "".join(f", replica {r['name']} on {r['port']}" for r in env.replicas)
    if limit is not None:
        _say(f"disk limit {disk_limits.describe(limit)} in force ({_throttle_where(env)})")
    err_console().print(
        f"[green]environment {env.name} is running[/green]: PostgreSQL {env.version} on "
        f"{env.listen or '127.0.0.1'}:{env.port}{members} ({time.monotonic() - t0:.1f} s)",
        highlight=False,
    )


@app.command("add")
def add(
    name: str = typer.Argument(..., help="Environment name."),
    dsn: str = typer.Option(..., "--dsn", help="libpq DSN or URL of the server."),
) -> None:
    """Register an external server (checked now; the password is never stored)."""
    from pgrig.provision import cluster

    env = cluster.add_external(name, dsn)
    err_console().print(
        f"[green]added {env.name}[/green]: PostgreSQL {env.version} at {env.masked_target()}"
        " (password not stored: use PGPASSWORD or ~/.pgpass)",
        highlight=False,
    )


@app.command("destroy")
def destroy(
    name: str = typer.Argument(..., help="Environment name."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    force: bool = FORCE,
) -> None:
    """Stop the server and delete the environment with its data."""
    from pgrig.provision import cluster
    from pgrig.provision.state import env_lock, environment

    environment.check_name(name)
    confirm(f"Destroy environment {name} and all its data?", yes)
    if (remote := _remote(name)) is not None:
        from pgrig.provision.remote import environments as remote_env

        remote_env.destroy(remote, force, say=_say)
        err_console().print(f"destroyed {name} (on host {remote.on})", highlight=False)
        return
    env_dir = environment.Environment(name=name).dir
    if env_dir.is_dir():  # a damaged environment can still be destroyed
        env_lock.refuse_if_busy(env_dir, name, "env destroy", force)
    env = cluster.destroy_environment(
        name, say=lambda msg: err_console().print(msg, highlight=False)
    )
    what = "forgot" if env is not None and not env.managed else "destroyed"
    err_console().print(f"{what} {name}", highlight=False)


@app.command("repair")
def repair(
    name: str = typer.Argument(..., help="Environment name."),
    force: bool = FORCE,
    check: bool = typer.Option(
        False, "--check", help="Say what would be repaired; change nothing."
    ),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    reclone: bool = typer.Option(False, "--reclone", hidden=True),
    standby_of: str | None = typer.Option(None, "--standby-of", hidden=True),
    slot: str | None = typer.Option(None, "--slot", hidden=True),
    application_name: str | None = typer.Option(None, "--application-name", hidden=True),
    password_stdin: bool = typer.Option(False, "--password-stdin", hidden=True),
) -> None:
    """Rebuild a damaged environment: env.json from its data directory, or a removed data
    directory (empty: generate the data again; a replica is cloned again from its primary,
    on whatever host each runs)."""
    from pgrig.provision import repair as repairing
    from pgrig.provision.server import standby
    from pgrig.provision.state import env_lock
    from pgrig.provision.state.environment import Environment, check_name

    check_name(name)
    if (remote := _remote(name)) is not None:
        from pgrig.provision.remote import repair as remote_repair

        if check:
            plan = remote_repair.look(remote)
            lines = [] if as_json else remote_repair.plan_lines(remote, plan)
        else:
            done = remote_repair.repair(remote, force=force, say=_say)
            plan = {"name": name, "done": done}
            lines = [] if as_json else done or [f"{name}: nothing to repair"]
        if as_json:
            print_json(plan)
        for line in lines:
            err_console().print(line, highlight=False, soft_wrap=True)
        return
    if check:
        doc = repairing.diagnose(name).as_dict()
        if as_json:
            print_json(doc)
        else:
            from pgrig.provision.remote.repair import needs_text

            err_console().print(f"{name}: {needs_text(doc)}", highlight=False, soft_wrap=True)
        return
    source = None
    if standby_of is not None:  # the control machine's: where the primary is now
        source = standby.parse(standby_of, slot, application_name)
    password = sys.stdin.readline().strip() if password_stdin else None
    env_dir = Environment(name=name).dir
    if env_dir.is_dir():
        env_lock.refuse_if_busy(env_dir, name, "env repair", force)
    done = repairing.repair(name, _say, source=source, password=password, reclone=reclone)
    notes = repairing.stopped_notes(name)
    if as_json:
        print_json({"name": name, "done": done, "notes": notes})
        return
    for line in (done or ["nothing to repair"]) + notes:
        err_console().print(f"{name}: {line}", highlight=False, soft_wrap=True)


@app.command("replication", hidden=True)
def replication(
    name: str = typer.Argument(..., help="Environment name (the primary)."),
    action: str = typer.Argument(..., help="allow | renew | forget"),
    replica: str = typer.Argument(..., help="The replica's name (r1, r2, ...)."),
    address: str | None = typer.Option(None, "--address", help="The replica host's address."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    force: bool = FORCE,
) -> None:
    """Allow or renew (a SCRAM verifier on stdin) or forget a replica on another host
    (provision/replication_access.py; the control machine drives this for --replica-on)."""
    from pgrig.errors import PgrigError
    from pgrig.provision.server import replication_access

    if action not in ("allow", "forget", "renew"):
        raise PgrigError(f"env replication: expected allow, renew or forget, got {action!r}")
    with exclusive_env(name, f"env replication {action}", force) as env:
        if action in ("allow", "renew"):
            if address is None:
                raise PgrigError(f"env replication {action} needs --address ADDRESS")
            verifier = sys.stdin.readline().strip()
            if action == "allow":
                doc = replication_access.allow(env, replica, address, verifier)
            else:  # a verifier only when the control machine sets a new password
                doc = replication_access.renew(env, replica, address, verifier or None)
        else:
            doc = {"name": replica, "forgotten": replication_access.forget(env, replica)}
    if as_json:
        print_json(doc)
    else:
        done = {"allow": "allowed", "renew": "renewed"}.get(action, "forgotten")
        err_console().print(f"{name}: replica {replica} {done}", highlight=False)


@app.command("start")
def start(name: str = typer.Argument(..., help="Environment name.")) -> None:
    """Start the server of an environment (waits until it accepts connections)."""
    from pgrig.provision import cluster

    argv = ["env", "start", name]
    _forward_if_remote(name, argv, replicas_too=_same_for(argv), pooler="start")
    recovered_env(name).check_intact()
    env, started, started_replicas = cluster.start_environment(name)
    msg = "started" if started else "already running"
    msg += f" on port {env.port}"
    if started_replicas:
        msg += f"; replica{'s' if len(started_replicas) > 1 else ''} started: "
        msg += ", ".join(n.rsplit("/", 1)[-1] for n in started_replicas)
    err_console().print(f"{name}: {msg}", highlight=False)


@app.command("stop")
def stop(name: str = typer.Argument(..., help="Environment name."), force: bool = FORCE) -> None:
    """Stop the server of an environment (fast shutdown)."""
    from pgrig.provision import cluster

    argv = ["env", "stop", name, *_flag(force, "--force")]
    _forward_if_remote(name, argv, replicas_too=_same_for(argv), replicas_first=True, pooler="stop")
    with exclusive_env(name, "env stop", force):
        _, stopped = cluster.stop_environment(name)
    err_console().print(f"{name}: {'stopped' if stopped else 'was not running'}")


@app.command("restart")
def restart(name: str = typer.Argument(..., help="Environment name."), force: bool = FORCE) -> None:
    """Restart the server of an environment."""
    from pgrig.provision import cluster

    argv = ["env", "restart", name, *_flag(force, "--force")]
    _forward_if_remote(name, argv, replicas_too=_same_for(argv))
    with exclusive_env(name, "env restart", force) as env:
        env.check_intact()
        env = cluster.restart_environment(name)
    err_console().print(f"{name}: restarted on port {env.port}", highlight=False)


@app.command("set")
def set_(
    name: str = typer.Argument(..., help="Environment name."),
    assignments: list[str] = typer.Argument(None, help="NAME=VALUE settings."),
    reset: list[str] = typer.Option([], "--reset", help="Remove a setting (repeatable)."),
    insights: bool | None = typer.Option(
        None,
        "--insights/--no-insights",
        help="Add or remove pgrig's insights layer (pg_stat_statements, auto_explain, logging).",
    ),
    sync: str | None = typer.Option(
        None, "--sync", help="Replication mode: off | on | remote_write | remote_apply."
    ),
    disk_limit: str | None = typer.Option(None, "--disk-limit", help=DISK_LIMIT_HELP),
    force: bool = FORCE,
    as_json: bool = typer.Option(
        False, "--json", help="What changed (values before and after, reload or restart)."
    ),
) -> None:
    """Change environment settings: validated, written, then reloaded or restarted."""
    from pgrig.errors import PgrigError
    from pgrig.provision import cluster
    from pgrig.provision.server import replicas
    from pgrig.provision.settings import config

    if disk_limit is not None:
        if assignments or reset or insights is not None or sync is not None:
            raise PgrigError("give --disk-limit alone, not with other changes")
        _set_disk_limit(name, disk_limit, force, as_json)
        return
    if not assignments and not reset and insights is None and sync is None:
        raise PgrigError(
            "nothing to change: give NAME=VALUE settings, --reset NAME, --sync MODE, "
            "--disk-limit LIMITS or --insights/--no-insights"
        )
    if (insights is not None or sync is not None) and (
        assignments or reset or (insights is not None and sync is not None)
    ):
        raise PgrigError("give --insights/--no-insights or --sync alone, not with other changes")
    if _remote(name) is not None:
        argv = ["env", "set", name, *(assignments or [])]
        for r in reset:
            argv += ["--reset", r]
        if insights is not None:
            argv.append("--insights" if insights else "--no-insights")
        if sync is not None:
            argv += ["--sync", sync]
        # replicas on other hosts take the primary's settings, not its sync mode
        same = insights is None and sync is None
        follow = _same_for([*argv, *_flag(force, "--force")]) if same else None
        _forward_if_remote(
            name,
            [*argv, *_flag(as_json, "--json"), *_flag(force, "--force")],
            refresh=True,
            replicas_too=follow,
        )
    with exclusive_env(name, "env set", force) as env:
        env.check_intact()
        layers_before = config.layers(env)
        if sync is not None:
            before = dict(config.layers(env).topology)
            action = replicas.set_sync(env, sync)
            after = config.layers(env).topology
            changed = config.changed_names(before, after)
        elif insights is not None:
            from pgrig.insights import setup

            action, changed = setup.set_enabled(name, insights)
        else:
            action, changed = cluster.set_settings(
                name, config.parse_assignments(assignments or []), reset
            )
    how = {
        "restart": "server restarted",
        "reload": "configuration reloaded",
        "none": "server is stopped: takes effect at the next start",
    }[action]
    if as_json:
        print_json(_set_document(name, layers_before, changed, action if changed else "unchanged"))
    if not changed:
        err_console().print(f"{name}: nothing changed")
        return
    err_console().print(f"{name}: {', '.join(changed)} changed; {how}", highlight=False)
    _warn_auto_conf(name, changed)


def _set_disk_limit(name: str, spec: str, force: bool, as_json: bool) -> None:
    """`env set NAME --disk-limit ...`: in force at once on a running server."""
    from pgrig.provision import cluster
    from pgrig.provision.server import postmaster
    from pgrig.request import disk_limit as disk_limits

    limit = disk_limits.parse(spec)
    if _remote(name) is not None:
        raise PgrigError(REMOTE_DISK_LIMIT)
    with exclusive_env(name, "env set", force) as env:
        env.check_intact()
        before, changed = cluster.set_disk_limit(name, limit)
        running = postmaster.is_running(env)
    old = disk_limits.describe(disk_limits.DiskLimit.from_dict(before) if before else None)
    new = disk_limits.describe(limit)
    action = ("applied" if running else "next start") if changed else "unchanged"
    if as_json:
        print_json(
            {
                "env": name,
                "action": action,
                "changed": [{"name": "disk_limit", "before": old, "after": new}] if changed else [],
            }
        )
    if not changed:
        err_console().print(f"{name}: nothing changed (disk limit {new})", highlight=False)
        return
    if limit is None:
        how = "removed" if running else "removed (server stopped)"
        err_console().print(f"{name}: disk limit {old} {how}", highlight=False)
        return
    from pgrig.provision.state.environment import Environment

    where = _throttle_where(Environment.load(name))
    when = "in force" if running else "server is stopped: in force at the next start"
    err_console().print(f"{name}: disk limit {old} -> {new}; {when} ({where})", highlight=False)


def _throttle_where(env: Environment) -> str:
    """ "cgroup v1 blkio throttle on 254:0 (vda)": how and on which disks."""
    from pgrig.provision.server import disk_throttle

    try:
        h = disk_throttle.hierarchy()
        disks = ", ".join(f"{d.number} ({d.name})" for d, _ in disk_throttle.devices(env))
    except PgrigError as e:
        return str(e)
    return f"{h.mechanism} on {disks}"


def _set_document(name: str, before: Any, changed: list[str], action: str) -> dict[str, Any]:
    """`env set --json`: each changed setting's effective value before and after and the layer
    that sets it now, what was done (restart, reload, or none: stopped or unchanged) and the
    ALTER SYSTEM entries that hide a change."""
    from pgrig.provision.settings import auto_conf, catalog, config
    from pgrig.provision.state.environment import Environment

    env = Environment.load(name)
    old, new = before.merged(), config.layers(env).merged()
    hidden = {o.name: o.describe() for o in auto_conf.overrides(env) if o.name in changed}
    settings = catalog.load_catalog(env.bindir or "", env.version or "").settings

    def value(layers: dict[str, tuple[str, str]], k: str) -> tuple[str | None, str]:
        if k in layers:
            return layers[k]
        known = settings.get(k.lower())  # no layer sets it: PostgreSQL's default
        return (known.default_text() if known else None), "default"

    rows = []
    for k in changed:
        after, layer = value(new, k)
        rows.append(
            {
                "name": k,
                "before": value(old, k)[0],
                "after": after,
                "layer": layer,
                "overridden_by_auto_conf": hidden.get(k),
            }
        )
    return {"env": name, "action": action, "changed": rows}


def _warn_auto_conf(name: str, changed: list[str]) -> None:
    """A change that postgresql.auto.conf (ALTER SYSTEM) overrides is said, not silent."""
    from rich.markup import escape

    from pgrig.provision.settings import auto_conf
    from pgrig.provision.state.environment import Environment

    hidden = [o for o in auto_conf.overrides(Environment.load(name)) if o.name in changed]
    if hidden:
        err_console().print(
            f"[yellow]warning:[/yellow] {escape(auto_conf.message(hidden))}",
            highlight=False,
            soft_wrap=True,
        )


@app.command("show")
def show(
    name: str = typer.Argument(..., help="Environment name."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Version, status, port, paths and settings layers of an environment."""
    from pgrig.provision import cluster

    if (remote := _remote(name)) is not None:
        from pgrig.provision.remote import environments as remote_env

        if as_json:
            print_json(remote_env.show_json(remote))
            return
        out_console().print(
            f"{name}: on host {remote.on}, server at {remote.host}:{remote.port}", highlight=False
        )
        for r in remote.replicas:  # where each is (db1's table below: state and lag)
            there = f" ({r['env']} there)" if r.get("env") else ""
            out_console().print(
                f"  replica {r['name']} on host {r.get('on')} at {r.get('host')}:{r.get('port')}"
                f"{there}",
                highlight=False,
            )
        _forward_if_remote(name, ["env", "show", name])
    environment = recovered_env(name)
    d = cluster.describe(environment)
    if as_json:
        from pgrig.workloads import datasets

        # what each database holds: a control machine reads a remote environment's here
        d["datasets"] = datasets.load_all(environment)
        print_json(d)
        return
    from rich.table import Table

    con = out_console()
    con.print(f"[bold]{d['name']}[/bold] ({d['kind']}) PostgreSQL {d['version']}: {d['status']}")
    con.print(f"  {'target':<11}{d['target']}", highlight=False)
    if d["kind"] == "managed":
        con.print(f"  profile  {d['profile']}   os user {d.get('os_user')}", highlight=False)
        for k, v in d["paths"].items():
            con.print(f"  {k:<11}{v}", highlight=False)
        for line in _disk_limit_lines(d["disk_limit"]):
            con.print(f"  {line}", highlight=False, markup=False)
        table = Table(
            title="settings (defaults < insights < topology < profile < environment < run)"
        )
        for col in ("name", "value", "layer", "PostgreSQL default"):
            table.add_column(col)
        for n, e in sorted(d["effective"].items()):
            default = d["layers"]["defaults"].get(n)
            table.add_row(n, e["value"], e["layer"], "" if default is None else str(default))
        con.print(table)
        for n, v in sorted((d.get("auto_conf") or {}).items()):  # read last: over every layer
            con.print(
                f"  postgresql.auto.conf (ALTER SYSTEM): {n} = {v!r} overrides the layers",
                highlight=False,
                markup=False,
            )
        if d.get("topology"):
            _print_topology(d)
        if d.get("standby_of"):
            src = d["standby_of"]
            con.print(
                f"  replica {src['application_name']} of {src['host']}:{src['port']} "
                f"(slot {src['slot']})",
                highlight=False,
            )
    else:
        con.print(f"  bindir   {d['paths']['bindir']}", highlight=False)


def _disk_limit_lines(doc: dict[str, Any]) -> list[str]:
    """`env show`: the limit, whether the kernel holds it now, and what it does not limit."""
    if not doc.get("limit"):
        return ["disk limit none"]
    state = {True: "in force", False: "NOT in force", None: ""}[doc.get("in_force")]
    lines = [f"disk limit {doc['text'].replace(',', ', ')}: {state}"]
    for dev in doc.get("devices", []):
        lines.append(f"  {dev['device']} ({dev['name']}, {' and '.join(dev['holds'])}): "
                     f"{doc.get('mechanism')} in {doc.get('cgroup')}")  # fmt: skip
    lines += [f"  problem: {p}" for p in doc.get("problems", [])]
    if doc.get("not_throttled"):
        lines.append(f"  not limited: {doc['not_throttled']}")
    return lines


def _print_topology(d: dict) -> None:
    from rich.table import Table

    def size(v: object) -> str:
        return "" if v is None else f"{int(str(v)):,} B"

    def ms(v: object) -> str:
        return "" if v is None else f"{float(str(v)):.1f} ms"

    table = Table(title=f"topology (sync: {d['sync']})")
    for col in ("member", "host", "port", "status", "streaming", "sync", "replay lag",
                "lag write/flush/replay", "slot"):  # fmt: skip
        table.add_column(col)
    for m in d["topology"]:
        if m["role"] == "primary":
            table.add_row(f"primary {m['name']}", m.get("host") or "here", str(m["port"]),
                          m["status"], "", "", "", "", "")  # fmt: skip
            continue
        r = m["replication"]
        lags = " / ".join(ms(r.get(k)) or "-" for k in ("write_lag_ms", "flush_lag_ms",
                                                         "replay_lag_ms"))  # fmt: skip
        slot = m["slot"] + ("" if m.get("slot_active", True) else " (inactive)")
        table.add_row(
            f"replica {m['name']}", m.get("host") or "here", str(m.get("port") or "-"),
            m["status"], str(r.get("state") or ""),
            str(r.get("sync_state") or ""), size(r.get("replay_lag_bytes")), lags, slot,
        )  # fmt: skip
    out_console().print(table)
    streaming = [m for m in d["topology"][1:] if m["replication"].get("state") == "streaming"]
    if d["sync"] != "off" and not streaming:
        out_console().print(
            f"[yellow]warning:[/yellow] sync {d['sync']} and no replica is streaming: commits on "
            f"the primary wait until one is (`pgrig env start {d['name']}`, or `--sync off`)",
            highlight=False,
        )


@app.command("list")
def list_(as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
    """All environments with kind, version, port, status and profile."""
    from pgrig.provision import cluster

    rows = cluster.list_rows()
    if as_json:
        print_json(rows)
        return
    if not rows:
        err_console().print("no environments: create one with `pgrig env create NAME --pg 15`")
        return
    from rich.table import Table

    table = Table()
    for col in ("name", "kind", "version", "port", "status", "profile", "disk limit"):
        table.add_column(col)
    for r in rows:
        from rich.markup import escape

        status = r["status"]
        if status.startswith("damaged"):  # listed, never hidden: `env show NAME` says more
            status = f"[red]{escape(status)}[/red]"
        table.add_row(
            r["name"], r["kind"] or "-", str(r["version"] or "-"), str(r["port"] or "-"),
            status, r["profile"] or "", r.get("disk_limit") or "",
        )  # fmt: skip
    out_console().print(table)


@app.command("psql", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def psql(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Environment name."),
    dbname: str | None = typer.Option(None, "-d", "--dbname", help="Database (default pgrig)."),
) -> None:
    """Open psql of the environment's version on it (extra args after -- go to psql)."""
    from pgrig.provision import cluster

    if (remote := _remote(name)) is not None:
        from pgrig.provision.remote import environments as remote_env

        argv = remote_env.psql_argv(remote, dbname, list(ctx.args))
        if sys.stdin.isatty():  # an interactive terminal through OpenSSH
            sys.stdout.flush()
            os.execvp("ssh", remote_env.terminal_command(remote, argv))
        raise SystemExit(remote_env.forward_rc(remote, argv, stdin=sys.stdin.buffer.read()))
    recovered_env(name)  # a killed run's settings and pinning undone first, never shown as its own
    env = cluster.get_environment(name)
    argv, environ = cluster.psql_invocation(env, dbname, list(ctx.args))
    sys.stdout.flush()
    os.execvpe(argv[0], argv, environ)


# --- `pgrig env pooler NAME add|remove|show|restart` (provision/pooler/) -------------------------

pooler_app = typer.Typer(no_args_is_help=True)
app.add_typer(pooler_app, name="pooler", help="A connection pooler (pgbouncer) in front of NAME.")


@pooler_app.callback()
def pooler_group(
    ctx: typer.Context, name: str = typer.Argument(..., help="Environment name.")
) -> None:
    """Add, remove, show, start, stop or restart the pooler of environment NAME (on another
    host: this machine drives it there, and keeps its passwords)."""
    ctx.obj = name


def _pooler_env(name: str, running: bool) -> Environment:
    """The environment of `env pooler NAME ...`: the record of one on a host, else the local one
    (running: its server started first)."""
    from pgrig.provision import cluster

    remote = _remote(name)
    if remote is not None:
        return remote
    return cluster.running_environment(name) if running else cluster.get_environment(name)


def _read_verifiers() -> tuple[str, str]:
    from pgrig.errors import PgrigError
    from pgrig.provision.pooler import auth

    lines = sys.stdin.read().splitlines()
    if len(lines) < 2:
        raise PgrigError("--verifiers-stdin: expected two SCRAM-SHA-256 verifiers on stdin")
    return auth.check_verifier(lines[0]), auth.check_verifier(lines[1])


@pooler_app.command("add")
def pooler_add(
    ctx: typer.Context,
    kind: str = typer.Argument("pgbouncer", help="Pooler: pgbouncer."),
    mode: str = typer.Option("transaction", "--mode", help="transaction | session | statement."),
    pool_size: int = typer.Option(20, "--pool-size", help="Server connections per database."),
    max_client_conn: int = typer.Option(2000, "--max-client-conn", help="Client connections."),
    processes: int = typer.Option(1, "--processes", help="Processes sharing the port."),
    port: int | None = typer.Option(None, "--port", help="TCP port (default: a free one)."),
    on: str | None = typer.Option(
        None,
        "--on",
        "--pooler-on",
        help="Run it on this host (`pgrig host add`), for an environment on a host; default: "
        "the server's host. It listens on that host's address.",
    ),
    listen: str | None = typer.Option(
        None, "--listen", help="Also listen on this address of this machine (with --on: set)."
    ),
    verifiers_stdin: bool = typer.Option(
        False,
        "--verifiers-stdin",
        help="Read the pool role's and the stats user's SCRAM verifiers from stdin (the "
        "control machine made the role and keeps the passwords; used by --on).",
    ),
    server: str | None = typer.Option(
        None,
        "--server",
        help="ADDRESS:PORT of a server on another host, for a pooler on a host of its own "
        "(used by --on).",
    ),
) -> None:
    """Start a pooler in front of the environment (scram-sha-256; 127.0.0.1, and the host's
    address for an environment on a host)."""
    import ipaddress
    from dataclasses import replace

    from pgrig.errors import PgrigError
    from pgrig.provision import pooler

    name = ctx.obj
    cfg = pooler.options(kind, mode, pool_size, max_client_conn, processes, port)
    if listen is not None:
        try:
            ipaddress.ip_address(listen)
        except ValueError:
            raise PgrigError(f"--listen {listen!r}: expected an IP address of this host") from None
        cfg = replace(cfg, listen=listen)
    verifiers = _read_verifiers() if verifiers_stdin else None
    if server is not None:
        if verifiers is None:
            raise PgrigError("--server ADDRESS:PORT goes with --verifiers-stdin")
        env = pooler.for_server(name, *pooler.parse_server(server))
    else:
        env = _pooler_env(name, running=True)
    where = f" on host {on or env.on}" if env.kind == "remote" else ""
    with err_console().status(f"starting {kind}{where}…"):
        try:
            env = pooler.add(env, cfg, verifiers, on=on)
        except BaseException:
            if server is not None and not env.pooler:  # the record made for it goes too
                from pgrig.provision import cluster

                with contextlib.suppress(Exception):
                    cluster.destroy_environment(name)
            raise
    placed = pooler.config_of(env)
    assert placed is not None
    err_console().print(
        f"[green]{kind} in front of {env.name}[/green]{where} on {placed.address}:{placed.port}"
        f": {placed.mode} mode, pool {placed.pool_size}, max_client_conn "
        f"{placed.max_client_conn}, {placed.processes} process(es)",
        highlight=False,
    )


@pooler_app.command("remove")
def pooler_remove(
    ctx: typer.Context,
    server: str | None = typer.Option(
        None,
        "--server",
        help="ADDRESS:PORT: only the record of a pooler on a host of its own for that server "
        "(used by the control machine; the record goes with it).",
    ),
) -> None:
    """Stop the pooler and delete its role, configuration and password files."""
    from pgrig.provision import cluster, pooler

    env = _pooler_env(ctx.obj, running=False)
    if server is not None:
        pooler.check_server_record(env, server)
    pooler.remove(env)
    if server is not None:  # the record held only the pooler
        cluster.destroy_environment(env.name)
    err_console().print(f"{ctx.obj}: pooler removed", highlight=False)


@pooler_app.command("restart")
def pooler_restart(ctx: typer.Context) -> None:
    """Restart the pooler (configuration and passwords regenerated)."""
    from pgrig.provision import pooler

    env = pooler.restart(_pooler_env(ctx.obj, running=True))
    state = "running" if env.kind == "remote" else pooler.status(env)
    err_console().print(f"{env.name}: pooler restarted ({state})", highlight=False)


@pooler_app.command("start")
def pooler_start(ctx: typer.Context) -> None:
    """Start the pooler's processes that are down (the server must run)."""
    from pgrig.provision import pooler

    _switch_pooler(ctx.obj, pooler.start, "started", "already running")


@pooler_app.command("stop")
def pooler_stop(ctx: typer.Context) -> None:
    """Stop the pooler's processes (`env pooler NAME start` or `env start` starts them again)."""
    from pgrig.provision import pooler

    _switch_pooler(ctx.obj, pooler.stop, "stopped", "was not running")


def _switch_pooler(
    name: str, switch: Callable[[Environment], bool], done: str, already: str
) -> None:
    """`env pooler NAME start|stop`: `switch` says whether it changed anything."""
    env = _pooler_env(name, running=False)
    said = done if switch(env) else already
    err_console().print(f"{env.name}: pooler {said}", highlight=False)


@pooler_app.command("show")
def pooler_show(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Kind, status, port, settings and files of the pooler (never a password)."""
    from pgrig.provision import pooler

    d = pooler.describe(_pooler_env(ctx.obj, running=False))
    if as_json:
        print_json(d)
        return
    con = out_console()
    if d["pooler"] is None:
        con.print(f"{ctx.obj}: no pooler (add one with `pgrig env pooler {ctx.obj} add`)")
        return
    c = d["config"]
    con.print(
        f"[bold]{d['env']}[/bold] {d['pooler']} {d.get('version') or ''}: {d['status']}",
        highlight=False,
    )
    con.print(f"  {'target':<16}{d['target']}", highlight=False)
    if d.get("on"):
        con.print(f"  {'on host':<16}{d['on']}", highlight=False)
    for key in ("mode", "pool_size", "max_client_conn", "processes", "nofile", "stats_user"):
        con.print(f"  {key:<16}{c[key]}", highlight=False)
    con.print(f"  {'pids':<16}{' '.join(map(str, d['pids'])) or '-'}", highlight=False)
    for key, value in d["paths"].items():
        shown = ", ".join(value) if isinstance(value, list) else value
        con.print(f"  {key:<16}{shown}", highlight=False)
