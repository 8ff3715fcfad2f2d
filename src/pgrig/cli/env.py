"""`pgrig env`: environments (servers pgrig manages, or external ones it only points at)."""

from __future__ import annotations

import os
import sys
import time

import typer

from pgrig.cli.common import (
    confirm,
    err_console,
    exclusive_env,
    out_console,
    print_json,
    recovered_env,
)

app = typer.Typer(no_args_is_help=True)

FORCE = typer.Option(False, "--force", help="Even while a run is in progress on it.")


def _say(msg: str) -> None:
    err_console().print(f"[dim]·[/dim] {msg}", highlight=False)


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
    insights: bool = typer.Option(
        True,
        "--insights/--no-insights",
        help="pgrig's insights layer (pg_stat_statements, auto_explain, logging); "
        "change it later with `pgrig env set NAME --insights/--no-insights`.",
    ),
) -> None:
    """Create and start a managed PostgreSQL server (everything validated first)."""
    from pgrig.provision import cluster, config, pooler

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
        )
        if pooler_cfg is not None:
            try:
                env = pooler.add(env, pooler_cfg)
            except BaseException:
                cluster.destroy_environment(name)
                raise
            _say(f"{pooler_cfg.kind} on 127.0.0.1:{(env.pooler or {}).get('port')}")
    err_console().print(
        f"[green]environment {env.name} is running[/green]: PostgreSQL {env.version} on "
        f"127.0.0.1:{env.port} ({time.monotonic() - t0:.1f} s)",
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
    from pgrig.provision import cluster, env_lock, environment

    environment.check_name(name)
    confirm(f"Destroy environment {name} and all its data?", yes)
    env_dir = environment.Environment(name=name).dir
    if env_dir.is_dir():  # a damaged environment can still be destroyed
        env_lock.refuse_if_busy(env_dir, name, "env destroy", force)
    env = cluster.destroy_environment(
        name, say=lambda msg: err_console().print(msg, highlight=False)
    )
    what = "forgot" if env is not None and not env.managed else "destroyed"
    err_console().print(f"{what} {name}", highlight=False)


@app.command("repair")
def repair(name: str = typer.Argument(..., help="Environment name."), force: bool = FORCE) -> None:
    """Rebuild a damaged environment: env.json from its data directory, or a removed data
    directory (empty: generate the data again)."""
    from pgrig.provision import env_lock
    from pgrig.provision import repair as repairing
    from pgrig.provision.environment import Environment, check_name

    check_name(name)
    env_dir = Environment(name=name).dir
    if env_dir.is_dir():
        env_lock.refuse_if_busy(env_dir, name, "env repair", force)
    done = repairing.repair(name, _say)
    for line in done or ["nothing to repair"]:
        err_console().print(f"{name}: {line}", highlight=False, soft_wrap=True)


@app.command("start")
def start(name: str = typer.Argument(..., help="Environment name.")) -> None:
    """Start the server of an environment (waits until it accepts connections)."""
    from pgrig.provision import cluster

    recovered_env(name).check_intact()
    env, started = cluster.start_environment(name)
    msg = "started" if started else "already running"
    err_console().print(f"{name}: {msg} on port {env.port}", highlight=False)


@app.command("stop")
def stop(name: str = typer.Argument(..., help="Environment name."), force: bool = FORCE) -> None:
    """Stop the server of an environment (fast shutdown)."""
    from pgrig.provision import cluster

    with exclusive_env(name, "env stop", force):
        _, stopped = cluster.stop_environment(name)
    err_console().print(f"{name}: {'stopped' if stopped else 'was not running'}")


@app.command("restart")
def restart(name: str = typer.Argument(..., help="Environment name."), force: bool = FORCE) -> None:
    """Restart the server of an environment."""
    from pgrig.provision import cluster

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
    force: bool = FORCE,
) -> None:
    """Change environment settings: validated, written, then reloaded or restarted."""
    from pgrig.errors import PgrigError
    from pgrig.provision import cluster, config

    if not assignments and not reset and insights is None:
        raise PgrigError(
            "nothing to change: give NAME=VALUE settings, --reset NAME or --insights/--no-insights"
        )
    if insights is not None and (assignments or reset):
        raise PgrigError("give --insights/--no-insights alone, not with settings to change")
    with exclusive_env(name, "env set", force) as env:
        env.check_intact()
        if insights is not None:
            from pgrig.insights import setup

            action, changed = setup.set_enabled(name, insights)
        else:
            action, changed = cluster.set_settings(
                name, config.parse_assignments(assignments or []), reset
            )
    if not changed:
        err_console().print(f"{name}: nothing changed")
        return
    how = {
        "restart": "server restarted",
        "reload": "configuration reloaded",
        "none": "server is stopped: takes effect at the next start",
    }[action]
    err_console().print(f"{name}: {', '.join(changed)} changed; {how}", highlight=False)


