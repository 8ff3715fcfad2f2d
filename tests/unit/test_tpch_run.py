"""TPC-H runs: substitution parameters, Power@Size arithmetic, the request's rules, the
driver's record of a stream's output (captured from a real SF 0.01 power run)."""

from __future__ import annotations

import json
import math
import re
from datetime import date
from typing import Any

import pytest

from pgrig.errors import PgrigError
from pgrig.request import RunRequest, from_flags
from pgrig.workloads import specs
from pgrig.workloads.tpch import metrics, queries, refresh


def test_parameters_repeat_for_a_seed_and_differ_between_seeds_and_streams() -> None:
    a = [queries.substitution(q, 1.0, 7) for q in queries.QUERIES]
    assert a == [queries.substitution(q, 1.0, 7) for q in queries.QUERIES]
    assert a != [queries.substitution(q, 1.0, 8) for q in queries.QUERIES]
    assert a != [queries.substitution(q, 1.0, 7, stream=1) for q in queries.QUERIES]


@pytest.mark.parametrize("seed", range(40))
def test_parameters_stay_in_clause_2_4_ranges(seed: int) -> None:
    p = {q: queries.substitution(q, 10.0, seed) for q in queries.QUERIES}
    assert 60 <= int(p[1]["delta"]) <= 120
    assert 1 <= int(p[2]["size"]) <= 50 and p[2]["type"] in queries.TYPE_S3
    d3 = date.fromisoformat(p[3]["date"])
    assert (d3.year, d3.month) == (1995, 3)
    d4 = date.fromisoformat(p[4]["date"])
    assert d4.day == 1 and date(1993, 1, 1) <= d4 <= date(1997, 10, 1)
    assert p[5]["date"][5:] == "01-01" and 1993 <= int(p[5]["date"][:4]) <= 1997
    assert 0.02 <= float(p[6]["discount"]) <= 0.09 and p[6]["quantity"] in ("24", "25")
    assert p[7]["nation1"] != p[7]["nation2"]
    nation_region = dict(queries.NATIONS)
    assert queries.REGIONS[nation_region[p[8]["nation"]]] == p[8]["region"]
    assert len(p[8]["type"].split()) == 3 and p[9]["color"] in queries.COLORS
    d10 = date.fromisoformat(p[10]["date"])
    assert date(1993, 2, 1) <= d10 <= date(1995, 1, 1)
    assert float(p[11]["fraction"]) == pytest.approx(0.0001 / 10)
    assert p[12]["shipmode1"] != p[12]["shipmode2"]
    sizes = [int(s) for s in p[16]["sizes"].split(", ")]
    assert len(set(sizes)) == 8 and all(1 <= s <= 50 for s in sizes)
    assert re.fullmatch(r"Brand#[1-5][1-5]", p[17]["brand"])
    assert 312 <= int(p[18]["quantity"]) <= 315
    assert 1 <= int(p[19]["quantity1"]) <= 10 and 10 <= int(p[19]["quantity2"]) <= 20
    assert 20 <= int(p[19]["quantity3"]) <= 30
    codes = [int(c.strip("'")) for c in p[22]["codes"].split(", ")]
    assert len(set(codes)) == 7 and all(10 <= c <= 34 for c in codes)


def test_stream_0_runs_the_spec_order_and_every_query_once() -> None:
    plan = queries.plan_stream(1.0, 7)
    assert [p.query for p in plan][:3] == [14, 2, 9] and sorted(p.query for p in plan) == list(
        range(1, 23)
    )
    assert sorted(queries.stream_order(3, 7)) == list(range(1, 23))
    q1 = queries.plan_stream(1.0, None, order=(1,))[0]  # the qualification parameters
    assert "interval '90 day'" in q1.sql and "{" not in q1.sql


