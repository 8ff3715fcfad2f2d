"""The `pgrig env` commands' domain (provision/operations/ and the helpers they call), called
without the CLI: every flag combination refused before anything is made, with the message the
CLI prints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pgrig.errors import PgrigError
from pgrig.provision.operations import change, create, lifecycle
from pgrig.provision.operations import pooler as pooling
from pgrig.provision.pooler import auth, options
from pgrig.provision.server import replication_access
from pgrig.request.environment import EnvironmentRequest
from pgrig.request.problems import from_flags

VERIFIER = "SCRAM-SHA-256$4096:c2FsdA==$c3RvcmVk:c2VydmVy"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"on": "db1", "disk_limit": "wiops=10"}, "--disk-limit is not supported"),
        ({"replica_on": ["db2"]}, "--replica-on needs --on HOST"),
        ({"pooler_on": "db3"}, "--pooler-on HOST needs --on HOST"),
        (
            {"standby_of": "10.0.0.1:5432", "slot": "s", "application_name": "r1"},
            "takes the replication password",
        ),
        ({"settings": ["no_equals_sign"]}, "NAME=VALUE"),
    ],
)
def test_create_refuses_flag_combinations_first(
    flags: dict[str, Any], message: str, pgrig_home: Path
) -> None:
    with pytest.raises(PgrigError, match=message):
        create.check(from_flags(EnvironmentRequest, name="e", **flags))
    assert not (pgrig_home / "envs").exists() or not any((pgrig_home / "envs").iterdir())


def test_create_on_a_host_is_checked_by_the_host() -> None:
    plan = create.check(EnvironmentRequest(name="e", on="db1", pooler_on="db3"))
    assert plan.on_host and plan.settings == {} and plan.pooler is None


@pytest.mark.parametrize(
    ("asked", "disk", "message"),
    [
        (change.Change(), None, "nothing to change"),
        (change.Change(["a=1"]), "wiops=1", "give --disk-limit alone"),
        (change.Change(["a=1"], sync="on"), None, "--sync alone"),
        (change.Change(insights=True, sync="on"), None, "--sync alone"),
        (change.Change(reset=["a"], insights=False), None, "alone"),
    ],
)
def test_set_is_one_change(asked: change.Change, disk: str | None, message: str) -> None:
    with pytest.raises(PgrigError, match=message):
        change.check(asked, disk)


def test_set_accepts_each_change_alone() -> None:
    for asked in (
        change.Change(["a=1"], ["b"]),
        change.Change(sync="on"),
        change.Change(insights=True),
    ):
        change.check(asked)
    change.check(change.Change(), "none")


def test_disk_limit_change_says_what_it_did() -> None:
    done = change.DiskLimitChange("e", "none", "wiops=10", True, False, False)
    assert done.action == "next start"
    assert done.as_dict() == {
        "env": "e",
        "action": "next start",
        "changed": [{"name": "disk_limit", "before": "none", "after": "wiops=10"}],
    }
    same = change.DiskLimitChange("e", "none", "none", False, True, True)
    assert same.action == "unchanged" and same.as_dict()["changed"] == []


def test_replication_actions_checked() -> None:
    with pytest.raises(PgrigError, match="expected allow, renew or forget, got 'grant'"):
        replication_access.check_action("grant", "10.0.0.2")
    with pytest.raises(PgrigError, match="env replication renew needs --address"):
        replication_access.check_action("renew", None)
    replication_access.check_action("forget", None)


def test_pooler_listen_and_verifiers() -> None:
    cfg = pooling.listening_on(options(), "127.0.0.2")
    assert cfg.listen == "127.0.0.2"
    with pytest.raises(PgrigError, match="expected an IP address of this host"):
        pooling.listening_on(options(), "localhost")
    assert auth.parse_verifiers(f"{VERIFIER}\n{VERIFIER}\n") == (VERIFIER, VERIFIER)
    with pytest.raises(PgrigError, match="expected two SCRAM-SHA-256 verifiers"):
        auth.parse_verifiers(VERIFIER)
    with pytest.raises(PgrigError, match="--server ADDRESS:PORT goes with --verifiers-stdin"):
        pooling.target("e", None, "10.0.0.1:5432")


def test_destroy_and_repair_check_the_name_first(pgrig_home: Path) -> None:
    said: list[str] = []
    for bad in ("../x", "a b"):
        with pytest.raises(PgrigError):
            lifecycle.destroy(bad, False, said.append)
        with pytest.raises(PgrigError):
            lifecycle.repair_check(bad)
    assert said == [] and lifecycle.on_host("nothing") is None


def test_env_show_warns_when_a_sync_mode_has_no_streaming_replica() -> None:
    from pgrig.provision.env_status import topology_warnings

    primary = {"role": "primary", "replication": {}}
    stopped = {"role": "replica", "replication": {}}
    streaming = {"role": "replica", "replication": {"state": "streaming"}}
    (warning,) = topology_warnings("db", "on", [primary, stopped])
    assert "sync on and no replica is streaming" in warning and "pgrig env start db" in warning
    assert topology_warnings("db", "on", [primary, stopped, streaming]) == []
    assert topology_warnings("db", "off", [primary, stopped]) == []
