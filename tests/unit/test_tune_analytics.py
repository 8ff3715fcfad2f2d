"""`pgrig tune ENV --preset analytics`: the preset's definition, its space, objective and
reference profile (pgtune-dw), and the per-query evidence of a TPC-H tuning study."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pgrig.archive.records import RunRecord
from pgrig.errors import PgrigError
from pgrig.request import from_flags
from pgrig.request.tune import TuneRequest
from pgrig.tune import ablation, confirm, presets, space
from pgrig.tune import request as tune_request
from pgrig.tune.objective import objective
from pgrig.views import tune_queries
from pgrig.workloads.tpch import queries

GIB = 1024**3
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tpch"


# --- the preset --------------------------------------------------------------------------------
def test_analytics_preset_is_tpch_power_at_sf1_judged_against_pgtune_dw() -> None:
    p = presets.get("analytics")
    assert p.workload == ("tpch:power",) and p.scale_factor == 1.0 and p.scale is None
    assert p.objective == "power" and p.space == "analytics" and p.reference == "pgtune-dw"
    assert p.clients == 1 and p.threads == 1 and p.duration is None  # a run to completion
    defaults = {"workload": None, "scale": None, "scale_factor": None, "objective": "tps",
                "trials": 20, "clients": 1, "threads": 1, "duration": "20s", "warmup": "0",
                "space": "default"}  # fmt: skip
    got = presets.resolve("analytics", {"scale_factor": 0.01, "trials": None}, defaults)
    assert got["workload"] == ["tpch:power"] and got["objective"] == "power"
    assert got["scale_factor"] == 0.01  # a given flag wins
    assert got["trials"] == p.trials and got["duration"] is None and got["space"] == "analytics"
    # the other presets keep pgtune-oltp and TPS
    for name in ("read-heavy", "mixed-reporting", "write-heavy-slow-disk"):
        other = presets.get(name)
        assert other.reference == "pgtune-oltp" and other.objective == "tps"
    with pytest.raises(PgrigError, match="analytics"):
        presets.get("olap")


def test_analytics_space_and_a_build_without_jit() -> None:
    s = space.class_space("analytics", 18, 24 * GIB, 2)
    assert set(s.names) == set(space.CLASS_KNOBS["analytics"])
    assert s.knob("jit_above_cost").log and s.knob("parallel_tuple_cost").high == 1.0
    assert s.knob("work_mem").high == 768  # RAM/32 per sort or hash
    assert s.knob("hash_mem_multiplier").high == 8.0
    # mixed keeps its hash_mem_multiplier (a class-only knob) and gains no JIT threshold
    mixed = space.class_space("mixed", 18, 24 * GIB, 2)
    assert "hash_mem_multiplier" in mixed.names and "jit_above_cost" not in mixed.names
    cut = space.without_jit(s)
    assert not set(space.JIT_KNOBS) & set(cut.names)
    assert "no JIT provider" in cut.notes[-1]
    assert space.without_jit(cut) is cut  # nothing to leave out: unchanged, no second note


def test_jit_and_parallel_knobs_are_ablated_together() -> None:
    changed = ["work_mem", "jit", "jit_above_cost", "max_parallel_workers_per_gather",
               "parallel_setup_cost", "random_page_cost", "hash_mem_multiplier"]  # fmt: skip
    units = ablation.plan_units(changed, {}, max_units=10)
    by = {u.key: u.knobs for u in units}
    assert by["sort and hash memory"] == ("work_mem", "hash_mem_multiplier")
    assert by["jit"] == ("jit", "jit_above_cost")
    assert by["parallel query"] == ("max_parallel_workers_per_gather", "parallel_setup_cost")
    assert by["random_page_cost"] == ("random_page_cost",)


def test_objective_power_is_tpch_power_only() -> None:
    power = objective("power", "tpch:power")
    assert power.metric.key == "tpch.power_at_size" and power.direction == "maximize"
    with pytest.raises(PgrigError, match="--objective power needs --workload tpch:power"):
        objective("power", "pgbench:tpcb")
    with pytest.raises(PgrigError, match="has no TPS or latency; use --objective power"):
        objective("tps", "tpch:power")


def test_scale_factor_needs_tpch(pgrig_home: Path) -> None:
    asked = dict(
        env_name="nowhere", preset=None, workload=["pgbench:select-only"], scale=None,
        scale_factor=0.01, trials=2, budget=None, objective="tps", space="default",
        allow_unsafe=False, duration="3s", warmup="0", clients=1, threads=1, confirm_repeats=2,
        ablation_repeats=0, ablation_units=1, name="t", database=None, seed=0,
    )  # fmt: skip
    with pytest.raises(PgrigError, match="--scale-factor generates TPC-H data"):
        tune_request.build(from_flags(TuneRequest, **asked))


# --- the confirmation's reference --------------------------------------------------------------
def _run(point: str, repeat: int, **extra: Any) -> RunRecord:
    return RunRecord(
        env_name="e1", workload="tpch:power", clients=1, threads=1, status="ok", study="t",
        study_point=point,
        repeat=repeat, extra=extra,  # type: ignore[typeddict-item]
    )  # fmt: skip


def test_the_reference_profile_names_the_confirmation_configuration() -> None:
    assert confirm.configs("pgtune-dw") == ("baseline", "best", "pgtune-dw")
    assert confirm.questions("pgtune-dw")[1] == ("best vs pgtune-dw", "pgtune-dw", "best")
    assert confirm.questions()[1][0] == "best vs pgtune-oltp"  # studies before presets named one
    plan = confirm.plan(4, "tune-e1", "pgtune-dw")
    assert sorted(plan) == sorted((c, r) for c in confirm.configs("pgtune-dw") for r in range(4))
    assert confirm.reference_of({}) == "pgtune-oltp"
    assert confirm.reference_of({"reference_profile": "pgtune-dw"}) == "pgtune-dw"
    runs = [_run("confirm-pgtune-dw", 0), _run("confirm-best", 0), _run("confirm-baseline", 0)]
    assert [len(v) for v in confirm.groups(runs, "pgtune-dw").values()] == [1, 1, 1]
    assert confirm.groups(runs)["pgtune-oltp"] == []


# --- per-query evidence ------------------------------------------------------------------------
def test_every_query_text_is_recognised() -> None:
    """The templates, the queries sent and pg_stat_statements' normalised texts (captured from
    a real run on PostgreSQL 18: extract(year from ...) normalised to extract($1 from ...))."""
    for planned in queries.plan_stream(1.0, 7, 0):
        assert queries.query_of(planned.sql) == planned.query
    captured = json.loads((FIXTURES / "statements-texts-18.json").read_text())["texts"]
    found = {queries.query_of(t) for t in captured}
    assert found == {*range(1, 23), None}  # the refresh functions' statements are no query
    q9 = next(t for t in captured if t.startswith("select nation, o_year"))
    assert "extract($1 from o_orderdate)" in q9 and queries.query_of(q9) == 9
    assert queries.query_of(q9[:300] + "…") == 9  # clipped (insights/plans.clip)
    assert queries.query_of("SELECT pg_stat_clear_snapshot()") is None


def _tpch_run(point: str, repeat: int, seconds: float, temp: int, jit_ms: float) -> RunRecord:
    events = [
        {"event": "query", "stream": 0, "query": q, "status": "ok", "seconds": seconds * q,
         "temp_bytes": temp if q == 18 else 0}
        for q in queries.QUERIES
    ]  # fmt: skip
    rec = _run(point, repeat, tpch={"mode": "power", "queries": events})
    q18 = queries.text(18, queries.qualification(18, 1.0))
    rec.insights = {
        "statements": {"top": [{"text": q18, "jit_generation_ms": jit_ms, "jit_emission_ms": 1.0}]},
        "plans": {"statements": [{"text": q18, "plans": [{"hash": f"h{int(temp > 0)}"}]}]},
    }
    return rec


def test_per_query_rows_and_table() -> None:
    groups = {
        "baseline": [_tpch_run("confirm-baseline", r, 1.0, 2**30, 30.0) for r in range(3)],
        "best": [_tpch_run("confirm-best", r, 0.5, 0, 0.0) for r in range(3)],
        "pgtune-dw": [_tpch_run("confirm-pgtune-dw", r, 0.8, 2**29, 30.0) for r in range(3)],
    }
    rows = tune_queries.query_rows(groups)
    q18 = rows[17]
    assert q18.query == 18 and q18.seconds == {"baseline": 18.0, "best": 9.0, "pgtune-dw": 14.4}
    assert q18.ratio("baseline", "best") == 2.0
    assert q18.temp_bytes["baseline"] == 2**30 and q18.temp_bytes["best"] == 0
    assert q18.jit_ms == {"baseline": 31.0, "best": 1.0, "pgtune-dw": 31.0}
    assert q18.plan_changed("baseline", "best") is True
    assert q18.plan_changed("baseline", "pgtune-dw") is False
    assert rows[0].plan_changed("baseline", "best") is None  # Q1 was never sampled
    head, cells = tune_queries.table(rows, list(groups))
    line = dict(zip(head, cells[17], strict=True))
    assert line["best vs baseline"] == "x2.00" and line["best vs pgtune-dw"] == "x1.60"
    assert line["temp MiB baseline"] == "1,024" and line["temp MiB best"] == "0"
    assert line["plan vs baseline"] == "best: changed; pgtune-dw: same"
    assert dict(zip(head, cells[0], strict=True))["plan vs baseline"] == "not sampled"
    assert tune_queries.is_tpch_study(groups["best"])
