"""PoolerSampler on real pgbouncer 1.18 answers (captured), without a pooler."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pgrig.metrics.pooler_metrics import PoolerSampler
from pgrig.metrics.sampler import Source


@pytest.fixture
def samples(fixtures_dir: Path) -> list[dict[str, Any]]:
    data = json.loads((fixtures_dir / "pooler" / "show_pools_stats_1.18.json").read_text())
    return data["samples"]


class FakeConsole:
    """Answers SHOW POOLS / SHOW STATS from a list of snapshots, one per sample."""

    def __init__(self, snaps: list[dict[str, Any]], fail_at: set[int] | None = None) -> None:
        self.snaps, self.i, self.fail_at, self.closed = snaps, -1, fail_at or set(), False

    def advance(self) -> None:
        self.i += 1

    def cursor(self) -> FakeConsole:
        return self

    def execute(self, query: str) -> None:
        if self.i in self.fail_at:
            raise OSError("server closed the connection unexpectedly")
        self.rows = self.snaps[self.i][query]

    @property
    def description(self) -> list[Any]:
        return [type("D", (), {"name": k}) for k in self.rows[0]]

    def fetchall(self) -> list[tuple]:
        return [tuple(r.values()) for r in self.rows]

    def close(self) -> None:
        self.closed = True


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def make(consoles: list[FakeConsole], db: str | None = "pgrig"):
    clock = Clock()
    src = PoolerSampler([{"i": i} for i in range(len(consoles))], db, clock=clock,
                        connect=lambda p: consoles[p["i"]])  # fmt: skip

    def tick(dt: float = 1.0) -> dict:
        for c in consoles:
            c.advance()
        row = src.sample()
        clock.t += dt
        return row

    return src, tick


def stat(snap: dict, col: str) -> int:
    return next(s[col] for s in snap["SHOW STATS"] if s["database"] == "pgrig")


def test_is_a_sampler_source() -> None:
    assert isinstance(PoolerSampler([]), Source)
    assert PoolerSampler([]).name == "pooler"


def test_levels_and_rates_from_real_answers(samples: list[dict]) -> None:
    src, tick = make([FakeConsole(samples)])
    first = tick()
    assert first["xact_per_s"] is None  # no previous sample yet
    assert first["cl_active"] == 60 and first["sv_active"] == 18 and first["sv_idle"] == 2
    assert first["processes_up"] == 1
    second = tick()
    dx = stat(samples[1], "total_xact_count") - stat(samples[0], "total_xact_count")
    assert second["xact_per_s"] == pytest.approx(dx)
    dw = stat(samples[1], "total_wait_time") - stat(samples[0], "total_wait_time")
    assert second["wait_ms_per_s"] == pytest.approx(dw / 1000)
    assert second["wait_us_per_xact"] == pytest.approx(dw / dx)
    assert second["avg_xact_time_us"] == pytest.approx(stat(samples[1], "avg_xact_time"))
    assert second["avg_wait_time_us"] == pytest.approx(stat(samples[1], "avg_wait_time"))
    tick()
    summary = src.summary()
    assert summary["xact_count"] == stat(samples[2], "total_xact_count") - stat(
        samples[0], "total_xact_count"
    )
    assert summary["max_cl_active"] == 60


def test_admin_pool_is_not_counted(samples: list[dict]) -> None:
    _, tick = make([FakeConsole(samples)], db=None)
    row = tick()
    assert row["cl_active"] == 60  # the stats connection itself (database pgbouncer) excluded


def test_processes_are_summed(samples: list[dict]) -> None:
    _, tick = make([FakeConsole(samples), FakeConsole(samples)])
    tick()
    row = tick()
    dx = stat(samples[1], "total_xact_count") - stat(samples[0], "total_xact_count")
    active = next(p["cl_active"] for p in samples[1]["SHOW POOLS"] if p["database"] == "pgrig")
    assert row["processes_up"] == 2 and row["cl_active"] == 2 * active
    assert row["xact_per_s"] == pytest.approx(2 * dx)


def test_a_process_down_gives_unknown_rates_not_wrong_ones(samples: list[dict]) -> None:
    bad = FakeConsole(samples, fail_at={1})
    src, tick = make([FakeConsole(samples), bad])
    tick()
    row = tick()
    assert row["processes_up"] == 1 and row["xact_per_s"] is None
    assert bad.closed and "server closed" in (src.last_error or "")
    assert tick()["processes_up"] == 2  # reconnected


def test_nothing_answers_gives_an_empty_row(samples: list[dict]) -> None:
    _, tick = make([FakeConsole(samples, fail_at={0, 1, 2})])
    assert tick() == {}


def test_counter_reset_is_not_a_negative_rate(samples: list[dict]) -> None:
    restarted = [samples[2], samples[0], samples[1]]  # totals go down: pgbouncer restarted
    _, tick = make([FakeConsole(restarted)])
    tick()
    assert tick()["xact_per_s"] is None
    assert tick()["xact_per_s"] is not None


def test_close_closes_connections(samples: list[dict]) -> None:
    console = FakeConsole(samples)
    src, tick = make([console])
    tick()
    src.close()
    assert console.closed
