"""`pgrig run ENV --workload ...`: one measured, archived pgbench run (or several with --repeat)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from pgrig.cli import common
from pgrig.errors import PgrigError

if TYPE_CHECKING:
    from pgrig.archive.records import RunRecord


def parse_pairs(items: list[str] | None, flag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise PgrigError(f"{flag} expects key=value (got {item!r})")
        out[key.strip()] = value.strip()
    return out


def register(app: typer.Typer) -> None:
    @app.command("run")
    def run(
        env: Annotated[str, typer.Argument(help="Environment name.")],
        workload: Annotated[
            list[str],
            typer.Option(
                "--workload",
                "-w",
                help="pgbench:tpcb|pgbench:simple-update|pgbench:select-only|tpcc"
                "|tickets:read|tickets:write|file.sql[@weight]; repeatable.",
            ),
        ],
        clients: Annotated[int, typer.Option("--clients", "-c")] = 1,
        threads: Annotated[int, typer.Option("--threads", "-j")] = 1,
        duration: Annotated[
            float | None, typer.Option("--duration", "-T", help="Measured seconds.")
        ] = None,
        transactions: Annotated[
            int | None, typer.Option("--transactions", "-t", help="Per client.")
        ] = None,
        warmup: Annotated[
            float, typer.Option("--warmup", help="Seconds excluded from every number.")
        ] = 0.0,
        rate: Annotated[
            float | None, typer.Option("--rate", "-R", help="Target TPS (Poisson).")
        ] = None,
        latency_limit: Annotated[
            float | None, typer.Option("--latency-limit", "-L", help="ms")
        ] = None,
        protocol: Annotated[str, typer.Option("--protocol", "-M")] = "simple",
        max_tries: Annotated[
            int, typer.Option("--max-tries", help="Retry serialization/deadlock failures.")
        ] = 1,
        define: Annotated[
            list[str] | None, typer.Option("--define", "-D", help="var=value for scripts.")
        ] = None,
        set_: Annotated[
            list[str] | None, typer.Option("--set", help="Per-run setting k=v.")
        ] = None,
        profile: Annotated[
            str | None, typer.Option("--profile", help="Apply a profile for this run only.")
        ] = None,
        repeat: Annotated[int, typer.Option("--repeat", help="Repeat the run K times.")] = 1,
        note: Annotated[str | None, typer.Option("--note")] = None,
        tag: Annotated[list[str] | None, typer.Option("--tag", help="k=v, repeatable.")] = None,
        db: Annotated[str | None, typer.Option("--db", help="Database (default: pgrig).")] = None,
        mix: Annotated[
            str | None, typer.Option("--mix", help="TPC-C weights, e.g. 45,43,4,4,4.")
        ] = None,
        all_warehouses: Annotated[
            bool, typer.Option("--all-warehouses", help="TPC-C: any warehouse per transaction.")
        ] = False,
        stock_level: Annotated[
            str,
            typer.Option(
                "--stock-level",
                help="TPC-C Stock-Level form: standard, or hammerdb (HammerDB's single query, "
                "whose range the planner misestimates).",
            ),
        ] = "standard",
        via: Annotated[
            str, typer.Option("--via", help="direct | pooler (the environment's pgbouncer).")
        ] = "direct",
        connect: Annotated[
            str, typer.Option("--connect", help="tcp | socket (how pgbench connects).")
        ] = "tcp",
        server_cpus: Annotated[
            str | None,
            typer.Option(
                "--server-cpus", help="Pin the server (and pgbouncer): CPUs 0-1, or 2cores."
            ),
        ] = None,
        client_cpus: Annotated[
            str | None,
            typer.Option("--client-cpus", help="Pin pgbench (taskset): CPUs 2-3, or 2cores."),
        ] = None,
        keep_txlog: Annotated[
            bool,
            typer.Option(
                "--keep-txlog", help="Keep pgbench's per-transaction log (gzip) with the run."
            ),
        ] = False,
        archive: Annotated[
            str | None, typer.Option("--archive", envvar="PGRIG_ARCHIVE", help="Archive URL.")
        ] = None,
        as_json: Annotated[
            bool, typer.Option("--json", help="Machine-readable results on stdout.")
        ] = False,
    ) -> None:
        """Run pgbench against ENV, sample the host and the server, and archive the result."""
        from pgrig.archive.export import run_to_json
        from pgrig.load.runner import RunInterrupted, execute
        from pgrig.request import RunRequest, from_flags
        from pgrig.workloads import specs

        if repeat < 1:
            raise PgrigError(f"--repeat must be >= 1 (got {repeat})")
        request = from_flags(
            RunRequest,
            env_name=env,
            workload=specs.workload_label(workload),
            database=db,
            clients=clients,
            threads=threads,
            duration_s=duration,
            transactions_per_client=transactions,
            warmup_s=warmup,
            rate=rate,
            latency_limit_ms=latency_limit,
            protocol=protocol,
            max_tries=max_tries,
            defines=parse_pairs(define, "--define"),
            settings=parse_pairs(set_, "--set"),
            profile=profile,
            note=note,
            tags=parse_pairs(tag, "--tag"),
            tpcc_mix=mix,
            all_warehouses=all_warehouses,
            tpcc_stock_level=stock_level,
            via=via,
            connect=connect,
            server_cpus=server_cpus,
            client_cpus=client_cpus,
            keep_txlog=keep_txlog,
        )
        store = common.open_archive(archive)
        console = common.err_console()
        records = []
        for k in range(repeat):
            try:
                rec = execute(
                    request.model_copy(update={"repeat": k}),
                    archive=store,
                    console=console,
                    live=console.is_terminal,
                )
            except RunInterrupted as stop:
                records.append(stop.record)
                if as_json:
                    common.print_json([run_to_json(r) for r in records])
                else:  # earlier repeats were printed as they finished
                    _print_human(stop.record)
                sys.exit(130)
            records.append(rec)
            if not as_json:
                _print_human(rec)
        if as_json:
            common.print_json(
                run_to_json(records[0]) if len(records) == 1 else [run_to_json(r) for r in records]
            )
        if any(r.status != "ok" for r in records):
            sys.exit(1)


def _print_human(rec: RunRecord) -> None:
    from rich.markup import escape

    console = common.err_console()
    colour = common.STATUS_STYLE.get(rec.status, "white")
    lat = rec.latency
    console.print(
        f"run [bold]{rec.id}[/bold] [{colour}]{rec.status}[/{colour}]"
        + (f": {rec.error}" if rec.error else ""),
        highlight=False,
    )
    if rec.tps is not None:
        line = f"  tps {rec.tps:,.1f} over {rec.measured_s:.1f}s  transactions {rec.transactions:,}"
        line += f"  failed {rec.failed or 0}"
        if rec.nopm is not None:
            line += f"  NOPM {rec.nopm:,.0f}  TPM {rec.tpm or 0:,.0f}"
        console.print(line, highlight=False)
    if lat.p50 is not None:
        console.print(
            f"  latency ms avg {lat.avg:.3f}  p50 {lat.p50:.3f}  p95 {lat.p95:.3f}  "
            f"p99 {lat.p99:.3f}  max {lat.max:.3f}",
            highlight=False,
        )
    for w in rec.warnings():
        message = escape(str(w.get("message")))
        console.print(f"  [yellow]warning:[/yellow] {message}", highlight=False)
