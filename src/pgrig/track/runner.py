"""Measure a series: for each version, its binaries, a fresh cluster with the same settings and
the same generated data, the same runs; repeats interleaved round-robin across versions.

The series lives in the archive as a study of kind "track" (its name is the series' name):
the spec is the measurement (spec.py), `extra["versions"]` the version points with their source,
status and the reason of any skip or failure, and every run links to it (study, study_point =
the version, repeat). Resuming counts the successful (version, repeat) runs in the archive, so
Ctrl-C or kill -9 lose at most the run that was going on. One server runs at a time; the
environments (trk-<series>-<version>) stay, stopped, for later points, bisection and checks,
until `pgrig track NAME --destroy` (cleanup.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from pgrig.archive.records import RunRecord, StudyRecord
from pgrig.errors import NotFound, PgrigError
from pgrig.format import pgrig_command
from pgrig.record.protocol import RunReader, RunStore
from pgrig.track.spec import KIND, TrackSpec, env_name
from pgrig.track.versions import VersionPoint

if TYPE_CHECKING:
    from pgrig.provision.state.environment import Environment

SERIES_MARK = "track-series"  # in a trk- environment's directory: the series that made it
SERVER_ONLY_NOTE = (
    "server-only build (Maven Central): pgbench and psql from {client}; no contrib, so the "
    "statements and plans insights (pg_stat_statements, auto_explain) are unavailable"
)


@dataclass
class Series:
    """A series as stored: its spec, its version points and its runs."""

    spec: TrackSpec
    points: list[VersionPoint]
    status: str = "running"
    extra: dict[str, Any] = field(default_factory=dict)
    runs: list[RunRecord] = field(default_factory=list)

    def point(self, version: str) -> VersionPoint | None:
        return next((p for p in self.points if p.version == version), None)


def load_series(archive: RunReader, name: str, with_runs: bool = True) -> Series:
    try:
        rec = archive.get_study(name)
    except NotFound:  # said as a series: the user never named a study
        raise NotFound(
            f"no series {name!r} in archive {archive.url} (its series: `pgrig study list`; "
            f"start one: {pgrig_command('track', name, rest='--versions LIST --workload W')})"
        ) from None
    if rec.kind != KIND:
        raise PgrigError(f"{name!r} is a study of kind {rec.kind}, not a version series")
    spec = TrackSpec.from_json(rec.spec)
    points = [VersionPoint.from_dict(d) for d in rec.extra.get("versions", [])]
    spec.repeat = int(rec.extra.get("repeat", spec.repeat))
    runs = archive.study_runs(name) if with_runs else []
    return Series(spec, points, rec.status, dict(rec.extra), runs)


def open_series(
    archive: RunStore, spec: TrackSpec | None, name: str, new_points: list[VersionPoint]
) -> Series:
    """The stored series `name` with `new_points` merged in (created when new). A different
    measurement under the same name is refused: the series would mix two benchmarks."""
    try:
        stored = load_series(archive, name, with_runs=False)
    except NotFound:
        stored = None
    if stored is None:
        if spec is None:
            raise NotFound(
                f"series {name!r} does not exist: give --versions and --workload to start it"
            )
        if not new_points:
            raise PgrigError("--versions: a new series needs at least one version")
        if all(p.status == "skipped" for p in new_points):  # nothing to measure: no series
            found = "; ".join(f"{p.version}: {p.reason}" for p in new_points)
            raise PgrigError(f"--versions: no version of the list can be measured ({found})")
        rec = StudyRecord(name=name, kind=KIND, spec=spec.to_json(),
                          extra={"versions": [p.to_dict() for p in new_points]})  # fmt: skip
        archive.create_study(rec)
        return Series(spec, list(new_points))
    if spec is not None and not stored.spec.same_measurement(spec):
        raise PgrigError(
            f"series {name!r} measures something else ({stored.spec.describe()}): give the same "
            "load, scale, profile and settings, only NAME to resume it, or another name"
        )
    if spec is not None and spec.repeat != stored.spec.repeat:
        stored.spec.repeat = spec.repeat
        archive_update_spec(archive, name, stored.spec)
    known = {p.version for p in stored.points}
    for p in new_points:
        if p.version not in known:
            stored.points.append(p)
        else:
            old = stored.point(p.version)
            if old is not None and old.status == "candidate" and p.status == "planned":
                old.status, old.role = "planned", p.role  # now asked for explicitly
    from pgrig.provision.server.binaries import version_key

    stored.points.sort(key=lambda p: version_key(p.version))
    save_points(archive, name, stored.points)
    return stored


def owner(archive: RunReader, series: str, env_name: str) -> str | None:
    """The series that made environment env_name (its mark), None for one a user made. An
    environment this series ran on before environments were marked is its own (marked now)."""
    from pgrig.provision.state.environment import Environment

    mark = Environment(name=env_name).dir / SERIES_MARK
    found = mark.read_text().strip() if mark.is_file() else None
    if found is None:
        try:
            runs = archive.study_runs(series)
        except NotFound:
            runs = []
        if any(r.env_name == env_name for r in runs):
            found = series
            mark.write_text(series + "\n")
    return found


def refuse_if_foreign(archive: RunReader, series: str, env_name: str) -> None:
    """A trk-SERIES-VERSION environment the series did not make is never taken over."""
    made_by = owner(archive, series, env_name)
    if made_by != series:
        by = f"series {made_by!r}" if made_by else "a user, not by a series"
        raise PgrigError(
            f"environment {env_name} exists, made by {by}: series {series!r} does not take it "
            f"over (remove it with "
            f"`{pgrig_command('env', 'destroy', env_name)}`, or name the series "
            "differently)"
        )


def refuse_foreign_environments(archive: RunReader, series: str, versions: Iterable[str]) -> None:
    """Before the series or any of its runs exists: every version's environment that exists
    already is the series' own (one a user or another series made is refused, nothing made)."""
    from pgrig.provision.state.environment import Environment

    for version in versions:
        name = env_name(series, version)
        if (Environment(name=name).dir / "env.json").is_file():
            refuse_if_foreign(archive, series, name)


