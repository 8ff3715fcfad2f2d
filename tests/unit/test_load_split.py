"""Sharing one run's load over its load hosts (load/remote/split.py), saturated load hosts and
network
facts (load/remote/multi_load.py, load/remote/network.py)."""

from __future__ import annotations

import pytest

from pgrig.errors import PgrigError
from pgrig.load.remote.multi_load import saturated_hosts
from pgrig.load.remote.network import describe, path_facts
from pgrig.load.remote.split import even, split_load


def test_clients_and_threads_split_evenly_in_host_order() -> None:
    shares = split_load(["c1", "c2", "c3"], 1000, 8, None)
    assert [s.clients for s in shares] == [334, 333, 333]
    assert [s.threads for s in shares] == [3, 3, 2]
    assert sum(s.clients for s in shares) == 1000


def test_every_host_runs_a_thread_and_no_more_threads_than_clients() -> None:
    shares = split_load(["c1", "c2", "c3"], 4, 1, None)
    assert [(s.clients, s.threads) for s in shares] == [(2, 1), (1, 1), (1, 1)]
    shares = split_load(["a", "b"], 2, 16, None)
    assert [s.threads for s in shares] == [1, 1]


def test_rate_follows_the_clients() -> None:
    shares = split_load(["c1", "c2"], 3, 2, 900.0)
    assert [s.rate for s in shares] == [600.0, 300.0]
    assert sum(s.rate or 0 for s in shares) == pytest.approx(900.0)


def test_split_refusals_name_the_problem() -> None:
    with pytest.raises(PgrigError, match="each needs at least one client"):
        split_load(["a", "b", "c"], 2, 2, None)
    with pytest.raises(PgrigError, match="--load-from a is given twice"):
        split_load(["a", "a"], 4, 2, None)


def test_even() -> None:
    assert even(10, 4) == [3, 3, 2, 2]
    assert even(0, 2) == [0, 0]


def test_saturated_load_hosts_only() -> None:
    busy = {"ts": [10.0, 11.0, 12.0, 13.0], "cpu_idle": [1.0, 2.0, 3.0, 50.0],
            "cpu_iowait": [0.0, 1.0, 0.0, 0.0]}  # fmt: skip
    calm = {"ts": [10.0, 11.0, 12.0], "cpu_idle": [60.0, 70.0, 80.0], "cpu_iowait": [0, 0, 0]}
    series = {"os@c1": busy, "os@c2": calm, "os@db1": busy}
    assert saturated_hosts(series, ["c1", "c2"], 9.5, 12.0) == {"c1": pytest.approx(97.7, 0.01)}
    assert saturated_hosts(series, ["c1"], 12.5, 13.0) == {}  # the window held the calm second


def test_path_facts_and_their_line() -> None:
    got = path_facts(
        "c1",
        {"target": "10.0.0.2:5432", "address": "10.0.0.2", "loopback": False,
         "samples_us": [100.0] * 98 + [900.0, 1000.0]},
    )  # fmt: skip
    assert got["rtt_p50_ms"] == pytest.approx(0.1)
    assert 0.1 < got["rtt_p99_ms"] <= 1.0
    assert got["loopback"] is False and got["samples"] == 100
    line = describe({"paths": [got]})
    assert line is not None and "c1 -> 10.0.0.2:5432 (network)" in line
    assert describe(None) is None
    failed = path_facts("c2", {"target": "x:1", "samples_us": [], "error": "refused"})
    assert failed["error"] == "refused" and "rtt_p50_ms" not in failed
