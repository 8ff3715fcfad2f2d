"""One check that an environment's server is pgrig's to change (provision/state/environment.py
require_managed), said one way wherever it is made: the environment's kind, what pgrig cannot
do, and that it needs a managed environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgrig.errors import PgrigError
from pgrig.provision.state.environment import Environment, NotManaged, managed_problem

ENDING = "(that needs a managed environment, one pgrig runs on this machine)"


def _external() -> Environment:
    env = Environment(name="ext", kind="external", dsn="host=127.0.0.1 port=1")
    env.save()
    return env


def test_the_one_message_names_the_kind_or_the_host() -> None:
    ext = Environment(name="ext", kind="external", dsn="host=x")
    remote = Environment(name="tk", kind="remote", on="db1", host="10.0.0.1")
    assert (
        managed_problem(ext, "start it")
        == f"environment 'ext' is external: pgrig cannot start it {ENDING}"
    )
    assert managed_problem(remote, "start it") == (
        f"environment 'tk' is on host db1: pgrig cannot start it {ENDING}"
    )
    assert managed_problem(Environment(name="lab"), "start it") is None


@pytest.mark.parametrize(
    "refuse",
    [
        "start",
        "stop",
        "configure",
        "run settings",
        "insights",
        "pooler",
        "socket",
        "backup",
        "tune",
    ],
)
def test_every_caller_refuses_with_the_one_message(refuse: str, pgrig_home: Path) -> None:
    ext = _external()
    with pytest.raises(NotManaged) as e:
        if refuse == "start":
            from pgrig.provision import cluster

            cluster.start_environment("ext")
        elif refuse == "stop":
            from pgrig.provision.server import postmaster

            postmaster.stop(ext)
        elif refuse == "configure":
            from pgrig.provision import env_settings

            env_settings.set_settings("ext", {"work_mem": "1MB"})
        elif refuse == "run settings":
            from pgrig.provision import run_settings

            run_settings.apply_run_settings(ext, {"work_mem": "1MB"})
        elif refuse == "insights":
            from pgrig.provision.operations import change

            change.set_enabled("ext", False)
        elif refuse == "pooler":
            from pgrig.provision.pooler import lifecycle

            lifecycle._require_running(ext)
        elif refuse == "socket":
            from pgrig.provision.pooler import capacity

            capacity.check_run(ext, clients=1, via="direct", connect="socket", protocol="simple")
        elif refuse == "backup":
            from pgrig.load.backup import backup_run

            backup_run.precheck(ext, "basebackup-full")
        elif refuse == "tune":
            from pgrig.request import from_flags
            from pgrig.request.tune import TuneRequest
            from pgrig.tune import request as tune_request

            tune_request.build(
                from_flags(
                    TuneRequest, env_name="ext", workload=["pgbench:tpcb"], name="t", duration="3s"
                )
            )
    said = str(e.value)
    assert said.startswith("environment 'ext' is external: pgrig cannot ") and said.endswith(ENDING)
    assert isinstance(e.value, PgrigError)
