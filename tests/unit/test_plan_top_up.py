"""A rare transaction type is not starved of plans: sampling.shortfall names the scripts whose
statements expect too few plans at the run's mean rate, and the plans the top-up logs after
the window are counted apart (real auto_explain output from PostgreSQL 15's TPC-C runs)."""

from __future__ import annotations

from pathlib import Path

from pgrig.insights import plans, sampling, server_log

LOGS = Path(__file__).parents[1] / "fixtures" / "insights"


def test_a_rare_script_beside_a_hot_one_is_short_of_plans() -> None:
    budget = sampling.PlanBudget()
    # a 60 s run: 20,000 statements a second of a hot script, 10 of a rare one
    t, calls_per_s = 0.0, 20_010.0
    while t < 60:
        step = min(sampling.next_check(t), 60) - t
        budget.revise(calls_per_s * step, step, 60 - t - step)
        t += step
    rate = budget.mean_rate()
    assert budget.rate * calls_per_s <= sampling.MAX_PER_S  # the cap holds (after 1 s)
    short = sampling.shortfall(rate, [("hot.sql", 1_200_000), ("rare.sql", 600)])
    assert [s["name"] for s in short] == ["rare.sql"]
    (rare,) = short
    assert rare["expected_plans"] == round(rate * 600, 2) < sampling.MIN_PER_SCRIPT
    assert rare["top_up"] == sampling.MIN_PER_SCRIPT - int(rate * 600)


def test_no_shortfall_when_every_type_has_its_plans() -> None:
    assert sampling.shortfall(0.05, [("a", 10_000), ("b", 400)]) == []
    assert sampling.shortfall(1.0, [("a", 3)]) == [
        {"script_no": 0, "name": "a", "transactions": 3, "expected_plans": 3.0, "top_up": 7}
    ]
    assert sampling.PlanBudget(rate=0.2).mean_rate() == 0.2  # nothing counted yet


def test_plans_after_the_top_up_mark_are_counted_apart() -> None:
    records = list(server_log.records(LOGS / "pg15_tpcc_standard_stock_level.log", "UTC"))
    stamped = [r.ts for r in records if r.ts is not None]
    mark = stamped[len(stamped) // 2]
    whole = plans.PlanBook(window_start=stamped[0])
    split = plans.PlanBook(window_start=stamped[0], top_up_from=mark)
    for r in records:
        whole.add(r)
        split.add(r)
    a, b = whole.result(), split.result()
    assert a["samples"] == b["samples"] > 0 and a["top_up_samples"] == 0
    after = sum(
        1
        for r in records
        if r.ts is not None and r.ts >= mark and r.message.startswith("duration:")
    )
    assert b["top_up_samples"] == after > 0
    assert sum(st["top_up_samples"] for st in b["statements"]) == after
    # top-up plans stay out of the timeline of plan changes within the window
    last = max((p["last_t"] or 0) for st in b["statements"] for p in st["plans"])
    assert last < mark - stamped[0]
