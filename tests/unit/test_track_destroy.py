"""`pgrig track NAME --destroy` (track/cleanup.py): the series' environments go, everything
else stays (other series' and the user's environments, the runs, the series itself)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pgrig.cli.track import app as track_app
from pgrig.provision.state.environment import Environment
from pgrig.track import cleanup, flow, runner, versions
from tests.unit.study_fakes import archive_at, make_record

SRC = str(Path(__file__).resolve().parents[2] / "src")
OFFERS = {"15.19": ["pgrig"], "17.9": ["pgrig"], "18.6": ["pgrig"]}


def _env(name: str, port: int = 5999) -> Environment:
    env = Environment(name=name, port=port, version="18.6")
    env.dir.mkdir(parents=True)
    env.datadir.mkdir()
    (env.datadir / "PG_VERSION").write_text("18\n")
    env.save()
    return env


def _series(tmp_path: Path, name: str = "s1") -> Any:  # an Archive
    store = archive_at(tmp_path)
    spec = flow.make_spec(
        name,
        flow.series_load(
            workload="pgbench:select-only", clients=1, threads=1,
            duration=10, warmup=0, protocol="simple",
        ),
        scale=1, repeat=1, profile="default", settings={},
    )  # fmt: skip
    pts = versions.expand("15.19,17.9,18.6", OFFERS)
    series = runner.open_series(store, spec, name, pts)
    for p in series.points[:2]:  # 15.19 and 17.9 were prepared; 18.6's create was killed
        p.env = f"trk-{name}-{p.version}"
    runner.save_points(store, name, series.points)
    rec = make_record(tps=1000, env_name=f"trk-{name}-15.19", study=name, point="15.19")
    store.finish_run(rec)
    return store


class _Out:
    """What the command printed, and the one-line error pgrig's main() would print."""

    def __init__(self, result: Any) -> None:
        self.exit_code = result.exit_code
        self.stdout = result.stdout
        self.output = result.output + (str(result.exception) if result.exception else "")


def _invoke(store: Any, *args: str) -> _Out:
    return _Out(CliRunner().invoke(track_app, [*args, "--archive", store.url]))


def test_destroy_removes_the_series_environments_and_nothing_else(
    pgrig_home: Path, tmp_path: Path
) -> None:
    store = _series(tmp_path)
    ours = [_env("trk-s1-15.19"), _env("trk-s1-17.9")]
    killed_create = pgrig_home / "envs" / "trk-s1-18.6"  # a directory without env.json
    killed_create.mkdir(parents=True)
    others = [_env("trk-s1-x-18.6"), _env("lab"), _env("trk-s10-18.6")]
    series = runner.load_series(store, "s1")
    assert cleanup.environments(series) == ["trk-s1-15.19", "trk-s1-17.9", "trk-s1-18.6"]

    out = _invoke(store, "s1", "--destroy", "--yes", "--json")
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout) == {
        "series": "s1",
        "destroyed": ["trk-s1-15.19", "trk-s1-17.9", "trk-s1-18.6"],
    }
    assert not any(e.dir.exists() for e in ours) and not killed_create.exists()
    assert all((e.dir / "env.json").is_file() for e in others)
    # the measurements stay: the series, its points and its run
    kept = runner.load_series(store, "s1")
    assert [p.version for p in kept.points] == ["15.19", "17.9", "18.6"]
    assert [r.study_point for r in kept.runs] == ["15.19"]
    assert kept.extra["environments_destroyed"]["names"] == json.loads(out.stdout)["destroyed"]

    again = _invoke(store, "s1", "--destroy", "--yes")
    assert again.exit_code == 0 and "no environment to destroy" in again.output


def test_destroy_asks_and_refuses_without_a_terminal(pgrig_home: Path, tmp_path: Path) -> None:
    store = _series(tmp_path)
    env = _env("trk-s1-15.19")
    out = _invoke(store, "s1", "--destroy")
    assert out.exit_code != 0 and "add --yes" in out.output
    assert (env.dir / "env.json").is_file()


def test_destroy_measures_nothing(pgrig_home: Path, tmp_path: Path) -> None:
    store = _series(tmp_path)
    env = _env("trk-s1-15.19")
    out = _invoke(store, "s1", "--destroy", "--yes", "--versions", "18", "--check")
    assert out.exit_code != 0
    assert "--destroy measures nothing: drop --versions, --check" in out.output
    assert (env.dir / "env.json").is_file()


def test_unknown_series(pgrig_home: Path, tmp_path: Path) -> None:
    store = _series(tmp_path)
    out = _invoke(store, "nope", "--destroy", "--yes")
    assert out.exit_code != 0 and "nope" in out.output


def test_a_run_in_progress_keeps_every_environment(pgrig_home: Path, tmp_path: Path) -> None:
    """Checked for all before any is destroyed: never half a series gone, then refused."""
    store = _series(tmp_path)
    first, busy = _env("trk-s1-15.19"), _env("trk-s1-17.9")
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import time
            from pathlib import Path
            from pgrig.provision.state.env_lock import EnvLock
            EnvLock(Path({str(busy.dir)!r}), {busy.name!r}).acquire().describe(7)
            print("ready", flush=True)
            time.sleep(60)
        """)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": SRC},
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        out = _invoke(store, "s1", "--destroy", "--yes")
        assert out.exit_code != 0 and "run 7 is in progress" in out.output
        assert (first.dir / "env.json").is_file() and (busy.dir / "env.json").is_file()
    finally:
        holder.kill()
        holder.wait()
    out = _invoke(store, "s1", "--destroy", "--yes")  # the run ended: now it goes
    assert out.exit_code == 0, out.output
    assert not first.dir.exists() and not busy.dir.exists()


@pytest.mark.parametrize("name", ["a", "a-b"])
def test_a_series_never_takes_another_series_environments(
    pgrig_home: Path, tmp_path: Path, name: str
) -> None:
    store = _series(tmp_path, name)
    _env(f"trk-{name}-15.19")
    other = "a-b" if name == "a" else "a"
    theirs = _env(f"trk-{other}-17.9")
    assert cleanup.environments(runner.load_series(store, name)) == [f"trk-{name}-15.19"]
    assert _invoke(store, name, "--destroy", "--yes").exit_code == 0
    assert (theirs.dir / "env.json").is_file()
