"""A `db generate` that failed or was killed leaves its database's record incomplete
(workloads/datasets.py): runs and `db check` refuse it naming the command to run again, as it
was asked, so that the line pasted into a shell makes that data (issue 43, pass 3: it said
`pgrig db generate e2 --db pgrig ...`, three dots a shell runs as an argument)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from pgrig.errors import PgrigError
from pgrig.provision.state.environment import Environment
from pgrig.request import DatasetRequest
from pgrig.workloads import database, datasets


def test_an_incomplete_dataset_names_the_generate_that_was_asked(
    pgrig_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    env = Environment(name="e2", port=5999)
    env.save()

    def killed(*_a: object, **_k: object) -> None:
        raise PgrigError("pgbench -i: terminated")

    monkeypatch.setattr(datasets, "_check_room", lambda env, request: None)
    monkeypatch.setattr(database, "ensure_database", lambda env, dbname: False)
    monkeypatch.setattr(datasets, "_generate", killed)
    with pytest.raises(PgrigError):
        datasets.generate(env, DatasetRequest(scenario="pgbench", scale=20, partitions=2))
    with pytest.raises(PgrigError) as refused:
        datasets.usable(env, "pgrig")
    said = str(refused.value)
    assert said.startswith("database 'pgrig' of e2 holds an incomplete pgbench dataset")
    assert said.endswith(
        "run `pgrig db generate e2 --scenario pgbench --db pgrig --scale 20 --partitions 2` again"
    )
    # a file of the request is named absolute and quoted: the line runs from anywhere
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my data.sql").write_text("SELECT 1;")
    with pytest.raises(PgrigError):
        datasets.generate(env, DatasetRequest(scenario="custom", database="x y", sql="my data.sql"))
    with pytest.raises(PgrigError) as refused:
        datasets.usable(env, "x y")
    command = str(refused.value).split("run `")[1].split("` again")[0]
    assert shlex.split(command) == [
        "pgrig", "db", "generate", "e2", "--scenario", "custom", "--db", "x y",
        "--sql", str(tmp_path / "my data.sql"),
    ]  # fmt: skip


def test_an_interrupted_generate_names_the_generate_that_was_asked(
    pgrig_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = Environment(name="e2", port=5999)
    env.save()

    def interrupted(*_a: object, **_k: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(datasets, "_check_room", lambda env, request: None)
    monkeypatch.setattr(database, "ensure_database", lambda env, dbname: False)
    monkeypatch.setattr(datasets, "_generate", interrupted)
    with pytest.raises(datasets.GenerateInterrupted) as stopped:
        datasets.generate(env, DatasetRequest(scenario="pgbench", scale=20))
    assert str(stopped.value).endswith(
        "recorded incomplete (runs refuse them): generate again (pgrig db generate e2 "
        "--scenario pgbench --db pgrig --scale 20)"
    )


def test_a_generate_under_a_disk_limit_says_its_writes_wait(
    pgrig_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 43, pass 3: `db generate e4 -s 1` at wbps=1MB sat 33 s at 'generating 99%' with
    no word of the limit its writes waited for (env create says it)."""
    from pgrig.cli import db

    monkeypatch.setattr(datasets, "generate", lambda env, request, progress: {})
    env = Environment(name="e4", port=5999)
    env.disk_limit = {"wbps": 1048576, "wiops": 30}
    db._generate(env, DatasetRequest(scenario="pgbench", scale=1), "e4", "pgrig")
    said = " ".join(capsys.readouterr().err.split())
    assert said.startswith(
        "· generating under the disk limit wiops=30, wbps=1MB: its writes wait for it "
        "(`pgrig env set e4 --disk-limit none` lifts it)"
    )
    env.disk_limit = None  # none: nothing said
    db._generate(env, DatasetRequest(scenario="pgbench", scale=1), "e4", "pgrig")
    assert "disk limit" not in capsys.readouterr().err
