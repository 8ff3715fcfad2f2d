"""`pgrig env`: environments (servers pgrig manages, or external ones it only points at)."""

from __future__ import annotations

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
from pgrig.format import pgrig_command

if TYPE_CHECKING:
    from pgrig.provision.state.environment import Environment

app = typer.Typer(no_args_is_help=True)

FORCE = typer.Option(False, "--force", help="Even while a run is in progress on it.")
DISK_LIMIT_HELP = (
    "Block I/O caps of the server: riops=N,wiops=N,rbps=SIZE,wbps=SIZE (any of them; SIZE in "
    "bytes or with B/kB/MB/GB, 1024-based, per second), or none; put in force by the kernel's "
    "throttle (cgroup v2 io.max or v1 blkio) on the disks of the data directory and WAL."
)


def _say(msg: str) -> None:
    err_console().print(f"[dim]·[/dim] {msg}", highlight=False)


def _on_host(name: str) -> Environment | None:
    """The record of NAME when it is an environment on another host (provision/remote/)."""
    from pgrig.provision.operations import lifecycle

    return lifecycle.on_host(name)


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
    from pgrig.provision.operations import create as creating
    from pgrig.request import disk_limit as disk_limits
    from pgrig.request.environment import EnvironmentRequest
    from pgrig.request.problems import from_flags

    request = from_flags(
        EnvironmentRequest, name=name, pg=pg, profile=profile, settings=sets, port=port,
        pooler=with_pooler, pooler_on=pooler_on, insights=insights, replicas=replica_count,
        sync=sync, on=on, listen=listen, replica_on=replica_on, standby_of=standby_of, slot=slot,
        application_name=application_name, disk_limit=disk_limit,
    )  # fmt: skip
    plan = creating.check(request, password_stdin=password_stdin)
    if plan.on_host:
        from pgrig.provision.remote import environments as remote_env

        made = creating.on_host(plan, say=_say)
        for line in remote_env.created_lines(made):
            err_console().print(line, highlight=False)
        return
    secret = sys.stdin.readline().strip() if password_stdin else None
    t0 = time.monotonic()
    with err_console().status("creating environment…"):
        env = creating.here(plan, secret, say=_say)
    members = "".join(f", replica {r['name']} on {r['port']}" for r in env.replicas)
    if plan.disk_limit is not None:
        from pgrig.provision.server import disk_throttle

        where = disk_throttle.where(env)
        _say(f"disk limit {disk_limits.describe(plan.disk_limit)} in force ({where})")
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
    from pgrig.provision import external

    env = external.add_external(name, dsn)
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
    from pgrig.provision.operations import lifecycle
    from pgrig.provision.state.environment import check_name

    check_name(name)
    confirm(f"Destroy environment {name} and all its data?", yes)
    plain = lambda msg: err_console().print(msg, highlight=False)  # noqa: E731
    done = lifecycle.destroy(name, force, say=_say if _on_host(name) is not None else plain)
    err_console().print(done, highlight=False)


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
    from pgrig.provision.operations import lifecycle
    from pgrig.provision.server import standby
    from pgrig.provision.state.environment import check_name

    check_name(name)
    if check:
        looked = lifecycle.repair_check(name)
        if as_json:
            print_json(looked.doc)
        else:
            for line in looked.lines:
                err_console().print(line, highlight=False, soft_wrap=True)
        return
    here = _on_host(name) is None
    source = None
    if standby_of is not None and here:  # the control machine's: where the primary is now
        source = standby.parse(standby_of, slot, application_name)
    password = sys.stdin.readline().strip() if password_stdin and here else None
    done = lifecycle.repair(
        name, force=force, say=_say, source=source, password=password, reclone=reclone
    )
    if as_json:
        print_json(done.doc)
        return
    for line in done.lines:
        err_console().print(line, highlight=False, soft_wrap=True)


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
    from pgrig.provision.server import replication_access

    replication_access.check_action(action, address)
    with exclusive_env(
        name, f"env replication {action}", force, f"replica {replica}: {action}"
    ) as env:
        verifier = sys.stdin.readline().strip() if action in ("allow", "renew") else ""
        doc = replication_access.apply(env, action, replica, address, verifier)
    if as_json:
        print_json(doc)
    else:
        done = {"allow": "allowed", "renew": "renewed"}.get(action, "forgotten")
        err_console().print(f"{name}: replica {replica} {done}", highlight=False)