def archive_update_spec(archive: RunStore, name: str, spec: TrackSpec) -> None:
    archive.update_study_extra(name, {"repeat": spec.repeat})


def save_points(archive: RunStore, name: str, points: Iterable[VersionPoint]) -> None:
    archive.update_study_extra(name, {"versions": [p.to_dict() for p in points]})


def install_binaries(point: VersionPoint, say: Callable[[str], None]) -> None:
    """`point`'s binaries, installed unless it has them (its bindir, source and client tools
    set). Raises PgrigError when no source has them."""
    from pgrig.provision.server import binaries, maven, sources

    if point.bindir is not None and (Path(point.bindir) / "postgres").exists():
        return
    installed = {i.version for i in binaries.installed()}
    order = (["system"] if point.version in installed else []) + [
        s for s in ("pgrig", "maven") if s in point.sources or not point.sources
    ]
    if point.version not in installed:
        say(f"PostgreSQL {point.version}: installing binaries ({' or '.join(order)})")
    bindir, source = sources.install(point.version, order)
    if source == "system":  # installed before: by whom, as `track show` says it
        source = next(
            (i.source for i in binaries.installed() if Path(i.bindir) == bindir), "system"
        )
    say(f"PostgreSQL {point.version}: binaries {source} ({bindir})")
    point.bindir, point.source = str(bindir), source
    point.client_tools = maven.client_tools(bindir)


