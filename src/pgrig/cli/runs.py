"""`pgrig runs`: list, show, compare and export archived runs.

Data (tables, JSON, exports) goes to stdout, messages to stderr. The archive is chosen with
--archive URL or PGRIG_ARCHIVE (default: SQLite in the pgrig home). Heavy imports stay inside
the commands so `pgrig --help` and `pgrig runs list` start quickly.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pgrig.cli.common import (
    MISRATE,
    STATUS_STYLE,
    THRESHOLD,
    ArchiveOpt,
    JsonOpt,
    MisrateOpt,
    PgrigError,
    ThresholdOpt,
    confirm,
    err_console,
    open_archive,
    out_console,
    print_json,
    print_wide,
    reading_archive,
)
from pgrig.format import pgrig_command
from pgrig.request.values import check_int64

if TYPE_CHECKING:
    from rich.console import JustifyMethod
    from rich.table import Table as RichTable

    from pgrig.archive.records import RunFilter, RunRecord
    from pgrig.archive.store import Archive
    from pgrig.insights.plan_changes import PlanChange
    from pgrig.views.compare import ComparisonView

app = typer.Typer(no_args_is_help=True)


def _open(url: str | None) -> Archive:
    return reading_archive(url)  # for the commands that only read


def _parse_tag(tag: str | None) -> tuple[str, str] | None:
    if tag is None:
        return None
    from pgrig.request.values import name_values

    return next(iter(name_values([tag], "--tag").items()))


# --- list --------------------------------------------------------------------------------------


@app.command("list")
def list_cmd(
    env: Annotated[str | None, typer.Option("--env", help="Only this environment.")] = None,
    status: Annotated[
        str | None, typer.Option("--status", help="running, ok, failed, aborted or lost.")
    ] = None,
    study: Annotated[str | None, typer.Option("--study", help="Only this study's runs.")] = None,
    workload: Annotated[
        str | None, typer.Option("--workload", help="Exact workload, e.g. pgbench:tpcb-like.")
    ] = None,
    pg: Annotated[int | None, typer.Option("--pg", help="PostgreSQL major version.")] = None,
    tag: Annotated[str | None, typer.Option("--tag", help="Only runs with tag key=value.")] = None,
    text: Annotated[str | None, typer.Option("--text", help="Substring of the note.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="At most this many runs.")] = 50,
    offset: Annotated[int, typer.Option("--offset", min=0, help="Skip this many.")] = 0,
    as_json: JsonOpt = False,
    archive: ArchiveOpt = None,
) -> None:
    """Runs, newest first."""
    from pgrig.archive.records import RunFilter

    flt = RunFilter(
        env_name=env,
        status=status,
        study=study,
        workload=workload,
        server_major=pg,
        tag=_parse_tag(tag),
        text=text,
    )
    check_int64(limit, "--limit"), check_int64(offset, "--offset"), check_int64(pg or 0, "--pg")
    with _open(archive) as arch:
        runs = arch.list_runs(flt, limit=limit, offset=offset)
        if as_json:
            from pgrig.archive.export import run_to_json

            print_json([run_to_json(r) for r in arch.add_warnings(runs)])
            return
        total = arch.count_runs(flt) if len(runs) == limit or offset else len(runs)
        from pgrig.views import runs_list

        runs_list.with_documents(arch, runs)  # a backup run's figures, a TPC-H run's
    if not runs:
        err_console().print("no runs" + (" match" if total or _any(flt) else " archived yet"))
        return
    con = out_console()
    print_wide(_list_table(runs, con.width if con.is_terminal else 250))
    shown = f"{offset + 1}-{offset + len(runs)} of {total}" if total > len(runs) else str(total)
    err_console().print(f"{shown} runs in {arch.url}", highlight=False, emoji=False, markup=False)


def _any(flt: RunFilter) -> bool:
    return any(v is not None for v in vars(flt).values())


def _list_rows(runs: list[RunRecord]) -> list[dict[str, str]]:
    """The cells of `runs list` (views/runs_list.py: the web's runs list shows the same)."""
    from pgrig.views import runs_list

    return [{c.key: r.text(c.key) for c in runs_list.COLUMNS} for r in runs_list.rows(runs)]


def _list_table(runs: list[RunRecord], width: int) -> RichTable:
    # Cells are Text, not markup strings: no escaping needed, and rich does not load its emoji
    # table (about 0.05 s) to look for ":code:" in times like "12:30".
    from rich.table import Table
    from rich.text import Text

    from pgrig.views import runs_list

    view = runs_list.rows(runs)
    rows = [{c.key: r.text(c.key) for c in runs_list.COLUMNS} for r in view]
    columns = runs_list.shown_columns(view)
    widths = {c.key: max([len(c.heading)] + [len(row[c.key]) for row in rows]) + 2 for c in columns}
    while len(columns) > 3 and sum(widths[c.key] for c in columns) > width:
        columns.pop()
    t = Table(box=None, pad_edge=False, header_style="bold")
    for c in columns:
        justify: JustifyMethod = "right" if c.numeric else "left"
        t.add_column(Text(c.heading), justify=justify, no_wrap=True, overflow="ellipsis")
    for row in rows:
        t.add_row(
            *(
                Text(
                    row[c.key],
                    style=STATUS_STYLE.get(row[c.key].split(" ", 1)[0], "")
                    if c.key == "status"
                    else "",
                )
                for c in columns
            )
        )
    return t


# --- show --------------------------------------------------------------------------------------


def show_json(rec: RunRecord) -> dict[str, object]:
    """`runs show --json` (and `run --json`): pgrig.views.run_summary.to_json."""
    from pgrig.views.run_summary import to_json

    return to_json(rec)


@app.command("show")
def show_cmd(
    run_id: Annotated[int, typer.Argument(help="Run id.")],
    as_json: JsonOpt = False,
    archive: ArchiveOpt = None,
) -> None:
    """One run: summary, per-script latencies, settings that differ from defaults, host."""
    with _open(archive) as arch:
        rec = arch.get_run(check_int64(run_id, "run id"))
    if as_json:
        print_json(show_json(rec))
        return
    _print_run(rec)


def _print_run(rec: RunRecord) -> None:
    """The run summary (pgrig.views.run_summary), then why, command, artifacts."""
    from rich.text import Text

    from pgrig.cli import render
    from pgrig.views import run_summary

    v = run_summary.build(rec)
    con = render.console()
    head = Text(f"run {rec.id}  ", style="bold")
    head.append(v.status, style=STATUS_STYLE.get(v.status, ""))
    con.print(head)
    if v.error:
        con.print(Text("error: ", style="red") + Text(v.error))
    for w in v.warnings:
        con.print(Text("warning: ", style="yellow") + Text(w))
    render.show(render.items("run", v.about), render.items("results", v.results))
    for title, items in (("backup", v.backup), ("replicas", v.topology)):
        if items:
            render.show(render.items(title, items))
    if v.scripts is not None:
        render.show(render.table(v.scripts))
    if v.analytic is not None:
        render.show(render.table(v.analytic))
    st = v.settings_table()
    render.print_table(st) if st.rows else render.note(v.settings_note)
    if v.host:
        render.show(render.items("host", v.host))
    if v.host_checks is not None:
        render.show(render.table(v.host_checks))
    if v.hosts is not None:
        render.print_table(v.hosts)
    _print_why(rec)
    if v.command:
        render.show(render.items("command", [("", v.command)]))
    if rec.artifacts:
        from pgrig.archive.artifacts import artifact_path

        rows = []
        for name, rel in rec.artifacts.items():
            try:
                rows.append((name, str(artifact_path(rel))))
            except PgrigError:
                rows.append((name, rel))
        render.show(render.items("artifacts", rows))
    if rec.series:
        render.note(f"series: {', '.join(sorted(rec.series))}")


def _print_why(rec: RunRecord) -> None:
    """Why the run performed as it did: statements, plans, server log, waits (pgrig.insights)."""
    from pgrig.cli import render
    from pgrig.insights import summary

    render.show(render.items("why", summary.why(rec.insights)))


# --- compare -----------------------------------------------------------------------------------


@app.command("compare")
def compare_cmd(
    a: Annotated[
        str, typer.Argument(help="Baseline: a run id or a group of repeats (1,2,3 or 1-3).")
    ],
    b: Annotated[str, typer.Argument(help="Candidate: a run id or a group (4,5,6 or 4-6).")],
    threshold: ThresholdOpt = THRESHOLD,
    misrate: MisrateOpt = MISRATE,
    as_json: JsonOpt = False,
    wide: Annotated[
        bool,
        typer.Option(
            "--wide",
            help="Every column of what changed (statements: calls, shared blocks read, temp "
            "blocks written too), even when wider than the terminal.",
        ),
    ] = False,
    archive: ArchiveOpt = None,
) -> None:
    """Two runs, or two groups of repeats, side by side: figures, ratios B/A and verdicts."""
    from pgrig.analysis.compare import check_parameters, study_point_groups
    from pgrig.reports.publish import parse_groups
    from pgrig.views import compare

    check_parameters(threshold, misrate)
    ids_a, ids_b = parse_groups([a, b])
    with _open(archive) as arch:
        ga, gb = [arch.get_run(i) for i in ids_a], [arch.get_run(i) for i in ids_b]
        repeats = study_point_groups(arch, [ga, gb])
    view = compare.build([ga, gb], threshold, misrate)
    changed = view.changes[0].document
    if as_json:
        from pgrig.archive.export import json_safe

        doc = compare.to_json(view)
        doc["host_differences"] = changed["host"]
        doc["study_repeats"] = repeats
        doc["plan_changes"] = changed["plan_changes"]
        doc["what_changed"] = changed
        print_json(json_safe(doc))
        return
    _print_compare(view, wide)
    if repeats:
        a_ids, b_ids = (",".join(map(str, g)) for g in repeats)
        err_console().print(
            f"these runs are repeats of study points: "
            f"`{pgrig_command('runs', 'compare', a_ids, b_ids)}` "
            "compares all of them",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )


def _print_compare(view: ComparisonView, wide: bool = False) -> None:
    """The comparison view (pgrig.views.compare) on the terminal: context, figures with the
    engine's ratios and verdicts, the settings that differ, then what changed."""
    from rich.text import Text

    from pgrig.cli import render
    from pgrig.views.compare import compare_table, hosts_table, settings_table

    con = render.console()
    render.show(render.table(compare_table(view, ("A", "B"))))
    st = settings_table(view, ("A", "B"))
    render.print_table(st) if st.rows else render.note("settings: none differs between A and B")
    hosts = hosts_table(view, ("A", "B"))
    if hosts is not None:
        render.print_table(hosts)
    tps = view.verdict
    if tps is not None:
        line = Text(f"verdict on {tps.label}: ")
        line.append(tps.describe(), style="bold")
        con.print(line)
        if tps.indicative:
            render.note(
                "indicative: single runs compared by block means of their per-second values; "
                "one run cannot show run-to-run variation, repeats can"
            )
        if view.paired_note:
            render.note(view.paired_note)
    for ch in view.changes:
        _print_plan_changes(ch.document["plan_changes"])
        for t in ch.tables if wide else ch.narrow_tables():
            if t.title == "Plan changes" or (t.title == "Host differences" and not t.rows):
                continue  # plan changes: above, as lines; the same host: nothing to say
            render.print_table(t)


def _print_plan_changes(changes: list[PlanChange]) -> None:
    """Statements planned differently in B than in A (pgrig.insights.plan_changes)."""
    if not changes:
        return
    from rich.text import Text

    from pgrig.cli import render
    from pgrig.insights.plan_changes import change_lines

    con = render.console()
    con.print(Text(f"plan changes ({len(changes)} statements)", style="bold"))
    for line in change_lines(changes):
        con.print(Text(line), highlight=False)


# --- export ------------------------------------------------------------------------------------


@app.command("export")
def export_cmd(
    run_id: Annotated[int, typer.Argument(help="Run id.")],
    fmt: Annotated[
        str, typer.Option("--format", "-f", help="json (everything) or csv (series per second).")
    ] = "json",
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write to this file instead of stdout.")
    ] = None,
    archive: ArchiveOpt = None,
) -> None:
    """Everything about a run as JSON, or its time series as one CSV table."""
    from pgrig.archive.export import export_run

    if fmt not in ("json", "csv"):
        raise PgrigError(f"unknown export format {fmt!r}: use json or csv")
    with _open(archive) as arch:
        rec = arch.get_run(check_int64(run_id, "run id"))
    data = export_run(rec, fmt)  # type: ignore[arg-type]
    if out is None:
        sys.stdout.write(data)
        sys.stdout.flush()
        return
    try:
        out.write_text(data)
    except OSError as e:
        raise PgrigError(f"cannot write {out}: {e.strerror or e}") from e
    err_console().print(
        f"run {run_id} exported to {out}", highlight=False, emoji=False, markup=False
    )


