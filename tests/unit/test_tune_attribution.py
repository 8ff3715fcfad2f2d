"""Tuning's attribution without servers: the ablation plan and its shares of the gain, the
sequential confirmation's look schedule and early stop, the presets' resolution, the warm
start from pgtune-oltp's point, and `pgrig tune show`'s rendering."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from study_fakes import FakeBackend

from pgrig.analysis.compare import compare_runs
from pgrig.analysis.compare_paired import min_pairs
from pgrig.archive.records import RunRecord
from pgrig.archive.store import Archive
from pgrig.errors import PgrigError
from pgrig.request import RunRequest
from pgrig.tune import ablation, confirm, presets, space
from pgrig.tune.objective import objective
from pgrig.tune.runner import TunePlan, run_tune

GIB = 1024**3


# --- the ablation plan ------------------------------------------------------------------------
def test_units_durability_alone_groups_together_rest_by_importance() -> None:
    changed = ["shared_buffers", "max_wal_size", "checkpoint_timeout", "commit_delay",
               "random_page_cost", "jit", "synchronous_commit", "fsync"]  # fmt: skip
    units = ablation.plan_units(changed, {}, max_units=10)
    assert [u.key for u in units] == [
        "fsync", "synchronous_commit", "shared_buffers", "checkpoints", "commit delay",
        "random_page_cost", "jit",
    ]  # fmt: skip
    assert units[3].knobs == ("max_wal_size", "checkpoint_timeout")
    # capped: durability knobs stay alone, the most important others stay, the rest together
    imp = {"jit": 0.5, "random_page_cost": 0.3, "shared_buffers": 0.01}
    capped = ablation.plan_units(changed, imp, max_units=5)
    assert [u.key for u in capped] == [
        "fsync",
        "synchronous_commit",
        "random_page_cost",
        "jit",
        ablation.REST,
    ]
    assert set(capped[-1].knobs) == {"shared_buffers", "max_wal_size", "checkpoint_timeout",
                                     "commit_delay"}  # fmt: skip
    assert sum(len(u.knobs) for u in capped) == len(changed)  # every knob measured once


def test_changed_knobs_and_configs() -> None:
    best = {"shared_buffers": "1024MB", "jit": "off", "fsync": "off", "synchronous_commit": "off"}
    own = {"shared_buffers": "128MB", "jit": "off", "fsync": "on", "synchronous_commit": None}
    assert ablation.changed_knobs(best, own) == ["shared_buffers", "fsync", "synchronous_commit"]
    units = ablation.plan_units(["shared_buffers", "fsync", "synchronous_commit"], {})
    configs = ablation.configs(best, units)
    assert configs[ablation.BEST] == best
    assert configs["shared_buffers"] == {"jit": "off", "fsync": "off", "synchronous_commit": "off"}
    # two durability knobs off: durable-only (both back) is measured as well
    assert configs[ablation.DURABLE] == {"shared_buffers": "1024MB", "jit": "off"}
    one = ablation.configs({"fsync": "off", "jit": "off"}, [ablation.Unit("fsync", ("fsync",))])
    assert ablation.DURABLE not in one  # the fsync unit already is durable-only
    # every round runs each configuration once, in an order of its own (carry-over spread)
    planned = ablation.plan(["best", "a", "b"], 8, "s")
    rounds = [planned[i : i + 3] for i in range(0, 24, 3)]
    assert all(sorted(c for c, _ in rd) == ["a", "b", "best"] for rd in rounds)
    assert all({r for _, r in rd} == {k} for k, rd in enumerate(rounds))
    assert len({tuple(c for c, _ in rd) for rd in rounds}) > 1
    assert planned == ablation.plan(["best", "a", "b"], 8, "s")  # a resumed study: the same


def _run(point: str, repeat: int, tps: float, n: int) -> RunRecord:
    rec = RunRecord(env_name="e", workload="pgbench:tpcb", clients=8, threads=1)
    rec.id, rec.status, rec.tps, rec.study, rec.study_point, rec.repeat = (
        n, "ok", tps, "s", point, repeat
    )  # fmt: skip
    rec.started_at = datetime(2026, 11, 28, tzinfo=UTC) + timedelta(seconds=n)
    return rec


def test_shares_are_log_ratios_over_the_gain() -> None:
    """Rounds of best, without A (A carries most of the gain), without B (no effect)."""
    runs, n = [], 0
    for r, (best, without_a, without_b) in enumerate(
        [
            (1500, 1010, 1490),
            (1480, 1000, 1500),
            (1520, 1030, 1510),
            (1490, 990, 1495),
            (1505, 1005, 1500),
        ]
    ):
        for point, tps in (("best", best), ("A", without_a), ("B", without_b)):
            n += 1
            runs.append(_run(ablation.point_key(point), r, tps, n))
    units = [ablation.Unit("A", ("a",)), ablation.Unit("B", ("b1", "b2"))]
    found = ablation.shares(runs, units, "tps", 0.02, gain=1.5)
    a, b = found
    best = [r for r in runs if r.study_point == "ablate-best"]
    without_a = [r for r in runs if r.study_point == "ablate-A"]
    # two comparisons, Holm: A (the stronger) at 0.05 / 2, B at 0.05
    c = compare_runs(without_a, best, "tps", 0.02, 0.025)
    assert c.method == "pairs" and a.comparison == c
    assert b.comparison is not None and b.comparison.misrate == pytest.approx(0.05)
    assert a.share == pytest.approx(math.log(c.ratio or 0) / math.log(1.5))
    assert a.low == pytest.approx(math.log(c.lower or 0) / math.log(1.5))
    assert a.high == pytest.approx(math.log(c.upper or 0) / math.log(1.5))
    assert 0.9 < (a.share or 0) < 1.1 and a.measured_effect
    assert b.comparison is not None and not b.measured_effect and abs(b.share or 0) < 0.1
    # no confirmed gain: the effects stay, the shares go, with the reason
    none = ablation.shares(runs, units, "tps", 0.02, gain=None)
    assert none[0].comparison == c and none[0].share is None
    assert none[0].reason and "no gain" in none[0].reason
    # a unit without runs says so
    missing = ablation.shares(runs, [ablation.Unit("C", ("c",))], "tps", 0.02, gain=1.5)
    assert missing[0].comparison is None and "without C" in (missing[0].reason or "")


def test_holm_judges_a_family_of_ablation_comparisons_step_down() -> None:
    """Three units each judged "faster" alone at 5%: A clearly, B and C barely. Under Holm, A
    passes 5%/3; B must pass 5%/2 and does not, so B and C (after it) are judged at 5%/2 and
    neither is "faster": the correction takes back two verdicts one-at-a-time testing gives."""
    rounds = [
        (1500, 1350, 1320, 1300), (1480, 1340, 1400, 1390), (1520, 1390, 1250, 1240),
        (1490, 1330, 1450, 1460), (1510, 1370, 1300, 1290),
    ]  # fmt: skip
    runs, n = [], 0
    for r, row in enumerate(rounds):
        for point, tps in zip(("best", "A", "B", "C"), row, strict=True):
            n += 1
            runs.append(_run(ablation.point_key(point), r, tps, n))
    units = [ablation.Unit(k, (k.lower(),)) for k in "ABC"]
    best = [r for r in runs if r.study_point == "ablate-best"]

    def alone(key: str, misrate: float = 0.05) -> Any:
        return compare_runs(
            [r for r in runs if r.study_point == f"ablate-{key}"], best, "tps", 0.02, misrate
        )

    assert [alone(k).verdict for k in "ABC"] == ["faster"] * 3  # uncorrected
    found = {s.unit.key: s.comparison for s in ablation.shares(runs, units, "tps", 0.02, 1.2)}
    a, b, c = (found[k] for k in "ABC")
    assert a is not None and b is not None and c is not None
    assert a.misrate == pytest.approx(0.05 / 3) and a.verdict == "faster"
    assert a == alone("A", 0.05 / 3)
    assert b.misrate == pytest.approx(0.05 / 2) and b.verdict == "inconclusive"
    assert c.misrate == pytest.approx(0.05 / 2) and c.verdict == "inconclusive"
    assert b == alone("B", 0.05 / 2) and c == alone("C", 0.05 / 2)
    # one comparison alone: judged at the full misrate
    single = ablation.holm({"C": lambda m: alone("C", m)}, 0.05)
    assert single["C"].misrate == pytest.approx(0.05) and single["C"].verdict == "faster"
    # the order: the smallest misrate at which each is decisive
    assert ablation.decisive_at(lambda m: alone("A", m), 0.05) < 0.01
    assert 0.025 < ablation.decisive_at(lambda m: alone("B", m), 0.05) <= 0.05


# --- the sequential confirmation ----------------------------------------------------------------
def test_look_schedule_spends_the_misrate_once() -> None:
    six = confirm.looks(6)
    assert [(lk.rounds, lk.misrate) for lk in six] == [(4, pytest.approx(0.03)),
                                                       (6, pytest.approx(0.02))]  # fmt: skip
    assert sum(lk.misrate for lk in six) == pytest.approx(0.05)
    for lk in six:  # each look has enough pairs for its misrate: a paired verdict is possible
        assert min_pairs(lk.misrate) <= lk.rounds
    assert [(lk.rounds, lk.misrate) for lk in confirm.looks(4)] == [(4, 0.05)]
    assert [lk.rounds for lk in confirm.looks(10)] == [5, 10]


class TuneFake(FakeBackend):
    def execute(self, spec: RunRequest, archive: Any, console: Any, stop_if: Any = None) -> Any:
        return super().execute(spec, archive, console)


def _space() -> space.Space:
    return space.Space(
        [
            space.Knob("shared_buffers", choices=("128MB", "1GB"), restart=True),
            space.Knob("work_mem", 1, 64, "MB", log=True),
        ]
    )


def _request(repeats: int = 6, ablate: int = 0, warm: dict[str, Any] | None = None) -> TunePlan:
    load = RunRequest(env_name="e1", workload="pgbench:tpcb", clients=8, duration_s=20.0)
    return TunePlan(
        name="t",
        load=load,
        objective=objective("tps", "pgbench:tpcb"),
        space=_space(),
        trials=4,
        confirm_repeats=repeats,
        pgtune_settings={"shared_buffers": "1GB"},
        ablation_repeats=ablate,
        warm_start=warm or {},
    )


def test_confirmation_stops_at_the_first_decisive_look(archive: Archive) -> None:
    # the fake's best (shared_buffers=1GB, +20%) against the baseline: faster; against
    # pgtune-oltp (the same setting): equivalent at the fake's 1% noise. Decisive after 4.
    run_tune(_request(repeats=6), archive=archive, backend=TuneFake(running={"e1"}))  # type: ignore[arg-type]
    runs = archive.study_runs("t")
    rounds = [r for r in runs if (r.study_point or "").startswith("confirm-")]
    assert len(rounds) == 3 * 4
    x = archive.get_study("t").extra
    assert x["confirm_stopped_at"] == 4 and x["confirm_misrate"] == pytest.approx(0.03)
    found = confirm.verdicts(runs, "tps", 0.02, confirm.misrate_of(x))
    assert [v.comparison.verdict for v in found if v.comparison] == ["faster", "equivalent"]
    assert all(v.comparison and v.comparison.misrate == pytest.approx(0.03) for v in found)


def test_ablation_runs_interleaved_and_show_renders_the_reasons(archive: Archive) -> None:
    from pgrig.cli.tune import render
    from pgrig.views import tune_attribution

    backend = TuneFake(running={"e1"})
    run_tune(_request(repeats=4, ablate=4), archive=archive, backend=backend)  # type: ignore[arg-type]
    runs = archive.study_runs("t")
    x = archive.get_study("t").extra
    best = x["best"]["settings"]
    plan = x["ablation"]
    assert [u["knobs"] for u in plan["units"]] == [[k] for k in best]  # own values unknown
    ablated = [(r.study_point, r.repeat) for r in runs if (r.study_point or "").startswith("abl")]
    names = list(plan["configs"])
    assert ablated == [(ablation.point_key(c), r) for c, r in ablation.plan(names, 4, "t")]
    a = tune_attribution.build(x, runs, "tps")
    sb = next(s for s in a.shares if s.unit.key == "shared_buffers")
    assert sb.comparison is not None and sb.comparison.verdict == "faster"
    assert sb.share is not None and 0.8 < sb.share < 1.2  # the fake's only effect
    text = render("t", "e1", best, a)
    assignments = " ".join(f"{k}={v}" for k, v in best.items())
    assert f"pgrig env set e1 {assignments}" in text
    conf = text.split("# postgresql.conf\n", 1)[1].splitlines()
    assert len(conf) == 2 * len(best)
    for comment, line in zip(conf[::2], conf[1::2], strict=True):
        assert comment.startswith("# ablation: the best is x")
        assert " = " in line and not line.startswith("#")
    assert "shared_buffers = '1GB'" in conf
    assert f"{sb.share_text} of the gain" in text
    # the report says the same, and labels the search importances as what they are
    from pgrig.reports import markdown, publish

    md = markdown.render(publish.study_document(archive, "t"), "t")
    assert "## Answer" in md and "## Ablation" in md and "## Knob importances (search)" in md
    assert f"| shared_buffers | {sb.effect_text} |" in md


def test_a_study_without_ablation_rounds_says_it_was_not_run(archive: Archive) -> None:
    """--ablation-repeats 0: no ablation line but none saying why, and each setting "not
    measured (no ablation run of it ...)" as if it had been left out of one that ran."""
    from io import StringIO

    from rich.console import Console

    from pgrig.cli.tune import _summary, render
    from pgrig.reports import markdown, publish
    from pgrig.views import tune_attribution

    run_tune(_request(repeats=4, ablate=0), archive=archive, backend=TuneFake(running={"e1"}))  # type: ignore[arg-type]
    x = archive.get_study("t").extra
    assert x["ablation_repeats"] == 0 and "ablation" not in x
    a = tune_attribution.build(x, archive.study_runs("t"), "tps")
    assert a.ablation_skipped == "not run (--ablation-repeats 0)" and not a.shares
    out = StringIO()
    _summary(Console(file=out, width=300), archive, "t")
    lines = [ln for ln in out.getvalue().splitlines() if ln.startswith("ablation")]
    assert lines == ["ablation: not run (--ablation-repeats 0)"]
    a.importances = {}  # a setting the search did not weigh either
    a.reasons = tune_attribution.reasons(x, a)
    text = render("t", "e1", x["best"]["settings"], a)
    assert "# not measured (ablation not run (--ablation-repeats 0); no search importance)" in text
    assert "no ablation run of it" not in text
    md = markdown.render(publish.study_document(archive, "t"), "t")
    assert "## Ablation\n\n> not run (--ablation-repeats 0)" in md
    # asked, but nothing of the best differs from the environment's own: said so
    assert tune_attribution.ablation_skipped({"ablation_repeats": 5}) == (
        "not run: no setting of the best differs from the environment's own"
    )


