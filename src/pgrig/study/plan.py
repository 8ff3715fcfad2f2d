"""Expand a study into an ordered list of points and of runs (points x repeats).

A point is one configuration: an environment, the full study settings layer for it, the run
parameters, and the actions to take when the study arrives at it. Its key is stable (it is
stored with every run as `study_point`), which is what makes resuming and reporting work.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from pathlib import Path

from pgrig.analysis import rounds
from pgrig.record.figures import Figure, judged_figure
from pgrig.request import CHBENCH_FIELDS, TPCH_FIELDS, RunRequest, load_values
from pgrig.study.spec import StudyRun, StudySpec, StudySpecError, SweptValue, point_run

# Rough cost of what surrounds a run (connect, checkpoint, stats snapshots), for the ETA only.
RUN_OVERHEAD_S = 4.0
POINT_OVERHEAD_S = 5.0


@dataclass(frozen=True)
class Point:
    index: int
    key: str  # stable id stored as RunRecord.study_point: "iter-03", "clients=8,via=direct"
    label: str  # for people: the iteration name, or the sweep coordinates
    env_key: str
    settings: dict[str, str]  # the full study layer on this environment at this point
    changes: dict[str, str | None]  # vs the previous point (None: reset to the profile value)
    actions: tuple[str, ...]
    run: StudyRun
    coords: dict[str, SweptValue] = field(default_factory=dict)  # sweep coordinates
    note: str | None = None
    origins: dict[str, str] = field(default_factory=dict)  # setting -> key path that set it

    def series_label(self, series: tuple[str, ...]) -> str:
        """The line this point belongs to in a sweep chart ("via=pgbouncer, workload=read")."""
        return ", ".join(f"{_short(d)}={display_value(self.coords[d])}" for d in series) or "all"


@dataclass(frozen=True)
class PlannedRun:
    seq: int  # 0-based position in the plan
    point: Point
    repeat: int  # 0-based


@dataclass
class Plan:
    study: StudySpec
    points: list[Point]
    runs: list[PlannedRun]

    def point(self, key: str) -> Point | None:
        return next((p for p in self.points if p.key == key), None)

    @property
    def figure(self) -> Figure:
        """The figure the study judges its points on: TPS, or a TPC-H test's own
        (record/figures.judged_figure; build() refused points that share none)."""
        return judged_figure(p.run.workload for p in self.points)

    def estimated_seconds(self, runs: list[PlannedRun] | None = None) -> float | None:
        """Planned wall time of `runs` (default: all); None when runs are transaction-bound."""
        total = 0.0
        for r in self.runs if runs is None else runs:
            planned = r.point.run.planned_seconds()
            if planned is None:
                return None
            total += planned + RUN_OVERHEAD_S
        return total + POINT_OVERHEAD_S * len(self.points)

    def run_request(self, planned: PlannedRun) -> RunRequest:
        """The request for one planned run (the environment name is the study's own)."""
        p = planned.point
        env = self.study.environments[p.env_key]
        tags = dict(self.study.tags) | {"study": self.study.name, "point": p.label[:200]}
        return RunRequest(
            **load_values(p.run),
            **{name: getattr(p.run, name) for name in (*TPCH_FIELDS, *CHBENCH_FIELDS)},
            env_name=env.name,
            database=self.study.dataset.database,
            scenario=self.study.dataset.scenario,
            note=p.note or p.label,
            tags=tags,
            study=self.study.name,
            study_point=p.key,
            repeat=planned.repeat,
            backup_during=p.run.backup,
            load_from=list(p.run.load_from),
        )


def build(study: StudySpec) -> Plan:
    points = _iteration_points(study) if study.kind == "iterations" else _sweep_points(study)
    if study.order == "interleaved":
        order = [(p, rep) for rep in range(study.repeats) for p in _round_order(study, points, rep)]
    else:
        order = [(p, rep) for p in points for rep in range(study.repeats)]
    runs = [PlannedRun(i, p, rep) for i, (p, rep) in enumerate(order)]
    plan = Plan(study, points, runs)
    try:
        plan.figure  # noqa: B018 - the points share a figure to judge, or the study is refused
    except ValueError as e:
        raise StudySpecError(f"run.workload: {e}") from None
    return plan


def _round_order(study: StudySpec, points: list[Point], rep: int) -> list[Point]:
    """The points of one interleaved round, in an order of the round's own (analysis/rounds.py:
    in one fixed order, a 3-point study judged a point x1.12 faster than the same
    configuration)."""
    return rounds.shuffled(points, f"study:{study.name}", rep)


def _iteration_points(study: StudySpec) -> list[Point]:
    points = []
    layer: dict[str, str] = {}
    layer_origins: dict[str, str] = {}
    env_key = study.default_env
    prev_env_settings: dict[str, str] = {}
    for it in study.iterations:
        env_key = it.environment or env_key
        env = study.environments[env_key]
        layer = {k: v for k, v in layer.items() if k not in it.reset} | it.settings
        layer_origins |= {k: f"iterations[{it.index}].settings.{k}" for k in it.settings}
        settings = env.settings | layer
        origins = {k: f"{env.path}.settings.{k}" for k in env.settings} | {
            k: layer_origins[k] for k in layer
        }
        if it.index == 0:
            changes: dict[str, str | None] = dict(settings)
        else:
            changes = {k: v for k, v in settings.items() if prev_env_settings.get(k) != v}
            changes |= {k: None for k in prev_env_settings if k not in settings}
        prev_env_settings = settings
        points.append(
            Point(
                index=it.index,
                key=f"iter-{it.index:02d}",
                label=it.name,
                env_key=env_key,
                settings=settings,
                changes=changes,
                actions=it.actions,
                run=it.run or study.run,
                coords={"iteration": it.index},
                note=it.note,
                origins=origins,
            )
        )
    return points


def _sweep_points(study: StudySpec) -> list[Point]:
    assert study.sweep is not None
    dims = study.sweep.dimensions
    points = []
    prev: dict[str, str] = {}
    for index, values in enumerate(itertools.product(*(d.values for d in dims))):
        coords = {d.name: v for d, v in zip(dims, values, strict=True)}
        env_key = study.default_env
        if "environment" in coords:
            env_key = str(coords["environment"])
        elif "version" in coords:
            env_key = f"pg{coords['version']}"
        env = study.environments[env_key]
        settings = dict(env.settings)
        origins = {k: f"{env.path}.settings.{k}" for k in env.settings}
        for dim, value in zip(dims, values, strict=True):
            if dim.is_setting:
                setting = dim.name.removeprefix("settings.")
                settings[setting] = str(value)  # setting_value's text
                origins[setting] = f"sweep.{dim.name}[{dim.values.index(value)}]"
        run = point_run(study.run, coords)
        changes: dict[str, str | None] = {k: v for k, v in settings.items() if prev.get(k) != v} | {
            k: None for k in prev if k not in settings
        }
        prev = settings
        key = ",".join(f"{_short(n)}={_key_value(display_value(v))}" for n, v in coords.items())
        points.append(
            Point(
                index=index,
                key=key[:250],
                label=", ".join(f"{_short(n)}={display_value(v)}" for n, v in coords.items()),
                env_key=env_key,
                settings=settings,
                changes=changes,
                actions=(),
                run=run,
                coords=coords,
                origins=origins,
            )
        )
    if len({p.key for p in points}) != len(points):  # two scripts with one file name
        points = [
            replace(p, key=",".join(f"{_short(n)}={_key_value(v)}" for n, v in p.coords.items()))
            for p in points
        ]
    return points


def _short(dimension: str) -> str:
    return dimension.removeprefix("settings.")


def _key_value(value: object) -> str:
    return str(value).replace(",", ";")


def display_value(value: object) -> str:
    """Script paths show as their file names; numbers without trailing zeros."""
    if isinstance(value, float):
        return f"{value:g}"
    text = str(value)
    if ".sql" in text:
        return ",".join(Path(part).name for part in text.split(","))
    return text
