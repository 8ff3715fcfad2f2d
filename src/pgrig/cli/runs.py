"""`pgrig runs`: list, show, compare and export archived runs.

Data (tables, JSON, exports) goes to stdout, messages to stderr. The archive is chosen with
--archive URL or PGRIG_ARCHIVE (default: SQLite in the pgrig home). Heavy imports stay inside
the commands so `pgrig --help` and `pgrig runs list` start quickly.
"""

from __future__ import annotations

import math
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pgrig.cli.common import (
    MISRATE,
    STATUS_STYLE,
    THRESHOLD,
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
from pgrig.request.values import check_int64

if TYPE_CHECKING:
    from rich.console import JustifyMethod

    from pgrig.archive.records import RunRecord
    from pgrig.archive.store import Archive

app = typer.Typer(no_args_is_help=True)

ArchiveOpt = Annotated[
    str | None,
    typer.Option(
        "--archive",
        help="Archive URL: sqlite:///path or postgresql://user@host/db (default: PGRIG_ARCHIVE, "
        "else SQLite in the pgrig home).",
        show_default=False,
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]


def _open(url: str | None) -> Archive:
    return reading_archive(url)  # for the commands that only read


def _fmt(v: Any, digits: int = 2) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if not math.isfinite(v):
            return str(v)
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.{digits}f}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)


def _when(rec: RunRecord) -> str:
    return rec.started_at.astimezone().strftime("%Y-%m-%d %H:%M") if rec.started_at else "-"


def _status(status: str) -> str:
    return f"[{STATUS_STYLE.get(status, 'white')}]{status}[/]"


def _bytes(n: int | None) -> str:
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if size < 1024 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(n)


def _parse_tag(tag: str | None) -> tuple[str, str] | None:
    if tag is None:
        return None
    key, sep, value = tag.partition("=")
    if not sep or not key:
        raise PgrigError(f"invalid --tag {tag!r}: expected key=value")
    return key, value


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
    if not runs:
        err_console().print("no runs" + (" match" if total or _any(flt) else " archived yet"))
        return
    con = out_console()
    print_wide(_list_table(runs, con.width if con.is_terminal else 250))
    shown = f"{offset + 1}-{offset + len(runs)} of {total}" if total > len(runs) else str(total)
    err_console().print(f"{shown} runs in {arch.url}", highlight=False, emoji=False, markup=False)


def _any(flt: Any) -> bool:
    return any(v is not None for v in vars(flt).values())


# Columns of `runs list` by priority: on a narrow terminal the last ones are dropped whole
# (rather than rich squeezing every column into unreadable ellipses).
_LIST_COLUMNS: tuple[tuple[str, JustifyMethod], ...] = (
    ("id", "right"),
    ("status", "left"),
    ("tps", "right"),
    ("nopm", "right"),  # TPC-C only: New-Order transactions per minute
    ("started", "left"),
    ("env", "left"),
    ("workload", "left"),
    ("clients", "right"),
    ("p95 ms", "right"),
    ("pg", "right"),
    ("failed", "right"),
    ("dur s", "right"),
    ("study", "left"),
    ("note", "left"),
)


def _list_rows(runs: list[RunRecord]) -> list[dict[str, str]]:
    rows = []
    for r in runs:
        dur = r.measured_s if r.measured_s is not None else r.duration_s
        rows.append(
            {
                "id": str(r.id),
                "status": r.status,
                "tps": _fmt(r.tps, 1),
                "nopm": _fmt(r.nopm, 0) if r.nopm is not None else "",
                "started": _when(r),
                "env": r.env_name,
                "workload": r.workload,
                "clients": f"{r.clients}/{r.threads}",
                "p95 ms": _fmt(r.latency.p95),
                "pg": _fmt(r.server_major),
                "failed": _fmt(r.failed),
                "dur s": _fmt(dur, 0),
                "study": f"{r.study}:{r.study_point or ''}#{r.repeat}" if r.study else "",
                "note": (r.note or "").replace("\n", " ")[:60],
            }
        )
    return rows


