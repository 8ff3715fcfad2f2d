"""An `env create` killed before it finished is removed by the next command
(provision/state/unfinished.py keeps the mark, cluster.remove_abandoned_creates destroys); a
create still going on, or an environment without the mark, is not."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from pgrig.archive import lease
from pgrig.provision import cluster
from pgrig.provision.state import unfinished
from pgrig.provision.state.environment import Environment


def _env(name: str) -> Environment:
    env = Environment(name=name, port=5999, version="18.6")
    env.dir.mkdir(parents=True)
    env.datadir.mkdir()
    (env.datadir / "PG_VERSION").write_text("18\n")
    env.save()
    return env


def _dead_owner() -> lease.Owner:
    child = subprocess.Popen([sys.executable, "-c", "import os; print(os.getpid())"],
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    out, _ = child.communicate(timeout=30)
    return lease.Owner(socket.gethostname(), int(out), 1.0)


def test_only_a_dead_creates_environment_is_removed(pgrig_home: Path) -> None:
    dead, alive, unmarked, elsewhere = (_env(n) for n in ("dead", "alive", "old", "elsewhere"))
    (dead.dir / unfinished.MARK).write_text(json.dumps(_dead_owner().as_columns()))
    unfinished.mark(alive.dir)  # this test's process: alive
    other_host = lease.Owner("some-other-host", 1, 1.0)
    (elsewhere.dir / unfinished.MARK).write_text(json.dumps(other_host.as_columns()))
    leftover = pgrig_home / "envs" / "half"  # killed before env.json: a directory and the mark
    leftover.mkdir()
    (leftover / unfinished.MARK).write_text(json.dumps(_dead_owner().as_columns()))

    assert unfinished.abandoned() == ["dead", "half"]
    said: list[str] = []
    assert cluster.remove_abandoned_creates(said.append) == ["dead", "half"]
    assert not dead.dir.exists() and not leftover.exists()
    assert all(e.dir.is_dir() for e in (alive, unmarked, elsewhere))
    assert said == [
        "removed environment dead: its `env create` was killed before it finished",
        "removed environment half: its `env create` was killed before it finished",
    ]
    unfinished.clear(alive.dir)
    assert not (alive.dir / unfinished.MARK).exists()
    assert cluster.remove_abandoned_creates() == []


def test_a_torn_mark_is_left_alone(pgrig_home: Path) -> None:
    env = _env("torn")
    (env.dir / unfinished.MARK).write_text('{"lease_host": ')  # being written this instant
    assert unfinished.abandoned() == []


def test_the_directory_is_born_marked_and_a_killed_staging_is_removed(pgrig_home: Path) -> None:
    """A kill between making the directory and writing the mark left an unmarked directory
    that every later create refused as damaged: the directory now appears with its mark."""
    envs = pgrig_home / "envs"
    envs.mkdir()
    unfinished.make_dir(envs / "born")
    assert json.loads((envs / "born" / unfinished.MARK).read_text())["lease_pid"] > 0
    assert [p.name for p in envs.iterdir()] == ["born"]  # no staging left behind
    with pytest.raises(FileExistsError):  # another create got there first
        unfinished.make_dir(envs / "born")
    assert [p.name for p in envs.iterdir()] == ["born"]
    # staging directories of killed creates: one with its mark, one killed before the mark
    dead = _dead_owner()
    with_mark = envs / f".x.creating.{dead.pid}"
    with_mark.mkdir()
    (with_mark / unfinished.MARK).write_text(json.dumps(dead.as_columns()))
    torn = envs / f".y.creating.{dead.pid}"
    torn.mkdir()
    mine = envs / f".z.creating.{lease.Owner.me().pid}"  # a create going on: left alone
    mine.mkdir()
    assert unfinished.abandoned() == []  # staging is not an environment to destroy
    main = "from pgrig.cli.app import main; main()"
    subprocess.run([sys.executable, "-c", main, "env", "list"], check=True, capture_output=True)
    assert sorted(p.name for p in envs.iterdir()) == [mine.name, "born"]  # the next command


def test_an_interrupted_env_create_is_named_the_same_way_everywhere(pgrig_home: Path) -> None:
    from typer.testing import CliRunner

    from pgrig.cli.env import app

    (pgrig_home / "envs" / "halfway").mkdir(parents=True)
    for argv in (["show", "halfway"], ["create", "halfway", "--pg", "15"]):
        res = CliRunner().invoke(app, argv)
        assert res.exit_code != 0
        said = str(res.exception)
        assert "'halfway' is incomplete" in said and "does not exist" not in said, said
    res = CliRunner().invoke(app, ["destroy", "halfway", "--yes"])
    assert res.exit_code == 0, res.output
    assert not (pgrig_home / "envs" / "halfway").exists()