@app.command("start")
def start(name: str = typer.Argument(..., help="Environment name.")) -> None:
    """Start the server of an environment (waits until it accepts connections)."""
    from pgrig.provision import cluster
    from pgrig.provision.operations import lifecycle

    if (remote := _on_host(name)) is not None:
        raise SystemExit(lifecycle.forward_start(remote, say=_say))
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
    from pgrig.provision.operations import lifecycle

    if (remote := _on_host(name)) is not None:
        raise SystemExit(lifecycle.forward_stop(remote, force, say=_say))
    with exclusive_env(name, "env stop", force, "server stopped"):
        _, stopped = cluster.stop_environment(name)
    err_console().print(f"{name}: {'stopped' if stopped else 'was not running'}")


@app.command("restart")
def restart(name: str = typer.Argument(..., help="Environment name."), force: bool = FORCE) -> None:
    """Restart the server of an environment."""
    from pgrig.provision import cluster
    from pgrig.provision.operations import lifecycle

    if (remote := _on_host(name)) is not None:
        raise SystemExit(lifecycle.forward_restart(remote, force, say=_say))
    with exclusive_env(name, "env restart", force, "server restarted") as env:
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
    from pgrig.provision.operations import change as changing

    asked = changing.Change(list(assignments or []), list(reset), insights, sync)
    changing.check(asked, disk_limit)
    if disk_limit is not None:
        _set_disk_limit(name, disk_limit, force, as_json)
        return
    if (remote := _on_host(name)) is not None:
        raise SystemExit(changing.forward(remote, asked, as_json=as_json, force=force, say=_say))
    with exclusive_env(name, "env set", force, asked.in_words()) as env:
        applied = changing.apply(env, asked)
    action, changed = applied.action, applied.changed
    how = {
        "restart": "server restarted",
        "reload": "configuration reloaded",
        "none": "server is stopped: takes effect at the next start",
    }[action]
    if as_json:
        done = action if changed else "unchanged"
        print_json(changing.document(name, applied.before, changed, done))
    if not changed:
        err_console().print(f"{name}: nothing changed")
        return
    err_console().print(f"{name}: {', '.join(changed)} changed; {how}", highlight=False)
    if (hidden := changing.hidden_by_auto_conf(name, changed)) is not None:
        from rich.markup import escape

        err_console().print(
            f"[yellow]warning:[/yellow] {escape(hidden)}", highlight=False, soft_wrap=True
        )


def _set_disk_limit(name: str, spec: str, force: bool, as_json: bool) -> None:
    """`env set NAME --disk-limit ...`: in force at once on a running server."""
    from pgrig.provision.operations import change as changing
    from pgrig.record.documents import DISK_LIMIT_CHANGE

    limit = changing.parse_disk_limit(name, spec)
    with exclusive_env(name, "env set", force, f"{DISK_LIMIT_CHANGE} {spec}") as env:
        done = changing.set_disk_limit(env, limit)
    if as_json:
        print_json(done.as_dict())
    if not done.changed:
        err_console().print(f"{name}: nothing changed (disk limit {done.after})", highlight=False)
        return
    if done.removed:
        how = "removed" if done.running else "removed (server stopped)"
        err_console().print(f"{name}: disk limit {done.before} {how}", highlight=False)
        return
    when = "in force" if done.running else "server is stopped: in force at the next start"
    err_console().print(
        f"{name}: disk limit {done.before} -> {done.after}; {when} ({done.where})",
        highlight=False,
    )