def _list_table(runs: list[RunRecord], width: int) -> Any:
    # Cells are Text, not markup strings: no escaping needed, and rich does not load its emoji
    # table (about 0.05 s) to look for ":code:" in times like "12:30".
    from rich.table import Table
    from rich.text import Text

    rows = _list_rows(runs)
    widths = {n: max([len(n)] + [len(row[n]) for row in rows]) + 2 for n, _ in _LIST_COLUMNS}
    optional = ("nopm", "study", "note")  # shown only when a run has one
    columns = [c for c in _LIST_COLUMNS if c[0] not in optional or any(r[c[0]] for r in rows)]
    while len(columns) > 3 and sum(widths[n] for n, _ in columns) > width:
        columns.pop()
    t = Table(box=None, pad_edge=False, header_style="bold")
    for name, justify in columns:
        t.add_column(Text(name), justify=justify, no_wrap=True, overflow="ellipsis")
    for row in rows:
        t.add_row(
            *(
                Text(row[n], style=STATUS_STYLE.get(row[n], "") if n == "status" else "")
                for n, _ in columns
            )
        )
    return t


# --- show --------------------------------------------------------------------------------------


def show_json(rec: RunRecord) -> dict[str, Any]:
    """`runs show --json`: the summary plus context (settings diff, host, layers, artifacts)."""
    from pgrig.archive.export import json_safe, run_to_json

    doc = run_to_json(rec)
    doc["non_default_settings"] = json_safe(rec.non_default_settings())
    doc["settings_layers"] = json_safe(rec.settings_layers)
    doc["host"] = json_safe(rec.host)
    doc["artifacts"] = dict(rec.artifacts)
    doc["series_kinds"] = sorted(rec.series)
    from pgrig.insights import summary

    doc.update(json_safe(summary.parts(rec.insights)))  # statements, plans, log_digest, waits
    return doc


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


def _kv_table(title: str, rows: list[tuple[str, str]]) -> Any:
    from rich.table import Table

    t = Table(title=title, title_justify="left", title_style="bold", box=None, show_header=False)
    t.add_column(style="dim", no_wrap=True)
    t.add_column(overflow="fold")
    for k, v in rows:
        t.add_row(k, v)
    return t


