"""`pgrig run ENV --workload ...`: one measured, archived pgbench run (or several with --repeat)."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pgrig.cli import common
from pgrig.cli.common import ArchiveOpt
from pgrig.errors import PgrigError

if TYPE_CHECKING:
    from pgrig.archive.protocol import RunReader
    from pgrig.archive.records import RunRecord
    from pgrig.load.backup.backup_run import BackupRequest
    from pgrig.request import RunRequest


def parse_pairs(items: list[str] | None, flag: str, *, setting: bool = False) -> dict[str, str]:
    """NAME=VALUE flags (--set, --define, --tag), read as every NAME=VALUE input is
    (request.values.name_values)."""
    from pgrig.request.values import name_values

    return name_values(items, flag, setting=setting)


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
                "|chbench|tpch|tpch:power|tpch:throughput"
                "|tickets:read|tickets:write|file.sql[@weight]; repeatable. Backup runs: "
                "backup:basebackup-full|basebackup-incremental|pgbackrest-full|pgbackrest-diff"
                "|pgbackrest-incr|restore.",
            ),
        ],
        clients: Annotated[int, typer.Option("--clients", "-c")] = 1,
        threads: Annotated[int, typer.Option("--threads", "-j")] = 1,
        duration: Annotated[
            str | None,
            typer.Option(
                "--duration",
                "-T",
                help="Measured time: seconds, or with a unit (us, ms, s, min, h, d): 30, 2min.",
            ),
        ] = None,
        query_timeout: Annotated[
            str | None,
            typer.Option(
                "--query-timeout",
                help="TPC-H and chbench's analytic queries: how long a query may run, in "
                "PostgreSQL's time units (500ms, 30s, 2min); a bare number is seconds. One that "
                "runs longer is cancelled and recorded as timed out.",
            ),
        ] = None,
        streams: Annotated[
            int | None,
            typer.Option(
                "--streams",
                help="tpch, tpch:throughput: query streams (default: the spec's minimum).",
            ),
        ] = None,
        analytic_clients: Annotated[
            int | None,
            typer.Option(
                "--analytic-clients",
                help="chbench: analytic streams cycling through the 22 CH queries beside the "
                "TPC-C clients (0: the TPC-C mix alone on the same data).",
            ),
        ] = None,
        tpch_seed: Annotated[
            int | None,
            typer.Option(
                "--tpch-seed", help="TPC-H: the substitution parameters' seed (default: new)."
            ),
        ] = None,
        transactions: Annotated[
            int | None, typer.Option("--transactions", "-t", help="Per client.")
        ] = None,
        warmup: Annotated[
            str,
            typer.Option(
                "--warmup", help="Time excluded from every number: seconds, or with a unit."
            ),
        ] = "0",
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
        note_file: Annotated[
            str | None,
            typer.Option(
                "--note-file",
                help="Read the note from this file (- for stdin): for notes longer than a "
                "command-line argument may be (128 KiB).",
            ),
        ] = None,
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
        txlog: Annotated[
            str,
            typer.Option(
                "--txlog",
                help="pgbench's per-transaction log: auto (full below 10,000 expected TPS, "
                "sampled above), full, sampled (--sampling-rate, ~3,000 lines/s) or off "
                "(no percentiles).",
            ),
        ] = "auto",
        emit: Annotated[
            tuple[str, str] | None,
            typer.Option(
                "--emit",
                help="k8s DIR: write the experiment as Kubernetes manifests (a CloudNativePG "
                "Cluster and pgbench Jobs) into DIR instead of running it.",
                metavar="k8s DIR",
            ),
        ] = None,
        load_from: Annotated[
            list[str] | None,
            typer.Option(
                "--load-from",
                help="Run pgbench on this load host (repeatable; clients, threads and --rate "
                "are split over them; localhost = this machine).",
            ),
        ] = None,
        prewarm: Annotated[
            bool,
            typer.Option(
                "--prewarm",
                help="Read the database into shared buffers (pg_prewarm) before the run's "
                "CHECKPOINT, so repeats after restarts start from the same cache.",
            ),
        ] = False,
        archive: ArchiveOpt = None,
        as_json: Annotated[
            bool, typer.Option("--json", help="Machine-readable results on stdout.")
        ] = False,
        waits_hz: Annotated[
            float | None,
            typer.Option(
                "--waits-hz",
                help="Sample wait events from pg_stat_activity this many times a second "
                "(1-50; default: 10 for windows up to a minute, fewer for longer ones).",
            ),
        ] = None,
        target_role: Annotated[
            str,
            typer.Option(
                "--target",
                help="primary | replica | split: where the load goes on an environment with "
                "replicas (replica/split: read-only load, clients spread over the servers).",
            ),
        ] = "primary",
        backup_dir: Annotated[
            str | None,
            typer.Option(
                "--backup-dir", help="Backup runs: where backups go (default: the env's dir)."
            ),
        ] = None,
        during: Annotated[
            str | None,
            typer.Option(
                "--during",
                help="Backup runs: a load workload (pgbench:tpcb) run during the backup with "
                "this command's load flags (-c, -j, -T, --warmup...), compared with the same "
                "load without a backup.",
            ),
        ] = None,
        baseline: Annotated[
            bool,
            typer.Option(
                "--baseline/--no-baseline",
                help="--during: run the same load without a backup first, for the verdict.",
            ),
        ] = True,
    ) -> None:
        """Run pgbench against ENV, sample the host and the server, and archive the result."""
        from pgrig.load.backup import backup_run
        from pgrig.request import RunRequest, from_flags
        from pgrig.request.load import check_repeat
        from pgrig.workloads import specs

        check_repeat(repeat)  # the flag combinations refused before anything else is read
        backup_run.check_flags(workload, during, backup_dir)
        note = _note(note, note_file)
        # the load flags a plain run and a backup's --during load share
        load_flags: dict[str, Any] = dict(
            env_name=env,
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
            note=note,
            tags=parse_pairs(tag, "--tag"),
            via=via,
            connect=connect,
            keep_txlog=keep_txlog,
        )
        if backup_run.is_backup(workload):
            if set_ or profile:
                raise PgrigError("--set/--profile do not apply to backup runs (use env set)")
            req = backup_run.BackupRequest(
                env_name=env,
                what=backup_run.parse(workload),
                backup_dir=backup_dir,
                database=db,
                note=note,
                tags=parse_pairs(tag, "--tag"),
            )
            _run_backups(req, during, load_flags, repeat, baseline, archive, as_json)
            return
        request = from_flags(
            RunRequest,
            workload=specs.workload_label(workload),
            **load_flags,
            settings=parse_pairs(set_, "--set", setting=True),
            profile=profile,
            tpcc_mix=mix,
            all_warehouses=all_warehouses,
            tpcc_stock_level=stock_level,
            server_cpus=server_cpus,
            client_cpus=client_cpus,
            txlog=txlog,
            load_from=load_from or [],
            prewarm=prewarm,
            target_role=target_role,
            waits_hz=waits_hz,
            query_timeout_s=query_timeout,
            streams=streams,
            tpch_seed=tpch_seed,
            analytic_clients=analytic_clients,
        )
        if emit is not None:
            _emit(emit, request)
            return
        records = _execute_repeats(request, repeat, archive, as_json)
        if any(r.status != "ok" for r in records):
            _say_why_not_ok(records)
            sys.exit(1)


def _say_why_not_ok(records: list[RunRecord]) -> None:
    """The last lines on stderr: why each run that is not ok ended so (with --json too, where
    stdout holds the record and stderr had nothing else to say it)."""
    from rich.markup import escape

    for rec in records:
        if rec.status == "ok":
            continue
        colour = common.STATUS_STYLE.get(rec.status, "white")
        why = escape(rec.error or "no reason recorded")
        common.err_console().print(
            f"run {rec.id} [{colour}]{rec.status}[/{colour}]: {why}",
            highlight=False,
            soft_wrap=True,
        )


def _note(note: str | None, note_file: str | None) -> str | None:
    """The run's note: --note, or the text of --note-file (one of them)."""
    if note_file is None:
        return note
    if note is not None:
        raise PgrigError("give --note or --note-file, not both")
    try:
        raw = common.read_upto(note_file, MAX_NOTE_BYTES)
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        why = getattr(e, "strerror", None) or e
        raise PgrigError(f"--note-file {note_file}: cannot read it: {why}") from None
    if len(raw) > MAX_NOTE_BYTES:  # /dev/zero, a log given by mistake: never read whole
        raise PgrigError(
            f"--note-file {note_file}: longer than {MAX_NOTE_BYTES // 2**20} MiB: a note is "
            "what a person reads about the run (a log belongs beside it, not in it)"
        )
    return text.rstrip("\n")


