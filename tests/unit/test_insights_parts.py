"""Statements deltas, the plan budget, the wait profile, the "why" lines, the insights layer."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgrig.insights import sampling, statements, summary, waits
from pgrig.provision.settings import config, insights_layer
from pgrig.provision.state.environment import Environment

# --- statements ------------------------------------------------------------------------------


def _ext(**over: object) -> statements.Extension:
    columns = {name: cands[0] for name, cands in statements.METRICS if name != "wal_buffers_full"}
    return statements.Extension(
        **{"schema": "public", "version": "1.10", "columns": columns, "has_toplevel": True}
        | {"has_info": True}
        | over  # type: ignore[arg-type]
    )


def _row(calls: float, total_ms: float, hit: float = 0, read: float = 0) -> tuple:
    names = list(_ext().columns)
    values = dict.fromkeys(names, 0.0) | {
        "calls": calls,
        "total_ms": total_ms,
        "shared_blks_hit": hit,
        "shared_blks_read": read,
    }
    return tuple(values[n] for n in names)


def test_statement_deltas_new_reset_and_top() -> None:
    ext = _ext()
    start = statements.Snapshot(
        rows={
            (10, True, 1): _row(100, 50.0, hit=10),
            (10, True, 2): _row(500, 10.0),  # reset meanwhile: fewer calls at the end
            (10, False, 3): _row(7, 7.0),  # unchanged: not in the window
        },
        dealloc=0,
    )
    end = statements.Snapshot(
        rows={
            (10, True, 1): _row(1100, 2050.0, hit=310, read=100),
            (10, True, 2): _row(5, 1.0),
            (10, False, 3): _row(7, 7.0),
            (10, False, 4): _row(40, 1000.0),  # new: counted whole
        },
        dealloc=0,
    )
    changed, resets = statements.deltas(ext, start, end)
    assert resets == 1 and set(changed) == {(10, True, 1), (10, False, 4)}
    doc = statements.summarize(ext, changed, {1: "SELECT  1\n FROM t", 4: "x"}, window_s=10.0)
    first, second = doc["top"]
    assert (first["queryid"], first["calls"], first["total_ms"]) == ("1", 1000, 2000.0)
    assert first["mean_ms"] == 2.0 and first["text"] == "SELECT 1 FROM t"
    assert first["hit_ratio"] == pytest.approx(100 * 300 / 400)
    assert first["share_pct"] == 100.0  # of top-level time; nested statements are within it
    assert second["toplevel"] is False and second["share_pct"] == 50.0
    assert (doc["calls"], doc["total_ms"], doc["calls_per_s"]) == (1000, 2000.0, 100.0)


def test_snapshot_query_uses_the_versions_column_names() -> None:
    pg17 = {"total_exec_time", "shared_blk_read_time", "toplevel", "calls"}
    columns = {}
    for name, candidates in statements.METRICS:
        found = [c for c in candidates if c in pg17 | {"blk_read_time"}]
        if found:
            columns[name] = found[0]
    q = statements.snapshot_query(_ext(columns=columns)).as_string(None)
    assert '"shared_blk_read_time"::float8' in q and 'blk_read_time"::float8, ' not in q
    assert '"public".pg_stat_statements(false)' in q
    old = statements.snapshot_query(_ext(columns={"calls": "calls"}, has_toplevel=False))
    assert "SELECT userid::int8, true, queryid" in old.as_string(None)


# --- the plan budget -------------------------------------------------------------------------


def _simulate(budget: sampling.PlanBudget, rate_per_s: float, duration: float) -> float:
    """Plans the server logs over a run of `duration` s at `rate_per_s` statements a second."""
    t, spent = 0.0, 0.0
    while t < duration:
        step = min(sampling.next_check(t), duration) - t
        spent += budget.rate * rate_per_s * step  # what the server logs meanwhile
        t += step
        budget.revise(rate_per_s * step, step, duration - t)
    return spent


def test_budget_spreads_plans_over_the_run() -> None:
    # 40 plans/s: under the cap (set above it: this is the budget's spreading)
    budget = sampling.PlanBudget(budget=2400, rate=0.01, max_per_s=50.0)
    spent = _simulate(budget, rate_per_s=12000.0, duration=60.0)
    assert 1900 < spent <= 2400 * 1.05
    assert budget.rate == 0.0  # the run's end: silent


def test_short_runs_log_at_most_max_per_s_plans() -> None:
    budget = sampling.PlanBudget(budget=5000, rate=0.01)
    spent = _simulate(budget, rate_per_s=12000.0, duration=20.0)
    first_second = 0.01 * 12000.0  # before the first measurement
    assert sampling.MAX_PER_S * 19 * 0.5 < spent <= first_second + sampling.MAX_PER_S * 19 * 1.05


def test_the_default_budget_is_silent_until_the_rate_is_measured() -> None:
    budget = sampling.PlanBudget()  # as the collector makes it
    assert (
        budget.rate == 0.0
        and sampling.runtime_settings(budget.rate)["auto_explain.log_min_duration"] == "-1"
    )
    first = budget.revise(calls=12000.0, seconds=1.0, remaining_s=19.0)
    assert budget.spent == 0.0  # nothing logged in the first second (pgbench's lead-in)
    assert first == pytest.approx(sampling.MAX_PER_S / 12000.0, rel=0.01)  # a few a second
    spent = _simulate(sampling.PlanBudget(), rate_per_s=12000.0, duration=20.0)
    assert sampling.MAX_PER_S * 19 * 0.5 < spent <= sampling.MAX_PER_S * 19 * 1.05


def test_a_measurement_during_the_clients_ramp_never_floods_the_log() -> None:
    budget = sampling.PlanBudget()
    # 1 s in, two clients of eight connected: 30 statements; then 12,000 a second
    first = budget.revise(calls=30.0, seconds=1.0, remaining_s=19.0)
    assert first == pytest.approx(sampling.MAX_PER_S / sampling.FIRST_FLOOR_PER_S)
    assert budget.revise(calls=12000.0, seconds=1.0, remaining_s=18.0) == pytest.approx(
        sampling.MAX_PER_S / 12000.0, rel=0.01
    )
    assert budget.spent <= sampling.MAX_PER_S * 12  # not 12,000 plans in that second
    # a pause (nothing ran) keeps the sampler ready, by MAX_RISE at most
    rate = budget.rate
    assert budget.revise(calls=0.0, seconds=1.0, remaining_s=17.0) == pytest.approx(
        rate * sampling.MAX_RISE, rel=0.01
    )


def test_budget_changes_rate_only_by_2x_or_more() -> None:
    budget = sampling.PlanBudget(budget=1000, rate=0.01, max_per_s=50.0)
    assert budget.revise(calls=1000, seconds=1, remaining_s=66) is None  # 990/66k: 0.015
    assert budget.revise(calls=1000, seconds=1, remaining_s=20) == pytest.approx(0.049)
    assert budget.spent == pytest.approx(20.0)
    assert budget.revise(calls=1e7, seconds=1, remaining_s=10) == 0.0  # budget spent
    assert sampling.runtime_settings(0.0)["auto_explain.log_min_duration"] == "-1"
    assert sampling.runtime_settings(0.0123) == {
        "auto_explain.log_min_duration": "0",
        "auto_explain.sample_rate": "0.0123",
    }
    assert [sampling.next_check(t) for t in (0, 1, 31.9, 32, 40)] == [1, 2, 32, 62, 70]


# --- waits -----------------------------------------------------------------------------------


def test_wait_profile_over_the_window() -> None:
    pg = {
        "t": [-1.0, 1.0, 2.0, 3.0, 4.0],
        "up": [1, 1, 1, 0, 1],
        "wait.CPU": [9, 2, 1, None, 1],
        "wait.LWLock:WALWrite": [0, 1, 3, None, 0],
        "wait.IO:WALSync": [5, 1, 0, None, 0],
    }
    doc = waits.profile(pg, 0.0, 3.5)  # t=-1 is warm-up, t=3 is a failed sample, t=4 after
    assert doc["samples"] == 2 and doc["active_seen"] == 8
    shares = {e["event"]: e["share_pct"] for e in doc["events"]}
    assert shares == {"LWLock:WALWrite": 50.0, "CPU": 37.5, "IO:WALSync": 12.5}
    assert doc["by_type"] == {"LWLock": 50.0, "CPU": 37.5, "IO": 12.5}
    assert not waits.profile({}, 0, 1)["collected"]


# --- summary ---------------------------------------------------------------------------------


def test_parts_and_why_of_a_run_without_insights() -> None:
    parts = summary.parts({})
    assert set(parts) == {"statements", "plans", "log_digest", "waits"}
    assert all(not p["collected"] and "not collected" in p["reason"] for p in parts.values())
    labels = [label for label, _ in summary.why(None)]
    assert labels == ["statements", "plans", "server log", "waits"]


def test_why_lines() -> None:
    doc = {
        "statements": {
            "collected": True,
            "statements": 3,
            "calls": 1000,
            "total_ms": 2500.0,
            "window_s": 10.0,
            "top": [
                {
                    "text": "SELECT 1",
                    "calls": 1000,
                    "total_ms": 2000.0,
                    "mean_ms": 2.0,
                    "share_pct": 80.0,
                    "toplevel": True,
                }
            ],
        },
        "plans": {
            "collected": True,
            "samples": 9,
            "statements": [{}],
            "misestimates": [
                {
                    "fingerprint": "f",
                    "node": "Nested Loop",
                    "relation": "a, b",
                    "estimated_rows": 1000.0,
                    "actual_rows": 10.0,
                    "factor": 100.0,
                    "direction": "over",
                    "samples": 9,
                    "misestimate_samples": 9,
                    "text": "SELECT x",
                },
                {
                    "fingerprint": "f",
                    "node": "Index Scan using i on b",
                    "relation": "b",
                    "estimated_rows": 300.0,
                    "actual_rows": 10.0,
                    "factor": 30.0,
                    "direction": "over",
                    "samples": 9,
                    "misestimate_samples": 9,
                    "text": "SELECT x",
                },
            ],
            "changes": [],
        },
        "waits": {"collected": False, "reason": "not collected: no samples"},
        "notes": ["created extension"],
    }
    rows = dict(summary.why(doc))
    assert rows["  #1"].startswith("80.0%  2,000 ms, 1,000 calls, 2.000 ms mean  SELECT 1")
    assert rows["misestimate"].startswith("Index Scan using i on b: estimated 300 rows, actual 10")
    assert "30x over, 9 of 9 samples" in rows["misestimate"]
    assert rows["server log"].startswith("not collected")
    assert rows["note"] == "created extension"


# --- the insights layer ----------------------------------------------------------------------


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Environment:
    monkeypatch.setenv("PGRIG_HOME", str(tmp_path))
    monkeypatch.setattr(
        insights_layer, "available_libraries", lambda bindir: insights_layer.LIBRARIES
    )
    return Environment(name="e", port=5999, bindir="/opt/pg/bin")


def test_layer_below_user_settings_but_preload_merged(env: Environment) -> None:
    env.settings = {"shared_preload_libraries": "pg_prewarm", "log_lock_waits": "off"}
    ls = config.layers(env, run={"auto_explain.sample_rate": "0.5"})
    merged = ls.merged()
    assert merged["shared_preload_libraries"] == (
        "pg_prewarm,pg_stat_statements,auto_explain",
        "environment",
    )
    assert merged["log_lock_waits"] == ("off", "environment")
    assert merged["auto_explain.sample_rate"] == ("0.5", "run")
    assert merged["pg_stat_statements.track"] == ("all", "insights")
    assert merged["auto_explain.log_min_duration"] == ("-1", "insights")
    text = config.render(ls)
    assert (
        "shared_preload_libraries = 'pg_prewarm,pg_stat_statements,auto_explain'  "
        "# environment + insights libraries"
    ) in text
    assert config.parse_conf(text)["shared_preload_libraries"].endswith("auto_explain")


def test_runtime_values_and_switches(env: Environment) -> None:
    ls = config.layers(
        env, insights_runtime={"auto_explain.log_min_duration": "0", "work_mem": "1"}
    )
    assert ls.insights["auto_explain.log_min_duration"] == "0" and "work_mem" not in ls.insights
    env.insights = False
    assert config.layers(env).insights == {}
    external = Environment(name="x", kind="external", dsn="host=h")
    assert insights_layer.settings(external) == {}


def test_preload_helpers() -> None:
    assert insights_layer.merge_preload('"a", pg_stat_statements', "pg_stat_statements,b") == (
        "a,pg_stat_statements,b"
    )
    assert insights_layer.missing_libraries("pg_stat_statements") == ["auto_explain"]
    assert insights_layer.missing_libraries(None) == ["pg_stat_statements", "auto_explain"]


def test_available_libraries_of_this_build() -> None:
    bindir = Path("/usr/lib/postgresql/15/bin")
    if not (bindir / "pg_config").exists():
        pytest.skip("PostgreSQL 15 is not installed")
    insights_layer.available_libraries.cache_clear()
    assert insights_layer.available_libraries(str(bindir)) == insights_layer.LIBRARIES
    assert insights_layer.available_libraries("/nonexistent/bin") == ()


def test_collection_never_raises_and_says_why(tmp_path: Path) -> None:
    """A server that cannot be reached: every part is there, each with its reason."""
    from types import SimpleNamespace

    from pgrig.archive.records import RunRecord
    from pgrig.insights import collector

    env = Environment(name="gone", kind="external", dsn="host=127.0.0.1 port=1 connect_timeout=1")
    spec = SimpleNamespace(warmup_s=0.0, duration_s=5.0)
    rec = RunRecord(env_name="gone", workload="x", clients=1, threads=1)
    rec.settings = {"shared_preload_libraries": {"setting": "pg_stat_statements,auto_explain"}}
    coll = collector.start(env, "db", spec, rec)
    coll.stop()
    coll.finish(rec, tmp_path)
    assert set(rec.insights) == {"statements", "plans", "log_digest", "waits", "notes"}
    assert rec.insights["statements"]["reason"].startswith("not collected: OperationalError")
    assert rec.insights["plans"]["reason"] == (
        "not collected: pgrig cannot read the log of an external server"
    )
    assert not rec.insights["waits"]["collected"]


def test_a_server_on_another_host_is_not_called_external(tmp_path: Path) -> None:
    """An environment made by pgrig on another host (`env create --on`): its log is read over
    SSH (load/core/server_log_follow.py), so only the plans, whose sampling is driven in
    pgrig.conf on that host, are not collected, with what is missing named."""
    from types import SimpleNamespace

    from pgrig.archive.records import RunRecord
    from pgrig.insights import collector

    env = Environment(name="far", kind="remote", on="db1", host="127.0.0.1", port=1)
    spec = SimpleNamespace(warmup_s=0.0, duration_s=5.0)
    rec = RunRecord(env_name="far", workload="x", clients=1, threads=1)
    rec.settings = {"shared_preload_libraries": {"setting": "pg_stat_statements,auto_explain"}}
    coll = collector.start(env, "db", spec, rec)
    coll.stop()
    coll.finish(rec, tmp_path)
    assert rec.insights["plans"]["reason"] == (
        "not collected: auto_explain's sample rate is set during a run in pgrig.conf, which is "
        "on host db1: this machine does not drive it there yet"
    )
    assert "external" not in str(rec.insights["log_digest"])
