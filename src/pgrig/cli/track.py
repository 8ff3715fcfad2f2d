"""`pgrig track`: one benchmark across PostgreSQL versions, its change points, bisection.

`pgrig track NAME --versions ...` measures (or resumes) the series NAME; `pgrig track show`,
`pgrig track detect` are subcommands. The group routes a first argument that is not a
subcommand to the hidden `measure` command, so `pgrig track NAME ...` reads naturally.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from pgrig.cli.common import ArchiveOpt, err_console, out_console, print_json, read_upto
from pgrig.errors import PgrigError
from pgrig.request.values import ascii_number

if TYPE_CHECKING:
    from pgrig.record.protocol import RunStore
    from pgrig.track.figures import SeriesView

# a percentage or a fraction (track/ parses both), unlike runs compare's float --threshold
ThresholdOpt = Annotated[
    str, typer.Option("--threshold", help="Practical effect size: 2% or 0.02.")
]
SUBCOMMANDS_HELP = (
    "pgrig track NAME --versions LIST --workload W [...] measures, resumes or extends the series "
    "NAME (pgrig track NAME --help: its options); show NAME and detect FILE are subcommands."
)


class _TrackGroup(TyperGroup):
    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["measure", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(cls=_TrackGroup, no_args_is_help=True, help=SUBCOMMANDS_HELP)


def register(root: typer.Typer, report_app: typer.Typer) -> None:
    """`pgrig track` on the root, and `pgrig report track` on the report group (cli/study.py's,
    given by cli/app.py: this module imports no other command group, cli/study.py imports it)."""
    root.add_typer(
        app,
        name="track",
        help="Performance history across PostgreSQL versions: series, change points, "
        "bisection. " + SUBCOMMANDS_HELP,
    )
    report_app.command("track")(report_track)


def report_track(
    name: Annotated[str, typer.Argument(help="The series' name.")],
    fmt: Annotated[
        list[str] | None, typer.Option("--format", "-f", help="md or html; repeatable.")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Directory (default: <home>/reports/track-NAME)."),
    ] = None,
    threshold: ThresholdOpt = "2%",
    archive: ArchiveOpt = None,
) -> None:
    """The report of a version series: chart with change points, table per version, settings."""
    from pgrig.cli import common
    from pgrig.reports import publish

    written = publish.track_report(
        common.reading_archive(archive), name, fmt or ["md"], out, parse_threshold(threshold)
    )
    for path in written:
        out_console().print(str(path), highlight=False, soft_wrap=True)


@app.command("detect")
def detect(
    file: Annotated[
        str,
        typer.Argument(
            help="A file of `label,value` lines (a header line is allowed); - reads stdin."
        ),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    max_p_value: Annotated[
        float, typer.Option("--max-p", help="Significance: a change needs p <= this.")
    ] = 0.01,
    permutations: Annotated[
        int,
        typer.Option("--permutations", help="Shuffles of the permutation test (19 to 9999)."),
    ] = 499,
    min_size: Annotated[
        int, typer.Option("--min-size", help="Fewest points on each side of a change.")
    ] = 3,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the shuffles (repeatable).")] = 0,
) -> None:
    """Change points of any series (e-divisive means, permutation test).

    Each change's `index` counts from 0 and is the FIRST point of the new level: labels[index]
    is the first version (or build, or night) that shows it. `ratio` is the new level's mean
    over the previous level's mean (0.95: 5% lower); `p_value` is the permutation test's and
    `confidence` is 1 - p_value.
    """
    from pgrig.analysis import changepoints

    source = "stdin" if file == "-" else file
    try:  # to a bound: /dev/zero (NUL bytes are UTF-8) is read until memory runs out
        raw = read_upto(file, MAX_DETECT_BYTES)
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise PgrigError(f"cannot read {file}: {getattr(e, 'strerror', None) or e}") from None
    if len(raw) > MAX_DETECT_BYTES:
        raise PgrigError(
            f"{source}: longer than {MAX_DETECT_BYTES // 2**20} MiB: a series is at most "
            f"{changepoints.MAX_POINTS} `label,value` lines"
        )
    labels, values = changepoints.parse_csv(text, source)
    found = changepoints.detect(
        values, labels, max_p_value=max_p_value, permutations=permutations,
        min_size=min_size, seed=seed,
    )  # fmt: skip
    if as_json:
        print_json(found.to_dict())
        return
    _print_changes(found.to_dict(), len(values))


MAX_DETECT_BYTES = 4 * 2**20  # 1,000 `label,value` lines of 4 KiB each


def _print_changes(doc: dict[str, Any], points: int) -> None:
    con = out_console()
    changes = doc["changes"]
    if not changes:
        con.print(
            f"no change point in {points} points (p <= {doc['max_p_value']:g}, "
            f"{doc['permutations']} permutations)",
            highlight=False,
        )
        return
    from rich.table import Table

    table = Table(title=f"{len(changes)} change point(s) in {points} points", title_justify="left")
    for col in ("index", "first point", "before", "after", "change", "p", "confidence"):
        table.add_column(col, justify="left" if col == "first point" else "right")
    for c in changes:
        table.add_row(
            str(c["index"]),
            c["label"],
            f"{c['before']:,.4g}",
            f"{c['after']:,.4g}",
            "from 0" if c["change_pct"] is None else f"{c['change_pct']:+.2f}%",
            f"{c['p_value']:.3f}",
            f"{c['confidence'] * 100:.1f}%",
        )
    con.print(table)


def parse_threshold(text: str) -> float:
    """'2.5%' -> 0.025; '0.025' -> 0.025."""
    t = text.strip()
    number = t.removesuffix("%")
    try:
        if not ascii_number(number):  # float() reads "٢.٥" and "nan" too
            raise ValueError(number)
        value = float(number) / 100 if t.endswith("%") else float(number)
    except ValueError:
        raise PgrigError(
            f"--threshold {text!r}: give a fraction (0.025) or a percentage (2.5%)"
        ) from None
    if not 0 <= value < 1:
        raise PgrigError(f"--threshold {text!r} must be between 0 and 100%")
    return value


@app.command("measure", hidden=True)
def measure(
    name: Annotated[str, typer.Argument(help="The series' name.")],
    versions: Annotated[
        str | None,
        typer.Option(
            "--versions",
            help="Majors (15,18), exact minors (18.3,18.6), ranges (17.0..17.6: every minor some "
            "catalogue offers); comma-separated.",
        ),
    ] = None,
    workload: Annotated[
        str | None, typer.Option("--workload", "-w", help="pgbench:tpcb|pgbench:select-only|...")
    ] = None,
    scale: Annotated[int, typer.Option("--scale", help="pgbench scale of the data.")] = 1,
    clients: Annotated[int, typer.Option("--clients", "-c")] = 1,
    threads: Annotated[int, typer.Option("--threads", "-j")] = 1,
    duration: Annotated[float, typer.Option("--duration", "-T", help="Measured seconds.")] = 10.0,
    warmup: Annotated[float, typer.Option("--warmup", help="Seconds before measuring.")] = 0.0,
    protocol: Annotated[str, typer.Option("--protocol", "-M")] = "simple",
    repeat: Annotated[
        int, typer.Option("--repeat", help="Runs per version, interleaved round-robin.")
    ] = 3,
    profile: Annotated[
        str, typer.Option("--profile", help="Settings profile of every cluster.")
    ] = "default",
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="Setting k=v of every cluster.")
    ] = None,
    no_insights: Annotated[
        bool,
        typer.Option(
            "--no-insights",
            help="Clusters without pgrig's insights layer (pg_stat_statements, auto_explain): "
            "the same settings as server-only builds, which cannot have it.",
        ),
    ] = False,
    bisect: Annotated[
        bool,
        typer.Option(
            "--bisect",
            help="Measure the ends of each range, then bisect the versions inside where a "
            "change shows, and confirm it by re-running both sides interleaved.",
        ),
    ] = False,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="CI: exit 1 when the newest version is slower than the one before it "
            "(the comparison engine's verdict at 95% beyond --threshold).",
        ),
    ] = False,
    threshold: ThresholdOpt = "2%",
    archive: ArchiveOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="The series as JSON on stdout.")] = False,
    destroy: Annotated[
        bool,
        typer.Option(
            "--destroy",
            help="Remove the series' environments (trk-NAME-VERSION: clusters and data) "
            "instead of measuring; the runs and the series stay in the archive.",
        ),
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="--destroy without asking.")] = False,
    force: Annotated[
        bool, typer.Option("--force", help="--destroy even while a run holds an environment.")
    ] = False,
) -> None:
    """Measure (or resume, or extend) the series NAME across PostgreSQL versions."""
    from pgrig.cli import common
    from pgrig.cli.run import parse_pairs
    from pgrig.track import flow

    limit = parse_threshold(threshold)
    store = common.open_archive(archive)
    if destroy:
        given = [flag for flag, on in (("--versions", versions), ("--workload", workload),
                                       ("--bisect", bisect), ("--check", check)) if on]  # fmt: skip
        if given:
            raise PgrigError(f"--destroy measures nothing: drop {', '.join(given)}")
        _destroy(store, name, yes, force, as_json)
        return
    spec = None
    if workload is not None:
        load = flow.series_load(
            workload=workload, clients=clients, threads=threads, duration=duration,
            warmup=warmup, protocol=protocol,
        )  # fmt: skip
        spec = flow.make_spec(
            name, load, scale=scale, repeat=repeat, profile=profile,
            settings=parse_pairs(set_, "--set", setting=True), insights=not no_insights,
        )  # fmt: skip
    console = err_console()
    try:
        outcome = flow.run(
            store, name, spec, versions, bisect=bisect, check=check, threshold=limit,
            console=console,
        )  # fmt: skip
    except flow.TrackInterrupted as stop:
        console.print(f"[yellow]interrupted[/yellow]: {stop}; run the same command to resume")
        sys.exit(130)
    chk = outcome.get("check")
    if as_json:
        print_json({"series": outcome["view"].to_dict(), "check": chk})
    else:
        _print_page(outcome["view"], chk)
    if check and chk and chk.get("regression"):
        sys.exit(1)


def _destroy(store: RunStore, name: str, yes: bool, force: bool, as_json: bool) -> None:
    from pgrig.cli import common
    from pgrig.track import cleanup, runner

    envs = cleanup.environments(runner.load_series(store, name, with_runs=False))
    if envs:
        common.confirm(f"Destroy {', '.join(envs)} and all their data?", yes)
    console = err_console()
    done = cleanup.destroy(store, name, force, lambda m: console.print(m, highlight=False))
    if as_json:
        print_json({"series": name, "destroyed": done})
    elif not done:
        console.print(f"series {name}: no environment to destroy", highlight=False)


@app.command("show")
def show(
    name: Annotated[str, typer.Argument(help="The series' name.")],
    threshold: ThresholdOpt = "2%",
    archive: ArchiveOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """The series per version (centre and 95% bounds), steps between versions, change points."""
    from pgrig.cli import common
    from pgrig.track import figures, runner

    store = common.reading_archive(archive)
    series = runner.load_series(store, name)
    series_view = figures.build(series, parse_threshold(threshold), archive=store)
    if as_json:
        print_json(series_view.to_dict())
        return
    _print_page(series_view)


def _print_page(series_view: SeriesView, check: Mapping[str, object] | None = None) -> None:
    """The page model (views/track.py) on the terminal."""
    from pgrig.cli import render
    from pgrig.views import track as track_page

    page = track_page.build(series_view, check)
    render.show(
        render.items(page.title, [("status", page.status), ("each version", page.subtitle)])
    )
    render.print_table(page.versions)
    for caveat in page.caveats:
        render.note(caveat, "yellow")
    render.note(page.verdict_note)
    render.print_table(page.changes)
    if page.bisections is not None:
        render.print_table(page.bisections)
    for warning in page.warnings:  # what the page and the report say under each point's set-up
        render.note(warning, "yellow")
    if page.check:
        render.show(render.items("check", page.check))
