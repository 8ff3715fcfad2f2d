"""Version series (pgrig/track): version lists, the runner's order and resume, bisection on a
synthetic step, the series view and the CI check, all without a server."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from pgrig.errors import NotFound, PgrigError
from pgrig.track import bisect as bisecting
from pgrig.track import figures, flow, runner, versions
from pgrig.track.spec import TrackSpec
from pgrig.track.versions import VersionPoint
from tests.unit.study_fakes import archive_at, make_record

OFFERS = {
    "15.14": ["maven"],
    "15.19": ["pgrig", "maven"],
    "17.0": ["maven"],
    "17.2": ["maven"],
    "17.4": ["maven"],
    "17.5": ["maven"],
    "17.6": ["maven"],
    "17.9": ["pgrig", "maven"],
    "17.10": ["pgrig", "maven"],
    "18.3": ["pgrig", "maven"],
    "18.6": ["pgrig", "maven"],
}


def test_versions_expand_majors_minors_and_ranges() -> None:
    pts = versions.expand("15, 18.3,17.0..17.6", OFFERS, installed={"15.13": "system"})
    assert [p.version for p in pts] == ["15.13", "17.0", "17.2", "17.4", "17.5", "17.6", "18.3"]
    assert pts[0].requested == "15" and pts[-1].role == "listed"
    assert {p.role for p in pts[1:6]} == {"range"}
    # without a build here, a major is PyPI's newest
    assert versions.expand("15", OFFERS)[0].version == "15.19"
    # 17.10 sorts after 17.9
    assert [p.version for p in versions.expand("17.9..17.10,17", OFFERS)] == ["17.9", "17.10"]


def test_bisect_measures_only_the_ends_of_a_range_first() -> None:
    pts = versions.expand("17.0..17.9", OFFERS, bisect=True)
    assert [(p.version, p.status) for p in pts] == [
        ("17.0", "planned"), ("17.2", "candidate"), ("17.4", "candidate"),
        ("17.5", "candidate"), ("17.6", "candidate"), ("17.9", "planned"),
    ]  # fmt: skip


def test_versions_unknown_or_bad() -> None:
    (p,) = versions.expand("16.99", OFFERS)
    assert p.status == "skipped" and "no catalogue" in (p.reason or "")
    for bad in ("x", "17.2..17.0", "9.6", "17.0-17.2"):
        with pytest.raises(PgrigError, match="--versions"):
            versions.expand(bad, OFFERS)


# --- bisection ---------------------------------------------------------------------------------

MINORS = [f"17.{i}" for i in range(12)]


def _step_series(first_bad: int, drop: float = 0.06, noise: float = 0.005, seed: int = 0):
    rng = random.Random(seed)

    def level(v: str) -> float:
        i = MINORS.index(v)
        return 1000 * (1 - (drop if i >= first_bad else 0)) * math.exp(rng.gauss(0, noise))

    return level


@pytest.mark.parametrize("first_bad", range(1, 12))
def test_bisection_finds_a_known_step_in_about_log2_n(first_bad: int) -> None:
    level = _step_series(first_bad, seed=first_bad)
    measured: list[str] = []

    def measure(v: str) -> float:
        measured.append(v)
        return level(v)

    good, bad = MINORS[0], MINORS[-1]
    result = bisecting.bisect(
        good, bad, MINORS[1:-1], {good: level(good), bad: level(bad)}, measure
    )
    assert result.first_bad == MINORS[first_bad]
    assert result.last_good == MINORS[first_bad - 1]
    assert len(measured) <= math.ceil(math.log2(len(MINORS) - 1))  # 10 inside: at most 4


def test_bisection_skips_a_version_it_cannot_measure() -> None:
    level = _step_series(5)
    result = bisecting.bisect(
        "17.0", "17.11", MINORS[1:-1], {"17.0": level("17.0"), "17.11": level("17.11")},
        lambda v: None if v == "17.5" else level(v),
    )  # fmt: skip
    # 17.5 (the true first bad) cannot be measured: the answer narrows to 17.6, said so
    assert result.first_bad == "17.6" and result.last_good == "17.4"
    assert result.remaining == ["17.5"]


# --- the runner with a fake measurer ------------------------------------------------------------


class FakeMeasurer:
    def __init__(self, archive: Any, levels: dict[str, float], fail_prepare=(), fail_runs=()):
        self.archive = archive
        self.levels = levels
        self.fail_prepare = set(fail_prepare)
        self.fail_runs = set(fail_runs)
        self.calls: list[tuple[str, int]] = []
        self.rng = random.Random(1)
        self.stopped = 0

    def prepare(self, point: versions.VersionPoint) -> None:
        if point.version in self.fail_prepare:
            raise PgrigError("initdb failed: bad setting")
        point.source, point.env = "pgrig", f"trk-x-{point.version}"

    def run(self, point: versions.VersionPoint, repeat: int, phase: str):
        self.calls.append((point.version, repeat))
        n = len(self.calls)
        tps = self.levels[point.version] * math.exp(self.rng.gauss(0, 0.004))
        rec = make_record(
            tps=tps, env_name=point.env or "", study="s1", point=point.version, repeat=repeat,
            status="failed" if (point.version, repeat) in self.fail_runs else "ok",
            seconds=10, warmup=0, seed=n,
        )  # fmt: skip
        started, ended, status = rec.started_at, rec.ended_at, rec.status
        rec.status, rec.ended_at = "running", None
        self.archive.begin_run(rec)
        rec.status, rec.started_at, rec.ended_at = status, started, ended
        self.archive.finish_run(rec)
        return rec

    def stop(self) -> None:
        self.stopped += 1


def _spec(repeat: int = 2) -> TrackSpec:
    return flow.make_spec(
        "s1",
        flow.series_load(
            workload="pgbench:select-only", clients=1, threads=1,
            duration=10, warmup=0, protocol="simple",
        ),
        scale=1, repeat=repeat, profile="default", settings={},
    )  # fmt: skip


def test_runs_are_interleaved_and_a_failing_version_is_skipped_with_its_reason(tmp_path) -> None:
    store = archive_at(tmp_path)
    pts = versions.expand("15.19,17.9,18.6", OFFERS)
    series = runner.open_series(store, _spec(), "s1", pts)
    fake = FakeMeasurer(store, {"15.19": 900, "17.9": 1000, "18.6": 1100}, fail_prepare={"17.9"})
    runner.measure(series, fake, store)
    assert fake.calls == [("15.19", 0), ("18.6", 0), ("15.19", 1), ("18.6", 1)]
    stored = runner.load_series(store, "s1")
    status = {p.version: (p.status, p.reason) for p in stored.points}
    assert status["15.19"] == ("ok", None) and status["18.6"] == ("ok", None)
    assert status["17.9"][0] == "failed" and "initdb failed" in (status["17.9"][1] or "")
    assert store.get_study("s1").kind == "track"
    assert {(r.study_point, r.repeat) for r in stored.runs} == {
        ("15.19", 0),
        ("15.19", 1),
        ("18.6", 0),
        ("18.6", 1),
    }


def test_resume_runs_only_what_is_missing_and_retries_a_failed_version(tmp_path) -> None:
    store = archive_at(tmp_path)
    pts = versions.expand("15.19,18.6", OFFERS)
    series = runner.open_series(store, _spec(), "s1", pts)
    fake = FakeMeasurer(store, {"15.19": 900, "18.6": 1100}, fail_runs={("18.6", 0)})
    runner.measure(series, fake, store)
    assert fake.calls == [("15.19", 0), ("18.6", 0), ("15.19", 1)]  # 18.6 dropped after failing
    assert runner.load_series(store, "s1").point("18.6").status == "failed"  # type: ignore[union-attr]
    # the same command again: the archive says what is done
    series = runner.open_series(store, _spec(), "s1", versions.expand("15.19,18.6", OFFERS))
    again = FakeMeasurer(store, {"15.19": 900, "18.6": 1100})
    runner.measure(series, again, store)
    assert again.calls == [("18.6", 0), ("18.6", 1)]
    assert runner.load_series(store, "s1").point("18.6").status == "ok"  # type: ignore[union-attr]


def test_another_measurement_under_the_same_name_is_refused(tmp_path) -> None:
    store = archive_at(tmp_path)
    runner.open_series(store, _spec(), "s1", versions.expand("18.6", OFFERS))
    other = flow.make_spec(
        "s1",
        flow.series_load(
            workload="pgbench:tpcb", clients=1, threads=1,
            duration=10, warmup=0, protocol="simple",
        ),
        scale=1, repeat=2, profile="default", settings={},
    )  # fmt: skip
    with pytest.raises(PgrigError, match="measures something else"):
        runner.open_series(store, other, "s1", [])
    # more repeats and more versions extend it
    grown = runner.open_series(store, _spec(repeat=4), "s1", versions.expand("17.9", OFFERS))
    assert [p.version for p in grown.points] == ["17.9", "18.6"]
    assert runner.load_series(store, "s1").spec.repeat == 4


def test_a_new_series_of_versions_none_can_measure_is_refused_and_not_created(
    tmp_path,
) -> None:
    store = archive_at(tmp_path)
    with pytest.raises(PgrigError, match=r"no version of the list can be measured \(99: no "):
        runner.open_series(store, _spec(), "s1", versions.expand("99", OFFERS))
    with pytest.raises(NotFound):
        runner.load_series(store, "s1")
    # one it can measure is enough: the other stays in the plan, skipped with its reason
    series = runner.open_series(store, _spec(), "s1", versions.expand("99,18.6", OFFERS))
    shown = [(p.version, p.status) for p in series.points]
    assert shown == [("18.6", "planned"), ("99", "skipped")]


def test_an_unknown_profile_is_refused_before_any_version_is_prepared() -> None:
    with pytest.raises(NotFound, match="unknown profile 'nope': known profiles are default"):
        flow.make_spec(
            "s1",
            flow.series_load(
                workload="pgbench:select-only", clients=1, threads=1,
                duration=10, warmup=0, protocol="simple",
            ),
            scale=1, repeat=2, profile="nope", settings={},
        )  # fmt: skip


def test_bisect_all_with_fake_runs_finds_and_confirms_the_step(tmp_path) -> None:
    store = archive_at(tmp_path)
    minors = ["17.0", "17.2", "17.4", "17.5", "17.6", "17.9"]
    levels = {v: (1000.0 if v < "17.5" else 930.0) for v in minors}  # 7% slower from 17.5
    pts = versions.expand("17.0..17.9", OFFERS, bisect=True)
    series = runner.open_series(store, _spec(repeat=4), "s1", pts)
    fake = FakeMeasurer(store, levels)
    runner.measure(series, fake, store)
    assert {v for v, _ in fake.calls} == {"17.0", "17.9"}
    flow._bisect_all(series, fake, store, 0.02, lambda _t: None)
    (b,) = runner.load_series(store, "s1").extra["bisections"]
    assert b["first_bad"] == "17.5" and b["last_good"] == "17.4"
    assert b["direction"] == "slower" and b["confirmed"] is True
    assert b["confirmation"]["verdict"] == "slower"
    measured_inside = {v for v, _ in fake.calls} - {"17.0", "17.9"}
    assert len([s for s in b["steps"] if s["side"] != "unmeasured"]) == len(measured_inside) <= 3


# --- the view and the CI check -------------------------------------------------------------------


def _measured(tmp_path, levels: dict[str, float], repeat: int = 4):
    store = archive_at(tmp_path)
    series = runner.open_series(
        store, _spec(repeat), "s1", versions.expand(",".join(levels), OFFERS)
    )
    runner.measure(series, FakeMeasurer(store, levels), store)
    return store, runner.load_series(store, "s1")


def test_view_has_centres_bounds_steps_and_change_points(tmp_path) -> None:
    levels = {"15.19": 1000.0, "17.9": 1000.0, "17.10": 1001.0, "18.3": 1080.0, "18.6": 1082.0}
    store, series = _measured(tmp_path, levels)
    v = figures.build(series, 0.02, archive=store)
    assert [p.version for p in v.points] == ["15.19", "17.9", "17.10", "18.3", "18.6"]
    for p in v.points:
        assert p.lower is not None and p.upper is not None
        assert p.lower <= p.centre <= p.upper  # type: ignore[operator]
        assert len(p.runs) == 4
    verdicts = {s["to"]: s["verdict"] for s in v.steps}
    assert verdicts["18.3"] == "faster" and verdicts["17.10"] == "equivalent"
    (c,) = v.changes
    assert c["version"] == "18.3" and c["after_version"] == "17.10" and c["position"] == 3
    assert c["change_pct"] == pytest.approx(8, abs=1) and c["confidence"] >= 0.99


def test_check_flags_a_confirmed_regression_only(tmp_path) -> None:
    _, slower = _measured(tmp_path / "a", {"18.3": 1000.0, "18.6": 950.0})
    chk = figures.check(slower, 0.025)
    assert chk["newest"] == "18.6" and chk["baseline"] == "18.3"
    assert chk["regression"] is True and chk["verdict"] == "slower"
    _, same = _measured(tmp_path / "b", {"18.3": 1000.0, "18.6": 1003.0})
    assert figures.check(same, 0.025)["regression"] is False
    _, few = _measured(tmp_path / "c", {"18.3": 1000.0, "18.6": 900.0}, repeat=2)
    chk = figures.check(few, 0.025)  # slower, but 2 vs 2 repeats cannot reach 95%
    assert chk["verdict"] == "slower" and chk["insufficient"] and not chk["regression"]


def test_report_has_the_chart_with_change_points_and_the_tables(tmp_path) -> None:
    from pgrig.reports import publish

    levels = {"15.19": 1000.0, "17.9": 1000.0, "17.10": 1001.0, "18.3": 1080.0, "18.6": 1082.0}
    store, _series = _measured(tmp_path, levels)
    md, html = publish.track_report(store, "s1", ["md", "html"], tmp_path / "out")
    text = md.read_text()
    assert "## Change points" in text and "| 18.3 | 17.10 | +" in text
    svg = (tmp_path / "out" / "track-s1-series.svg").read_text()
    assert "change point (its first version)" in svg
    assert all(v in svg for v in levels)  # the version axis
    assert "95% bounds" in text and "## Settings and environment of each point" in text
    assert "<svg" in html.read_text()
    # `study report` of a series is the same document
    (md2,) = publish.study_report(store, "s1", ["md"], tmp_path / "out2")
    assert md2.read_text().replace("track-s1", "s1") == text.replace("track-s1", "s1")


def test_web_page_links_runs_and_shows_the_same_tables(tmp_path) -> None:
    from fastapi.testclient import TestClient

    from pgrig.views import track as track_page
    from pgrig.web.app import create_app

    levels = {"15.19": 1000.0, "17.9": 1000.0, "17.10": 1001.0, "18.3": 1080.0, "18.6": 1082.0}
    store, series = _measured(tmp_path, levels)
    client = TestClient(create_app(f"sqlite:///{tmp_path / 'archive.sqlite'}"))
    page = client.get("/track/s1")
    assert page.status_code == 200
    model = track_page.build(figures.build(series, archive=store))
    for ids in model.run_ids.values():
        for run_id in ids:
            assert f'<a href="/runs/{run_id}">{run_id}</a>' in page.text
    for row in model.changes.rows:
        assert row[2].lines[0] in page.text  # the magnitude, as the CLI and report print it
    assert "change point (its first version)" in page.text  # the chart
    moved = client.get("/studies/s1", follow_redirects=False)
    assert moved.status_code == 307 and moved.headers["location"] == "/track/s1"
    assert client.get("/track/missing").status_code == 404


def test_bisect_again_does_not_repeat_a_finished_bisection(tmp_path) -> None:
    store = archive_at(tmp_path)
    minors = ["17.0", "17.2", "17.4", "17.5", "17.6", "17.9"]
    levels = {v: (1000.0 if v < "17.5" else 930.0) for v in minors}
    series = runner.open_series(
        store, _spec(repeat=4), "s1", versions.expand("17.0..17.9", OFFERS, bisect=True)
    )
    fake = FakeMeasurer(store, levels)
    runner.measure(series, fake, store)
    flow._bisect_all(series, fake, store, 0.02, lambda _t: None)
    calls = len(fake.calls)
    again = runner.load_series(store, "s1")
    flow._bisect_all(again, fake, store, 0.02, lambda _t: None)
    assert len(fake.calls) == calls
    assert len(runner.load_series(store, "s1").extra["bisections"]) == 1


def test_an_unknown_builtin_is_refused_when_the_spec_is_made() -> None:
    # before: accepted, and refused only after the environment and its data existed
    with pytest.raises(PgrigError, match="--workload 'pgbench:nosuch': unknown pgbench builtin"):
        flow.make_spec(
            "s1",
            flow.series_load(
                workload="pgbench:nosuch", clients=1, threads=1,
                duration=10, warmup=0, protocol="simple",
            ),
            scale=1, repeat=1, profile="default", settings={},
        )  # fmt: skip


def test_track_show_of_a_missing_series_says_series(pgrig_home: Path) -> None:
    """`pgrig track show nosuch` said "study 'nosuch' is not in archive": a word the user
    never used for it."""
    from pgrig.archive.store import Archive
    from pgrig.errors import NotFound
    from pgrig.track import runner

    url = f"sqlite:///{pgrig_home / 'archive.sqlite'}"
    with Archive(url) as archive, pytest.raises(NotFound, match=r"^no series 'nosuch' in ") as e:
        runner.load_series(archive, "nosuch")
    assert "study 'nosuch'" not in str(e.value)


def test_track_settings_are_checked_before_the_series_even_without_binaries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With no build of PostgreSQL 18 installed yet (a new user's first series),
    `track s --versions 18 --set a=1` made the series, then failed its version and ended
    "done": the check waited for binaries that came only after the series existed. The
    binaries of a planned version now come first (once per major), then the check refuses."""
    from pgrig.errors import NotFound
    from pgrig.provision import cluster
    from pgrig.track import flow
    from pgrig.track.versions import VersionPoint

    installed: list[str] = []

    def check(pg: str, *, profile: str, settings: dict[str, str], insights: bool) -> str:
        if not any(v == pg or v.split(".")[0] == pg for v in installed):
            raise NotFound(f"PostgreSQL {pg} is not installed")
        if "a" in settings:
            raise PgrigError("unknown setting 'a' in PostgreSQL 18")
        return pg

    monkeypatch.setattr(cluster, "check_settings", check)
    spec = flow.make_spec(
        "s",
        flow.series_load(
            workload="pgbench:select-only", clients=1, threads=1,
            duration=1, warmup=0, protocol="simple",
        ),
        scale=1, repeat=1, profile="default", settings={"a": "1"},
    )  # fmt: skip
    points = [
        VersionPoint("18.6", "18"),
        VersionPoint("18.5", "18"),
        VersionPoint("17.2", "17.0..17.6", status="candidate"),  # maybe never measured
    ]
    with pytest.raises(PgrigError, match=r"PostgreSQL 18\.6: unknown setting 'a'"):
        flow.check_settings(spec, points, install=lambda p: installed.append(p.version))
    assert installed == ["18.6"]

    installed.clear()
    spec.settings = {}
    flow.check_settings(spec, points, install=lambda p: installed.append(p.version))
    assert installed == ["18.6"]  # one build checks its major's versions; no candidate's