@app.command("show")
def show(
    name: str = typer.Argument(..., help="Environment name."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Version, status, port, paths and settings layers of an environment."""
    from pgrig.provision import env_status

    if (remote := _on_host(name)) is not None:
        from pgrig.provision.operations import lifecycle
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
        raise SystemExit(lifecycle.forward_show(remote, say=_say))
    environment = recovered_env(name)
    d = env_status.describe(environment)
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
        for line in _disk_limit_lines(d["disk_limit"], stopped=d["status"] == "stopped"):
            con.print(f"  {line}", highlight=False, markup=False)
        from pgrig.record.run import settings_layer_order

        table = Table(title=f"settings ({settings_layer_order('defaults')})")
        for col in ("name", "value", "layer", "PostgreSQL default"):
            table.add_column(col)
        for n, e in sorted(d["effective"].items()):
            default = d["layers"]["defaults"].get(n)
            table.add_row(n, e["value"], e["layer"], "" if default is None else str(default))
        con.print(table)
        if d.get("borrowed_by_study"):  # a killed tune's trial is not the environment's own
            con.print(f"  warning: {d['borrowed_by_study']['text']}", highlight=False, markup=False)
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


def _disk_limit_lines(doc: dict[str, Any], stopped: bool = False) -> list[str]:
    """`env show`: the limit, whether the kernel holds it now, and what it does not limit. A
    stopped server's limit is put in force by its next start: said as `env set` says it, not
    as a fault (env_status.disk_limit_fault; a damaged record still is one)."""
    if not doc.get("limit") and doc.get("in_force") is not False:
        return ["disk limit none"]
    state = {True: "in force", False: "NOT in force", None: ""}[doc.get("in_force")]
    problems = doc.get("problems", [])
    if stopped and doc.get("limit") and not doc.get("damaged"):
        state, problems = "server is stopped: in force at the next start", []
    lines = [f"disk limit {doc['text'].replace(',', ', ')}: {state}"]
    for dev in doc.get("devices", []):
        lines.append(f"  {dev['device']} ({dev['name']}, {' and '.join(dev['holds'])}): "
                     f"{doc.get('mechanism')} in {doc.get('cgroup')}")  # fmt: skip
    lines += [f"  problem: {p}" for p in problems]
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
    from rich.markup import escape

    for warning in d.get("warnings", []):
        out_console().print(f"[yellow]warning:[/yellow] {escape(warning)}", highlight=False)


@app.command("list")
def list_(as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
    """All environments with kind, version, port, status and profile."""
    from pgrig.provision import env_status

    rows = env_status.list_rows()
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
    from pgrig.provision import cluster, env_status

    if (remote := _on_host(name)) is not None:
        from pgrig.provision.remote import environments as remote_env

        argv = remote_env.psql_argv(remote, dbname, list(ctx.args))
        if sys.stdin.isatty():  # an interactive terminal through OpenSSH
            sys.stdout.flush()
            os.execvp("ssh", remote_env.terminal_command(remote, argv))
        raise SystemExit(remote_env.forward_rc(remote, argv, stdin=sys.stdin.buffer.read()))
    recovered_env(name)  # a killed run's settings and pinning undone first, never shown as its own
    env = cluster.get_environment(name)
    argv, environ = env_status.psql_invocation(env, dbname, list(ctx.args))
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
    from pgrig.provision.operations import pooler as pooling

    return pooling.environment(name, running)


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
    from pgrig.provision import pooler
    from pgrig.provision.operations import pooler as pooling
    from pgrig.provision.pooler import auth

    name = ctx.obj
    cfg = pooling.listening_on(
        pooler.options(kind, mode, pool_size, max_client_conn, processes, port), listen
    )
    verifiers = auth.parse_verifiers(sys.stdin.read()) if verifiers_stdin else None
    env = pooling.target(name, verifiers, server)
    where = f" on host {on or env.on}" if env.kind == "remote" else ""
    with err_console().status(f"starting {kind}{where}…"):
        env = pooling.add(env, cfg, verifiers, on, own_record=server is not None)
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
    from pgrig.provision.operations import pooler as pooling

    pooling.remove(ctx.obj, server)
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
        con.print(
            f"{ctx.obj}: no pooler (add one with "
            f"`{pgrig_command('env', 'pooler', ctx.obj, 'add')}`)"
        )
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
