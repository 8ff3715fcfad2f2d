"""The hosts of a study, point by point, computed once: `pgrig study show` (text and --json),
`pgrig study report` and the study page (which shows the report's document) render this.

For each point and each of its hosts (views/host_figures.py: what each run measured): the
host's role, its CPU busy, iowait and steal (%, all its CPUs, mean over the measured window),
each process group's CPU (% of one core), the sampler seconds they rest on, and the network
path from the host to where pgbench connected with the RTT p50/p99 of its TCP connects and how
many connects. A point of several runs shows the centre (Hodges-Lehmann) of its ok runs'
figures, with the samples and connects summed over them. A point whose runs have no per-host
figures says "not measured"; a study none of whose runs has any has no hosts table (its runs
ran on this machine alone, whose CPU the study's results already show).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from pgrig import format as fmt
from pgrig.record.json_values import JsonObject, JsonValue
from pgrig.table import Cell, CellValue, Table
from pgrig.views.host_figures import HostRun, PathRun, run_hosts
from pgrig.views.study_data import PointSummary, robust_center

T = TypeVar("T")

NOT_MEASURED = "not measured"
NOTE = (
    "Each host's own sampler over each run's measured window: CPU busy = 100 - idle - iowait of "
    "all the host's CPUs; process CPU in % of one core (server, pooler: pgbouncer, pgbench); "
    "CPU n: sampler seconds. RTT: from the host to where pgbench connected, p50 / p99 of the "
    "TCP connects measured before the load. A point of several runs: the centre of its ok "
    "runs' figures; n summed over them (fewer runs: '(1/2 runs)')."
)


@dataclass
class PathFigures:
    to: str
    to_host: str | None
    kind: str | None
    p50_ms: float | None
    p99_ms: float | None
    samples: int  # connects, over the point's runs
    runs: int  # runs that measured it
    error: str | None = None

    @property
    def target(self) -> str:
        where = self.to_host or self.to
        return f"{where} ({self.kind})" if self.kind else where

    def as_dict(self) -> JsonObject:
        return {
            "to": self.to, "to_host": self.to_host, "kind": self.kind,
            "rtt_p50_ms": self.p50_ms, "rtt_p99_ms": self.p99_ms,
            "samples": self.samples, "runs": self.runs, "error": self.error,
        }  # fmt: skip


@dataclass
class HostFigures:
    host: str
    role: str
    runs: int  # the point's ok runs that had this host
    cpu_runs: int  # of them, those whose sampler measured its CPU
    busy: float | None
    iowait: float | None
    steal: float | None
    cpu_samples: int
    process: dict[str, float | None]
    saturated: tuple[int, int] | None  # load hosts: (runs saturated, runs judged)
    paths: list[PathFigures] = field(default_factory=list)

    def as_dict(self) -> JsonObject:
        return {
            "host": self.host, "role": self.role, "runs": self.runs, "cpu_runs": self.cpu_runs,
            "cpu_busy_pct": self.busy, "cpu_iowait_pct": self.iowait,
            "cpu_steal_pct": self.steal, "cpu_samples": self.cpu_samples,
            "process_cpu_pct": dict(self.process),
            "saturated_runs": list(self.saturated) if self.saturated else None,
            "paths": [p.as_dict() for p in self.paths],
        }  # fmt: skip


@dataclass
class PointHosts:
    index: int
    key: str
    label: str
    runs: int  # ok runs of the point
    hosts: list[HostFigures]

    @property
    def measured(self) -> bool:
        return bool(self.hosts)

    @property
    def reason(self) -> str:
        """Why a point has no host figures."""
        if not self.runs:
            return f"{NOT_MEASURED}: no ok run"
        return f"{NOT_MEASURED}: no per-host samplers in its runs"

    def as_dict(self) -> JsonObject:
        out: JsonObject = {"key": self.key, "label": self.label, "runs": self.runs}
        out["measured"] = self.measured
        out["hosts"] = [h.as_dict() for h in self.hosts]
        if not self.measured:
            out["reason"] = self.reason
        return out


@dataclass
class StudyHosts:
    points: list[PointHosts]

    @property
    def measured(self) -> bool:
        return any(p.measured for p in self.points)


def build(points: Sequence[PointSummary]) -> StudyHosts:
    """Every point's hosts, from its ok runs (the runs its other figures use)."""
    return StudyHosts([_point(ps) for ps in points])


def _point(ps: PointSummary) -> PointHosts:
    per_run = [run_hosts(r) for r in ps.ok]
    keys: list[tuple[str, str]] = []
    for hosts in per_run:
        keys += [(h.host, h.role) for h in hosts if (h.host, h.role) not in keys]
    rows = []
    for host, role in keys:
        runs = [h for hosts in per_run for h in hosts if (h.host, h.role) == (host, role)]
        rows.append(_host(host, role, runs))
    p = ps.point
    return PointHosts(p.index, p.key, p.label, len(ps.ok), rows)


