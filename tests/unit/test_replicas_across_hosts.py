"""Replicas on other hosts (`env create --on db1 --replica-on db2`): the plan, what the primary
allows, how a replica connects (no password anywhere but its passfile), what runs reach, and
what a killed backup leaves. The real thing runs in tests/integration/test_replica_hosts_rig.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pgrig.errors import PgrigError
from pgrig.load.core import measure_here, topology
from pgrig.provision.remote import replicas as remote_replicas
from pgrig.provision.server import backups, replication_access, standby
from pgrig.provision.settings import topology_layer
from pgrig.provision.state.environment import Environment
from pgrig.request.environment import EnvironmentRequest
from pgrig.request.problems import from_flags


def test_plan_puts_replicas_on_the_hosts_in_turn() -> None:
    assert remote_replicas.plan(0, ["db2"]) == [("r1", "db2")]
    assert remote_replicas.plan(0, ["db2", "db3"]) == [("r1", "db2"), ("r2", "db3")]
    assert remote_replicas.plan(3, ["db2", "db3"]) == [
        ("r1", "db2"), ("r2", "db3"), ("r3", "db2"),
    ]  # fmt: skip
    assert remote_replicas.plan(2, []) == []  # the primary's host makes them itself
    # --replica-on alone: one replica a host, which a sync mode counts as replicas
    one_each = from_flags(EnvironmentRequest, name="e", on="db1", replica_on=["db2", "db3"],
                          sync="on")  # fmt: skip
    assert remote_replicas.plan(one_each.replicas, one_each.replica_on) == [
        ("r1", "db2"), ("r2", "db3"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("count", "hosts", "sync", "says"),
    [
        (1, ["db2", "db3"], "off", "fewer than the 2 --replica-on hosts"),
        (0, ["db2", "db2"], "off", "--replica-on db2 is given twice"),
        # the request's one wording of a choice, as a study file says it (issue 40)
        (0, ["db2"], "sometimes", "--sync must be one of off, on"),
        (9, ["db2"], "off", "between 0 and 8"),
        (0, [f"db{i}" for i in range(9)], "off", "--replicas must be between 0 and 8 \\(got 9\\)"),
    ],
)
def test_plan_refuses_bad_input(count: int, hosts: list[str], sync: str, says: str) -> None:
    """The request refuses these before any plan is made (request/environment.py)."""
    with pytest.raises(PgrigError, match=says):
        from_flags(EnvironmentRequest, name="e", on="db1", replicas=count, replica_on=hosts,
                   sync=sync)  # fmt: skip


def test_replicas_follow_the_primarys_hot_standby_limits_only() -> None:
    shown = {
        "effective": {
            "max_connections": {"value": "200", "layer": "profile"},
            "max_wal_senders": {"value": "10", "layer": "defaults"},
            "port": {"value": "5432", "layer": "base"},
            "work_mem": {"value": "64MB", "layer": "environment"},
        }
    }
    assert remote_replicas.hot_standby_sets(shown) == ["max_connections=200", "max_wal_senders=10"]


def test_the_primary_hosts_own_replicas_are_reached_at_its_address() -> None:
    env = Environment(name="lab", kind="remote", on="db1", host="10.0.0.11", port=5440)
    shown = {
        "topology": [
            {"role": "primary", "name": "lab", "port": 5440},
            {"role": "replica", "name": "r1", "port": 5441, "slot": "pgrig_r1",
             "datadir": "/var/lib/pgrig/envs/lab/replicas/r1/data"},
            {"role": "replica", "name": "r2", "host": "10.0.0.12", "slot": "pgrig_r2"},
        ]
    }  # fmt: skip
    assert remote_replicas.primary_host_replicas(env, shown) == [
        {"name": "r1", "on": "db1", "host": "10.0.0.11", "port": 5441, "slot": "pgrig_r1"}
    ]


def test_standby_names_on_other_hosts_are_synchronous_standbys_too() -> None:
    env = Environment(name="lab", sync="on", insights=False)
    env.standbys = [{"name": "r1", "host": "10.0.0.12", "slot": "pgrig_r1"}]
    assert topology_layer.settings(env)["synchronous_standby_names"] == "ANY 1 (r1)"


def test_the_primary_allows_replication_from_the_replica_address_only() -> None:
    line = replication_access.hba_line("r1", "10.0.0.12")
    assert line.split()[:5] == [
        "host", "replication", "pgrig_replication", "10.0.0.12/32", "scram-sha-256",
    ]  # fmt: skip
    assert replication_access.hba_line("r2", "fd00::2").split()[3] == "fd00::2/128"
    with pytest.raises(ValueError):
        replication_access.hba_line("r1", "all")


def test_a_replica_connects_with_its_passfile_never_a_password(tmp_path: Path) -> None:
    src = standby.parse("10.0.0.11:5440", "pgrig_r1", "r1")
    env = Environment(name="lab.r1", member_dir=str(tmp_path))
    info = standby.conninfo(env, src)
    assert "password" not in info
    assert f"passfile={tmp_path}/replication-pgpass" in info
    assert "user=pgrig_replication" in info and "application_name=r1" in info


@pytest.mark.parametrize(
    ("standby_of", "slot", "app", "says"),
    [
        ("db1:5440", "pgrig_r1", "r1", "expected ADDRESS:PORT"),
        ("10.0.0.11", "pgrig_r1", "r1", "expected ADDRESS:PORT"),
        ("10.0.0.11:99999", "pgrig_r1", "r1", "expected ADDRESS:PORT"),
        ("10.0.0.11:5440", "x'; drop", "r1", "--slot"),
        ("10.0.0.11:5440", "pgrig_r1", "r 1", "--application-name"),
    ],
)
def test_standby_source_is_checked(standby_of: str, slot: str, app: str, says: str) -> None:
    with pytest.raises(PgrigError, match=says):
        standby.parse(standby_of, slot, app)


def test_runs_reach_replicas_on_their_hosts_with_the_envs_passfile(tmp_path: Path) -> None:
    env = Environment(name="lab", kind="remote", on="db1", host="10.0.0.11", port=5440)
    env.replicas = [
        {"name": "r1", "on": "db2", "host": "10.0.0.12", "port": 5450, "slot": "pgrig_r1",
         "env": "lab.r1"},
    ]  # fmt: skip
    (r1,) = topology.members(env)
    assert (r1.host, r1.port, r1.kind, r1.on) == ("10.0.0.12", 5450, "remote", "db2")
    assert r1.passfile == env.passfile
    hosts = topology.client_env(env, "split", "pgrig")
    assert hosts["PGHOST"] == "10.0.0.11,10.0.0.12" and hosts["PGPORT"] == "5440,5450"
    assert topology.describe(env)["replicas"] == [
        {"name": "r1", "on": "db2", "host": "10.0.0.12", "port": 5450, "slot": "pgrig_r1"}
    ]


def test_a_run_whose_pgbench_outlives_its_duration_has_a_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert measure_here.overrun_deadline(None) is None  # -t: bounded by transactions
    monkeypatch.setenv("PGRIG_RUN_OVERRUN_S", "5")
    import time

    deadline = measure_here.overrun_deadline(10)
    assert deadline is not None and 14 < deadline - time.monotonic() <= 15
    assert "stopped answering" in measure_here.overrun_message(10)


def _managed(pgrig_home: Path) -> Environment:
    env = Environment(name="lab", kind="managed", port=5440)
    env.save()
    return env


def _dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return int(proc.stdout)


def test_a_killed_backups_partial_directory_is_removed_next_time(pgrig_home: Path) -> None:
    env = _managed(pgrig_home)
    partial = env.dir / "backups" / "002-basebackup-full-20261125T220000"
    (partial / "base").mkdir(parents=True)
    (partial / "base" / "1").write_bytes(b"x" * 1000)
    marker = {"path": str(partial), "what": "pg_basebackup backup", "pid": _dead_pid(),
              "pid_started": 1.0, "started_at": "2026-11-25T22:00:00+00:00"}  # fmt: skip
    (env.dir / backups.IN_PROGRESS).write_text(json.dumps(marker))
    (line,) = backups.recover_interrupted(env)
    assert str(partial) in line and "1,000 bytes" in line and "never catalogued" in line
    assert not partial.exists() and not (env.dir / backups.IN_PROGRESS).exists()
    assert backups.recover_interrupted(env) == []


def test_a_backup_in_progress_or_a_foreign_path_is_left_alone(pgrig_home: Path) -> None:
    env = _managed(pgrig_home)
    partial = env.dir / "backups" / "001-basebackup-full-x"
    partial.mkdir(parents=True)
    with backups.in_progress(env, partial, "pg_basebackup backup"):  # this live process
        assert backups.recover_interrupted(env) == []
        assert partial.exists()
    assert not (env.dir / backups.IN_PROGRESS).exists()
    foreign = pgrig_home / "precious"
    foreign.mkdir()
    marker = {"path": str(foreign), "pid": _dead_pid(), "pid_started": 1.0}
    (env.dir / backups.IN_PROGRESS).write_text(json.dumps(marker))
    assert backups.recover_interrupted(env) == []
    assert foreign.exists() and not (env.dir / backups.IN_PROGRESS).exists()
    assert os.path.isdir(partial)


class _Result:
    def __init__(self, rc: int, stderr: str = "") -> None:
        self.rc, self.stderr, self.stdout = rc, stderr, ""


def _with_two_replicas() -> Environment:
    env = Environment(name="lab", kind="remote", on="db1", host="10.0.0.11", port=5440)
    env.replicas = [
        {"name": "r1", "on": "db2", "host": "10.0.0.12", "port": 5450, "slot": "pgrig_r1",
         "env": "lab.r1"},
        {"name": "r2", "on": "db3", "host": "10.0.0.13", "port": 5450, "slot": "pgrig_r2",
         "env": "lab.r2"},
    ]  # fmt: skip
    return env


def test_destroy_keeps_what_an_unreachable_host_still_holds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pgrig.hosts import registry, remote
    from pgrig.hosts.registry import Host

    monkeypatch.setattr(registry, "get", lambda name: Host(name, "root", "10.0.0.99"))
    asked: list[tuple[str, list[str]]] = []

    def run(host: Host, argv: list[str], **_kw: object) -> _Result:
        asked.append((host.name, argv))
        if host.name == "db3":
            raise PgrigError("host db3 (root@10.0.0.13:22): unreachable (no answer: timed out)")
        return _Result(0)

    monkeypatch.setattr(remote, "run", run)
    env = _with_two_replicas()
    problems = remote_replicas.remove(env, force=False)
    assert asked[0] == ("db2", ["env", "destroy", "lab.r1", "--yes", "--force"])
    assert problems == [
        "replica r2 on host db3: host db3 (root@10.0.0.13:22): unreachable (no answer: timed out)"
    ]
    assert [r["name"] for r in env.replicas] == ["r2"]  # kept: `env destroy` again later
    env = _with_two_replicas()
    assert len(remote_replicas.remove(env, force=True)) == 1 and env.replicas == []


def test_env_commands_reach_every_replica_host_and_say_which_failed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pgrig.hosts import registry, remote
    from pgrig.hosts.registry import Host

    monkeypatch.setattr(registry, "get", lambda name: Host(name, "root", "10.0.0.99"))
    done: list[list[str]] = []

    def forward(host: Host, argv: list[str], stdin: bytes | None = None) -> int:
        if host.name == "db3":
            raise PgrigError("host db3: unreachable")
        done.append(argv)
        return 0

    monkeypatch.setattr(remote, "forward", forward)
    said: list[str] = []
    rc = remote_replicas.fan_out(_with_two_replicas(), lambda n: ["env", "stop", n], said.append)
    assert rc == 1 and done == [["env", "stop", "lab.r1"]]
    assert said == ["replica r2 on host db3: host db3: unreachable"]


def test_run_pages_name_the_host_of_a_replica_on_another_host() -> None:
    from pgrig.views import backup_figures

    assert backup_figures._where({"name": "r1", "port": 5441}) == "r1 (port 5441)"
    far = {"name": "r1", "on": "db2", "host": "10.0.0.12", "port": 5450}
    assert backup_figures._where(far) == "r1 (host db2, 10.0.0.12:5450)"