def _print_run(rec: RunRecord) -> None:
    from rich.markup import escape
    from rich.table import Table

    from pgrig.units import setting_text

    con = out_console()
    con.print(f"[bold]run {rec.id}[/bold]  {_status(rec.status)}  {_when(rec)}")
    if rec.error:
        con.print(f"[red]error:[/red] {escape(rec.error)}")
    for w in rec.warnings():
        con.print(f"[yellow]warning:[/yellow] {escape(str(w.get('message')))}")
    target = "managed" if rec.managed else f"external {rec.target or ''}"
    load = "-"
    if rec.duration_s is not None:
        load = f"{_fmt(rec.duration_s, 0)} s"
    elif rec.transactions_per_client is not None:
        load = f"{_fmt(rec.transactions_per_client)} transactions per client"
    about = [
        ("environment", f"{rec.env_name} ({target}, via {rec.via})"),
        ("server", f"{rec.engine} {rec.server_version or '-'}"),
        ("pgbench", rec.pgbench_version or "-"),
        (
            "database",
            f"{rec.database or '-'}, scale {_fmt(rec.scale)}, {_bytes(rec.db_size_bytes)}",
        ),
        ("workload", f"{rec.workload} ({rec.scenario or '-'}, protocol {rec.protocol})"),
        ("load", f"{rec.clients} clients, {rec.threads} threads, {load}, warm-up {rec.warmup_s} s"),
    ]
    if rec.rate is not None or rec.latency_limit_ms is not None:
        about.append(("limits", f"rate {_fmt(rec.rate)} tps, latency {_fmt(rec.latency_limit_ms)}"))
    if rec.study:
        about.append(("study", f"{rec.study} point {rec.study_point or '-'} repeat {rec.repeat}"))
    if rec.tags:
        about.append(("tags", ", ".join(f"{k}={v}" for k, v in rec.tags.items())))
    for label, value in (("note", rec.note), ("owner", rec.owner)):
        if value:
            about.append((label, value))
    if rec.ended_at and rec.started_at:
        about.append(("wall time", f"{(rec.ended_at - rec.started_at).total_seconds():.1f} s"))
    con.print(_kv_table("run", [(k, escape(v)) for k, v in about]))

    lat = rec.latency
    results = [
        ("measured", f"{_fmt(rec.measured_s, 1)} s"),
        ("tps", _fmt(rec.tps)),
    ]
    if rec.nopm is not None:
        results.append(("nopm", _fmt(rec.nopm)))
    if rec.tpm is not None:
        results.append(("tpm", _fmt(rec.tpm)))
    results += [
        ("transactions", _fmt(rec.transactions)),
        (
            "failed/retried/skipped",
            f"{_fmt(rec.failed)} / {_fmt(rec.retried)} / {_fmt(rec.skipped)}",
        ),
        ("rollbacks", _fmt(rec.rollbacks)),
        (
            "latency ms",
            "  ".join(f"{k} {_fmt(v, 3)}" for k, v in lat.as_dict().items() if v is not None)
            or "-",
        ),
        (
            "cpu %",
            f"user {_fmt(rec.cpu_user, 1)}  system {_fmt(rec.cpu_system, 1)}  "
            f"iowait {_fmt(rec.cpu_iowait, 1)}  idle {_fmt(rec.cpu_idle, 1)}",
        ),
        ("hit ratio %", _fmt(rec.hit_ratio, 2)),
    ]
    con.print(_kv_table("results", results))

    if rec.scripts:
        t = Table(title="scripts", title_justify="left", title_style="bold", box=None)
        for col in ("#", "name", "weight", "transactions", "failed", "tps"):
            t.add_column(col, justify="left" if col == "name" else "right")
        for f in ("avg", "p50", "p95", "p99", "max"):
            t.add_column(f"{f} ms", justify="right")
        for s in rec.scripts:
            t.add_row(
                str(s.script_no),
                escape(s.name),
                str(s.weight),
                _fmt(s.transactions),
                _fmt(s.failed),
                _fmt(s.tps),
                *(_fmt(getattr(s.latency, f), 3) for f in ("avg", "p50", "p95", "p99", "max")),
            )
        con.print(t)

    changed = rec.non_default_settings()
    if changed:
        t = Table(
            title="settings that differ from PostgreSQL's defaults",
            title_justify="left",
            title_style="bold",
            box=None,
        )
        for col in ("name", "setting", "default", "source"):
            t.add_column(col)
        for name in sorted(changed):
            entry = changed[name]
            t.add_row(
                name,
                escape(setting_text(entry, name)),
                escape(setting_text(entry, name, key="boot_val")),
                str(entry.get("source") or ""),
            )
        con.print(t)
    elif rec.settings:
        con.print("[dim]all settings at PostgreSQL's defaults[/dim]")

    if rec.host:
        facts = [(k, v) for k, v in rec.host.items() if not isinstance(v, dict | list)]
        con.print(_kv_table("host", [(k, escape(str(v))) for k, v in facts]))
        checks = [c for c in rec.host.get("checks") or [] if isinstance(c, dict)]
        if checks:
            rows = [(str(c.get("name")), _check_cell(c)) for c in checks]
            con.print(_kv_table("host checks", rows))
    _print_why(rec)
    if rec.command:
        con.print(_kv_table("command", [("", escape(rec.command))]))
    if rec.artifacts:
        from pgrig.archive.artifacts import artifact_path

        rows = []
        for name, rel in rec.artifacts.items():
            try:
                rows.append((name, str(artifact_path(rel))))
            except PgrigError:
                rows.append((name, rel))
        con.print(_kv_table("artifacts", [(k, escape(v)) for k, v in rows]))
    if rec.series:
        con.print(f"[dim]series: {', '.join(sorted(rec.series))}[/dim]")


