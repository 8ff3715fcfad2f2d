"""A study's or tune's borrowed environment layer, on `env show` and `env repair` (a hostile
pass of issue 43): after a kill -9 of a tune in a trial, `env show` listed the trial's settings
as the environment's own layer without a word and `env repair` said "nothing to repair"; only
the next command put the environment's own settings back."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgrig.provision import env_settings, repair, study_layer
from pgrig.provision.state.env_lock import EnvLock
from pgrig.provision.state.environment import Environment


@pytest.fixture
def env(pgrig_home: Path) -> Environment:
    e = Environment(name="e1", port=5999, settings={"shared_buffers": "6026MB"})
    e.datadir.mkdir(parents=True)
    (e.datadir / "PG_VERSION").write_text("18\n")
    e.save()
    study_layer.remember("e1", {}, "s2", "tune")  # its own layer, before the tune's trial
    return e


def test_a_layer_borrowed_by_a_running_tune_is_said_and_left_to_it(env: Environment) -> None:
    with EnvLock(env.dir, env.name):  # a live study holds the run lock all along
        said = study_layer.borrowed(env.name, env.dir)
        assert said is not None and said["alive"] is True
        assert said["text"].startswith("its environment layer is borrowed by tune 's2' (pgrig ")
        assert repair.diagnose(env.name).dead_study is None  # not a repair's to put back


def test_a_dead_tunes_layer_is_said_by_env_show_and_put_back_by_env_repair(
    env: Environment, monkeypatch: pytest.MonkeyPatch
) -> None:
    said = study_layer.borrowed(env.name, env.dir)
    assert said is not None and said["alive"] is False
    assert said["text"].startswith(
        "its environment layer still holds the settings tune 's2' (pgrig pid "
    )
    assert "are not its own; its next command (or `pgrig env repair e1`)" in said["text"]
    diagnosis = repair.diagnose(env.name)
    assert diagnosis.needed and diagnosis.dead_study is not None
    assert diagnosis.as_dict()["dead_study"] == diagnosis.dead_study

    calls: list[tuple[str, dict[str, str], list[str]]] = []

    def set_settings(name: str, upd: dict[str, str], reset: list[str]) -> None:
        calls.append((name, upd, reset))
        e = Environment.load(name)
        e.settings = {k: v for k, v in e.settings.items() if k not in reset} | upd
        e.save()

    monkeypatch.setattr(env_settings, "set_settings", set_settings)
    done = repair.repair(env.name, lambda _m: None)
    assert calls == [("e1", {}, ["shared_buffers"])]
    assert any("still had the settings of tune 's2'" in line for line in done)
    assert not study_layer.saved(env.name) and Environment.load(env.name).settings == {}
    assert study_layer.borrowed(env.name, env.dir) is None


def test_a_tune_killed_before_changing_anything_is_not_said_to_have_left_settings(
    pgrig_home: Path,
) -> None:
    """issue 43, class 7: a tune killed in its baseline left "e1 still had the settings of tune
    't3', which died: its own are back (nothing changed)": it had changed nothing."""
    e = Environment(name="e1", port=5999, settings={"work_mem": "8MB"})
    e.datadir.mkdir(parents=True)
    e.save()
    study_layer.remember("e1", {"work_mem": "8MB"}, "t3", "tune")
    said = study_layer.put_back("e1")
    assert said is not None and said.startswith("tune 't3' (pgrig pid ")
    assert said.endswith(" died before it changed e1's settings: e1 has its own")
    assert not study_layer.saved("e1") and Environment.load("e1").settings == {"work_mem": "8MB"}