@pytest.mark.parametrize("repeat", [0, 101, 1_000_000_000])
def test_track_repeat_is_bounded_as_runs_is(repeat: int) -> None:
    """`track s --repeat 1000000000` was taken, printed "1000000000 repeats" and went on
    until killed; `run --repeat` stops at 100."""
    from pgrig.track import flow

    with pytest.raises(PgrigError, match=rf"--repeat must be .*\(got {repeat}\)"):
        flow.make_spec(
            "s",
            flow.series_load(
                workload="pgbench:select-only", clients=1, threads=1,
                duration=1, warmup=0, protocol="simple",
            ),
            scale=1, repeat=repeat, profile="default", settings={},
        )  # fmt: skip


def test_a_stored_series_of_a_billion_repeats_is_refused_before_its_plan() -> None:
    """A series stored with --repeat 1000000000 (before the bound): resuming it built one list
    of 10^9 (version, repeat) pairs and was killed by the kernel's OOM killer."""
    from pgrig.track import runner
    from pgrig.track.spec import TrackSpec
    from pgrig.track.versions import VersionPoint

    spec = TrackSpec(name="s", load={"workload": "pgbench:tpcb"}, repeat=1_000_000_000)
    series = runner.Series(spec, [VersionPoint("18.6", "18")])

    class Untouched:
        def __getattr__(self, name: str) -> object:
            raise AssertionError(f"{name} used before the repeat was checked")

    with pytest.raises(PgrigError, match=r"series s: --repeat must be between 1 and 100"):
        runner.measure(series, Untouched(), Untouched())  # type: ignore[arg-type]