def test_show_falls_back_to_search_importance_labelled() -> None:
    from pgrig.cli.tune import render
    from pgrig.views.tune_attribution import Attribution, reasons

    x = {"best": {"settings": {"jit": "off", "work_mem": "8MB"}}}
    a = Attribution([], 0.05, None, None, importances={"jit": 0.25})
    a.reasons = reasons(x, a)
    text = render("t", "e1", x["best"]["settings"], a)
    assert "# search importance 25.0% (PED-ANOVA; not a measured effect)\njit = off" in text
    assert "# not measured (no ablation run of it, no search importance)\nwork_mem = '8MB'" in text


def test_a_large_group_is_named_by_its_size_in_each_reason() -> None:
    from types import SimpleNamespace

    from pgrig.views.tune_attribution import Attribution, reasons

    knobs = [f"knob_{i}" for i in range(20)]
    rest = SimpleNamespace(
        unit=SimpleNamespace(key="the rest", knobs=knobs),
        comparison=SimpleNamespace(ratio=1.1, verdict="inconclusive"),
        effect_text="x1.100 [0.9, 1.3]",
        share=0.24,
        share_text="24% [-39, 86]",
    )
    pair = SimpleNamespace(**{**vars(rest), "unit": SimpleNamespace(key="wal", knobs=knobs[:2])})
    a = Attribution([], 0.05, None, None, shares=[rest, pair])
    got = {r.setting: r.why for r in reasons({"best": {"settings": {"knob_5": "1"}}}, a)}
    assert got["knob_5"].startswith("ablation (as part of the rest: 20 settings put back")
    a = Attribution([], 0.05, None, None, shares=[pair])
    got = {r.setting: r.why for r in reasons({"best": {"settings": {"knob_1": "1"}}}, a)}
    assert got["knob_1"].startswith("ablation (as part of wal: knob_0, knob_1)")


