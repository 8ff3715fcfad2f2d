"""`env repair` of a replica on another host (no servers, no hosts: pg_basebackup, the server
and the hosts stand in). The replica's host clones it again into a staging directory swapped
in only when complete; the control machine asks every host first, renews the slot on the
primary, then has the replica's host clone. The real thing: test_replica_hosts_rig.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pgrig.errors import PgrigError
from pgrig.hosts import registry, remote
from pgrig.hosts.registry import Host
from pgrig.provision import repair as repairing
from pgrig.provision.remote import repair as remote_repair
from pgrig.provision.server import postmaster, standby
from pgrig.provision.state.environment import Environment

SOURCE = standby.Source("10.0.0.11", 5440, "pgrig_r1", "r1")


def _replica(with_data: bool = False, with_passfile: bool = True) -> Environment:
    """db2's `lab.r1`: a replica of 10.0.0.11:5440 whose data directory may be gone."""
    env = Environment(name="lab.r1", port=5441, major=18, bindir="/nonexistent",
                      standby_of=SOURCE.as_dict(), listen="10.0.0.12")  # fmt: skip
    env.dir.mkdir(parents=True)
    env.save()
    if with_passfile:
        standby.write_passfile(env, SOURCE, "old-secret")
    if with_data:
        env.datadir.mkdir()
        (env.datadir / "PG_VERSION").write_text("18\n")
        (env.datadir / "old-marker").write_text("old")
    return env


class FakeBasebackup:
    """pg_basebackup into the staging directory: what it was given, how it ends."""

    def __init__(self, fail: str | None = None, busy: int = 0, interrupt: bool = False) -> None:
        self.calls: list[dict[str, Any]] = []
        self.fail, self.busy, self.interrupt = fail, busy, interrupt

    def __call__(self, env: Environment, datadir: Path, primary: str, slot: str, *,
                 create_slot: bool) -> str | None:  # fmt: skip
        self.calls.append({"datadir": datadir, "primary": primary, "slot": slot,
                           "create_slot": create_slot})  # fmt: skip
        (datadir / "base").mkdir()  # a partial clone
        if self.interrupt:
            raise KeyboardInterrupt  # SIGTERM reaches the host's pgrig as Terminated
        if self.busy:
            self.busy -= 1
            return 'replication slot "pgrig_r1" is active for PID 4242'
        if self.fail:
            return self.fail
        (datadir / "PG_VERSION").write_text("18\n")
        (datadir / "postgresql.auto.conf").write_text(
            "primary_conninfo = 'user=pgrig_replication sslnegotiation=postgres'\n"
            "primary_slot_name = 'pgrig_r1'\n"
        )
        return None


