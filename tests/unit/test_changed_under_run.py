"""Issue 43, class 1: a run whose environment was changed under it (`env set --force` while it
ran: its extra["changed_under_run"] events) gets no verdict in any comparison, and its disk
limit says it held at the start only. The recording itself: tests/unit/test_run_guard.py."""

from __future__ import annotations

from study_fakes import make_record

from pgrig.analysis.compare import compare_runs
from pgrig.views import disk_limit


def _changed(rec, change: str = "disk limit set to riops=500,wbps=10MB") -> None:  # type: ignore[no-untyped-def]
    rec.extra["changed_under_run"] = [
        {"after_s": 5.2, "command": "env set --force", "change": change}
    ]


def test_comparisons_involving_a_changed_run_give_no_verdict_and_say_why() -> None:
    base = [make_record(tps=1000, seconds=60, seed=i) for i in range(3)]
    cand = [make_record(tps=1500, seconds=60, seed=10 + i) for i in range(3)]
    for i, r in enumerate((*base, *cand)):
        r.id = i + 1
    assert compare_runs(base, cand).verdict == "faster"  # a firm verdict, before the change
    _changed(cand[1])
    c = compare_runs(base, cand)
    assert c.verdict is None and c.lower is None
    assert c.reason == (
        "run 5 (disk limit set to riops=500,wbps=10MB at 5.2 s) was changed while running: "
        "not comparable as is"
    )
    assert c.verdict_text().startswith("no verdict: run 5 (disk limit")
    single = compare_runs([base[0]], [cand[1]])  # single runs: no indicative verdict either
    assert single.verdict is None and "was changed while running" in (single.reason or "")


def test_the_disk_limit_of_a_changed_run_says_it_held_at_the_start_only() -> None:
    rec = make_record(tps=1000)
    rec.disk_limit = {"limit": {"wiops": 300}, "text": "wiops=300", "in_force": True}
    assert disk_limit.of(rec) == "wiops=300 (in force)"
    _changed(rec)
    assert disk_limit.of(rec) == (
        "wiops=300 (in force at the start only; then disk limit set to riops=500,wbps=10MB at "
        "5.2 s (`pgrig env set --force`))"
    )
    _changed(rec, "settings work_mem=8MB")  # not the disk limit: its line unchanged
    assert disk_limit.of(rec) == "wiops=300 (in force)"