class Measurer:
    """Provisioning and runs for one series (the real world; tests of the logic use fakes)."""

    def __init__(self, series: Series, archive: RunStore, console: Console | None = None) -> None:
        self.series = series
        self.archive = archive
        self.console = console or Console(stderr=True)
        self.running: str | None = None  # the environment whose server this process started

    # --- one version ready to run ------------------------------------------------------------
    def prepare(self, point: VersionPoint) -> None:
        """Binaries, environment, data. Raises PgrigError naming what failed."""
        from pgrig.provision.state.environment import Environment

        spec = self.series.spec
        point.env = point.env or env_name(spec.name, point.version)
        install_binaries(point, self._say)
        assert point.bindir is not None  # install_binaries sets it or raises
        if point.source == "maven" and not (Path(point.bindir) / "pgbench").exists():
            raise PgrigError(
                f"PostgreSQL {point.version} is a server-only build and no full build with "
                "pgbench is installed to drive it (pgrig pg install 18)"
            )
        try:
            env = Environment.load(point.env)
        except NotFound:
            env = None
        if env is not None and env.version != point.version:
            raise PgrigError(
                f"environment {point.env} exists with PostgreSQL {env.version}, not "
                f"{point.version} (destroy it: {pgrig_command('env', 'destroy', point.env)})"
            )
        self.switch_to(point)
        self._data(point)

    def switch_to(self, point: VersionPoint) -> None:
        """Make `point`'s server the one running (stopping the previous one we started)."""
        from pgrig.provision import cluster
        from pgrig.provision.state.environment import Environment

        assert point.env is not None
        if self.running == point.env:
            return
        self.stop()
        try:
            env = Environment.load(point.env)
        except NotFound:
            spec = self.series.spec
            self._say(f"  creating environment {point.env} (profile {spec.profile})")
            env = cluster.create_environment(
                spec.environment(point.env, point.version, point.source)
            )
            (env.dir / SERIES_MARK).write_text(spec.name + "\n")
            self.running = point.env
            return
        self.verify(env, point)
        cluster.ensure_running(env)
        self.running = point.env  # ours now: stopped when we move on

    def verify(self, env: Environment, point: VersionPoint) -> None:
        """An existing trk-NAME-VERSION environment is reused only as the series made it:
        one the series did not make is refused (never taken over); settings changed since
        (`env set`) are put back to the series' and said; another profile or insights layer
        is refused (the series would measure something else under its own header)."""
        from pgrig.provision import env_settings
        from pgrig.provision.settings import validator

        spec = self.series.spec
        refuse_if_foreign(self.archive, spec.name, env.name)
        insights = spec.insights and point.source != "maven"
        if env.profile != spec.profile or bool(env.insights) != insights:
            raise PgrigError(
                f"environment {env.name} has profile {env.profile}"
                f"{'' if env.insights else ', no insights layer'}, series {spec.name!r} "
                f"measures profile {spec.profile}{'' if insights else ', no insights layer'}: "
                f"`{pgrig_command('env', 'destroy', env.name)}` and the series makes it again"
            )
        want = validator.normalize(spec.settings)
        if dict(env.settings) == want:
            return
        changed = sorted(
            [f"{k}={v} (series: {want[k]})" if k in want else f"{k}={v} (series: unset)"
             for k, v in env.settings.items() if want.get(k) != v]
            + [f"{k} unset (series: {v})" for k, v in want.items() if k not in env.settings]
        )  # fmt: skip
        env_settings.set_settings(
            env.name, {k: v for k, v in want.items() if env.settings.get(k) != v},
            [k for k in env.settings if k not in want],
        )  # fmt: skip
        self._say(
            f"  {env.name}: settings changed since the series made it, put back to the "
            f"series' ({'; '.join(changed)})"
        )

    def _data(self, point: VersionPoint) -> None:
        from pgrig.provision.state.environment import DEFAULT_DATABASE, Environment
        from pgrig.request import DatasetRequest
        from pgrig.workloads import datasets

        assert point.env is not None
        env = Environment.load(point.env)
        want = DatasetRequest(scenario="pgbench", scale=self.series.spec.scale)
        if datasets.matches(datasets.get(env, DEFAULT_DATABASE), want):
            return
        self._say(f"  generating pgbench data (scale {want.scale}) in {point.env}")
        datasets.generate(env, want)

    def run(self, point: VersionPoint, repeat: int, phase: str) -> RunRecord:
        from pgrig.load.core.runner import execute

        assert point.env is not None
        self.switch_to(point)
        request = self.series.spec.request(
            point.env, point.version, repeat, phase, point.source or "system"
        )
        return execute(request, archive=self.archive, console=self.console, live=False)

    def stop(self) -> None:
        from pgrig.provision import cluster

        if self.running is None:
            return
        name, self.running = self.running, None
        try:
            cluster.stop_environment(name)
        except PgrigError as e:
            self._say(f"  could not stop {name}: {e}")

    def _say(self, text: str) -> None:
        self.console.print(escape(text), highlight=False, soft_wrap=True)