def test_power_at_size_matches_a_hand_computation() -> None:
    # 22 queries of 2 s and RF1 = RF2 = 2 s: the geometric mean is 2 s, 3600 x 10 / 2
    assert metrics.power_at_size(10, [2.0] * 22, [2.0, 2.0]) == pytest.approx(18_000)
    # one query 0.001 s beside a longest of 100 s: raised to 0.1 s (1/1000 of the longest)
    times = [100.0, 0.001] + [1.0] * 20
    by_hand = 3600 * 1 / math.exp((math.log(100) + math.log(0.1) + 2 * math.log(4)) / 24)
    assert metrics.power_at_size(1, times, [4.0, 4.0]) == pytest.approx(by_hand)
    assert metrics.throughput_at_size(1, 2, 3600) == pytest.approx(44.0)
    assert metrics.qphh_at_size(100.0, 400.0) == pytest.approx(200.0)
    with pytest.raises(ValueError):
        metrics.power_at_size(1, [1.0] * 21, [1.0, 1.0])


def _events(timeout_q: int | None = None) -> list[dict]:
    out: list[dict] = [{"event": "start", "mode": "power", "scale_factor": 1.0, "seed": 7,
                        "streams": 0, "order": list(queries.STREAM_0_ORDER)}]  # fmt: skip
    out.append({"event": "refresh", "function": "RF1", "status": "ok", "seconds": 2.0})
    for q in queries.STREAM_0_ORDER:
        status = "timeout" if q == timeout_q else "ok"
        out.append({"event": "query", "query": q, "status": status, "seconds": 2.0})
    out.append({"event": "refresh", "function": "RF2", "status": "ok", "seconds": 2.0})
    out.append({"event": "end", "seconds": 48.0})
    return out


def test_summary_gives_power_only_when_every_query_completed() -> None:
    doc = metrics.summarize(_events())
    assert doc["power_at_size"] == pytest.approx(1800.0) and doc["complete"] is True
    timed_out = metrics.summarize(_events(timeout_q=17))
    assert timed_out["power_at_size"] is None and timed_out["timed_out"] == ["Q17"]
    assert len(timed_out["queries"]) == 22  # recorded, never dropped


def test_tpch_requests_refuse_what_does_not_apply() -> None:
    ok = from_flags(RunRequest, env_name="e", workload="tpch:power", query_timeout_s=60.0)
    assert ok.is_tpch and ok.duration_s is None
    with pytest.raises(PgrigError, match="--duration"):
        from_flags(RunRequest, env_name="e", workload="tpch:power", duration_s=10.0)
    with pytest.raises(PgrigError, match="--streams"):
        from_flags(RunRequest, env_name="e", workload="tpch:power", streams=2)
    with pytest.raises(PgrigError, match="--query-timeout"):
        from_flags(RunRequest, env_name="e", workload="pgbench:tpcb", duration_s=1.0,
                   query_timeout_s=5.0)  # fmt: skip
    with pytest.raises(PgrigError, match="tpch:power, tpch:throughput"):
        specs.parse_workloads(["tpch:speed"])
    assert specs.parse_workloads(["tpch:power"]) == []
    assert specs.scenario_of([], ["tpch:throughput"]) == "tpch"


def test_refresh_keys_are_ones_dbgen_never_uses_and_pairs_never_collide() -> None:
    sets = [refresh.refresh_set(1.0, 7, p) for p in range(3)]
    assert all(len(s.new_keys) == 1500 for s in sets)
    assert all((k - 1) % 32 >= 8 for s in sets for k in s.new_keys)  # dbgen: first 8 of 32
    assert all((k - 1) % 32 < 8 for s in sets for k in s.sources)
    # tpchgen-cli (which pgrig runs) fills 32k+0..32k+7: every pair's keys are free there too,
    # the last one included, and every source key is filled by both generators
    last = refresh.refresh_set(1.0, 7, refresh.MAX_PAIRS - 1)
    assert all(k % 32 >= 8 for s in [*sets, last] for k in s.new_keys)
    assert all(1 <= k % 32 <= 7 for s in [*sets, last] for k in s.sources)
    with pytest.raises(ValueError):
        refresh.refresh_set(1.0, 7, refresh.MAX_PAIRS)
    assert not set(sets[0].new_keys) & set(sets[1].new_keys)
    assert max(sets[0].sources) <= 6_000_000  # inside SF 1's orders


STREAM_OUTPUT = "\n".join(json.dumps(e) for e in _events(timeout_q=18)) + "\nTraceback (noise)\n"


