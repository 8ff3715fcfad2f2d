"""`pgrig tune ENV --workload ... --trials N` (or `--preset NAME`): search a faster configuration,
then prove it and say why (ablation); `pgrig tune show NAME` prints the recommendation."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from pgrig.cli import common
from pgrig.cli.common import ArchiveOpt
from pgrig.errors import PgrigError
from pgrig.format import pgrig_command

if TYPE_CHECKING:
    from rich.console import Console

    from pgrig.archive.protocol import RunStore
    from pgrig.archive.records import RunRecord
    from pgrig.record.documents import BestTrial, StudyExtra
    from pgrig.tune.objective import BesideRow
    from pgrig.tune.runner import TunePlan, TuneResult
    from pgrig.views.tune_attribution import Attribution


def register(app: typer.Typer) -> None:
    @app.command("tune")
    def tune(
        ctx: typer.Context,
        env: Annotated[
            str, typer.Argument(help="Environment name (managed), or `show` to print a study.")
        ],
        study_to_show: Annotated[
            str | None,
            typer.Argument(
                metavar="[NAME]",
                help="With `show`: the tuning study whose recommendation to print.",
            ),
        ] = None,
        preset: Annotated[
            str | None,
            typer.Option(
                "--preset",
                help="read-heavy | mixed-reporting | write-heavy-slow-disk | analytics | htap: "
                "workload, clients, data, space, trials and durations in one (each flag still "
                "overrides).",
            ),
        ] = None,
        workload: Annotated[
            list[str] | None,
            typer.Option("--workload", "-w", help="As for `pgrig run` (repeatable)."),
        ] = None,
        scale: Annotated[
            int | None,
            typer.Option(
                "--scale",
                help="pgbench data scale; generated first when the database has other data.",
            ),
        ] = None,
        scale_factor: Annotated[
            float | None,
            typer.Option(
                "--scale-factor",
                help="TPC-H data scale factor (tpch:power); generated first when the "
                "database has other data.",
            ),
        ] = None,
        warehouses: Annotated[
            int | None,
            typer.Option(
                "--warehouses",
                help="TPC-C or CH-benCHmark data warehouses (tpcc, chbench); generated first "
                "when the database has other data.",
            ),
        ] = None,
        trials: Annotated[int, typer.Option("--trials", help="Trials of the search.")] = 20,
        budget: Annotated[
            str | None,
            typer.Option(
                "--budget", help="Time budget of the search, e.g. 30m (confirmation comes on top)."
            ),
        ] = None,
        objective: Annotated[
            str,
            typer.Option(
                "--objective",
                help="tps | p95 | nopm (TPC-C, CH-benCHmark) | power (TPC-H's Power@Size).",
            ),
        ] = "tps",
        space: Annotated[
            str,
            typer.Option(
                "--space",
                help="default, read, mixed, write, analytics, htap (a space per workload "
                "class), "
                "or a TOML file of knobs and ranges.",
            ),
        ] = "default",
        allow_unsafe: Annotated[
            bool,
            typer.Option(
                "--allow-unsafe",
                help="Also search fsync, synchronous_commit and "
                "full_page_writes (throw-away data only).",
            ),
        ] = False,
        resume: Annotated[bool, typer.Option("--resume", help="Continue the study.")] = False,
        restore: Annotated[
            bool,
            typer.Option("--restore", help="Only put back ENV's own settings (after a kill)."),
        ] = False,
        duration: Annotated[
            str, typer.Option("--duration", help="Measured time per run (not TPC-H's: to its end).")
        ] = "20s",
        warmup: Annotated[str, typer.Option("--warmup", help="Warm-up per run.")] = "0",
        clients: Annotated[int, typer.Option("--clients", "-c")] = 1,
        threads: Annotated[int, typer.Option("--threads", "-j")] = 1,
        analytic_clients: Annotated[
            int | None,
            typer.Option(
                "--analytic-clients",
                help="CH-benCHmark's analytic streams beside --clients (chbench only).",
            ),
        ] = None,
        confirm_repeats: Annotated[
            int,
            typer.Option(
                "--confirm-repeats",
                help="Interleaved repeats per configuration, at most (4: the fewest for 95% "
                "bounds; from 5, the confirmation may stop early once decisive).",
            ),
        ] = 4,
        ablation_repeats: Annotated[
            int,
            typer.Option(
                "--ablation-repeats",
                help="Rounds of the ablation after the confirmation (0: none; 5: the fewest "
                "for paired bounds at the Holm-corrected levels of up to 6 comparisons).",
            ),
        ] = 5,
        ablation_units: Annotated[
            int,
            typer.Option(
                "--ablation-units",
                help="Most knobs or groups the ablation takes back one by one (the rest together).",
            ),
        ] = 6,
        name: Annotated[str | None, typer.Option("--name", help="Study name (tune-ENV).")] = None,
        db: Annotated[str | None, typer.Option("--db", help="Database (default: pgrig).")] = None,
        seed: Annotated[int, typer.Option("--seed", help="Seed of the sampler.")] = 0,
        fmt: Annotated[
            list[str] | None, typer.Option("--format", help="Report format: md, html.")
        ] = None,
        out: Annotated[Path | None, typer.Option("--out", help="Report directory.")] = None,
        archive: ArchiveOpt = None,
    ) -> None:
        """Search ENV's knob space with Optuna (TPE), each trial an archived run of a study,
        then confirm the best against ENV's own settings and pgtune-oltp (a preset's own
        reference: pgtune-dw for analytics, pgtune-mixed for htap); ENV's settings are
        put back at the end, after Ctrl-C and SIGTERM (after kill -9: `--restore`)."""
        from pgrig.archive.store import Archive
        from pgrig.reports import publish
        from pgrig.tune import runner

        console = common.err_console()
        if env == SHOW:
            if study_to_show is None:
                # `show` is this command's word, never an environment's: new environments
                # may not take the name (provision/state/environment.RESERVED_NAMES)
                raise PgrigError(
                    "pgrig tune show NAME: name the tuning study (tune-ENV); `show` is not an "
                    "environment here (environments may not be named show: recreate one that "
                    "is under another name to tune it)"
                )
            show_recommendation(Archive(archive), study_to_show)
            return
        if study_to_show is not None:
            raise PgrigError(
                f"unexpected argument {study_to_show!r}: `pgrig tune ENV [options]`, or "
                "`pgrig tune show NAME`"
            )
        if restore:
            who = runner.restore_now(env)
            console.print(
                f"{escape(env)}: "
                + (
                    f"its own settings are back (left by {escape(who)})"
                    if who
                    else "nothing to restore"
                ),
                highlight=False,
                soft_wrap=True,
            )
            return
        formats = publish.check_formats(fmt or ["md"])
        study_name = f"tune-{env}" if name is None else name
        from pgrig.tune import presets

        values = {
            "workload": workload, "scale": scale, "scale_factor": scale_factor,
            "warehouses": warehouses, "objective": objective, "trials": trials,
            "duration": duration, "warmup": warmup, "clients": clients, "threads": threads,
            "analytic_clients": analytic_clients,
            "confirm_repeats": confirm_repeats, "space": space,
            "ablation_repeats": ablation_repeats, "ablation_units": ablation_units,
        }  # fmt: skip
        # a flag left at its default does not override the preset's value
        given = {k: (v if _given(ctx, k) else None) for k, v in values.items()}
        opts = presets.resolve(preset, given, values)
        if given["duration"] is None and any(w.startswith("tpch:") for w in opts["workload"] or []):
            opts["duration"] = None  # a TPC-H run lasts as long as its queries
        from pgrig.request import from_flags
        from pgrig.request.tune import TuneRequest
        from pgrig.tune import request as tune_request

        asked = from_flags(
            TuneRequest,
            env_name=env,
            preset=preset,
            budget=budget,
            allow_unsafe=allow_unsafe,
            name=study_name,
            database=db,
            seed=seed,
            **{k: opts[k] for k in values},
        )
        req = tune_request.build(asked)
        print_space_notes(console, req.space.notes)
        store = Archive(archive)
        try:
            result = _with_progress(console, req, store, resume)
        except runner.TuneInterrupted as stop:
            where = _where_stopped(store, study_name, stop.result.trials_done)
            console.print(
                f"[yellow]tuning study {escape(study_name)} {escape(where)}[/yellow]; "
                f"{escape(env)} has its own settings back; continue with the same command "
                "and --resume",
                highlight=False,
                soft_wrap=True,
            )
            sys.exit(130)
        _summary(console, store, study_name)
        for p in publish.study_report(store, study_name, formats, out):
            console.print(f"report: {p}", highlight=False, soft_wrap=True)
            common.out_console().print(str(p), highlight=False, soft_wrap=True)
        if result.status != "done":
            console.print(f"[red]{result.status}[/red]: {escape(result.error or '')}")
            sys.exit(1)


SHOW = "show"


def _where_stopped(store: RunStore, name: str, trials_done: int) -> str:
    """'interrupted in its ablation after 1 of 2 rounds: ...', as `tune show` says it."""
    from pgrig.views import tune_attribution

    try:
        rec = store.get_study(name)
        said = tune_attribution.unfinished(rec.status, rec.extra, store.study_runs(name))
    except Exception:  # the archive gone meanwhile: what the runner knows
        said = None
    return said or f"interrupted after {trials_done} trials"


def _given(ctx: typer.Context, name: str) -> bool:
    """The user gave this option (not its default)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name != "DEFAULT"