def _check_cell(check: dict[str, Any]) -> str:
    from rich.markup import escape

    status = str(check.get("status"))
    style = {"ok": "green", "warn": "yellow"}.get(status, "dim")
    value = "-" if check.get("value") is None else escape(str(check["value"]))
    recommended = escape(str(check.get("recommended")))
    return f"[{style}]{status}[/]  {value}  [dim](recommended {recommended})[/]"


def _print_why(rec: RunRecord) -> None:
    """Why the run performed as it did: statements, plans, server log, waits (pgrig.insights)."""
    from rich.markup import escape

    from pgrig.insights import summary

    rows = summary.why(rec.insights)
    out_console().print(_kv_table("why", [(escape(k), escape(v)) for k, v in rows]))


# --- compare -----------------------------------------------------------------------------------

# (label, attribute path, lower is better; None: neither)
_COMPARE_METRICS: list[tuple[str, str, bool | None]] = [
    ("tps", "tps", False),
    ("nopm", "nopm", False),
    ("tpm", "tpm", False),
    ("transactions", "transactions", False),
    ("failed", "failed", True),
    ("retried", "retried", True),
    ("skipped", "skipped", True),
    ("rollbacks", "rollbacks", True),
    *[(f"latency {f} ms", f"latency.{f}", True) for f in ("avg", "stddev", "p50", "p90", "p95")],
    *[(f"latency {f} ms", f"latency.{f}", True) for f in ("p99", "p999", "max")],
    ("cpu user %", "cpu_user", None),
    ("cpu system %", "cpu_system", None),
    ("cpu iowait %", "cpu_iowait", True),
    ("cpu idle %", "cpu_idle", None),
    ("hit ratio %", "hit_ratio", False),
]
_CONTEXT = (
    "env_name",
    "server_version",
    "workload",
    "scale",
    "clients",
    "threads",
    "duration_s",
    "warmup_s",
    "protocol",
    "via",
)


def _get(rec: RunRecord, path: str) -> Any:
    obj: Any = rec
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _settings_diff(a: RunRecord, b: RunRecord) -> dict[str, tuple[Any, Any]]:
    """Settings whose value differs between the two runs (full snapshots if both have one)."""
    if a.settings and b.settings:
        names = set(a.settings) | set(b.settings)
        sa = {n: a.settings.get(n, {}).get("setting") for n in names}
        sb = {n: b.settings.get(n, {}).get("setting") for n in names}
    else:
        na, nb = a.non_default_settings(), b.non_default_settings()
        names = set(na) | set(nb)
        sa = {n: na.get(n, {}).get("setting") for n in names}
        sb = {n: nb.get(n, {}).get("setting") for n in names}
    return {n: (sa[n], sb[n]) for n in sorted(names) if str(sa[n]) != str(sb[n])}


def _group_context(group: list[RunRecord], name: str) -> Any:
    values = list(dict.fromkeys(getattr(r, name) for r in group))
    return values[0] if len(values) == 1 else " / ".join(_fmt(v) for v in values)


def _plain_ratio(a: Any, b: Any) -> float | None:
    if a is None or b is None or not a:
        return None
    r = b / a
    return r if math.isfinite(r) else None


def _group_title(side: str, group: list[RunRecord]) -> str:
    if len(group) == 1:
        return f"{side}: run {group[0].id} ({group[0].status})"
    ok = sum(r.status == "ok" for r in group)
    return f"{side}: runs {','.join(str(r.id) for r in group)} ({ok}/{len(group)} ok)"


