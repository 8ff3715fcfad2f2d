"""A study as every surface shows it, computed once: `pgrig study show` (text and --json), the
study page and `pgrig study report` render this (the page shows the report's document).

Per point: its runs (every status) and the ok ones the figures use, TPS (the Hodges-Lehmann
centre of the repeats with distribution-free bounds), latency, the comparison engine's
verdicts with bounds against the point(s) it is compared with (iterations: the previous one
and iteration 0; sweeps: the point at the comparison axis's first value), the evidence (what
the runs show, a host that differed) and the study file's note. Over the points: the best
one and its verdict against the runner-up, and the notes every table of verdicts needs. Per
point and host: CPU and the RTT of each network path (views/study_hosts.py).

The figures underneath come from views/study_data.py (load_study, PointSummary).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from pgrig import format as fmt
from pgrig.analysis.compare import BLOCK_S, Comparison
from pgrig.format import verdict_style
from pgrig.study.plan import Point, display_value
from pgrig.table import Cell, CellValue, Table
from pgrig.views import evidence as evidence_of
from pgrig.views import harness_cost, study_hosts
from pgrig.views.compare import paired_note
from pgrig.views.study_data import (
    Interval,
    PointSummary,
    StudyData,
    compare_points,
    fmt_interval,
)


@dataclass
class Verdict:
    """One comparison of a point: its column title and the engine's answer."""

    title: str  # "vs previous", "vs iteration 0", "vs via=direct"
    comparison: Comparison | None
    role: str = ""  # "baseline": the point is its own reference; "": compared, or nothing to

    @property
    def lines(self) -> list[str]:
        """'x1.087 [1.061, 1.112]' over the verdict; ' *' when the bounds are the widest."""
        c = self.comparison
        if c is None:
            return [self.role or fmt.MISSING]
        star = " *" if c.insufficient else ""
        return [c.ratio_text(), c.verdict_text() + star]

    @property
    def style(self) -> str:
        return verdict_style(self.comparison.verdict if self.comparison else None)

    def cell(self) -> Cell:
        return Cell(self.lines, self.style)

    def as_dict(self) -> dict[str, object]:
        c = self.comparison
        return {"title": self.title, **(c.as_dict() if c is not None else {"role": self.role})}


@dataclass
class PointView:
    index: int
    key: str
    label: str
    summary: PointSummary  # the figures (views/study_data.py)
    repeats: int  # planned per point
    verdicts: list[Verdict]
    evidence: list[str]
    evidence_warn: bool  # the host differed from the baseline point's
    note: str | None
    best: bool = False
    # what pgrig itself took from the point's runs (medians; views/harness_cost.py)
    harness: harness_cost.HarnessCost = field(
        default_factory=lambda: harness_cost.HarnessCost(False)
    )

    @property
    def run_ids(self) -> list[int]:
        return [r.id for r in self.summary.runs if r.id is not None]

    @property
    def ok(self) -> int:
        return len(self.summary.samples)

    @property
    def failed(self) -> int:
        return self.summary.failed

    @property
    def tps(self) -> Interval | None:
        return self.summary.tps

    @property
    def runs_text(self) -> str:
        text = f"{self.ok}/{self.repeats}"
        return text + (f" ({self.failed} failed)" if self.failed else "")

    @property
    def tps_lines(self) -> list[str]:
        return fmt_interval(self.tps)

    def latency(self, q: str) -> float | None:
        return self.summary.latency.get(q)