def print_space_notes(console: Console, notes: list[str]) -> None:
    """What the knob space left out and why, and an unsafe search in red."""
    for note in notes:
        if note.startswith("UNSAFE"):
            console.print(f"[bold red]{escape(note)}[/bold red]", highlight=False, soft_wrap=True)
        else:
            console.print(f"space: {escape(note)}", highlight=False, soft_wrap=True)


def _with_progress(console: Console, req: TunePlan, store: RunStore, resume: bool) -> TuneResult:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from pgrig.tune import runner

    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=not console.is_terminal,
    )
    task = progress.add_task(f"tuning {req.name}", total=req.trials)

    def on_trial(done: int, total: int, label: str) -> None:
        progress.update(task, completed=done, total=total, description=label)

    with progress:
        return runner.run_tune(
            req, archive=store, resume=resume, console=console, on_trial=on_trial
        )


def _summary(console: Console, store: RunStore, study_name: str) -> None:
    """Best configuration, confirmation verdicts and the ablation's shares, in the engine's
    words (views/tune_attribution.py, as the report)."""
    from pgrig.tune.objective import METRIC_OF
    from pgrig.views import tune_attribution

    rec = store.get_study(study_name)
    x = rec.extra
    best = x.get("best")
    if not best:  # where it stopped still heads what is said of it
        said = tune_attribution.unfinished(rec.status, x, store.study_runs(study_name))
        if said is not None:
            console.print(
                f"[yellow]tuning study {escape(study_name)} {escape(said)}[/yellow]",
                highlight=False,
                soft_wrap=True,
            )
        return
    a = tune_attribution.build(
        x, store.study_runs(study_name), METRIC_OF[x.get("objective", "tps")], status=rec.status
    )
    if a.unfinished is not None:  # said first: everything below rests on what it ran
        console.print(
            f"[yellow]tuning study {escape(study_name)} {escape(a.unfinished)}[/yellow]",
            highlight=False,
            soft_wrap=True,
        )
    console.print(
        f"best: trial {best['trial'] + 1} (run {best.get('run_id')}): "
        + escape(", ".join(f"{k}={v}" for k, v in best["settings"].items())),
        highlight=False,
        soft_wrap=True,
    )
    for v in a.verdicts:
        text = v.comparison.describe() if v.comparison is not None else f"no verdict: {v.reason}"
        console.print(f"{v.question}: {escape(text)}", highlight=False, soft_wrap=True)
    for line in beside_lines(_beside_rows(store, store.study_runs(study_name), x), best):
        console.print(escape(line), highlight=False, soft_wrap=True)
    for sh in a.shares:
        c = sh.comparison
        verdict = c.verdict_text() if c is not None else f"no verdict: {sh.reason}"
        share = f", {sh.share_text} of the gain" if sh.share is not None else ""
        console.print(
            f"ablation: without {escape(sh.unit.label)}: best is {sh.effect_text} ({verdict})"
            f"{share}",
            highlight=False,
            soft_wrap=True,
        )
    if a.shares:
        console.print(
            f"ablation: {escape(tune_attribution.holm_text(a))}", highlight=False, soft_wrap=True
        )
    elif a.ablation_skipped:  # said, never an empty verdict of no rounds
        console.print(f"ablation: {escape(a.ablation_skipped)}", highlight=False)
    keeps = a.durable_keeps()
    if keeps is not None:
        console.print(
            f"durable settings only: x{keeps[0]:.3f} [{keeps[1]:.3f}, {keeps[2]:.3f}] over the "
            "baseline",
            highlight=False,
        )
    imp = x.get("importances") or {}
    if imp:
        top = sorted(imp.items(), key=lambda kv: -kv[1])[:5]
        console.print(
            "search importances (not effects): " + ", ".join(f"{k} {v * 100:.0f}%" for k, v in top),
            highlight=False,
        )