@app.command("compare")
def compare_cmd(
    a: Annotated[
        str, typer.Argument(help="Baseline: a run id or a group of repeats (1,2,3 or 1-3).")
    ],
    b: Annotated[str, typer.Argument(help="Candidate: a run id or a group (4,5,6 or 4-6).")],
    threshold: ThresholdOpt = THRESHOLD,
    misrate: MisrateOpt = MISRATE,
    as_json: JsonOpt = False,
    archive: ArchiveOpt = None,
) -> None:
    """Two runs, or two groups of repeats, side by side: figures, ratios B/A and verdicts."""
    from pgrig.analysis.compare import (
        check_parameters,
        compare_all,
        group_value,
        study_point_groups,
    )
    from pgrig.reports.publish import parse_groups

    check_parameters(threshold, misrate)
    ids_a, ids_b = parse_groups([a, b])
    with _open(archive) as arch:
        ga, gb = [arch.get_run(i) for i in ids_a], [arch.get_run(i) for i in ids_b]
        repeats = study_point_groups(arch, [ga, gb])
    comparisons = compare_all(ga, gb, threshold, misrate)
    metrics = []
    for label, path, lower_better in _COMPARE_METRICS:
        get = partial(_get, path=path)
        va, vb = group_value(ga, get), group_value(gb, get)
        if va is None and vb is None:
            continue
        metrics.append((label, path, va, vb, _plain_ratio(va, vb), lower_better))
    context = [(n, _group_context(ga, n), _group_context(gb, n)) for n in _CONTEXT]
    settings = _settings_diff(ga[0], gb[0])
    from pgrig.insights.changes import what_changed

    changed = what_changed(ga, gb)
    host_diffs, changes = changed["host"], changed["plan_changes"]
    if as_json:
        from pgrig.archive.export import json_safe

        print_json(
            json_safe(
                {
                    "a": {"runs": [{"id": r.id, "status": r.status} for r in ga]},
                    "b": {"runs": [{"id": r.id, "status": r.status} for r in gb]},
                    "metrics": {
                        path.replace("latency.", "latency_ms."): {"a": va, "b": vb, "ratio": r}
                        for _, path, va, vb, r, _ in metrics
                    },
                    "context": {n: {"a": x, "b": y} for n, x, y in context},
                    "settings_diff": {n: {"a": x, "b": y} for n, (x, y) in settings.items()},
                    "verdict": comparisons["tps"].as_dict() if "tps" in comparisons else None,
                    "comparisons": {k: c.as_dict() for k, c in comparisons.items()},
                    "host_differences": host_diffs,
                    "study_repeats": repeats,
                    "plan_changes": changes,
                    "what_changed": changed,
                }
            )
        )
        return
    _print_compare(ga, gb, metrics, context, settings, comparisons)
    _print_host_differences(host_diffs)
    _print_plan_changes(changes)
    _print_what_changed(changed)
    if repeats:
        a_ids, b_ids = (",".join(map(str, g)) for g in repeats)
        err_console().print(
            f"these runs are repeats of study points: `pgrig runs compare {a_ids} {b_ids}` "
            "compares all of them",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )


def _print_host_differences(lines: list[str]) -> None:
    """Runs on differently prepared hosts may differ for that reason alone (seed 004)."""
    if not lines:
        return
    from rich.text import Text

    con = out_console()
    con.print(Text("host differences", style="bold"))
    for line in lines:
        con.print(Text(f"  {line}", style="yellow"))


_VERDICT_COLOUR = {"faster": "green", "slower": "red", "equivalent": "cyan"}