def _fed(driver: Any, output: str) -> Any:
    """The driver as the run leaves it: every line of the stream's output read as it came."""
    for line in output.splitlines():
        driver.on_line(line)
    return driver


def test_driver_records_every_query_and_warns_of_a_timeout() -> None:
    from pgrig.archive.records import RunRecord
    from pgrig.load.engines.tpch_driver import TpchDriver

    spec = from_flags(RunRequest, env_name="e", workload="tpch:power", query_timeout_s=60.0)
    driver = _fed(TpchDriver(spec, {}, {"scenario": "tpch", "scale_factor": 1.0}), STREAM_OUTPUT)
    assert "--query-timeout" in driver.command() and "60" in driver.command()
    rec = RunRecord(env_name="e", workload="tpch:power", clients=1, threads=1)
    driver.fill(rec, True, STREAM_OUTPUT, "", {})
    assert rec.transactions == 21 and rec.failed == 1
    assert [s.name for s in rec.scripts][:2] == ["Q1", "Q2"] and len(rec.scripts) == 22
    assert {w["code"] for w in rec.warnings()} == {"tpch_timeout"}
    assert driver.cross_check(rec, STREAM_OUTPUT, "") is None
    short = "\n".join(STREAM_OUTPUT.splitlines()[:5])
    driver = _fed(TpchDriver(spec, {}, {"scenario": "tpch", "scale_factor": 1.0}), short)
    driver.fill(rec, True, short, "", {})
    assert "reported 3 of 22" in (driver.cross_check(rec, short, "") or "")


def test_answers_compare_counts_and_sums_exactly_and_averages_within_one_percent() -> None:
    from decimal import Decimal

    from pgrig.workloads.tpch import answers

    names = ["l_returnflag", "sum_qty", "avg_qty", "count_order"]
    ours = [("A    ", Decimal("100.00"), Decimal("25.5751546114546921"), 14876)]
    assert answers.compare(1, names, ours, [("A", Decimal("100.00"), 25.57515, 14876)]).passed
    assert answers.compare(1, names, ours, [("A", Decimal("100.00"), 25.4, 14876)]).passed
    off_avg = answers.compare(1, names, ours, [("A", Decimal("100.00"), 26.0, 14876)])
    assert not off_avg.passed and "avg_qty" in (off_avg.problem or "")
    off_sum = answers.compare(1, names, ours, [("A", Decimal("101.00"), 25.57515, 14876)])
    assert off_sum.problem == (
        "Q1 row 1 (l_returnflag='A', sum_qty=100.00): sum_qty is 100.00 here, 101.00 in the "
        "reference (must agree exactly)"
    )
    off_count = answers.compare(1, names, ours, [("A", Decimal("100.00"), 25.57515, 14877)])
    assert not off_count.passed
    fewer = answers.compare(1, names, ours, [])
    assert not fewer.passed and "1 rows, the reference has 0" in (fewer.problem or "")
    # rows equal in the ORDER BY's columns, in another order: the same answer
    tie = answers.compare(11, ["ps_partkey", "value"], [(1, 5), (2, 5)], [(2, 5), (1, 5)])
    assert tie.passed and tie.note == "rows in another order among ties"


def test_a_query_cancelled_by_the_servers_own_timeout_is_recorded_whole() -> None:
    """Without --query-timeout a query can still be cancelled (statement_timeout set in the
    environment): its warning said `{None:g}` and fill stopped half-way (TypeError)."""
    from pgrig.archive.records import RunRecord
    from pgrig.load.engines.tpch_driver import TpchDriver

    spec = from_flags(RunRequest, env_name="e", workload="tpch:power")
    driver = _fed(TpchDriver(spec, {}, {"scenario": "tpch", "scale_factor": 1.0}), STREAM_OUTPUT)
    rec = RunRecord(env_name="e", workload="tpch:power", clients=1, threads=1)
    driver.fill(rec, True, STREAM_OUTPUT, "", {})
    (warning,) = [w for w in rec.warnings() if w["code"] == "tpch_timeout"]
    assert "statement_timeout" in str(warning["message"]) and len(rec.scripts) == 22