@dataclass
class StudyView:
    name: str
    kind: str
    status: str
    created_at: datetime | None
    description: str | None
    repeats: int
    threshold: float
    misrate: float
    verdict_titles: list[str]  # one per Verdict of every point, in order
    points: list[PointView]
    data: StudyData
    best: PointView | None = None
    best_against: Comparison | None = None  # the best point against the runner-up
    runner_up: PointView | None = None
    notes: list[str] = field(default_factory=list)  # what the verdict cells need said once
    hosts: study_hosts.StudyHosts = field(default_factory=lambda: study_hosts.StudyHosts([]))
    # "interrupted: 5 of 12 runs done; ...": a study that did not end, said first on every
    # surface (None: it ended)
    unfinished: str | None = None

    @property
    def title(self) -> str:
        return f"{self.name} ({self.kind}, {self.status})"

    @property
    def figure_label(self) -> str:
        """What the points are judged on: "TPS", or a TPC-H test's "Power@Size"..."""
        return self.data.plan.figure.label

    @property
    def best_text(self) -> str | None:
        """'best: asynchronous commit, TPS 1,650.2 [1,630.0, 1,671.9]; against the runner-up
        shared_buffers=1GB: x1.331 [1.310, 1.352] faster', or None without figures."""
        b = self.best
        if b is None or b.tps is None:
            return None
        text = f"best: {b.label}, {self.figure_label} {fmt.number(b.tps.center)}"
        text += f" [{fmt.number(b.tps.lower)}, {fmt.number(b.tps.upper)}]"
        c, r = self.best_against, self.runner_up
        if c is not None and r is not None:
            text += f"; against the runner-up {r.label}: {c.ratio_text()} {c.verdict_text()}"
        elif len([p for p in self.points if p.tps is not None]) == 1:
            text += " (the only point with figures)"
        return text


# --- build -----------------------------------------------------------------------------------


def build(data: StudyData) -> StudyView:
    spec = data.spec
    if spec.kind == "sweep" and spec.sweep is not None:
        titles, per_point = _sweep_verdicts(data)
    else:
        titles, per_point = _iteration_verdicts(data)
    baseline = data.points[0] if data.points else None
    points = []
    for ps, verdicts in zip(data.points, per_point, strict=True):
        lines, warn = evidence(ps, baseline)
        points.append(
            PointView(
                index=ps.point.index,
                key=ps.point.key,
                label=ps.point.label,
                summary=ps,
                repeats=spec.repeats,
                verdicts=verdicts,
                evidence=lines,
                evidence_warn=warn,
                note=ps.point.note,
                harness=harness_cost.of_group(ps.ok),
            )
        )
    rec = data.record
    view = StudyView(
        name=rec.name,
        kind=rec.kind,
        status=rec.status,
        created_at=rec.created_at,
        description=spec.description,
        repeats=spec.repeats,
        threshold=spec.threshold,
        misrate=spec.misrate,
        verdict_titles=titles,
        points=points,
        data=data,
        hosts=study_hosts.build(data.points),  # each point's hosts: CPU, RTT
    )
    if rec.status != "done":
        done = sum(len(p.ok) for p in data.points)
        view.unfinished = (
            f"{rec.status}: {done} of {len(data.plan.runs)} runs done; its figures, verdicts "
            "and best point rest on those runs alone"
        )
    _pick_best(view)
    view.notes = comparison_notes([v.comparison for p in points for v in p.verdicts])
    if view.best_against is not None:
        view.notes = _merge(view.notes, comparison_notes([view.best_against]))
    return view


def _merge(a: list[str], b: list[str]) -> list[str]:
    return [*a, *(n for n in b if n not in a)]


def _iteration_verdicts(data: StudyData) -> tuple[list[str], list[list[Verdict]]]:
    """Each iteration against the previous one and against iteration 0."""
    spec = data.spec
    first = data.points[0] if data.points else None
    out: list[list[Verdict]] = []
    prev: PointSummary | None = None
    for ps in data.points:
        d_prev = compare_points(prev, ps, spec.threshold, spec.misrate) if prev else None
        d_base = None
        if first is not None and ps is not first:
            d_base = compare_points(first, ps, spec.threshold, spec.misrate)
        out.append(
            [
                Verdict("vs previous", d_prev),
                Verdict("vs iteration 0", d_base, "baseline" if ps is first else ""),
            ]
        )
        prev = ps
    return ["vs previous", "vs iteration 0"], out


