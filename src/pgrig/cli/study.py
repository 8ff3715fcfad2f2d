"""`pgrig study run|plan|list|show|report` and `pgrig report run|compare`.

Studies are TOML files (docs/studies.md); every run they make is archived under the study, so
`study report` can be rebuilt at any time from the archive alone.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pgrig.cli import common
from pgrig.cli.common import ArchiveOpt
from pgrig.format import pgrig_command

if TYPE_CHECKING:
    from pgrig.archive.store import Archive

study_app = typer.Typer(no_args_is_help=True)
report_app = typer.Typer(no_args_is_help=True)

FormatOpt = Annotated[
    list[str] | None,
    typer.Option("--format", "-f", help="md (Markdown + PNG) or html (one file); repeatable."),
]
OutOpt = Annotated[
    Path | None, typer.Option("--out", "-o", help="Directory (default: <home>/reports/<name>).")
]


def register(app: typer.Typer) -> None:
    app.add_typer(study_app, name="study", help="Studies: iterations and sweeps from TOML files.")
    app.add_typer(report_app, name="report", help="Reports on runs: one run, or a comparison.")


def _archive(url: str | None) -> Archive:
    return common.open_archive(url)


def _print_paths(paths: list[Path]) -> None:
    for p in paths:
        sys.stdout.write(f"{p}\n")
    sys.stdout.flush()


# --- study ----------------------------------------------------------------------------------
@study_app.command("run")
def run(
    file: Annotated[Path, typer.Argument(help="The study file (TOML).")],
    name: Annotated[
        str | None, typer.Option("--name", help="Study name (default: the file's).")
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue an interrupted study.")
    ] = False,
    fmt: FormatOpt = None,
    out: OutOpt = None,
    no_report: Annotated[
        bool, typer.Option("--no-report", help="Do not write the report.")
    ] = False,
    archive: ArchiveOpt = None,
) -> None:
    """Validate FILE, run every point x repeat (resumable), then write the report."""
    from rich.markup import escape

    from pgrig.reports import publish
    from pgrig.study import spec as study_spec
    from pgrig.study.runner import StudyInterrupted, run_study

    formats = publish.check_formats(fmt or ["md"])
    study = study_spec.load(file, name=name)
    store = _archive(archive)
    console = common.err_console()
    try:
        result = run_study(study, archive=store, console=console, resume=resume)
    except StudyInterrupted as stop:
        r = stop.result
        console.print(
            f"[yellow]study {study.name} interrupted[/yellow]: {r.completed} of {r.planned} runs "
            f"done; continue with `"
            + escape(
                pgrig_command(
                    "study", "run", file, "--resume", *(["--name", study.name] if name else [])
                )
            )
            + "`",
            highlight=False,
            soft_wrap=True,
        )
        sys.exit(130)
    colour = "green" if result.status == "done" else "red"
    console.print(
        f"study {study.name} [{colour}]{result.status}[/{colour}]: {result.completed} of "
        f"{result.planned} runs ok ({result.ran} run now, {result.failed} not ok)"
        + (f"; {escape(result.error)}" if result.error else ""),
        highlight=False,
        soft_wrap=True,
    )
    if result.status != "done":
        console.print(
            f"  `{escape(pgrig_command('study', 'run', file, '--resume'))}` runs the missing ones "
            "again",
            highlight=False,
        )
    if not no_report:
        paths = publish.study_report(store, study.name, formats, out)
        for p in paths:
            console.print(f"report: {p}", highlight=False, soft_wrap=True)
        _print_paths(paths)
    if result.status != "done":
        sys.exit(1)


@study_app.command("plan")
def plan(
    file: Annotated[Path, typer.Argument(help="The study file (TOML).")],
    name: Annotated[str | None, typer.Option("--name")] = None,
    offline: Annotated[
        bool, typer.Option("--offline", help="Only check the file, not versions or settings.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Validate FILE (settings against the real server version) and list its points."""
    from pgrig.format import duration
    from pgrig.study import plan as planning
    from pgrig.study import spec as study_spec
    from pgrig.study.runner import default_backend, validate

    study = study_spec.load(file, name=name)
    p = planning.build(study)
    if not offline:
        validate(study, default_backend(), p)
    if as_json:
        common.print_json(
            {
                "name": study.name,
                "kind": study.kind,
                "repeats": study.repeats,
                "runs": len(p.runs),
                "estimated_seconds": p.estimated_seconds(),
                "points": [
                    {
                        "key": pt.key,
                        "label": pt.label,
                        "environment": study.environments[pt.env_key].name,
                        "settings": pt.settings,
                        "changes": pt.changes,
                        "actions": list(pt.actions),
                        "workload": pt.run.workload,
                        "clients": pt.run.clients,
                        "threads": pt.run.threads,
                    }
                    for pt in p.points
                ],
            }
        )
        return
    from rich.table import Table

    t = Table(title=f"{study.name}: {study.kind}, {len(p.points)} points x {study.repeats}")
    for col in ("#", "point", "environment", "changes", "load"):
        t.add_column(col, overflow="fold")
    for pt in p.points:
        lines = [f"{k}={v}" if v is not None else f"{k}: reset" for k, v in pt.changes.items()]
        if pt.actions:
            lines.append("actions: " + ", ".join(pt.actions))
        changes = "\n".join(lines)
        t.add_row(
            str(pt.index),
            pt.label,
            study.environments[pt.env_key].name,
            changes or "-",
            f"{planning.display_value(pt.run.workload)} c={pt.run.clients} j={pt.run.threads}",
        )
    common.out_console().print(t)
    eta = p.estimated_seconds()
    common.err_console().print(
        f"valid{' (file only)' if offline else ''}: {len(p.runs)} runs"
        + (f", about {duration(eta)}" if eta else ""),
        highlight=False,
        soft_wrap=True,
    )


