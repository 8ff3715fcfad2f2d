"""Runs with hosts for the comparison tests: one on this machine alone, one with its database on
db1 (`env create --on`) and load from c1 and c2, each host with its own sampler series."""

from __future__ import annotations

from study_fakes import make_record

from pgrig.archive.records import RunRecord

SECONDS = 6


def _os(idle: list[float], iowait: list[float], steal: list[float]) -> dict[str, list]:
    """A sampler's series: second -1 (lead-in, outside the window) to SECONDS + 1 (after it)."""
    t = [float(x) for x in range(-1, len(idle) - 1)]
    return {"t": t, "cpu_idle": idle, "cpu_iowait": iowait, "cpu_steal": steal,
            "cpu_user": [50.0] * len(t), "cpu_system": [5.0] * len(t)}  # fmt: skip


def _values(n: int, first: float, step: float) -> list[float]:
    return [round(first + i * step, 2) for i in range(n)]


def local_run(seed: int) -> RunRecord:
    """Database and pgbench on this machine: its own sampler ("os") only."""
    rec = make_record(tps=1000, seconds=SECONDS, seed=seed)
    n = SECONDS + 3
    rec.series["os"] = _os(_values(n, 40, 1.5), _values(n, 2, 0.25), [0.0] * n)
    return rec


def hosts_run(seed: int, busy_c1: bool) -> RunRecord:
    """Database on db1 (`env create --on`), load from c1 and c2; c1 saturated or not."""
    rec = make_record(tps=1100, seconds=SECONDS, seed=seed)
    rec.managed = False
    n = SECONDS + 3
    rec.series["os"] = _os([99.0] * n, [0.0] * n, [0.0] * n)  # this machine: did nothing
    rec.series["os@db1"] = _os(_values(n, 30, 2), _values(n, 4, 0.5), _values(n, 0.5, 0.1))
    c1_idle = _values(n, 3, 0.5) if busy_c1 else _values(n, 50, 1)
    rec.series["os@c1"] = _os(c1_idle, [0.0] * n, _values(n, 1, 0.2))
    rec.series["os@c2"] = _os(_values(n, 60, -1), [0.1] * n, [0.0] * n)
    rec.extra["host_roles"] = {"c1": ["load"], "c2": ["load"], "db1": ["db"]}
    rec.extra["load"] = {
        "split": [{"host": "c1", "clients": 4, "threads": 1},
                  {"host": "c2", "clients": 4, "threads": 1}],
        "hosts": {"c1": {}, "c2": {}},
        "saturated": {"c1": 96.0} if busy_c1 else {},
    }  # fmt: skip
    return rec