@pytest.fixture
def no_server(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    started: list[str] = []
    monkeypatch.setattr(postmaster, "start", lambda env, timeout=60: started.append(env.name))
    monkeypatch.setattr(repairing, "stop_orphans", lambda datadir: 0)
    monkeypatch.setattr(repairing.time, "sleep", lambda s: None)
    from pgrig.provision.settings import config

    monkeypatch.setattr(config, "write_conf", lambda env, run=None: None)
    return started


def test_check_says_a_replica_without_data_is_cloned_again(pgrig_home: Path) -> None:
    _replica(with_data=False)
    d = repairing.diagnose("lab.r1")
    assert d.needed and d.reclone and not d.rebuild
    (Environment.load("lab.r1").dir / "data.reclone").mkdir()
    assert repairing.diagnose("lab.r1").leftovers == ("data.reclone",)


def test_the_replica_is_cloned_again_and_swapped_in(
    pgrig_home: Path, monkeypatch: pytest.MonkeyPatch, no_server: list[str]
) -> None:
    env = _replica(with_data=False)
    fake = FakeBasebackup(busy=2)  # the old walsender holds the slot twice, then lets go
    monkeypatch.setattr(standby, "base_backup", fake)
    done = repairing.repair("lab.r1", lambda _m: None)
    assert done == ["cloned again from its primary 10.0.0.11:5440 (slot pgrig_r1)"]
    assert [c["create_slot"] for c in fake.calls] == [False, False, False]  # the slot exists
    assert {c["datadir"] for c in fake.calls} == {env.dir / "data.reclone"}
    assert "passfile=" in fake.calls[0]["primary"] and "old-secret" not in fake.calls[0]["primary"]
    assert (env.datadir / "PG_VERSION").is_file() and not (env.dir / "data.reclone").exists()
    auto = (env.datadir / "postgresql.auto.conf").read_text()
    assert "sslnegotiation" not in auto and "primary_slot_name = 'pgrig_r1'" in auto
    assert no_server == ["lab.r1"]


def test_a_new_password_and_source_from_the_control_machine(
    pgrig_home: Path, monkeypatch: pytest.MonkeyPatch, no_server: list[str]
) -> None:
    env = _replica(with_data=True)
    monkeypatch.setattr(standby, "base_backup", FakeBasebackup())
    moved = standby.Source("10.0.0.11", 5450, "pgrig_r1", "r1")
    repairing.repair("lab.r1", lambda _m: None, source=moved, password="new-secret", reclone=True)
    line = "10.0.0.11:5450:*:pgrig_replication:new-secret"
    assert line in Path(standby.passfile(env)).read_text()
    assert (Path(standby.passfile(env)).stat().st_mode & 0o777) == 0o600
    assert not (env.datadir / "old-marker").exists()  # the old data set aside, then removed
    assert not (env.dir / "data.old").exists()
    assert Environment.load("lab.r1").standby_of == moved.as_dict()


@pytest.mark.parametrize("how", ["fails", "interrupted"])
def test_a_failed_or_interrupted_clone_leaves_the_replica_as_it_was(
    pgrig_home: Path, monkeypatch: pytest.MonkeyPatch, no_server: list[str], how: str
) -> None:
    env = _replica(with_data=True)
    fake = FakeBasebackup(fail="could not connect to server", interrupt=how == "interrupted")
    monkeypatch.setattr(standby, "base_backup", fake)
    expected: type[BaseException] = PgrigError if how == "fails" else KeyboardInterrupt
    with pytest.raises(expected) as e:
        repairing.repair("lab.r1", lambda _m: None, reclone=True)
    if how == "fails":
        assert str(e.value) == (
            "pg_basebackup from 10.0.0.11:5440 failed: could not connect to server"
        )
    assert (env.datadir / "old-marker").read_text() == "old"  # untouched
    assert not (env.dir / "data.reclone").exists() and no_server == []
    assert json.loads((env.dir / "env.json").read_text())["standby_of"] == SOURCE.as_dict()


def test_a_replica_without_its_password_says_where_to_repair(
    pgrig_home: Path, no_server: list[str]
) -> None:
    _replica(with_data=False, with_passfile=False)
    with pytest.raises(PgrigError, match=r"replication password is gone .*control machine"):
        repairing.repair("lab.r1", lambda _m: None)


def test_an_interrupted_swap_is_finished_by_the_next_repair(
    pgrig_home: Path, monkeypatch: pytest.MonkeyPatch, no_server: list[str]
) -> None:
    env = _replica(with_data=False)
    (env.dir / "data.reclone" / "base").mkdir(parents=True)  # kill -9 mid-clone
    (env.dir / "data.old").mkdir()  # ... or mid-swap
    monkeypatch.setattr(standby, "base_backup", FakeBasebackup())
    repairing.repair("lab.r1", lambda _m: None)
    assert sorted(p.name for p in env.dir.iterdir() if p.name.startswith("data")) == ["data"]


def test_a_damaged_replica_says_how_to_repair_it(pgrig_home: Path) -> None:
    from pgrig.provision.state.environment import DamagedEnvironment

    env = _replica(with_data=False)
    with pytest.raises(DamagedEnvironment, match="clones it again"):
        env.check_intact()


# --- the control machine ---------------------------------------------------------------------


def _record(pgrig_home: Path) -> Environment:
    env = Environment(name="lab", kind="remote", on="db1", host="10.0.0.11", port=5440,
                      listen="10.0.0.11")  # fmt: skip
    env.replicas = [{"name": "r1", "on": "db2", "host": "10.0.0.12", "port": 5441,
                     "slot": "pgrig_r1", "env": "lab.r1"}]  # fmt: skip
    env.save()
    return env


class Hosts:
    """db1 and db2 as the control machine sees them: each command and its stdin."""

    def __init__(self, primary: dict[str, Any], replica: dict[str, Any] | Exception) -> None:
        self.calls: list[tuple[str, list[str], str | None]] = []
        self.primary, self.replica = primary, replica

    def run_json(self, host: Host, argv: list[str], *, input: str | None = None) -> Any:
        self.calls.append((host.name, list(argv), input))
        if argv[:2] == ["env", "repair"] and "--check" in argv:
            if host.name == "db2":
                if isinstance(self.replica, Exception):
                    raise self.replica
                return self.replica
            return self.primary
        if argv[:2] == ["env", "replication"]:
            return {"name": "r1", "slot": "pgrig_r1", "user": "pgrig_replication",
                    "host": "10.0.0.11", "port": 5440}  # fmt: skip
        if argv[:2] == ["env", "show"]:
            return {"port": 5441}
        raise AssertionError(argv)

    def forward(self, host: Host, argv: list[str], stdin: bytes | None = None) -> int:
        self.calls.append((host.name, list(argv), stdin.decode() if stdin else None))
        return 0


@pytest.fixture
def hosts_of(monkeypatch: pytest.MonkeyPatch) -> Any:
    from pgrig.provision.remote import environments as remote_env

    addresses = {"db1": "10.0.0.11", "db2": "10.0.0.12"}
    monkeypatch.setattr(registry, "get", lambda name: Host(name, "root", addresses[name]))
    monkeypatch.setattr(remote_env, "refresh", lambda env: env)

    def make(primary: dict[str, Any], replica: dict[str, Any] | Exception) -> Hosts:
        h = Hosts(primary, replica)
        monkeypatch.setattr(remote, "run_json", h.run_json)
        monkeypatch.setattr(remote, "forward", h.forward)
        return h

    return make


NOTHING = {"needed": False, "rebuild": False, "reclone": False, "replicas": [], "leftovers": []}


def test_control_clones_a_replica_whose_data_is_gone(pgrig_home: Path, hosts_of: Any) -> None:
    env = _record(pgrig_home)
    h = hosts_of(NOTHING, {**NOTHING, "needed": True, "reclone": True})
    remote_repair.repair(env, force=False, say=lambda _m: None)
    assert [(c[0], c[1][:3]) for c in h.calls] == [
        ("db1", ["env", "repair", "lab"]),  # --check: every host asked first
        ("db2", ["env", "repair", "lab.r1"]),  # --check
        ("db1", ["env", "replication", "lab"]),  # renew: a fresh slot
        ("db2", ["env", "repair", "lab.r1"]),  # the clone, streamed
        ("db2", ["env", "show", "lab.r1"]),
    ]
    assert h.calls[2][1] == ["env", "replication", "lab", "renew", "r1", "--address",
                             "10.0.0.12", "--json"] and h.calls[2][2] == "\n"  # fmt: skip
    assert h.calls[3][1] == [
        "env", "repair", "lab.r1", "--reclone", "--standby-of", "10.0.0.11:5440",
        "--slot", "pgrig_r1", "--application-name", "r1",
    ]  # fmt: skip
    assert h.calls[3][2] is None  # the password it has is still the role's


def test_a_recreated_primary_gives_every_replica_a_new_password(
    pgrig_home: Path, hosts_of: Any
) -> None:
    env = _record(pgrig_home)
    h = hosts_of({**NOTHING, "needed": True, "rebuild": True}, NOTHING)
    remote_repair.repair(env, force=False, say=lambda _m: None)
    argvs = [c[1] for c in h.calls]
    assert argvs[2] == ["env", "repair", "lab"]  # the primary's host first, streamed
    renew, clone = h.calls[3], h.calls[4]
    assert renew[2] is not None and renew[2].startswith("SCRAM-SHA-256$")  # only the verifier
    assert "--reclone" in clone[1] and "--password-stdin" in clone[1]
    password = (clone[2] or "").strip()
    assert len(password) >= 20 and all(password not in " ".join(c[1]) for c in h.calls)
    assert password not in (renew[2] or "")


def test_an_unreachable_replica_host_stops_the_repair_before_anything(
    pgrig_home: Path, hosts_of: Any
) -> None:
    env = _record(pgrig_home)
    h = hosts_of(
        {**NOTHING, "needed": True, "rebuild": True},
        PgrigError("host db2 (root@10.0.0.12:22): unreachable (no answer: timed out)"),
    )
    with pytest.raises(PgrigError) as e:
        remote_repair.repair(env, force=False, say=lambda _m: None)
    assert str(e.value).startswith(
        "replica r1 on host db2: host db2 (root@10.0.0.12:22): unreachable (no answer: timed "
        "out) (nothing was repaired on any host"
    )
    assert all("--check" in c[1] for c in h.calls)  # nothing but questions


def test_check_changes_nothing(pgrig_home: Path, hosts_of: Any) -> None:
    env = _record(pgrig_home)
    h = hosts_of(NOTHING, {**NOTHING, "needed": True, "reclone": True})
    doc = remote_repair.look(env)
    assert doc["replicas"]["r1"]["reclone"] and not doc["primary"]["needed"]
    assert all("--check" in c[1] for c in h.calls)