# --- warm start -----------------------------------------------------------------------------------
def test_warm_start_is_pgtunes_point_in_the_space() -> None:
    s = space.class_space("mixed", 18, 24 * GIB, 2)
    pgtune = {"shared_buffers": "6171024kB", "work_mem": "20073kB", "jit": "off",
              "random_page_cost": "1.1", "effective_io_concurrency": "200",
              "wal_compression": "zstd-ish", "max_wal_size": "8GB"}  # fmt: skip
    params = space.warm_start(s, pgtune)
    assert params["shared_buffers"] == round(6171024 / 1024)
    assert params["work_mem"] == round(20073 / 1024)
    assert params["jit"] == "off" and params["random_page_cost"] == pytest.approx(1.1)
    assert params["max_wal_size"] == 8192
    assert "wal_compression" not in params  # not a choice of the space: Optuna samples it
    tiny = space.Space([space.Knob("work_mem", 1, 8, "MB")])
    assert space.warm_start(tiny, {"work_mem": "64MB"}) == {"work_mem": 8}  # clipped


def test_first_trial_is_the_warm_start(archive: Archive) -> None:
    run_tune(
        _request(repeats=2, warm={"shared_buffers": "1GB", "work_mem": 20}),
        archive=archive,
        backend=TuneFake(running={"e1"}),  # type: ignore[arg-type]
    )
    first = archive.get_study("t").extra["trials"][0]
    assert first["settings"] == {"shared_buffers": "1GB", "work_mem": "20MB"}