class NoSeries:
    """An archive without the series (nothing of it may be made)."""

    url = "sqlite:///fake"

    def __init__(self) -> None:
        self.made: list[str] = []

    def study_runs(self, name: str) -> list[Any]:
        raise NotFound(name)

    def get_study(self, name: str) -> Any:
        raise NotFound(name)

    def create_study(self, rec: Any) -> None:
        self.made.append(rec.name)


def _env(home: Path, name: str, mark: str | None = None) -> None:
    d = home / "envs" / name
    d.mkdir(parents=True)
    (d / "env.json").write_text(json.dumps({"name": name, "version": "18.6"}))
    if mark is not None:
        (d / runner.SERIES_MARK).write_text(mark + "\n")


def test_a_users_trk_environment_is_refused_before_the_series_exists(
    pgrig_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _env(pgrig_home, "trk-mine-18.6")
    archive = NoSeries()
    monkeypatch.setattr(flow, "plan", lambda text, bisect: ([VersionPoint("18.6", "18.6")], {}))
    monkeypatch.setattr(flow, "check_settings", lambda spec, points, install=None: None)
    spec = flow.make_spec(
        "mine",
        flow.series_load(
            workload="pgbench:select-only", clients=1, threads=1,
            duration=1, warmup=0, protocol="simple",
        ),
        scale=1, repeat=1, profile="default", settings={},
    )  # fmt: skip
    with pytest.raises(PgrigError, match="made by a user, not by a series: series 'mine'"):
        flow.run(archive, "mine", spec, "18.6")  # type: ignore[arg-type]
    assert archive.made == []  # no series, so no run row either


def test_the_series_own_and_another_series_environments(pgrig_home: Path) -> None:
    _env(pgrig_home, "trk-s-18.6", mark="s")
    _env(pgrig_home, "trk-s-17.2", mark="other")
    runner.refuse_foreign_environments(NoSeries(), "s", ["18.6", "16.1"])  # its own; none
    with pytest.raises(PgrigError, match="made by series 'other'"):
        runner.refuse_foreign_environments(NoSeries(), "s", ["18.6", "17.2"])