@app.command("show")
def show(
    name: str = typer.Argument(..., help="Environment name."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Version, status, port, paths and settings layers of an environment."""
    from pgrig.provision import cluster

    d = cluster.describe(recovered_env(name))
    if as_json:
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
        table = Table(title="settings (defaults < insights < profile < environment < run)")
        for col in ("name", "value", "layer", "PostgreSQL default"):
            table.add_column(col)
        for n, e in sorted(d["effective"].items()):
            default = d["layers"]["defaults"].get(n)
            table.add_row(n, e["value"], e["layer"], "" if default is None else str(default))
        con.print(table)
    else:
        con.print(f"  bindir   {d['paths']['bindir']}", highlight=False)


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
    for col in ("name", "kind", "version", "port", "status", "profile"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            r["name"], r["kind"], str(r["version"]), str(r["port"]), r["status"], r["profile"] or ""
        )
    out_console().print(table)


@app.command("psql", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def psql(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Environment name."),
    dbname: str | None = typer.Option(None, "-d", "--dbname", help="Database (default pgrig)."),
) -> None:
    """Open psql of the environment's version on it (extra args after -- go to psql)."""
    from pgrig.provision import cluster

    env = cluster.get_environment(name)
    argv, environ = cluster.psql_invocation(env, dbname, list(ctx.args))
    sys.stdout.flush()
    os.execvpe(argv[0], argv, environ)


# --- `pgrig env pooler NAME add|remove|show|restart` (provision/pooler.py) ------------------------

pooler_app = typer.Typer(no_args_is_help=True)
app.add_typer(pooler_app, name="pooler", help="A connection pooler (pgbouncer) in front of NAME.")


@pooler_app.callback()
def pooler_group(
    ctx: typer.Context, name: str = typer.Argument(..., help="Environment name.")
) -> None:
    """Add, remove, show or restart the pooler of environment NAME."""
    ctx.obj = name


@pooler_app.command("add")
def pooler_add(
    ctx: typer.Context,
    kind: str = typer.Argument("pgbouncer", help="Pooler: pgbouncer."),
    mode: str = typer.Option("transaction", "--mode", help="transaction | session | statement."),
    pool_size: int = typer.Option(20, "--pool-size", help="Server connections per database."),
    max_client_conn: int = typer.Option(2000, "--max-client-conn", help="Client connections."),
    processes: int = typer.Option(1, "--processes", help="Processes sharing the port."),
    port: int | None = typer.Option(None, "--port", help="TCP port (default: a free one)."),
) -> None:
    """Start a pooler in front of the environment (scram-sha-256, 127.0.0.1 only)."""
    from pgrig.provision import cluster, pooler

    cfg = pooler.options(kind, mode, pool_size, max_client_conn, processes, port)
    with err_console().status(f"starting {kind}…"):
        env = pooler.add(cluster.running_environment(ctx.obj), cfg)
    p = env.pooler or {}
    err_console().print(
        f"[green]{kind} in front of {env.name}[/green] on 127.0.0.1:{p.get('port')}: "
        f"{p.get('mode')} mode, pool {p.get('pool_size')}, max_client_conn "
        f"{p.get('max_client_conn')}, {p.get('processes')} process(es)",
        highlight=False,
    )


@pooler_app.command("remove")
def pooler_remove(ctx: typer.Context) -> None:
    """Stop the pooler and delete its role, configuration and password files."""
    from pgrig.provision import cluster, pooler

    pooler.remove(cluster.get_environment(ctx.obj))
    err_console().print(f"{ctx.obj}: pooler removed", highlight=False)


@pooler_app.command("restart")
def pooler_restart(ctx: typer.Context) -> None:
    """Restart the pooler (configuration and passwords regenerated)."""
    from pgrig.provision import cluster, pooler

    env = pooler.restart(cluster.running_environment(ctx.obj))
    err_console().print(f"{env.name}: pooler restarted ({pooler.status(env)})", highlight=False)


@pooler_app.command("show")
def pooler_show(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Kind, status, port, settings and files of the pooler (never a password)."""
    from pgrig.provision import cluster, pooler

    d = pooler.describe(cluster.get_environment(ctx.obj))
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
    for key in ("mode", "pool_size", "max_client_conn", "processes", "nofile", "stats_user"):
        con.print(f"  {key:<16}{c[key]}", highlight=False)
    con.print(f"  {'pids':<16}{' '.join(map(str, d['pids'])) or '-'}", highlight=False)
    for key, value in d["paths"].items():
        shown = ", ".join(value) if isinstance(value, list) else value
        con.print(f"  {key:<16}{shown}", highlight=False)