def test_a_throughput_run_whose_refresh_stream_never_ran_has_no_throughput() -> None:
    """A refresh session that failed to connect leaves no events: all([]) called it complete."""
    events: list[dict] = [{"event": "start", "mode": "throughput", "scale_factor": 1.0,
                           "seed": 7, "streams": 2}]  # fmt: skip
    for _stream in (1, 2):
        events += [{"event": "query", "query": q, "status": "ok", "seconds": 1.0}
                   for q in queries.QUERIES]  # fmt: skip
    events.append({"event": "end", "seconds": 30.0})
    doc = metrics.summarize(events)
    assert doc["complete"] is False and doc["throughput_at_size"] is None
    pairs = [{"event": "refresh", "function": f, "status": "ok", "seconds": 1.0}
             for _ in (1, 2) for f in ("RF1", "RF2")]  # fmt: skip
    whole = metrics.summarize([*events[:-1], *pairs, events[-1]])
    assert whole["complete"] is True
    assert whole["throughput_at_size"] == pytest.approx(2 * 22 * 3600 / 30.0 * 1.0)


def test_tpcc_options_are_refused_with_a_tpch_workload() -> None:
    with pytest.raises(PgrigError, match="--mix applies only to --workload tpcc"):
        from_flags(
            RunRequest,
            env_name="e",
            workload="tpch:power",
            tpcc_mix="45,43,4,4,4",
        )


def test_a_tpch_run_is_refused_with_load_from() -> None:
    """The multi-host runner has no TPC-H stream: the hosts' pgbench would have run instead."""
    from pgrig.load.core import multi_runner

    spec = from_flags(RunRequest, env_name="e", workload="tpch:power", load_from=["c1"])
    with pytest.raises(PgrigError, match="--load-from: tpch:power runs its query streams"):
        multi_runner.check(spec)


def test_the_driver_reads_the_streams_output_once_as_it_comes() -> None:
    """fill and failure work from the events on_line read (the stdout file is not parsed
    again): the record's queries carry when each ended, a failure names its step."""
    from pgrig.archive.records import RunRecord
    from pgrig.load.engines.tpch_driver import TpchDriver

    spec = from_flags(RunRequest, env_name="e", workload="tpch:power")
    driver = _fed(TpchDriver(spec, {}, {"scenario": "tpch", "scale_factor": 1.0}), STREAM_OUTPUT)
    rec = RunRecord(env_name="e", workload="tpch:power", clients=1, threads=1)
    driver.fill(rec, True, "", "", {})  # the file's text is not what the record is made from
    assert len(rec.extra["tpch"]["queries"]) == 22 and rec.transactions == 21
    assert all("at_s" in q for q in rec.extra["tpch"]["queries"])
    broken = _fed(
        TpchDriver(spec, {}, {"scenario": "tpch", "scale_factor": 1.0}),
        json.dumps({"event": "session", "stream": "stream 2", "status": "error",
                    "error": "connection refused"}) + "\nTraceback (most recent call last):",
    )  # fmt: skip
    assert "stream 2: connection refused" in broken.failure("", "", 1)
    noise = _fed(TpchDriver(spec, {}, {"scenario": "tpch", "scale_factor": 1.0}), "a\nb\nc\nd")
    assert "b" in noise.failure("", "", 1) and "a" not in noise.failure("", "", 1).split(": ")[-1]


class _Conn:
    def execute(self, *_a: Any) -> Any:
        return self


def _fake_sessions(monkeypatch: pytest.MonkeyPatch, connect: Any) -> list[dict]:
    """stream.throughput against fake sessions: `connect(n)` runs as the n-th connects; each
    query and refresh function records whether every session had connected when it began."""
    import contextlib
    import itertools
    import threading

    from pgrig.workloads.tpch import stream

    counter = itertools.count()
    connected: list[int] = []
    lock = threading.Lock()
    began: list[dict] = []

    @contextlib.contextmanager
    def session() -> Any:
        n = next(counter)
        connect(n)
        with lock:
            connected.append(n)
        yield _Conn()

    def step(kind: str) -> Any:
        def run(*_a: Any, **_k: Any) -> bool:
            with lock:
                began.append({"step": kind, "sessions": len(connected)})
            return True

        return run

    monkeypatch.setattr(stream, "_session", session)
    monkeypatch.setattr(stream, "_query", step("query"))
    monkeypatch.setattr(stream, "_refresh", step("refresh"))
    monkeypatch.setattr(refresh, "leftovers", lambda *_a: 0)
    return began