def _centre(runs: Sequence[T], get: Callable[[T], float | None]) -> float | None:
    return robust_center([v for v in (get(r) for r in runs) if v is not None])


def _host(host: str, role: str, runs: list[HostRun]) -> HostFigures:
    groups = list(dict.fromkeys(g for r in runs for g in r.process))
    judged = [r.saturated for r in runs if r.saturated is not None]
    paths: dict[tuple[str, str | None], list[PathRun]] = {}
    for r in runs:
        for path in r.paths:
            paths.setdefault((path.to, path.kind), []).append(path)
    return HostFigures(
        host=host,
        role=role,
        runs=len(runs),
        cpu_runs=sum(1 for r in runs if r.busy is not None),
        busy=_centre(runs, lambda r: r.busy),
        iowait=_centre(runs, lambda r: r.iowait),
        steal=_centre(runs, lambda r: r.steal),
        cpu_samples=sum(r.cpu_samples for r in runs),
        process={g: _process_centre(runs, g) for g in groups},
        saturated=(sum(judged), len(judged)) if judged else None,
        paths=[_path(ps) for ps in paths.values()],
    )


def _process_centre(runs: list[HostRun], group: str) -> float | None:
    return robust_center([v for r in runs if (v := r.process.get(group)) is not None])


def _path(runs: list[PathRun]) -> PathFigures:
    done = [p for p in runs if p.p50_ms is not None]
    first = runs[0]
    return PathFigures(
        to=first.to,
        to_host=first.to_host,
        kind=first.kind,
        p50_ms=_centre(done, lambda p: p.p50_ms),
        p99_ms=_centre(done, lambda p: p.p99_ms),
        samples=sum(p.samples for p in done),
        runs=len(done),
        error=None if done else next((p.error for p in runs if p.error), None),
    )


# --- the one table every surface shows ------------------------------------------------------

COLUMNS = ["point", "host", "role", "busy %", "iowait/steal %", "process CPU %",
           "CPU n", "path to", "RTT p50/p99 ms", "RTT n"]  # fmt: skip


def table(view: StudyHosts) -> Table | None:
    """One row per point and host (a point without figures: one row saying so). None when no
    run of the study has hosts."""
    if not view.measured:
        return None
    rows: list[list[CellValue]] = []
    for p in view.points:
        if not p.measured:
            rows.append([p.label, p.reason, *([None] * (len(COLUMNS) - 2))])
            continue
        for h in p.hosts:
            rows.append([p.label, h.host, _role(h), *_cells(h, p.runs)])
    numeric = {COLUMNS.index(c) for c in ("busy %", "iowait/steal %", "CPU n",
                                          "RTT p50/p99 ms", "RTT n")}  # fmt: skip
    return Table.build(COLUMNS, rows, caption="Hosts", numeric=numeric, note=NOTE)


def _role(h: HostFigures) -> CellValue:
    """The role; a load host the runs judged saturated says in how many of them."""
    if h.saturated and h.saturated[0]:
        return Cell([h.role, f"saturated {h.saturated[0]}/{h.saturated[1]}"], "warn")
    return h.role


def _cells(h: HostFigures, point_runs: int) -> list[CellValue]:
    busy = fmt.number(h.busy, 1) if h.busy is not None else NOT_MEASURED
    wait = None
    if h.iowait is not None or h.steal is not None:
        wait = f"{fmt.number(h.iowait, 1)} / {fmt.number(h.steal, 1)}"
    process = [f"{g} {fmt.number(v, 1)}" for g, v in h.process.items() if v is not None]
    samples = _count(h.cpu_samples, h.cpu_runs, point_runs) if h.cpu_runs else None
    paths = h.paths
    return [
        busy,
        wait,
        process or None,
        samples,
        [p.target for p in paths] or None,
        [_rtt(p) for p in paths] or None,
        [_count(p.samples, p.runs, point_runs) if p.runs else "-" for p in paths] or None,
    ]


def _count(n: int, runs: int, of: int) -> str:
    """A count over the point's runs, with how many runs it covers when not all of them."""
    return str(n) if runs == of else f"{n} ({runs}/{of} runs)"


def _rtt(p: PathFigures) -> str:
    if p.p50_ms is None or p.p99_ms is None:
        return f"{NOT_MEASURED}: {p.error}" if p.error else NOT_MEASURED
    return f"{p.p50_ms:.3f} / {p.p99_ms:.3f}"


def to_json(view: StudyHosts) -> list[JsonValue]:
    """`study show --json`'s "hosts": per point, each host's figures ([] without hosts)."""
    return [p.as_dict() for p in view.points] if view.measured else []
