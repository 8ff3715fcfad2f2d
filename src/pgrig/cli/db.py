"""`pgrig db generate | check`: data for the benchmarks, generated inside the server."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pgrig import format as fmt
from pgrig.cli import common
from pgrig.errors import PgrigError

if TYPE_CHECKING:
    from pgrig.provision.state.environment import Environment
    from pgrig.request import DatasetRequest

app = typer.Typer(no_args_is_help=True)


@app.command("generate")
def generate(
    env: Annotated[str, typer.Argument(help="Environment name.")],
    scenario: Annotated[
        str | None, typer.Option("--scenario", help="pgbench | tpcc | tickets | sysbench")
    ] = None,
    scale: Annotated[int | None, typer.Option("--scale", "-s", help="pgbench scale.")] = None,
    partitions: Annotated[
        int | None, typer.Option("--partitions", help="pgbench_accounts partitions.")
    ] = None,
    warehouses: Annotated[
        int | None, typer.Option("--warehouses", "-W", help="TPC-C warehouses.")
    ] = None,
    rows: Annotated[
        int | None, typer.Option("--rows", help="tickets: rows in book.tickets (5,000,000).")
    ] = None,
    jobs: Annotated[
        int | None,
        typer.Option("--jobs", help="Parallel loader connections (TPC-C, tickets; default 2)."),
    ] = None,
    partition: Annotated[
        bool, typer.Option("--partition", help="TPC-C: partition by warehouse.")
    ] = False,
    sql: Annotated[
        Path | None, typer.Option("--sql", help="A custom schema/data SQL file.")
    ] = None,
    tables: Annotated[
        int | None, typer.Option("--tables", help="sysbench: tables sbtest1..N (1).")
    ] = None,
    table_size: Annotated[
        int | None, typer.Option("--table-size", help="sysbench: rows per table (10,000).")
    ] = None,
    db: Annotated[str | None, typer.Option("--db", help="Database (default: pgrig).")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Even while a run is in progress on ENV.")
    ] = False,
) -> None:
    """Generate a dataset: pgbench (--scale), TPC-C (--warehouses), tickets (--rows), SQL, or
    sysbench (--tables, --table-size: sysbench's own prepare)."""
    from pgrig.provision import cluster
    from pgrig.request import DatasetRequest, from_flags

    request = from_flags(
        DatasetRequest,
        scenario=scenario or ("custom" if sql is not None else "pgbench"),
        database=db,
        scale=scale,
        partitions=partitions,
        warehouses=warehouses,
        partition=partition,
        rows=rows,
        jobs=jobs,
        sql=str(sql) if sql is not None else None,
        tables=tables,
        table_size=table_size,
    )
    from pgrig.provision.remote import environments as remote_env

    if (remote := remote_env.record(env)) is not None:  # on another host: its pgrig loads
        argv = ["db", "generate", env, "--scenario", request.scenario]
        for flag, value in (("--scale", scale), ("--partitions", partitions),
                            ("--warehouses", warehouses), ("--rows", rows), ("--jobs", jobs),
                            ("--sql", sql), ("--db", db)):  # fmt: skip
            if value is not None:
                argv += [flag, str(value)]
        argv += [f for f, on in (("--partition", partition), ("--json", as_json),
                                 ("--force", force)) if on]  # fmt: skip
        raise SystemExit(remote_env.forward_rc(remote, remote_env.db_argv_files(argv, remote)))
    # Loading data under a run would change what it measures (and may drop its tables).
    with common.exclusive_env(env, "db generate", force) as environment:
        environment.check_intact()
        dbname = request.database or environment.default_database
        if environment.managed:
            cluster.ensure_running(environment)
        info = _generate(environment, request, env, dbname)
    if as_json:
        common.print_json({"env": env, "database": dbname, **info})
    else:
        found = info.get("size_bytes") or info.get("database_size_bytes")
        size = int(found) if isinstance(found, int | float) else 0
        common.err_console().print(
            f"{request.scenario} data in {env}/{dbname}: {fmt.size(size)} "
            f"in {info.get('seconds') or info.get('load_seconds') or 0:.1f}s",
            highlight=False,
        )


def _generate(
    environment: Environment, request: DatasetRequest, env: str, dbname: str
) -> dict[str, Any]:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from pgrig.workloads import datasets

    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
        console=common.err_console(),
        transient=True,
    )
    with progress:
        task = progress.add_task(f"{request.scenario} -> {env}/{dbname}", total=1.0)

        def report(done: float, total: float, phase: str) -> None:
            progress.update(
                task,
                completed=done / total if total else 0,
                description=f"{request.scenario}: {phase}",
            )

        return datasets.generate(environment, request, report)


@app.command("check")
def check(
    env: Annotated[str, typer.Argument(help="Environment name.")],
    scenario: Annotated[str, typer.Option("--scenario")] = "tpcc",
    db: Annotated[str | None, typer.Option("--db")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Check a dataset's consistency (TPC-C conditions 1-10 and 12; 11 before any delivery)."""
    from pgrig.provision import cluster

    if scenario != "tpcc":
        raise PgrigError(f"no consistency check for scenario {scenario!r} (only tpcc)")
    from pgrig.provision.remote import environments as remote_env
    from pgrig.workloads import tpcc

    if (remote := remote_env.record(env)) is not None:
        argv = ["db", "check", env, "--scenario", scenario] + (["--db", db] if db else [])
        raise SystemExit(remote_env.forward_rc(remote, argv + (["--json"] if as_json else [])))
    environment = common.recovered_env(env)
    environment.check_intact()
    if environment.managed:
        cluster.ensure_running(environment)
    results = tpcc.check(environment.conninfo(db or environment.default_database))
    if as_json:
        common.print_json([r.__dict__ for r in results])
    else:
        common.out_console().print(tpcc.format_check(results), highlight=False, soft_wrap=True)
    if any(r.passed is False for r in results):
        sys.exit(1)