def _sweep_verdicts(data: StudyData) -> tuple[list[str], list[list[Verdict]]]:
    """Each point against the one that differs only along the comparison axis, at that
    axis's first value (sweeps without a comparison axis: none)."""
    sweep = data.spec.sweep
    assert sweep is not None
    axis = sweep.compare_axis()
    if axis is None:
        return [], [[] for _ in data.points]
    title = f"vs {axis_value(axis, sweep.dimension(axis).values[0])}"
    refs = sweep_references(data, axis)
    out = []
    for ps in data.points:
        ref = refs.get(ps.point.key)
        if ref is None:
            out.append([Verdict(title, None)])
        elif ref is ps:
            out.append([Verdict(title, None, "baseline")])
        else:
            c = compare_points(ref, ps, data.spec.threshold, data.spec.misrate)
            out.append([Verdict(title, c)])
    return [title], out


def axis_value(axis: str, value: object) -> str:
    return f"{axis.removeprefix('settings.')}={display_value(value)}"


def sweep_references(data: StudyData, axis: str | None) -> dict[str, PointSummary]:
    """Point key -> the point it is compared with: the same coordinates except `axis`, which
    is at its first value (a point at that value is its own reference)."""
    sweep = data.spec.sweep
    if axis is None or sweep is None:
        return {}
    first = sweep.dimension(axis).values[0]

    def others(ps: PointSummary) -> tuple:
        return tuple(sorted((k, str(v)) for k, v in ps.point.coords.items() if k != axis))

    base = {others(ps): ps for ps in data.points if ps.point.coords.get(axis) == first}
    return {ps.point.key: base[others(ps)] for ps in data.points if others(ps) in base}


def _pick_best(view: StudyView) -> None:
    """The point with the highest TPS centre, and the engine's verdict against the runner-up
    (whether the best is distinguishable from the next one)."""
    ranked = sorted(
        (p for p in view.points if p.tps is not None),
        key=lambda p: p.tps.center if p.tps else 0.0,
        reverse=True,
    )
    if not ranked:
        return
    view.best = ranked[0]
    ranked[0].best = True
    if len(ranked) > 1:
        view.runner_up = ranked[1]
        view.best_against = compare_points(
            ranked[1].summary, ranked[0].summary, view.threshold, view.misrate
        )


# --- evidence and notes ----------------------------------------------------------------------


def evidence(ps: PointSummary, baseline: PointSummary | None) -> tuple[list[str], bool]:
    """What the point's runs show and whether its host differed from the baseline point's
    (views/evidence.py)."""
    if baseline is None or ps is baseline:
        return evidence_of.lines(ps.ok), False
    return evidence_of.against(ps.ok, baseline.ok, baseline.point.label)


def comparison_notes(comparisons: list[Comparison | None]) -> list[str]:
    """What the comparison cells need said once: caveats, the widest bounds ('*'), indicative
    comparisons of single runs, and how to get a verdict where there is none."""
    done = [c for c in comparisons if c is not None]
    notes = sorted({f"Caution, {c.caveat}." for c in done if c.caveat})
    if any(c.insufficient for c in done):
        notes.append(
            "* too few values for the requested bounds: the widest bounds are shown (they hold "
            "less often than asked) and the verdict is weaker than stated; add repeats."
        )
    if any(c.indicative for c in done):
        notes.append(
            f"Indicative: single runs compared by the means of blocks of at least "
            f"{BLOCK_S:g} s of their per-second TPS; one run cannot show how much a repeat "
            "would differ, so repeat the runs for a firm verdict."
        )
    paired = paired_note(done)
    if paired:
        notes.append(paired[0].upper() + paired[1:] + ".")
    notes += sorted({f"No verdict: {c.advice}." for c in done if c.verdict is None and c.advice})
    return notes


def changes_lines(point: Point, previous: Point | None, run_changes: dict) -> list[str]:
    """What an iteration changed: settings (None = back to the profile), run, actions."""
    lines = []
    for name, value in point.changes.items():
        lines.append(f"{name}={value}" if value is not None else f"{name}: reset")
    if previous is not None and previous.env_key != point.env_key:
        lines.insert(0, f"environment: {point.env_key}")
    for key, value in run_changes.items():
        lines.append(f"run.{key}={value}")
    if point.actions:
        lines.append("actions: " + ", ".join(point.actions))
    return lines or ["(no change)"]


