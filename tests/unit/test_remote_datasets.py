"""What a remote environment's databases hold (`env create --on`): `pgrig db generate` runs on
the host and records there, so the control machine reads the host's record through its pgrig
(`env show --json`), the newest record per database winning over one kept here. On the rig:
tests/integration/test_hosts_rig.py (TPC-C on a remote environment)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pgrig.errors import PgrigError
from pgrig.provision.state.environment import Environment
from pgrig.workloads import datasets


@pytest.fixture
def remote(pgrig_home: Path, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """A host whose pgrig answers `env show lab --json` with two datasets; the calls made."""
    from pgrig.hosts import registry, remote

    calls: list[list[str]] = []
    monkeypatch.setattr(registry, "get", lambda name: f"host {name}")

    def run_json(host: Any, argv: list[str], **_: Any) -> Any:
        calls.append([host, *argv])
        if host != "host db1":
            raise PgrigError("host down: unreachable")
        return {
            "name": "lab",
            "datasets": {
                "tpcc": {"scenario": "tpcc", "warehouses": 1, "complete": True,
                         "generated_at": "2026-01-02T10:00:00+00:00"},
                "pgbench": {"scenario": "pgbench", "scale": 10,
                            "generated_at": "2026-01-01T10:00:00+00:00"},
            },
        }  # fmt: skip

    monkeypatch.setattr(remote, "run_json", run_json)
    return calls


def _env(on: str) -> Environment:
    return Environment(name="lab", kind="remote", on=on, host="10.0.0.1", port=5432)


def test_a_remote_environment_reads_its_hosts_datasets(remote: list[list[str]]) -> None:
    env = _env("db1")
    info = datasets.usable(env, "tpcc")
    assert info is not None and info["warehouses"] == 1
    assert remote == [["host db1", "env", "show", "lab", "--json"]]
    # a record kept here that is newer wins for its database; an older one does not
    datasets.record(env, "pgbench", {"scenario": "pgbench", "scale": 1})
    datasets._write(env, {**datasets._load_local(env),
                          "tpcc": {"scenario": "tpcc", "warehouses": 9,
                                   "generated_at": "2025-12-31T00:00:00+00:00"}})  # fmt: skip
    both = datasets.load_all(env)
    assert both["pgbench"]["scale"] == 1 and both["tpcc"]["warehouses"] == 1


def test_an_unreachable_host_leaves_what_is_kept_here(remote: list[list[str]]) -> None:
    env = _env("gone")
    assert datasets.load_all(env) == {}
    datasets.record(env, "db", {"scenario": "pgbench", "scale": 2})
    assert datasets.load_all(env)["db"]["scale"] == 2


def test_local_environments_never_ask_a_host(remote: list[list[str]]) -> None:
    env = Environment(name="here", kind="managed")
    datasets.record(env, "db", {"scenario": "pgbench", "scale": 3})
    assert datasets.load_all(env)["db"]["scale"] == 3
    assert remote == []


def test_merged_prefers_the_newest_record() -> None:
    here = {"a": {"generated_at": "2026-01-02"}, "b": {"generated_at": "2026-01-01"}, "c": {}}
    there = {"a": {"generated_at": "2026-01-01", "x": 1}, "b": {"generated_at": "2026-01-03",
             "x": 2}, "c": {"generated_at": "2026-01-01", "x": 3}, "d": {"x": 4}}  # fmt: skip
    out = datasets.merged(here, there)
    assert out["a"] == here["a"]
    assert [out[k].get("x") for k in "bcd"] == [2, 3, 4]
