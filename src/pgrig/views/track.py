"""A version series as every surface shows it: `pgrig track show`, the page /track/NAME and
`pgrig report track NAME` render this page model (the chart is the report's, drawn by
reports/svg.py from the same SeriesView).

The figures come from track/figures.py's SeriesView (centre, bounds, steps by the comparison
engine, change points); here they become text: numbers by pgrig/format.py, tables as
pgrig/table.py's Table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePath

from pgrig import format as fmt
from pgrig.table import Cell, CellValue, Table
from pgrig.track.figures import SeriesView


@dataclass
class TrackPage:
    name: str
    title: str
    subtitle: str
    status: str
    about: list[tuple[str, str]]
    versions: Table
    run_ids: dict[str, list[int]]  # version -> its runs (pages link them)
    caveats: list[str]
    changes: Table
    bisections: Table | None
    environments: Table
    warnings: list[str] = field(default_factory=list)
    check: list[tuple[str, str]] | None = None
    verdict_note: str = ""


def build(v: SeriesView, check: Mapping[str, object] | None = None) -> TrackPage:
    return TrackPage(
        name=v.name,
        title=f"Version series {v.name}",
        subtitle=v.measures,
        status=v.status,
        about=about(v),
        versions=versions_table(v),
        run_ids={p.version: list(p.runs) for p in v.points},
        caveats=[f"{s['from']} -> {s['to']}: {c}" for s in v.steps for c in s.get("caveats", [])],
        changes=changes_table(v),
        bisections=bisections_table(v),
        environments=environments_table(v),
        warnings=sorted({w for p in v.points for w in p.warnings}),
        check=check_items(check) if check else None,
        verdict_note=verdict_rules(v.threshold),
    )


def about(v: SeriesView) -> list[tuple[str, str]]:
    det = v.detection
    return [
        ("series", v.name),
        ("status", v.status),
        ("each version", v.measures),
        ("metric", f"{v.metric_label} ({'higher' if v.higher_is_better else 'lower'} is better)"),
        ("centre and bounds", "Hodges-Lehmann centre of the runs, distribution-free 95% bounds"),
        (
            "change points",
            f"{det.get('method', '')}, p <= {det.get('max_p_value', '-')}, "
            f"{det.get('permutations', '-')} permutations, cuts between versions only",
        ),
    ]


def step_cell(step: Mapping[str, object] | None) -> CellValue:
    if step is None:
        return None
    lines = [f"{step['text']} {step['verdict_text']}"]
    if step.get("insufficient"):
        lines.append(str(step["basis"]))
    verdict = step.get("verdict")
    return Cell(lines, fmt.verdict_style(verdict if isinstance(verdict, str) else None))


def versions_table(v: SeriesView) -> Table:
    """Per version: its runs, centre and bounds, the step from the previous version with its
    verdict, and the evidence (what its runs show) where any version's runs collected it."""
    steps = {s["to"]: s for s in v.steps}
    any_evidence = any(p.evidence for p in v.points)
    rows: list[list[CellValue]] = []
    for p in v.points:
        status = p.status + (f": {p.reason}" if p.reason else "")
        source = (p.source or fmt.MISSING) + (" (server only)" if p.server_only else "")
        bounds = (
            fmt.MISSING if p.lower is None else f"[{fmt.number(p.lower)}, {fmt.number(p.upper)}]"
        )
        row: list[CellValue] = [
            p.version,
            source,
            Cell([status], None if p.status == "ok" else "warn"),
            ", ".join(str(r) for r in p.runs) or None,
            fmt.number(p.centre),
            bounds,
            step_cell(steps.get(p.version)),
        ]
        if any_evidence:
            row.append(p.evidence or None)
        rows.append(row)
    columns = ["version", "binaries", "status", "runs", v.metric_label, "95% bounds"]
    columns += ["vs previous", *(["evidence"] if any_evidence else [])]
    return Table.build(columns, rows, caption="Per version", numeric={4})


def changes_table(v: SeriesView) -> Table:
    rows: list[list[CellValue]] = [
        [
            c["version"],
            c["after_version"] or None,
            fmt.signed_pct(c["ratio"]),
            fmt.MISSING if c["ratio"] is None else f"x{c['ratio']:.3f}",
            f"{fmt.number(c['before'])} -> {fmt.number(c['after'])}",
            f"{fmt.percent(c['confidence'] * 100)} (p={c['p_value']:.3f})",
        ]
        for c in v.changes
    ]
    note = (
        "A change point's first version is the first whose runs are at the new level; levels "
        "are the means of the runs between neighbouring change points."
        if rows
        else v.detection.get("note") or "no change point at this significance"
    )
    return Table.build(
        ["first version", "after", "magnitude", "ratio", "level", "confidence"],
        rows,
        caption="Change points",
        note=note,
    )


def bisections_table(v: SeriesView) -> Table | None:
    if not v.bisections:
        return None
    rows: list[list[CellValue]] = []
    for b in v.bisections:
        conf = b.get("confirmation") or {}
        measured = [s["version"] for s in b.get("steps", []) if s.get("side") != "unmeasured"]
        rows.append(
            [
                f"{b['good']} .. {b['bad']}",
                b.get("direction"),
                b["first_bad"],
                b["last_good"],
                ", ".join(measured) or None,
                Cell(
                    [str(conf.get("description", "not run"))],
                    "good" if b.get("confirmed") else "warn",
                ),
                "yes" if b.get("confirmed") else "no",
            ]
        )
    return Table.build(
        ["between", "change", "first version", "last good", "measured", "confirmation",
         "confirmed"],
        rows,
        caption="Bisections",
        note="Confirmed: the last good and the first version re-run interleaved, and the "
        "comparison engine gives the same verdict at 95%.",
    )  # fmt: skip


def environments_table(v: SeriesView) -> Table:
    rows: list[list[CellValue]] = []
    for p in v.measured():
        settings = [f"{k}={val}" for k, val in sorted(p.settings.items())]
        dirs = sorted({str(PurePath(t).parent) for t in p.client_tools.values()})
        tools = f"{', '.join(sorted(p.client_tools))} from {', '.join(dirs)}" if dirs else "its own"
        rows.append(
            [
                p.version,
                p.server_version,
                p.pgbench_version,
                tools,
                p.env,
                p.host,
                settings or None,
            ]
        )
    return Table.build(
        ["version", "server", "pgbench", "client tools", "environment", "host",
         "non-default settings"],
        rows,
        caption="Settings and environment of each point",
    )  # fmt: skip


def check_items(chk: Mapping[str, object]) -> list[tuple[str, str]]:
    if chk.get("baseline") is None:
        return [("check", str(chk.get("reason")))]
    word = "REGRESSION" if chk.get("regression") else "no regression"
    return [
        ("check", f"{chk['newest']} against {chk['baseline']}: {word}"),
        ("comparison", str(chk.get("description"))),
    ]


def verdict_rules(threshold: float) -> str:
    t = f"{threshold * 100:g}%"
    return (
        f"vs previous: the ratio of a version to the one before it with its bounds, and the "
        f"comparison engine's verdict at the {t} threshold (faster, slower, equivalent, "
        "inconclusive); fewer than 4 runs per side cannot reach 95% bounds, which the cell says."
    )
