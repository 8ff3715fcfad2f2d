"""The database host's sampler names a host that fell silent (cut off mid-run) and is not
waited for when the run ends (load/remote/host_samplers.py). On the rig:
tests/integration/test_hosts_rig.py (the db host cut off)."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from pgrig.load.remote import host_samplers


class FakeAgent:
    def __init__(self, silent_s: float) -> None:
        self.state = SimpleNamespace(lost=None)
        self.silent_s = silent_s
        self.closed_lost: list[bool] = []

    def silent_for(self) -> float:
        return self.silent_s

    def lose(self, why: str) -> None:
        self.state.lost = why

    def close(self) -> None:
        self.closed_lost.append(self.state.lost is not None)


def test_a_silent_db_host_is_named_and_given_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGRIG_AGENT_SILENCE_S", "3")
    assert host_samplers.lost_after_s() == 3.0
    samplers = host_samplers.HostSamplers()
    talking, cut = FakeAgent(0.4), FakeAgent(7.2)
    samplers.agents = {"db1": cut, "mon": talking}  # type: ignore[dict-item]
    samplers.roles = {"db1": ["db"], "mon": ["pooler"]}
    samplers.rows = {"db1": [(time.time(), {"cpu_idle": 50.0})], "mon": []}
    assert samplers.lost(3.0) == "db host db1 lost (no word from it for 7 s: cut off, or down)"
    cut.silent_s = 1.0  # it spoke again
    assert samplers.lost(10.0) is None
    cut.silent_s = 7.2
    series = samplers.stop()
    assert cut.closed_lost == [True] and talking.closed_lost == [False]
    assert list(series) == ["os@db1"]


def test_default_silence_is_the_load_agents(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PGRIG_AGENT_SILENCE_S", raising=False)
    assert host_samplers.lost_after_s() == host_samplers.SILENT_LOST_S


def test_a_host_going_silent_is_waited_for_until_it_is_lost() -> None:
    samplers = host_samplers.HostSamplers()
    going = FakeAgent(0.0)
    began = time.monotonic()
    going.silent_for = lambda: 2.6 + (time.monotonic() - began)  # type: ignore[method-assign]
    samplers.agents = {"db1": going}  # type: ignore[dict-item]
    samplers.roles = {"db1": ["db"]}
    assert samplers.lost(3.0) == "db host db1 lost (no word from it for 3 s: cut off, or down)"
