"""TPC-H on a real PostgreSQL 18 at scale factor 0.01: generate, answers checked, a power run."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from pgrig.provision.state.environment import Environment
from pgrig.request import DatasetRequest
from pgrig.workloads import datasets

pytestmark = pytest.mark.integration

SF = 0.01


@pytest.fixture
def tpch_env(make_env, pg18: tuple[Path, str]) -> Environment:  # type: ignore[no-untyped-def]
    env = make_env("tpch18", pg="18")
    datasets.generate(env, DatasetRequest(scenario="tpch", scale_factor=SF))
    return env


def test_generate_loads_dbgen_rows_keys_and_statistics(tpch_env: Environment) -> None:
    info = datasets.get(tpch_env, "pgrig")
    assert info is not None and info["scenario"] == "tpch" and info["complete"] is True
    assert info["scale_factor"] == SF and info["generator"].startswith("tpchgen-cli ")
    rows = {t: v["rows"] for t, v in info["tables"].items()}
    # dbgen's counts at SF 0.01 (lineitem: 1..7 lines per order, dbgen's own draw)
    assert rows == {
        "region": 5, "nation": 25, "supplier": 100, "part": 2000, "partsupp": 8000,
        "customer": 1500, "orders": 15000, "lineitem": 60175,
    }  # fmt: skip
    with psycopg.connect(tpch_env.conninfo("pgrig")) as conn:
        first = conn.execute(
            "SELECT l_partkey, l_suppkey, l_quantity, l_extendedprice, l_shipdate::text"
            " FROM lineitem WHERE l_orderkey = 1 AND l_linenumber = 1"
        ).fetchone()
        assert first is not None and first[:2] == (1552, 93)  # dbgen's first lineitem row
        keys = {
            r[0]
            for r in conn.execute(
                "SELECT conrelid::regclass::text FROM pg_constraint WHERE contype = 'p'"
            ).fetchall()
        }
        assert {"lineitem", "orders", "partsupp", "part", "customer", "supplier"} <= keys
        assert conn.execute(
            "SELECT 1 FROM pg_indexes WHERE indexname = 'lineitem_part_supp'"
        ).fetchone()
        analyzed = conn.execute(
            "SELECT count(*) FROM pg_stat_user_tables WHERE relname = 'lineitem'"
            " AND last_analyze IS NOT NULL"
        ).fetchone()
        assert analyzed == (1,)
        # COPY FREEZE: the rows are frozen and all-visible, no VACUUM needed before a run
        frozen = conn.execute(
            "SELECT relallvisible > 0 FROM pg_class WHERE relname = 'lineitem'"
        ).fetchone()
        assert frozen == (True,)


def test_power_run_records_every_query_power_and_leaves_the_data_as_generated(
    tpch_env: Environment,
) -> None:
    from pgrig.archive.store import Archive
    from pgrig.load.core.runner import execute
    from pgrig.request import RunRequest

    def orders() -> tuple:
        with psycopg.connect(tpch_env.conninfo("pgrig")) as conn:
            return conn.execute("SELECT count(*), sum(o_orderkey) FROM orders").fetchone()

    before = orders()
    spec = RunRequest(
        env_name=tpch_env.name, workload="tpch:power", tpch_seed=7, query_timeout_s=120
    )
    rec = execute(spec, archive=Archive(None), live=False)
    assert rec.status == "ok", rec.error
    doc = rec.extra["tpch"]
    assert doc["seed"] == 7 and doc["order"][:3] == [14, 2, 9]
    assert [e["query"] for e in doc["queries"]] == doc["order"]
    assert all(e["status"] == "ok" and e["seconds"] > 0 for e in doc["queries"])
    assert all(e.get("temp_bytes") is not None for e in doc["queries"])
    assert [r["function"] for r in doc["refresh"]] == ["RF1", "RF2"]
    assert doc["power_at_size"] > 0 and rec.transactions == 22 and len(rec.scripts) == 22
    assert orders() == before  # RF2 deleted what RF1 inserted


def test_a_query_over_its_timeout_is_recorded_as_timed_out(tpch_env: Environment) -> None:
    from pgrig.archive.store import Archive
    from pgrig.load.core.runner import execute
    from pgrig.request import RunRequest

    # 1 ms: the larger queries of SF 0.01 take tens of ms, so some are cancelled
    spec = RunRequest(env_name=tpch_env.name, workload="tpch:power", query_timeout_s=0.001)
    rec = execute(spec, archive=Archive(None), live=False)
    doc = rec.extra["tpch"]
    assert len(doc["queries"]) == 22 and doc["timed_out"]
    assert doc["power_at_size"] is None and rec.status == "ok"
    assert "tpch_timeout" in {w["code"] for w in rec.warnings()}


def test_answers_pass_on_fresh_data_and_fail_naming_the_row_after_a_corrupted_lineitem(
    tpch_env: Environment, pgrig_home: Path
) -> None:
    import json

    from servers import pgrig

    def check() -> tuple[int, dict]:
        proc = pgrig("db", "check", tpch_env.name, "--json", check=False, timeout=600)
        return proc.returncode, json.loads(proc.stdout)

    rc, fresh = check()
    assert rc == 0 and fresh["passed"] is True and len(fresh["queries"]) == 22
    with psycopg.connect(tpch_env.conninfo("pgrig"), autocommit=True) as conn:
        # dbgen's first lineitem row (shipped 1996-03-13: Q1 counts it)
        conn.execute(
            "UPDATE lineitem SET l_quantity = l_quantity + 1"
            " WHERE l_orderkey = 1 AND l_linenumber = 1"
        )
    rc, corrupted = check()
    failed = [q for q in corrupted["queries"] if not q["passed"]]
    assert rc == 1 and corrupted["passed"] is False
    assert failed[0]["query"] == 1
    assert "Q1 row 3 (l_returnflag='N', l_linestatus='O'): sum_qty" in failed[0]["problem"]


def test_throughput_run_runs_every_stream_and_refresh_pair(tpch_env: Environment) -> None:
    from pgrig.archive.store import Archive
    from pgrig.load.core.runner import execute
    from pgrig.request import RunRequest

    spec = RunRequest(
        env_name=tpch_env.name, workload="tpch:throughput", streams=2, tpch_seed=3,
        query_timeout_s=120,
    )  # fmt: skip
    rec = execute(spec, archive=Archive(None), live=False)
    assert rec.status == "ok", rec.error
    doc = rec.extra["tpch"]
    assert len(doc["queries"]) == 44 and {e["stream"] for e in doc["queries"]} == {1, 2}
    assert [(r["function"], r["stream"]) for r in doc["refresh"]] == [
        ("RF1", 1), ("RF2", 1), ("RF1", 2), ("RF2", 2),
    ]  # fmt: skip
    # each stream its own order: the spec's stream 0 order is the power run's alone
    assert doc["order"]["1"] != doc["order"]["2"]
    assert doc["throughput_at_size"] == pytest.approx(2 * 22 * 3600 / doc["interval_s"] * SF)
    assert doc["power_at_size"] is None and len(rec.scripts) == 22


def test_performance_test_gives_qphh_from_the_recorded_times(tpch_env: Environment) -> None:
    """-w tpch: the power test, then the throughput test, in one run; its Power@Size,
    Throughput@Size and QphH@Size computed again here from the recorded times."""
    import math

    from pgrig.archive.store import Archive
    from pgrig.load.core.runner import execute
    from pgrig.request import RunRequest

    spec = RunRequest(
        env_name=tpch_env.name, workload="tpch", streams=2, tpch_seed=5, query_timeout_s=120
    )
    rec = execute(spec, archive=Archive(None), live=False)
    assert rec.status == "ok", rec.error
    doc = rec.extra["tpch"]
    power_q = [e for e in doc["queries"] if e["test"] == "power"]
    power_rf = [r for r in doc["refresh"] if r["test"] == "power"]
    tput_q = [e for e in doc["queries"] if e["test"] == "throughput"]
    assert [e["query"] for e in power_q] == doc["order"]["0"] and len(tput_q) == 44
    assert [(r["function"], r["stream"]) for r in doc["refresh"] if r["test"] == "throughput"] == [
        ("RF1", 1), ("RF2", 1), ("RF1", 2), ("RF2", 2),
    ]  # fmt: skip
    times = [e["seconds"] for e in power_q]
    floor = max(times) / 1000  # clause 5.4.1.4
    logs = [math.log(max(t, floor)) for t in times] + [math.log(r["seconds"]) for r in power_rf]
    power = 3600 * SF / math.exp(sum(logs) / 24)
    ts = doc["throughput"]["interval_s"]
    for s in (1, 2):  # a stream's queries run one after another inside Ts
        assert sum(e["seconds"] for e in tput_q if e["stream"] == s) <= ts
    throughput = 2 * 22 * 3600 / ts * SF
    assert doc["power_at_size"] == pytest.approx(power, rel=1e-6)
    assert doc["throughput_at_size"] == pytest.approx(throughput, rel=1e-6)
    assert doc["qphh_at_size"] == pytest.approx(math.sqrt(power * throughput), rel=1e-6)
    assert rec.measured_s == pytest.approx(doc["power"]["interval_s"] + ts)
    assert len(rec.scripts) == 22 and rec.transactions == 66