def show_study(store: RunStore, study_name: str, as_json: bool) -> None:
    """`pgrig study show` of a tuning study: its trials, best and verdicts."""
    from pgrig.tune import objective as tune_objective

    rec = store.get_study(study_name)
    x = rec.extra
    runs = store.study_runs(study_name)
    obj = tune_objective.of_study(x, runs)
    if as_json:
        from pgrig.views import tune_attribution

        keys = ("objective", "trials", "best", "importances", "baseline_run", "space", "notes")
        a = tune_attribution.build(x, runs, obj.metric.key, status=rec.status)
        beside = [r.as_json() | {"key": r.figure.key} for r in _beside_rows(store, runs, x)]
        # confirmed: what the text surfaces' pasteable `env set` line means (the confirmation
        # ended and found the best faster than the baseline at the study's level)
        common.print_json(
            {"name": rec.name, "kind": rec.kind, "status": rec.status,
             "unfinished": a.unfinished, "confirmation_ended": a.confirmation_ended,
             "confirmed": unconfirmed(a) is None,
             "created_at": rec.created_at, **{k: x.get(k) for k in keys},
             **({"beside": beside} if obj.beside else {})}
        )  # fmt: skip
        return
    from rich.table import Table

    t = Table(title=f"{rec.name} (tune, {rec.status})")
    columns = (
        "trial",
        "state",
        "value",
        *tune_objective.beside_headings(obj),
        "run",
        "why pruned or failed",
    )
    for col in columns:
        t.add_column(col, overflow="fold")
    for trial in x.get("trials") or []:
        value = trial.get("value")
        t.add_row(
            str(trial["number"] + 1),
            trial["state"],
            "-" if value is None else f"{value:,.2f}",
            *tune_objective.beside_cells(obj, trial),
            str(trial.get("run_id") or "-"),
            escape(trial.get("reason") or ""),
        )
    common.out_console().print(t)
    _summary(common.err_console(), store, study_name)