def _print_compare(
    ga: list[RunRecord],
    gb: list[RunRecord],
    metrics: list[tuple],
    context: list[tuple],
    settings: dict[str, tuple[Any, Any]],
    comparisons: dict[str, Any],
) -> None:
    from rich.markup import escape
    from rich.table import Table

    from pgrig.analysis.compare import format_ratio
    from pgrig.units import setting_text

    con = out_console()
    t = Table(box=None, header_style="bold")
    t.add_column("")
    t.add_column(escape(_group_title("A", ga)), justify="right")
    t.add_column(escape(_group_title("B", gb)), justify="right")
    t.add_column("B/A", justify="right")
    t.add_column("verdict")
    for name, x, y in context:
        cx, cy = escape(_fmt(x)), escape(_fmt(y))
        if x != y:
            cx, cy = f"[yellow]{cx}[/yellow]", f"[yellow]{cy}[/yellow]"
        t.add_row(f"[dim]{name}[/dim]", cx, cy, "", "")
    for label, path, va, vb, r, lower_better in metrics:
        c = comparisons.get(path)
        if c is not None:
            colour = _VERDICT_COLOUR.get(c.verdict or "", "dim")
            verdict = f"[{colour}]{escape(c.verdict_text())}[/]"
            t.add_row(label, _fmt(va), _fmt(vb), escape(c.ratio_text()), verdict)
            continue
        cell = format_ratio(r)
        if r is not None and lower_better is not None and abs(r - 1) >= 0.005:
            better = (r < 1) if lower_better else (r > 1)
            cell = f"[{'green' if better else 'red'}]{cell}[/]"
        t.add_row(label, _fmt(va), _fmt(vb), cell, "")
    print_wide(t)
    if settings:
        st = Table(title="settings that differ", title_justify="left", title_style="bold", box=None)
        st.add_column("name")
        st.add_column("A")
        st.add_column("B")
        for n, (x, y) in settings.items():  # as SHOW prints them: 128MB, not 16384
            shown = [
                setting_text({**r.settings.get(n, {}), "setting": v}, n)
                for r, v in ((ga[0], x), (gb[0], y))  # the runs _settings_diff compared
            ]
            st.add_row(n, *(escape(v) for v in shown))
        con.print(st)
    tps = comparisons.get("tps")
    if tps is not None:
        con.print(f"verdict on TPS: [bold]{escape(tps.describe())}[/bold]", soft_wrap=True)
        if tps.indicative:
            con.print(
                "[dim]indicative: single runs compared by block means of their per-second "
                "values; one run cannot show run-to-run variation, repeats can[/dim]",
                soft_wrap=True,
            )


def _print_plan_changes(changes: list[dict[str, Any]]) -> None:
    """Statements planned differently in B than in A (pgrig.insights.compare)."""
    if not changes:
        return
    from rich.markup import escape

    from pgrig.insights.compare import change_lines

    con = out_console()
    con.print(f"[bold]plan changes[/bold] ({len(changes)} statements)")
    for line in change_lines(changes):
        con.print(escape(line), highlight=False)


def _print_what_changed(changed: dict[str, Any]) -> None:
    """Statements, server log and waits of B against A (pgrig.insights.changes; host
    differences and plan changes are printed above from the same document)."""
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    from pgrig.insights.changes import tables

    con = out_console()
    for t in tables(changed):
        if t.title in ("Plan changes", "Host differences"):
            continue
        if not t.rows:
            con.print(Text(f"{t.title.lower()}: {t.note}", style="dim"), soft_wrap=True)
            continue
        table = Table(title=escape(t.title.lower()), title_justify="left", title_style="bold",
                      box=None)  # fmt: skip
        for i, col in enumerate(t.columns):
            table.add_column(escape(col), justify="right" if i in t.numeric else "left")
        for row in t.rows:
            table.add_row(*(escape(c if isinstance(c, str) else "\n".join(c)) for c in row))
        print_wide(table)
        if t.note:
            con.print(Text(t.note, style="dim"), soft_wrap=True)


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
    archive: ArchiveOpt = None,
) -> None:
    """Remove a run: its rows, series and blobs (one transaction), then its artifacts."""
    with open_archive(archive) as arch:
        arch.get_run(run_id)  # not found: said before asking anything
        owner = arch.running_owner(run_id)
        if owner is not None:
            raise PgrigError(f"cannot delete run {run_id}: it is running ({owner})")
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
            left = spool.pending_spools()
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
        run_id = arch.import_spooled(file)
    err_console().print(f"run {run_id} imported from {file}", highlight=False, markup=False)
