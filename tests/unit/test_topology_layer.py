"""The topology layer: sync modes of replicas and WAL archiving, below every user layer."""

from __future__ import annotations

import pytest

from pgrig.errors import PgrigError
from pgrig.provision.server import replicas
from pgrig.provision.settings import config, topology_layer
from pgrig.provision.state.environment import Environment
from pgrig.request.environment import EnvironmentRequest
from pgrig.request.problems import from_flags


def _env(**kw: object) -> Environment:
    return Environment(name="lab", port=5440, bindir=None, insights=False, **kw)  # type: ignore[arg-type]


def test_async_and_standalone_set_nothing() -> None:
    assert topology_layer.settings(_env()) == {}
    reps = [{"name": "r1", "port": 5441, "slot": "pgrig_r1"}]
    assert topology_layer.settings(_env(replicas=reps, sync="off")) == {}


def test_sync_modes_wait_for_any_one_replica() -> None:
    reps = [{"name": f"r{i}", "port": 5440 + i, "slot": f"pgrig_r{i}"} for i in (1, 2)]
    got = topology_layer.settings(_env(replicas=reps, sync="remote_apply"))
    assert got == {
        "synchronous_standby_names": "ANY 1 (r1, r2)",
        "synchronous_commit": "remote_apply",
    }


def test_user_layers_override_topology() -> None:
    reps = [{"name": "r1", "port": 5441, "slot": "pgrig_r1"}]
    env = _env(replicas=reps, sync="on", settings={"synchronous_commit": "local"})
    merged = config.layers(env, run={}).merged()
    assert merged["synchronous_commit"] == ("local", "environment")
    assert merged["synchronous_standby_names"] == ("ANY 1 (r1)", "topology")
    assert "# topology" in config.render(config.layers(env, run={}))


def test_archiving_layer() -> None:
    env = _env(archiving={"stanza": "lab", "archive_command": "pgbackrest archive-push %p"})
    assert topology_layer.settings(env) == {
        "archive_mode": "on",
        "archive_command": "pgbackrest archive-push %p",
    }


@pytest.mark.parametrize(
    ("count", "sync", "message"),
    [
        (9, "off", "between 0 and 8"),
        # the request's one wording of a choice, as a study file says it (issue 40)
        (
            1,
            "sometimes",
            r"--sync must be one of off, on, remote_write, remote_apply \(got 'sometimes'\)",
        ),
        (0, "on", "--sync on needs replicas"),
    ],
)
def test_bad_requests_are_refused(count: int, sync: str, message: str) -> None:
    with pytest.raises(PgrigError, match=message):
        from_flags(EnvironmentRequest, name="e", replicas=count, sync=sync)


def test_member_lives_in_the_environment_and_is_never_saved(tmp_path: object) -> None:
    env = _env(replicas=[{"name": "r1", "port": 5441, "slot": "pgrig_r1"}])
    m = replicas.member(env, env.replicas[0])
    assert m.dir == env.dir / "replicas" / "r1" and m.port == 5441
    assert config.base_settings(m)["port"] == "5441"
    with pytest.raises(PgrigError, match="not saved alone"):
        m.save()