# --- the life cycle: mark, delete, import ------------------------------------------------------


@app.command("mark")
def mark_cmd(
    run_id: Annotated[int, typer.Argument(help="Run id.")],
    status: Annotated[
        str, typer.Option("--status", help="aborted, failed or lost.", show_default=False)
    ],
    archive: ArchiveOpt = None,
) -> None:
    """Set the status of a run that pgrig could not finish (a live run is refused)."""
    import getpass

    with open_archive(archive) as arch:
        arch.mark_run(run_id, status, f"marked {status} by {getpass.getuser()}")
    err_console().print(f"run {run_id} marked {status}", highlight=False, markup=False)


@app.command("delete")
def delete_cmd(
    run_id: Annotated[int, typer.Argument(help="Run id.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Even a run a tuning study names (its best, baseline).")
    ] = False,
    archive: ArchiveOpt = None,
) -> None:
    """Remove a run: its rows, series and blobs (one transaction), then its artifacts."""
    from pgrig.archive import run_deletion

    with open_archive(archive) as arch:
        run_deletion.check_deletable(arch, run_id, force)  # said before asking anything
        confirm(f"delete run {run_id} and its artifacts?", yes)
        arch.delete_run(run_id)
    err_console().print(f"run {run_id} deleted", highlight=False, markup=False)