@dataclass
class MeasureResult:
    ran: int = 0
    failed: int = 0
    records: list[RunRecord] = field(default_factory=list)


def measure(
    series: Series,
    measurer: Measurer,
    archive: RunStore,
    versions: list[str] | None = None,
    repeats: Iterable[int] | None = None,
    phase: str = "series",
    say: Callable[[str], None] | None = None,
) -> MeasureResult:
    """Run every (version, repeat) not yet done, round-robin: repeat 0 of each version, then
    repeat 1 of each... A version whose preparation or a run fails is marked failed (with the
    reason) and skipped for the rest of this call; the others go on."""
    from pgrig.request.load import check_repeat

    tell = say or (lambda _t: None)
    name = series.spec.name
    if repeats is None:  # a series stored before --repeat was bounded: one list of 10^9 runs
        try:  # filled the memory of the machine
            check_repeat(series.spec.repeat)
        except PgrigError as e:
            raise PgrigError(
                f"series {name}: {e} (give the series' --workload with --repeat N to change it)"
            ) from None
    wanted = [
        p for p in series.points
        if (versions is None and p.status in ("planned", "ok", "failed"))
        or (versions is not None and p.version in versions)
    ]  # fmt: skip
    reps = list(repeats) if repeats is not None else list(range(series.spec.repeat))
    done = {(r.study_point, r.repeat) for r in archive.study_runs(name) if r.status == "ok"}
    result = MeasureResult()
    broken: set[str] = set()
    ready: set[str] = set()
    todo = [(p, k) for k in reps for p in wanted if (p.version, k) not in done]
    total = len(todo)
    for i, (point, k) in enumerate(todo, start=1):
        if point.version in broken:
            continue
        if point.version not in ready:
            try:
                measurer.prepare(point)
            except (PgrigError, OSError) as e:
                _fail(point, f"not measured: {e}", broken)
                save_points(archive, name, series.points)
                tell(f"PostgreSQL {point.version} skipped: {e}")
                continue
            ready.add(point.version)
            save_points(archive, name, series.points)
        tell(f"[{i}/{total}] PostgreSQL {point.version} repeat {k + 1}")
        rec = measurer.run(point, k, phase)
        result.ran += 1
        result.records.append(rec)
        if rec.status != "ok":
            result.failed += 1
            _fail(point, f"run {rec.id} {rec.status}: {rec.error or ''}".strip(), broken)
            save_points(archive, name, series.points)
            tell(f"PostgreSQL {point.version}: run {rec.id} {rec.status}, version skipped")
            continue
        done.add((point.version, k))
    for p in wanted:
        complete = p.version not in broken and all((p.version, k) in done for k in reps)
        if complete:
            p.status, p.reason = "ok", None
    save_points(archive, name, series.points)
    return result


def _fail(point: VersionPoint, reason: str, broken: set[str]) -> None:
    point.status, point.reason = "failed", reason
    broken.add(point.version)