def evidence_cell(p: PointView) -> Cell:
    return Cell(p.evidence, "warn" if p.evidence_warn else None) if p.evidence else Cell.of(None)


# --- the terminal's table and the JSON -------------------------------------------------------


def points_table(view: StudyView, with_evidence: bool = True) -> Table:
    """One row per point: runs, TPS with bounds, each verdict with bounds, p95, the evidence
    and the note where any point has them, and the run ids (`study show`; the reports' tables
    carry the same cells and more). with_evidence=False: the terminal, which says each
    point's evidence under the table (evidence_items) to keep the rows within 120 columns."""
    rows: list[list[CellValue]] = []
    any_evidence = with_evidence and any(p.evidence for p in view.points)
    any_notes = any(p.note for p in view.points)
    for p in view.points:
        row: list[CellValue] = [
            str(p.index),
            p.label + (" (best)" if p.best else ""),
            p.runs_text,
            Cell(p.tps_lines),
            *(v.cell() for v in p.verdicts),
            fmt.ms(p.latency("p95")),
        ]
        if any_evidence:
            row.append(evidence_cell(p))
        if any_notes:
            row.append(p.note or "")
        row.append(", ".join(str(i) for i in p.run_ids) or None)
        rows.append(row)
    columns = ["#", "point", "runs", f"{view.figure_label} [bounds]", *view.verdict_titles]
    columns.append("p95 ms")
    columns += [*(["evidence"] if any_evidence else []), *(["note"] if any_notes else [])]
    columns.append("run ids")
    numeric = {0, 2, 3, *range(4, 5 + len(view.verdict_titles))}
    return Table.build(columns, rows, numeric=numeric)


def evidence_items(view: StudyView) -> list[tuple[str, str]]:
    """(point, its evidence on one line) for the points whose runs show any."""
    return [(p.label, "; ".join(p.evidence)) for p in view.points if p.evidence]


HARNESS_TITLE = "harness (pgrig's own cost, medians per point)"


def harness_items(view: StudyView) -> list[tuple[str, str]]:
    """(point, the harness cost of its runs) for the points with successful runs: what pgrig
    itself took from them, as `runs show` says it."""
    return [(p.label, p.harness.text) for p in view.points if p.summary.ok]


def to_json(view: StudyView) -> dict[str, object]:
    """`study show --json`: the study and, per point, the figures and verdicts shown."""
    points = []
    for p in view.points:
        points.append(
            {
                "key": p.key,
                "label": p.label,
                "ok": p.ok,
                "repeats": p.repeats,
                "failed": p.failed,
                "tps": p.tps.center if p.tps else None,
                "tps_lower": p.tps.lower if p.tps else None,
                "tps_upper": p.tps.upper if p.tps else None,
                "tps_bounds_insufficient": p.tps.insufficient if p.tps else None,
                "p95_ms": p.latency("p95"),
                "verdicts": [v.as_dict() for v in p.verdicts],
                "evidence": p.evidence,
                "harness": p.harness.as_dict(),
                "note": p.note,
                "best": p.best,
                "run_ids": p.run_ids,
            }
        )
    best = None
    if view.best is not None:
        best = {
            "key": view.best.key,
            "label": view.best.label,
            "runner_up": view.runner_up.key if view.runner_up else None,
            "against_runner_up": view.best_against.as_dict() if view.best_against else None,
            "text": view.best_text,
        }
    return {
        "name": view.name,
        "kind": view.kind,
        "status": view.status,
        "unfinished": view.unfinished,
        "created_at": view.created_at,
        "repeats": view.repeats,
        "threshold": view.threshold,
        # what each point's "tps" figures are: TPS, or a TPC-H test's own (plan.figure)
        "figure": {"key": view.data.plan.figure.key, "label": view.figure_label},
        "points": points,
        "best": best,
        "notes": view.notes,
        "hosts": study_hosts.to_json(view.hosts),
    }