def test_class_spaces() -> None:
    read = space.class_space("read", 18, 24 * GIB, 2)
    assert read.knob("shared_buffers").high == int(24 * 1024 * 0.6)
    assert "work_mem" not in read.names
    mixed = space.class_space("mixed", 18, 24 * GIB, 2)
    assert {"work_mem", "hash_mem_multiplier", "jit"} <= set(mixed.names)
    write = space.class_space("write", 15, 24 * GIB, 2)
    assert {"commit_delay", "wal_compression", "max_wal_size"} <= set(write.names)
    assert "io_method" not in write.names  # 15 has none
    with pytest.raises(PgrigError, match="use default, read, mixed, write"):
        space.class_space("olap", 18, 24 * GIB, 2)


# --- presets ------------------------------------------------------------------------------------
def test_preset_values_and_overrides() -> None:
    defaults = {"workload": None, "scale": None, "trials": 20, "clients": 1, "space": "default"}
    got = presets.resolve("read-heavy", {"trials": 3, "clients": None}, defaults)
    assert got["trials"] == 3  # a given flag wins
    assert got["clients"] == 8 and got["scale"] == 200 and got["space"] == "read"
    assert got["workload"] == ["pgbench:select-only"]
    mixed = presets.resolve("mixed-reporting", {}, defaults)
    script = mixed["workload"][1].rsplit("@", 1)
    assert script[1] == "1" and mixed["workload"][0] == "pgbench:tpcb-like@9"
    assert presets.reporting_script().is_file() and script[0] == str(presets.reporting_script())
    assert presets.resolve(None, {"trials": None}, defaults) == defaults
    given = presets.resolve("mixed-reporting", {"workload": ["pgbench:tpcb"]}, defaults)
    assert given["workload"] == ["pgbench:tpcb"]