def test_throughput_streams_start_when_every_session_is_connected(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The interval Ts starts once every session is connected: with a sleep before the start
    (the stream process slept 0.2 s), a slow connection's time went into Ts and the other
    streams began without it."""
    import threading

    from pgrig.workloads.tpch import stream

    some_began = threading.Event()

    def connect(n: int) -> None:
        if n == 3:  # the last session (n 0 counts leftovers) waits until a query has begun
            some_began.wait(timeout=1.0)

    began = _fake_sessions(monkeypatch, connect)
    events: list[dict] = []
    rc = stream.throughput(0.01, 7, 7, 2, 0.0, events.append)
    some_began.set()
    assert rc == 0 and events[-1]["event"] == "end"
    assert len(began) == 2 * 22 + 4  # 44 queries, two RF1/RF2 pairs
    assert all(b["sessions"] == 4 for b in began), began[:3]


def test_a_session_that_cannot_connect_fails_the_throughput_run_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import psycopg

    from pgrig.workloads.tpch import stream

    def connect(n: int) -> None:
        if n == 2:
            raise psycopg.OperationalError("connection refused")

    began = _fake_sessions(monkeypatch, connect)
    events: list[dict] = []
    assert stream.throughput(0.01, 7, 7, 2, 0.0, events.append) == 1
    assert not began and "end" not in {e["event"] for e in events}
    (failed,) = [e for e in events if e["event"] == "session"]
    assert failed["error"] == "connection refused" and failed["stream"].startswith("stream")


def _performance_events(streams: int = 2) -> list[dict]:
    """A performance test's events as the stream process tags them: the power test, then the
    throughput test (each query of stream s taking s + q / 10 s)."""
    out = [{**e, "test": "power"} for e in _events()]
    tput: list[dict] = [{"event": "start", "mode": "throughput", "scale_factor": 1.0, "seed": 7,
                         "streams": streams}]  # fmt: skip
    for s in range(1, streams + 1):
        tput += [{"event": "query", "stream": s, "query": q, "status": "ok",
                  "seconds": s + q / 10} for q in queries.QUERIES]  # fmt: skip
    for n in range(1, streams + 1):
        tput += [{"event": "refresh", "function": f, "stream": n, "status": "ok",
                  "seconds": 1.5} for f in ("RF1", "RF2")]  # fmt: skip
    tput.append({"event": "end", "seconds": 90.0})
    return out + [{**e, "test": "throughput"} for e in tput]


def test_a_performance_test_gives_qphh_from_its_power_and_throughput_tests() -> None:
    """QphH@Size = sqrt(Power@Size x Throughput@Size), each part from its own test's events
    (computed here again from the recorded times, not through metrics' helpers)."""
    events = _performance_events()
    doc = metrics.summarize(events)
    power_times = [e["seconds"] for e in events if e.get("test") == "power"
                   and e["event"] in ("query", "refresh")]  # fmt: skip
    assert len(power_times) == 24
    power = 3600 * 1.0 / math.exp(sum(math.log(t) for t in power_times) / 24)
    throughput = 2 * 22 * 3600 / 90.0 * 1.0
    assert doc["mode"] == "performance" and doc["complete"] is True and doc["streams"] == 2
    assert doc["power_at_size"] == pytest.approx(power)
    assert doc["throughput_at_size"] == pytest.approx(throughput)
    assert doc["qphh_at_size"] == pytest.approx(math.sqrt(power * throughput))
    assert doc["interval_s"] == pytest.approx(48.0 + 90.0)
    assert doc["power"]["interval_s"] == 48.0 and doc["throughput"]["interval_s"] == 90.0
    assert len(doc["queries"]) == 66 and len(doc["refresh"]) == 6
    assert doc["geomean_s"] == pytest.approx(2.0)  # the power test's queries alone
    # a timed-out query in the throughput test: Power@Size stands, no Throughput, no QphH
    late = [dict(e) for e in events]
    next(e for e in late if e.get("test") == "throughput" and e["event"] == "query")["status"] = (
        "timeout"
    )
    partial = metrics.summarize(late)
    assert partial["power_at_size"] == pytest.approx(power)
    assert partial["throughput_at_size"] is None and partial["qphh_at_size"] is None
    assert partial["complete"] is False and partial["timed_out"] == ["Q1"]


def test_tpch_is_the_performance_test_and_takes_streams() -> None:
    from pgrig.archive.records import RunRecord
    from pgrig.load.engines.tpch_driver import TpchDriver

    spec = from_flags(RunRequest, env_name="e", workload="tpch", streams=3, tpch_seed=5)
    assert spec.is_tpch and specs.parse_workloads(["tpch"]) == []
    assert specs.scenario_of([], ["tpch"]) == "tpch"
    output = "\n".join(json.dumps(e) for e in _performance_events(3))
    driver = _fed(TpchDriver(spec, {}, {"scenario": "tpch", "scale_factor": 1.0}), output)
    argv = driver.command()
    assert argv[argv.index("--mode") + 1] == "performance"
    assert argv[argv.index("--streams") + 1] == "3"
    rec = RunRecord(env_name="e", workload="tpch", clients=1, threads=1)
    driver.fill(rec, True, output, "", {})
    assert rec.transactions == 22 * 4 and rec.extra["tpch"]["qphh_at_size"] > 0
    # runs show's per-query times are the power test's (2 s each), not the streams' mean
    assert {s.latency.avg for s in rec.scripts} == {2000.0} and len(rec.scripts) == 22
    assert driver.cross_check(rec, output, "") is None
    with pytest.raises(PgrigError, match="--streams"):
        from_flags(RunRequest, env_name="e", workload="tpch", streams=24)  # 24 refresh pairs
    with pytest.raises(PgrigError, match="--streams applies only to --workload tpch or"):
        from_flags(RunRequest, env_name="e", workload="tpch:power", streams=2)


@pytest.mark.parametrize(
    ("seconds", "says"),
    [
        # the server refuses more than INT_MAX ms: every run failed at its first SET
        (2_147_490.0, "--query-timeout must be at most 2147483.647 s (got 2147490)"),
        # under half a millisecond the server reads 0, no timeout (it ran as 1 ms)
        (1e-9, "--query-timeout must be at least 0.001 s (got 1e-09): statement_timeout"),
        (0.0004, "--query-timeout must be at least 0.001 s (got 0.0004)"),
    ],
)
def test_a_query_timeout_is_one_statement_timeout_holds(seconds: float, says: str) -> None:
    with pytest.raises(PgrigError) as e:
        from_flags(RunRequest, env_name="e", workload="tpch:power", query_timeout_s=seconds)
    assert says in str(e.value)


def test_the_query_timeout_reaches_the_stream_with_all_its_digits() -> None:
    """%g rounded 2147484 s to 2.14748e+06 (2147480) on the stream's command line."""
    from pgrig.load.engines.tpch_driver import TpchDriver

    for seconds in (0.001, 0.0015, 2_147_483.0, 10.1234567):
        spec = from_flags(RunRequest, env_name="e", workload="tpch:power", query_timeout_s=seconds)
        argv = TpchDriver(spec, {}, {"scenario": "tpch", "scale_factor": 1.0}).command()
        assert float(argv[argv.index("--query-timeout") + 1]) == seconds


def test_leftovers_of_a_run_of_any_seed_are_removed() -> None:
    """A power run that failed after RF1 (seed A) left its orders; the next run (seed B, new
    for each run) looked for its own keys only, found none and measured the changed data (db
    check: Q1, Q4, Q6, Q9, Q13, Q15 FAILED). Every key an RF1 can insert is swept."""
    import contextlib

    class Conn:
        def __init__(self, orders: list[int]) -> None:
            self.orders = orders
            self.sql: list[str] = []

        def execute(self, sql: str, params: Any = None) -> list[tuple[int]]:
            self.sql.append(sql)
            if sql.startswith("SELECT o_orderkey FROM orders WHERE"):
                return [(k,) for k in self.orders if 9 <= k % 32 <= 31]  # as the server does
            if sql.startswith("DELETE FROM orders"):
                self.orders = [k for k in self.orders if k not in params[0]]
            return []

        def transaction(self) -> Any:
            return contextlib.nullcontext()

    # dbgen's keys (32k+1..32k+8) and tpchgen-cli's (32k..32k+7), none of them swept
    generated = sorted({32 * g + i for g in range(1, 200) for i in range(9)})
    left = refresh.refresh_set(0.01, seed=1, pair=0).new_keys  # a stopped run's RF1
    conn = Conn(generated + left)
    assert refresh.leftovers(conn) == len(left)  # type: ignore[arg-type]
    assert conn.orders == generated
    assert refresh.REFRESHED_KEYS in conn.sql[0]
    assert any(s.startswith("DELETE FROM lineitem") for s in conn.sql)
    assert refresh.leftovers(Conn(generated)) == 0  # type: ignore[arg-type]


def test_the_tpch_document_fits_its_declaration_as_the_archive_reads_it() -> None:
    """The archive reads extra["tpch"] as documents.TpchDoc (record/doc_read.py): a key of
    another type than declared would be dropped with the whole document, so what the driver
    writes (a power run's, a performance test's) must read back whole."""
    from pgrig.archive.records import RunRecord
    from pgrig.load.engines.tpch_driver import TpchDriver
    from pgrig.record.doc_read import read_document
    from pgrig.record.documents import TpchDoc

    spec = from_flags(RunRequest, env_name="e", workload="tpch:power", query_timeout_s=30)
    driver = _fed(TpchDriver(spec, {}, {"scenario": "tpch", "scale_factor": 1.0}), STREAM_OUTPUT)
    rec = RunRecord(env_name="e", workload="tpch:power", clients=1, threads=1)
    driver.fill(rec, True, STREAM_OUTPUT, "", {})
    for doc in (rec.extra["tpch"], metrics.summarize(_performance_events())):
        stored = json.loads(json.dumps(doc))
        assert read_document(TpchDoc, stored) == stored


def test_a_stream_event_key_of_another_type_reads_as_missing() -> None:
    """The drivers (TPC-H's and CH-benCHmark's) check each event line once as they read it: a
    query number that is no number never reaches the figures."""
    from pgrig.record.stream_docs import stream_event as _event

    assert _event('{"event": "query", "query": "7", "status": "ok", "seconds": 1.5}') == {
        "event": "query", "status": "ok", "seconds": 1.5,
    }  # fmt: skip
    assert _event('{"no": "event"}') is None and _event("Traceback") is None


@pytest.mark.parametrize(
    ("given", "seconds"),
    [
        ("30", 30.0),
        ("30s", 30.0),
        ("2min", 120.0),
        ("500ms", 0.5),
        ("1h", 3600.0),
        (" 2 min", 120.0),
    ],
)
def test_a_query_timeout_takes_postgresql_time_units(given: str, seconds: float) -> None:
    """--query-timeout 30s was refused ("Input should be a valid number"): the flag took a
    float, and its help did not say seconds."""
    spec = from_flags(RunRequest, env_name="e", workload="tpch:power", query_timeout_s=given)
    assert spec.query_timeout_s == seconds


@pytest.mark.parametrize(
    ("given", "says"),
    [
        # "m" is not minutes to PostgreSQL, and its units are case-sensitive
        ("2m", "'m' is not one of them, and they are case-sensitive as the server reads them "
         "(2min, not 2m; got '2m')"),
        ("30S", "'S' is not one of them"),
        ("soon", "(got 'soon')"),
    ],
)  # fmt: skip
def test_a_query_timeout_in_other_units_is_refused_naming_them(given: str, says: str) -> None:
    with pytest.raises(PgrigError) as e:
        from_flags(RunRequest, env_name="e", workload="tpch:power", query_timeout_s=given)
    assert str(e.value).startswith(
        "--query-timeout must be a time like 30s or 2min (a bare number is seconds), in "
        "PostgreSQL's units us, ms, s, min, h, d"
    )
    assert says in str(e.value)