def _beside_rows(store: RunStore, runs: list[RunRecord], x: StudyExtra) -> list[BesideRow]:
    """The figures beside the objective over the confirmation runs, read whole (none when
    the objective has none)."""
    from pgrig.tune import confirm
    from pgrig.tune import objective as tune_objective

    obj = tune_objective.of_study(x, runs)
    if not obj.beside:
        return []
    light = confirm.groups(runs, confirm.reference_of(x))
    groups = {c: [store.get_run(r.id) for r in rs if r.id is not None] for c, rs in light.items()}
    return tune_objective.beside_rows(obj, groups)


# --- `pgrig tune show NAME`: the recommendation, with a reason per setting ------------------
def show_recommendation(store: RunStore, name: str) -> None:
    from pgrig.tune import confirm
    from pgrig.views import tune_attribution, tune_queries

    rec = store.get_study(name)
    if rec.kind != "tune":
        raise PgrigError(f"study {name!r} is a {rec.kind} study, not a tuning study (pgrig tune)")
    x = rec.extra
    best = (x.get("best") or {}).get("settings")
    runs = store.study_runs(name)
    if not best:
        said = tune_attribution.unfinished(rec.status, x, runs)
        stopped = f"{said}; it " if said is not None else ""
        from pgrig.tune.runner import no_trial_completed

        why = no_trial_completed(x.get("trials") or []).removeprefix("no trial completed")
        why = why.removesuffix(": nothing to confirm")
        raise PgrigError(
            f"tuning study {name!r} {stopped}has no completed trial{why}: nothing to recommend"
        )
    from pgrig.tune.objective import METRIC_OF

    a = tune_attribution.build(x, runs, METRIC_OF[x.get("objective", "tps")], status=rec.status)
    env = runs[0].env_name if runs else "ENV"
    text = render(name, env, best, a)
    if beside := _beside_rows(store, runs, x):
        text += "\n\n" + beside_text(beside, best_trial=x.get("best") or {})
    if tune_queries.is_tpch_study(runs):
        text += "\n\n" + per_query(store, runs, confirm.reference_of(x))
    common.out_console().print(text, highlight=False, soft_wrap=True)


def beside_text(rows: list[BesideRow], best_trial: BestTrial) -> str:
    """The figures beside the objective as comment lines (`tune show`)."""
    return "\n".join(f"# {line}" for line in beside_lines(rows, best_trial))