def test_unknown_preset_lists_the_presets() -> None:
    with pytest.raises(PgrigError) as e:
        presets.get("fast")
    text = str(e.value)
    assert "--preset 'fast': no such preset" in text
    for name in ("read-heavy", "mixed-reporting", "write-heavy-slow-disk"):
        assert name in text


def test_slow_disk_preset_needs_a_disk_limit() -> None:
    p = presets.get("write-heavy-slow-disk")
    with pytest.raises(PgrigError, match=r"has no disk limit.*pgrig env set e1 --disk-limit"):
        presets.check_disk_limit(p, "e1", None)
    presets.check_disk_limit(p, "e1", {"wiops": 300})
    presets.check_disk_limit(presets.get("read-heavy"), "e1", None)


def test_reporting_script_spills_by_design() -> None:
    """The report sorts and hashes every account: a window sort, an aggregate with a group per
    account, and a join of the history."""
    text = presets.reporting_script().read_text()
    assert "row_number() OVER (PARTITION BY bid ORDER BY abalance DESC, aid)" in text
    assert "GROUP BY abalance + aid" in text and "pgbench_history" in text


def test_the_planned_runs_count_the_ablation_once_it_is_planned(archive: Archive) -> None:
    """`study list`'s "ok / planned" said 10 / 9 after an ablation: its runs were not planned
    (issue 43, case 30). Planned: baseline, trials, the confirmation at most, the ablation."""
    from pgrig.tune.runner import planned_runs

    req = _request(repeats=2, ablate=2)
    run_tune(req, archive=archive, backend=TuneFake(running={"e1"}))  # type: ignore[arg-type]
    x = archive.get_study("t").extra
    runs = archive.study_runs("t")
    ablated = [r for r in runs if (r.study_point or "").startswith("ablate-")]
    assert ablated, "the fake's best differs from the environment's own: an ablation ran"
    assert x["runs"] == planned_runs(req, x["ablation"]) >= len(runs)
    assert x["runs"] - planned_runs(req, None) == len(ablated)
