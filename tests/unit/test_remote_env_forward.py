"""env commands on an environment on another host: the CLI parses and calls
provision/remote/, which forwards each command to the right host's pgrig in the right order
and ends with the worst exit status (a failed host command is not said twice)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pgrig.cli.env import app
from pgrig.hosts import registry, remote
from pgrig.hosts.registry import Host
from pgrig.provision.state.environment import Environment


@pytest.fixture
def hosts(pgrig_home: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[str]]]:
    env = Environment(name="lab", kind="remote", on="db1", host="10.0.0.11", port=5440,
                      listen="10.0.0.11")  # fmt: skip
    env.replicas = [{"name": "r1", "on": "db2", "host": "10.0.0.12", "port": 5441,
                     "slot": "pgrig_r1", "env": "lab.r1"}]  # fmt: skip
    env.save()
    calls: list[tuple[str, list[str]]] = []
    addresses = {"db1": "10.0.0.11", "db2": "10.0.0.12"}
    monkeypatch.setattr(registry, "get", lambda name: Host(name, "root", addresses[name]))

    def forward(host: Host, argv: list[str], stdin: bytes | None = None) -> int:
        calls.append((host.name, list(argv)))
        return 3 if argv[:2] == ["env", "restart"] and host.name == "db2" else 0

    def run_json(host: Host, argv: list[str], *, input: str | None = None) -> Any:
        calls.append((host.name, list(argv)))
        return {"port": 5440, "version": "18.6", "sync": "on", "topology": []}

    monkeypatch.setattr(remote, "forward", forward)
    monkeypatch.setattr(remote, "run_json", run_json)
    return calls


def test_set_sync_goes_to_the_primary_and_the_record_follows(
    hosts: list[tuple[str, list[str]]],
) -> None:
    res = CliRunner().invoke(app, ["set", "lab", "--sync", "on"])
    assert res.exit_code == 0, res.output
    assert hosts == [("db1", ["env", "set", "lab", "--sync", "on"]),
                     ("db1", ["env", "show", "lab", "--json"])]  # fmt: skip
    assert Environment.load("lab").sync == "on"


def test_stop_stops_the_replicas_first(hosts: list[tuple[str, list[str]]]) -> None:
    res = CliRunner().invoke(app, ["stop", "lab"])
    assert res.exit_code == 0, res.output
    assert [(h, argv[:3]) for h, argv in hosts] == [
        ("db2", ["env", "stop", "lab.r1"]),
        ("db1", ["env", "stop", "lab"]),
    ]


def test_the_worst_exit_status_ends_the_command(hosts: list[tuple[str, list[str]]]) -> None:
    res = CliRunner().invoke(app, ["restart", "lab"])
    assert res.exit_code == 3  # the replica's host failed; the primary's was still restarted
    assert [(h, argv[:3]) for h, argv in hosts] == [
        ("db1", ["env", "restart", "lab"]),
        ("db2", ["env", "restart", "lab.r1"]),
    ]