@app.command("import")
def import_cmd(
    path: Annotated[
        Path | None,
        typer.Argument(help="A spooled run (record.spool.json) or its run directory."),
    ] = None,
    archive: ArchiveOpt = None,
) -> None:
    """Import runs spooled when the archive was unavailable (every command does it too)."""
    from pgrig.archive import spool

    with open_archive(archive) as arch:
        if path is None:
            left = spool.pending_spools(arch.url)
            if left:
                err_console().print(
                    f"{len(left)} spooled runs belong to other archives or could not be "
                    f"imported: {', '.join(str(p) for p in left)}",
                    highlight=False,
                    markup=False,
                    soft_wrap=True,
                )
            elif not arch.recovered:
                err_console().print("no spooled runs", highlight=False, markup=False)
            return
        file = path / spool.RECORD_SPOOL if path.is_dir() else path
        if not file.exists():
            if any(str(file) in line for line in arch.recovered):
                return  # opening the archive imported it (and said so)
            raise PgrigError(f"{file}: no spooled run there")
        run_id, imported_before = arch.import_spooled(file)
    if imported_before:
        err_console().print(
            f"run {run_id} was already imported: written again from {file}, which is left in place",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        return
    err_console().print(f"run {run_id} imported from {file}", highlight=False, markup=False)