MAX_NOTE_BYTES = 2**20  # a note over 1 MiB is a file given by mistake (/dev/zero, a log)


def _run_backups(
    req: BackupRequest,
    during: str | None,
    load_flags: dict[str, Any],
    repeat: int,
    baseline: bool,
    archive: str | None,
    as_json: bool,
) -> None:
    """A backup run (`--workload backup:...`), with `--during`'s load built from the same
    load flags as a plain run's."""
    from pgrig.cli import backup as backup_cli
    from pgrig.request import RunRequest, from_flags
    from pgrig.workloads import specs

    load = None
    if during is not None:
        load = from_flags(RunRequest, workload=specs.workload_label([during]), **load_flags)
    backup_cli.run_backups(req, load, repeat, baseline, archive, as_json)


def _execute_repeats(
    request: RunRequest, repeat: int, archive: str | None, as_json: bool
) -> list[RunRecord]:
    """The run `repeat` times, each printed as it finishes (or all as one JSON document at
    the end); an interrupted repeat prints what was measured and exits 130."""
    from pgrig.load.core import repeats
    from pgrig.load.core.lifecycle import RunNotStored
    from pgrig.load.core.run_steps import RunInterrupted
    from pgrig.views.run_summary import to_json

    store = common.open_archive(archive)
    console = common.err_console()
    records: list[RunRecord] = []
    runs = repeats.each(request, repeat, store, console, live=console.is_terminal)
    while True:
        try:
            rec = next(runs, None)  # the next repeat, run and stored
        except RunNotStored as lost:  # nothing keeps it now: print what it measured
            if as_json:
                common.print_json(to_json(lost.record))
            else:
                _print_human(lost.record)
            common.set_json_errors(False)  # the record printed is the JSON answer
            raise
        except RunInterrupted as stop:
            records.append(stop.record)
            if as_json:  # the shape of an uninterrupted answer: one run, one object
                docs = [_stored_json(store, r) for r in records]
                common.print_json(docs[0] if repeat == 1 else docs)
                _say_why_not_ok(records)  # stderr says it last, as for a failed run
            else:  # earlier repeats were printed as they finished
                _print_human(stop.record)
            sys.exit(130)
        if rec is None:
            break
        records.append(rec)
        if not as_json:
            _print_human(rec)
    if as_json:  # the document of `runs show --json`, read back from the archive
        docs = [_stored_json(store, r) for r in records]
        common.print_json(docs[0] if repeat == 1 else docs)
    return records