@study_app.command("list")
def list_(
    archive: ArchiveOpt = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Studies in the archive, oldest first."""
    store: Any = common.reading_archive(archive)
    rows = []
    for s in store.list_studies():
        runs = store.study_runs(s.name)
        planned = (s.extra or {}).get("runs")
        rows.append(
            {
                "name": s.name,
                "kind": s.kind,
                "status": s.status,
                "created_at": s.created_at.isoformat() if s.created_at else None,
                "ok_runs": sum(1 for r in runs if r.status == "ok"),
                "runs": len(runs),
                "planned": planned,
            }
        )
    if as_json:
        common.print_json(rows)
        return
    from rich.table import Table

    t = Table()
    for col in ("name", "kind", "status", "created", "ok / planned runs"):
        t.add_column(col)
    for r in rows:
        t.add_row(
            r["name"],
            r["kind"],
            r["status"],
            (r["created_at"] or "-")[:16].replace("T", " "),
            f"{r['ok_runs']} / {r['planned'] or '?'}",
        )
    common.out_console().print(t)


@study_app.command("show")
def show(
    name: Annotated[str, typer.Argument(help="Study name.")],
    archive: ArchiveOpt = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """A study's progress per point: runs, TPS with bounds, verdicts with bounds, the best."""
    from pgrig.views import study as study_view
    from pgrig.views import study_hosts
    from pgrig.views.study_data import load_study

    store = common.reading_archive(archive)
    if store.get_study(name).kind == "tune":
        from pgrig.cli import tune

        tune.show_study(store, name, as_json)
        return
    if store.get_study(name).kind == "track":  # a version series: `pgrig track show`
        from pgrig.cli import track

        track.show(name, archive=archive, as_json=as_json)
        return
    # the evidence column reads the runs' insights and hosts, as the report does
    view = study_view.build(load_study(store, name, with_series=False, with_evidence=True))
    if as_json:
        common.print_json(study_view.to_json(view))
        return
    from pgrig.cli import render

    render.note(view.title, "bold")
    if view.unfinished is not None:  # first: every figure below rests on what it ran
        render.note(f"study {view.name} {view.unfinished}", "yellow")
    render.print_table(study_view.points_table(view, with_evidence=False))
    evidence = study_view.evidence_items(view)
    if evidence:
        render.show(render.items("evidence (what the runs show)", evidence))
    harness = study_view.harness_items(view)  # what pgrig itself took, per point
    if harness:
        render.show(render.items(study_view.HARNESS_TITLE, harness))
    hosts = study_hosts.table(view.hosts)  # per point and host: CPU, RTT
    if hosts is not None:
        render.print_table(hosts)
    if view.best_text:
        render.note(view.best_text, "bold")
    for text in view.notes:
        render.note(text)


@study_app.command("report")
def study_report(
    name: Annotated[str, typer.Argument(help="Study name.")],
    fmt: FormatOpt = None,
    out: OutOpt = None,
    archive: ArchiveOpt = None,
) -> None:
    """Write the study's report (iteration table or sweep charts) from the archive."""
    from pgrig.reports import publish

    _print_paths(publish.study_report(common.reading_archive(archive), name, fmt or ["md"], out))


# --- report ---------------------------------------------------------------------------------
@report_app.command("run")
def report_run(
    run_id: Annotated[int, typer.Argument(help="Run id.")],
    fmt: FormatOpt = None,
    out: OutOpt = None,
    archive: ArchiveOpt = None,
) -> None:
    """One run: figures, TPS over time (warm-up shaded), latency, stability, settings."""
    from pgrig.reports import publish

    _print_paths(publish.run_report(common.reading_archive(archive), run_id, fmt or ["md"], out))


@report_app.command("compare")
def report_compare(
    groups: Annotated[
        list[str], typer.Argument(help="Runs or groups of repeats: 7 8, or 1,2,3 4-6.")
    ],
    fmt: FormatOpt = None,
    out: OutOpt = None,
    threshold: common.ThresholdOpt = common.THRESHOLD,
    misrate: common.MisrateOpt = common.MISRATE,
    archive: ArchiveOpt = None,
) -> None:
    """Compare runs (or groups of repeated runs) against the first: ratio, bounds, verdict."""
    from pgrig.reports import publish

    parsed = publish.parse_groups(groups)
    _print_paths(
        publish.compare_report(
            common.reading_archive(archive), parsed, fmt or ["md"], out, threshold, misrate
        )
    )