def beside_lines(rows: list[BesideRow], best_trial: BestTrial) -> list[str]:
    """The figures beside the objective: the best trial's, then the medians over the
    confirmation runs per configuration."""
    from pgrig import format

    lines = []
    for r in rows:
        lines.append(f"beside the objective, not optimised: {r.figure.label}")
        if best_trial:
            trial = (best_trial.get("beside") or {}).get(r.figure.key)
            lines.append(f"  best trial's run: {format.number(trial, 0)}")
        if any(r.runs.values()):
            lines.append(f"  confirmation medians: {r.per_config()}")
        else:
            lines.append("  confirmation medians: no confirmation run measured it yet")
    return lines


def per_query(store: RunStore, runs: list[RunRecord], reference: str) -> str:
    """A TPC-H study's per-query evidence (views/tune_queries.py) as comment lines."""
    from pgrig.tune import confirm
    from pgrig.views import tune_queries

    light = confirm.groups(runs, reference)
    groups = {c: [store.get_run(r.id) for r in rs if r.id is not None] for c, rs in light.items()}
    head, cells = tune_queries.table(tune_queries.query_rows(groups), list(groups))
    if not any(groups.values()):
        return "# per query: no confirmation run yet"
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(head)]
    lines = ["# per query (medians over the confirmation runs; speed-up = other's time / best's)"]
    for row in [head, *cells]:
        lines.append("# " + "  ".join(v.rjust(w) for v, w in zip(row, widths, strict=True)))
    return "\n".join(lines)


def render(name: str, env: str, best: dict[str, str], a: Attribution) -> str:
    """The text `tune show` prints (plain: copy-pasteable)."""
    lines = [f"# tuning study {name}: recommendation for {env}"]
    if a.unfinished is not None:  # first: every line below rests on what it ran
        lines.append(f"# {a.unfinished.upper()[:1]}{a.unfinished[1:]}")
    for v in a.verdicts:
        c = v.comparison
        lines.append(
            f"# {v.question}: " + (c.describe() if c is not None else f"no verdict: {v.reason}")
        )
    if a.stopped_at is not None:
        lines.append(f"# confirmation stopped after {a.stopped_at} rounds (misrate {a.misrate:g})")
    keeps = a.durable_keeps()
    if keeps is not None:
        lines.append(
            f"# with durable settings only (fsync, synchronous_commit, full_page_writes on): "
            f"x{keeps[0]:.3f} [{keeps[1]:.3f}, {keeps[2]:.3f}] over the baseline"
        )
    from pgrig.tune.ablation import unsafe_off

    if unsafe_off(best):
        lines.append("# UNSAFE: durability is off in this configuration: throw-away data only")
    command = pgrig_command("env", "set", env, *(f"{k}={v}" for k, v in best.items()))
    if (why := unconfirmed(a)) is None:
        lines += ["", "# apply with pgrig:", command, ""]
    else:  # nothing to paste: the line stays, commented out, under the reason
        lines += ["", f"# not to apply as it is: {why}; to apply it anyway, without the '# ':"]
        lines += [f"# {command}", ""]
    lines.append("# postgresql.conf")
    for r in a.reasons:
        lines.append(f"# {r.why}")
        lines.append(f"{r.setting} = {_conf_value(r.value)}")
    return "\n".join(lines)


def unconfirmed(a: Attribution) -> str | None:
    """Why the best configuration is not confirmed (None: its confirmation ended, and found it
    faster than the baseline at the study's level)."""
    if not a.confirmation_ended:
        return (
            "the best trial was not confirmed (its confirmation did not end; the same "
            "`pgrig tune` command with --resume confirms it)"
        )
    if a.gain is None:
        from pgrig.tune.confirm import VS_BASELINE

        base = next((v for v in a.verdicts if v.question == VS_BASELINE), None)
        c = base.comparison if base is not None else None
        said = c.verdict_text() if c is not None else f"no verdict: {base.reason if base else ''}"
        return f"the confirmation did not find it faster than the baseline ({said})"
    return None


def _conf_value(value: str) -> str:
    """Numbers and bare words as they are; anything else quoted for postgresql.conf."""
    text = str(value)
    if re.fullmatch(r"-?[0-9]+(\.[0-9]+)?|[A-Za-z_]+", text):
        return text
    return "'" + text.replace("'", "''") + "'"