def _stored_json(store: RunReader, rec: RunRecord) -> dict[str, object]:
    """`runs show --json` of the run: the archived record (what every later command reads),
    the record in hand when the archive did not keep it."""
    from pgrig.views.run_summary import to_json

    if rec.id is not None:
        with contextlib.suppress(PgrigError):
            stored = store.get_run(rec.id)
            # a run spooled because the archive was locked still reads "running" there: the
            # record in hand is the complete one until the next command imports it
            if stored.status == rec.status:
                rec = stored
    return to_json(rec)


def _emit(emit: tuple[str, str], request: object) -> None:
    from pgrig.load.emit import k8s_emit

    what, where = emit
    if what != "k8s":
        raise PgrigError(f"--emit {what}: only k8s is known (--emit k8s DIR)")
    for path in k8s_emit.emit(request, Path(where)):  # type: ignore[arg-type]
        print(path)


def _print_human(rec: RunRecord) -> None:
    from rich.markup import escape

    from pgrig.views import chbench, harness_cost, run_summary

    console = common.out_console()  # the result is data: stdout (progress stays on stderr)
    colour = common.STATUS_STYLE.get(rec.status, "white")
    lat = rec.latency
    console.print(
        f"run [bold]{rec.id}[/bold] [{colour}]{rec.status}[/{colour}]"
        + (f": {escape(rec.error)}" if rec.error else ""),
        highlight=False,
        soft_wrap=True,  # one line, also into a pipe or a file
    )
    if rec.tps is not None:
        line = f"  tps {rec.tps:,.1f} over {rec.measured_s:.1f}s  transactions {rec.transactions:,}"
        line += f"  failed {rec.failed or 0}"
        if rec.nopm is not None:
            line += f"  NOPM {rec.nopm:,.0f}  TPM {rec.tpm or 0:,.0f}"
        console.print(line, highlight=False)
    if (analytic := chbench.line(rec)) is not None:  # CH-benCHmark: as `runs show` says it
        console.print(f"  {escape(analytic)}", highlight=False, soft_wrap=True)
    if any(v is not None for v in lat.as_dict().values()):  # as `runs show` says it
        console.print(f"  latency ms {run_summary.latency_text(rec)}", highlight=False)
    console.print(f"  {escape(harness_cost.of(rec).line)}", highlight=False, soft_wrap=True)
    for w in rec.warnings():
        message = escape(str(w.get("message")))
        console.print(f"  [yellow]warning:[/yellow] {message}", highlight=False, soft_wrap=True)
