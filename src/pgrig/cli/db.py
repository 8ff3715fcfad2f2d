"""`pgrig db generate | check`: data for the benchmarks, generated inside the server."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pgrig import format as fmt
from pgrig.cli import common
from pgrig.errors import PgrigError

if TYPE_CHECKING:
    from pgrig.provision.state.environment import Environment
    from pgrig.record.documents import DatasetDoc
    from pgrig.request import DatasetRequest

app = typer.Typer(no_args_is_help=True)


@app.command("generate")
def generate(
    env: Annotated[str, typer.Argument(help="Environment name.")],
    scenario: Annotated[
        str | None,
        typer.Option("--scenario", help="pgbench | tpcc | chbench | tickets | sysbench | tpch"),
    ] = None,
    scale: Annotated[int | None, typer.Option("--scale", "-s", help="pgbench scale.")] = None,
    scale_factor: Annotated[
        float | None,
        typer.Option("--scale-factor", help="TPC-H scale factor (1: about 1 GB; 0.01 to 1000)."),
    ] = None,
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
        typer.Option(
            "--jobs",
            help="Parallel loader connections (TPC-C, tickets, TPC-H: default 2; sysbench: 1).",
        ),
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
    script: Annotated[
        Path | None,
        typer.Option("--script", help="sysbench: a Lua script whose own prepare makes the data."),
    ] = None,
    define: Annotated[
        list[str] | None,
        typer.Option("--define", "-D", help="sysbench --script: the script's option NAME=VALUE."),
    ] = None,
    db: Annotated[str | None, typer.Option("--db", help="Database (default: pgrig).")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Even while a run is in progress on ENV.")
    ] = False,
) -> None:
    """Generate a dataset: pgbench (--scale), TPC-C (--warehouses), TPC-H (--scale-factor),
    tickets (--rows), SQL, or
    sysbench (--tables, --table-size: sysbench's own prepare; or --script PATH.lua with its
    options as --define NAME=VALUE: the script's own prepare)."""
    from pgrig.cli.run import parse_pairs
    from pgrig.provision import cluster
    from pgrig.request import DatasetRequest, from_flags

    request = from_flags(
        DatasetRequest,
        scenario=scenario or ("custom" if sql is not None else "pgbench"),
        database=db,
        scale=scale,
        scale_factor=scale_factor,
        partitions=partitions,
        warehouses=warehouses,
        partition=partition,
        rows=rows,
        jobs=jobs,
        sql=str(sql) if sql is not None else None,
        tables=tables,
        table_size=table_size,
        script=str(script) if script is not None else None,
        defines=parse_pairs(define, "--define"),
    )
    from pgrig.provision.remote import environments as remote_env

    if (remote := remote_env.record(env)) is not None:  # on another host: its pgrig loads
        from pgrig.request.fields import as_flags

        argv = ["db", "generate", env, *as_flags(request)]
        argv += [f for f, on in (("--json", as_json), ("--force", force)) if on]
        from pgrig.workloads import sysbench_lua

        beside = sysbench_lua.shipped_files(script) if script is not None else []
        argv = remote_env.db_argv_files(argv, remote, beside)
        raise SystemExit(remote_env.forward_rc(remote, argv))
    # Loading data under a run would change what it measures (and may drop its tables).
    with common.exclusive_env(env, "db generate", force, "data generated") as environment:
        environment.check_intact()
        dbname = request.database or environment.default_database
        if environment.managed:
            cluster.ensure_running(environment)
        # interrupted: datasets.GenerateInterrupted says what was left (cli/app.py prints it)
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
) -> DatasetDoc:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from pgrig.provision.server import disk_throttle
    from pgrig.request import disk_limit
    from pgrig.workloads import datasets

    limit = disk_throttle.limit_of_or_none(environment)
    if limit is not None:  # else the bar sits at 99% for as long as the writes wait, unsaid
        common.err_console().print(
            f"· generating under the disk limit {disk_limit.describe(limit)}: its writes wait "
            f"for it (`{fmt.pgrig_command('env', 'set', env, '--disk-limit', 'none')}` lifts it)",
            highlight=False,
            soft_wrap=True,
        )
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
    scenario: Annotated[
        str | None,
        typer.Option(
            "--scenario", help="tpcc | sysbench | tpch (default: the database's dataset)."
        ),
    ] = None,
    db: Annotated[str | None, typer.Option("--db")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Check a dataset's consistency: TPC-C conditions 1-10 and 12 (11 before any delivery),
    the `check` command of the sysbench script that prepared the data, or TPC-H's 22 answers
    against DuckDB's on the same generated data. CH-benCHmark's data is TPC-C's with three
    tables beside it: TPC-C's conditions check it."""
    from pgrig.provision import cluster

    if scenario not in (None, "tpcc", "sysbench", "tpch"):
        raise PgrigError(f"no consistency check for scenario {scenario!r} (tpcc, sysbench, tpch)")
    from pgrig.provision.remote import environments as remote_env

    if (remote := remote_env.record(env)) is not None:
        argv = ["db", "check", env] + (["--scenario", scenario] if scenario else [])
        argv += ["--db", db] if db else []
        raise SystemExit(remote_env.forward_rc(remote, argv + (["--json"] if as_json else [])))
    environment = common.recovered_env(env)
    environment.check_intact()
    dbname = db or environment.default_database
    from pgrig.workloads import datasets

    dataset = datasets.usable(environment, dbname)
    found = dataset.get("scenario") if dataset else None
    if scenario is None and found not in (None, "tpcc", "chbench", "sysbench", "tpch"):
        raise PgrigError(
            f"no consistency check for the {found} dataset of {env}/{dbname} (checks: tpcc, "
            "tpch, and sysbench scripts that declare a check command)"
        )
    if environment.managed:
        cluster.ensure_running(environment)
    if (scenario or found) == "sysbench":
        _check_sysbench(environment, dbname, dataset, as_json)
    elif (scenario or found) == "tpch":
        _check_tpch(environment, dbname, dataset, as_json)
    else:
        _check_tpcc(environment, dbname, as_json)


def _check_tpcc(environment: Environment, dbname: str, as_json: bool) -> None:
    from pgrig.workloads import tpcc

    results = tpcc.check(environment.conninfo(dbname))
    if as_json:
        common.print_json([r.__dict__ for r in results])
    else:
        common.out_console().print(tpcc.format_check(results), highlight=False, soft_wrap=True)
    if any(r.passed is False for r in results):
        sys.exit(1)


def _check_tpch(
    environment: Environment, dbname: str, dataset: DatasetDoc | None, as_json: bool
) -> None:
    from dataclasses import asdict

    from pgrig.workloads.tpch import answers

    if not dataset or dataset.get("scenario") != "tpch":
        cmd = fmt.pgrig_command(
            "db", "generate", environment.name, "--db", dbname, "--scenario", "tpch",
            rest="--scale-factor SF",
        )  # fmt: skip
        raise PgrigError(
            f"{environment.name}/{dbname} holds no TPC-H dataset pgrig generated (its scale "
            f"factor is what the check regenerates): {cmd}"
        )
    result = answers.check(environment.conninfo(dbname), float(dataset["scale_factor"]))
    if as_json:
        common.print_json({**asdict(result), "passed": result.passed})
    else:
        common.out_console().print(
            answers.format_check(result), highlight=False, markup=False, soft_wrap=True
        )
    if not result.passed:
        sys.exit(1)


def _check_sysbench(
    environment: Environment, dbname: str, dataset: DatasetDoc | None, as_json: bool
) -> None:
    from pgrig.workloads import sysbench_dataset

    result = sysbench_dataset.check(environment, dbname, dataset)
    if as_json:
        common.print_json(result.__dict__)
    else:
        out = common.out_console()
        for line in result.output:
            out.print(line, highlight=False, markup=False, soft_wrap=True)
        verdict = "passed" if result.passed else "FAILED"
        out.print(
            f"{result.script} check {verdict} on {environment.name}/{dbname} "
            f"({result.seconds:.1f}s)",
            highlight=False,
            markup=False,
        )
    if not result.passed:
        sys.exit(1)
