"""The comparison engine (analysis/compare.py): methods, the four verdicts, repeats needed.

Every number is checked against an independent computation: pairwise ratios by brute force,
bounds from the Mann-Whitney distribution enumerated over every assignment of ranks, block
means with plain Python sums.
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
from collections import Counter

import numpy as np
import pytest
from study_fakes import make_record

from pgrig.analysis import compare as engine
from pgrig.analysis.compare import Comparison, compare_runs, decide, format_ratio
from pgrig.archive.records import LatencyStats, RunRecord
from pgrig.errors import PgrigError


def run(tps: float, run_id: int, status: str = "ok", p95: float | None = None) -> RunRecord:
    rec = RunRecord(env_name="e", workload="w", clients=1, threads=1, status=status, id=run_id)  # type: ignore[arg-type]
    rec.tps = tps if status == "ok" else None
    rec.latency = LatencyStats(p95=p95)
    return rec


def group(values: list[float], first_id: int = 1) -> list[RunRecord]:
    return [run(v, first_id + i) for i, v in enumerate(values)]


# --- independent computations ------------------------------------------------------------------
def brute_ratio(cand: list[float], base: list[float]) -> float:
    return math.exp(statistics.median(math.log(c) - math.log(b) for c in cand for b in base))


def brute_bounds(cand: list[float], base: list[float], misrate: float) -> tuple[float, float]:
    """k-th smallest and largest pairwise log difference, k from the enumerated U distribution."""
    n, m = len(cand), len(base)
    counts: Counter[int] = Counter()
    for xs in itertools.combinations(range(n + m), n):
        ys = set(range(n + m)) - set(xs)
        counts[sum(1 for a in xs for b in ys if a > b)] += 1
    total = math.comb(n + m, n)
    k, cum = 0, 0.0
    for u in range(n * m + 1):
        cum += counts[u] / total
        if cum > misrate / 2:
            break
        k = u + 1
    k = max(k, 1)
    diffs = sorted(math.log(c) - math.log(b) for c in cand for b in base)
    return math.exp(diffs[k - 1]), math.exp(diffs[-k])


# --- verdicts ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("lower", "upper", "expected"),
    [
        (1.03, 1.10, "faster"),
        (0.90, 0.97, "slower"),
        (0.99, 1.01, "equivalent"),
        (0.98, 1.02, "equivalent"),  # the edges are inside
        (1.019, 1.098, "inconclusive"),  # issue 9: "+4.4% [+1.9%, +9.8%]" is not "no change"
        (0.907, 0.986, "inconclusive"),  # "-7.1% [-9.3%, -1.4%]"
        (1.005, 1.015, "inconclusive"),  # a real change under the threshold: never equivalent
        (0.95, 1.05, "inconclusive"),
    ],
)
def test_four_verdicts(lower: float, upper: float, expected: str) -> None:
    assert decide(lower, upper, 0.02) == expected


def test_latency_flips_faster_and_slower() -> None:
    assert decide(1.03, 1.10, 0.02, higher_is_better=False) == "slower"
    assert decide(0.90, 0.97, 0.02, higher_is_better=False) == "faster"
    assert decide(0.99, 1.01, 0.02, higher_is_better=False) == "equivalent"


def test_format_ratio() -> None:
    assert format_ratio(1.2344, 1.0111, 1.1229) == "x1.234 [1.011, 1.123]"
    assert format_ratio(0.5) == "x0.500"
    assert format_ratio(None) == "-"


# --- repeats -----------------------------------------------------------------------------------
def test_repeats_use_hodges_lehmann_ratio_and_distribution_free_bounds() -> None:
    base = [1000.0, 1012.0, 995.0, 1003.0, 1008.0]
    cand = [1101.0, 1090.0, 1115.0, 1098.0, 1106.0]
    c = compare_runs(group(base), group(cand, 10))
    assert c.method == "repeats" and not c.indicative
    assert c.ratio == pytest.approx(brute_ratio(cand, base), rel=1e-12)
    lo, hi = brute_bounds(cand, base, 0.05)
    assert (c.lower, c.upper) == (pytest.approx(lo, rel=1e-12), pytest.approx(hi, rel=1e-12))
    assert c.verdict == "faster" and c.repeats_needed is None
    assert (c.n_baseline, c.n_candidate) == (5, 5)
    assert c.baseline_runs == (1, 2, 3, 4, 5) and c.candidate_runs == (10, 11, 12, 13, 14)
    assert c.describe() == (
        f"{format_ratio(c.ratio, c.lower, c.upper)} faster; "
        "5 vs 5 repeats, 95% bounds, Mann-Whitney (unpaired), threshold 2%"
    )
    back = compare_runs(group(cand, 10), group(base))
    assert back.verdict == "slower"


def test_latency_metric_lower_is_better() -> None:
    base = [run(1000, i, p95=10.0 + i / 10) for i in range(5)]
    cand = [run(1000, 10 + i, p95=8.0 + i / 10) for i in range(5)]
    c = compare_runs(base, cand, "latency.p95")
    assert c.ratio == pytest.approx(
        brute_ratio([8.0, 8.1, 8.2, 8.3, 8.4], [10, 10.1, 10.2, 10.3, 10.4])
    )
    assert c.upper < 0.98 and c.verdict == "faster"


def test_few_repeats_give_the_widest_bounds_with_their_confidence() -> None:
    c = compare_runs(group([100, 101, 102]), group([120, 121, 122], 10))  # 3 vs 3: 90% at best
    assert c.insufficient and c.achieved_misrate == pytest.approx(0.1)
    assert c.lower == pytest.approx(120 / 102) and c.upper == pytest.approx(122 / 100)
    assert "90% bounds (too few values for 95%)" in c.describe()


def test_inconclusive_says_how_many_repeats() -> None:
    base = [1000.0, 1030.0, 985.0, 1010.0]
    cand = [1040.0, 1075.0, 1025.0, 1060.0]
    c = compare_runs(group(base), group(cand, 10))
    assert c.verdict == "inconclusive" and c.lower < 1.02 < c.upper
    assert c.repeats_needed is not None and c.repeats_needed > 4
    assert f"about {c.repeats_needed} repeats per side likely needed" in c.verdict_text()


def test_small_real_change_is_inconclusive_without_repeats_estimate() -> None:
    base = [1000.0, 1001.0, 999.0, 1000.0, 1002.0, 998.0, 1000.0, 1001.0]
    cand = [v * 1.01 for v in base]
    c = compare_runs(group(base), group(cand, 20))
    assert c.lower > 1.0 and c.upper < 1.02
    assert c.verdict == "inconclusive" and c.repeats_needed is None
    assert "a real change smaller than the 2% threshold" in c.verdict_text()
    assert compare_runs(group(base), group(cand, 20), threshold=0.005).verdict == "faster"


def test_equivalent_needs_bounds_inside_the_threshold_around_one() -> None:
    base = [1000.0, 1004.0, 997.0, 1002.0, 999.0, 1001.0]
    cand = [1001.0, 998.0, 1003.0, 1000.0, 1002.0, 997.0]
    c = compare_runs(group(base), group(cand, 10))
    assert c.verdict == "equivalent" and c.lower <= 1 <= c.upper
    assert c.verdict_text() == "equivalent"


# --- runs that are not ok ----------------------------------------------------------------------
@pytest.mark.parametrize("status", ["failed", "aborted", "running"])
def test_runs_that_are_not_ok_get_no_verdict(status: str) -> None:
    base = group([1000, 1001])
    cand = [run(1100, 10), run(0, 11, status=status)]
    c = compare_runs(base, cand)
    assert c.verdict is None and c.ratio is None and c.lower is None
    assert c.reason == f"run 11 is {status}" and c.advice == "only ok runs are compared"
    assert c.verdict_text() == f"no verdict: run 11 is {status}"
    assert c.describe() == f"no verdict: run 11 is {status}; only ok runs are compared"


def test_bad_parameters_are_clear_errors() -> None:
    with pytest.raises(PgrigError, match="--threshold"):
        compare_runs(group([1, 2]), group([3, 4]), threshold=1.5)
    with pytest.raises(PgrigError, match="--misrate"):
        compare_runs(group([1, 2]), group([3, 4]), misrate=0)
    with pytest.raises(PgrigError, match="at least one run"):
        compare_runs([], group([3, 4]))


# --- single runs: block means ------------------------------------------------------------------
def test_single_runs_use_block_means_of_at_least_ten_seconds() -> None:
    a = make_record(tps=1000, seconds=60, warmup=5, seed=1)
    b = make_record(tps=1100, seconds=60, warmup=5, seed=2)
    a.id, b.id = 1, 2
    c = compare_runs([a], [b])
    assert c.method == "blocks" and c.indicative
    assert (c.n_baseline, c.n_candidate) == (6, 6)  # 60 s: 6 blocks of 10 s

    # independently: means of seconds 0-9, 10-19, ... of the measured window
    def blocks(rec: RunRecord) -> list[float]:
        s = rec.series["pgbench"]
        window = [y for t, y in zip(s["t"], s["tps"], strict=True) if t >= 0]
        return [sum(window[i : i + 10]) / 10 for i in range(0, 60, 10)]

    assert c.ratio == pytest.approx(brute_ratio(blocks(b), blocks(a)), rel=1e-12)
    lo, hi = brute_bounds(blocks(b), blocks(a), 0.05)
    assert c.lower == pytest.approx(lo, rel=1e-12) and c.upper == pytest.approx(hi, rel=1e-12)
    assert c.verdict == "faster" and c.verdict_text() == "faster (indicative)"
    assert "single runs, 6 vs 6 blocks of >= 10 s" in c.describe()


def test_block_means_leave_out_warmup_and_partial_last_second() -> None:
    rec = make_record(tps=1000, seconds=30, warmup=5, seed=3)
    s = rec.series["pgbench"]
    s["t"].append(30.0)  # a partial last second, as pgbench's log ends mid-second
    s["tps"].append(150.0)
    t, y = engine.measured_seconds(rec, "tps")
    assert t.tolist() == list(range(30))
    means = engine.block_means(t, y)
    assert means == pytest.approx([sum(s["tps"][5 + i : 15 + i]) / 10 for i in (0, 10, 20)])


def test_too_short_names_the_shortest_run_with_its_own_measured_time() -> None:
    # issue 43: `runs compare 24 34` said "(run 24: 2 s)" where run 24 measured 3.1 s and run
    # 34 was the 2 s one: the first side's run was named, beside its per-second span
    a = make_record(tps=1000, seconds=4, warmup=0, seed=1)
    b = make_record(tps=1500, seconds=2, warmup=0, seed=2)
    a.id, b.id = 24, 34
    a.measured_s = 3.1
    a.series["pgbench"] = {k: v[1:] for k, v in a.series["pgbench"].items()}  # starts at t=1
    for base, cand in (([a], [b]), ([b], [a])):
        assert compare_runs(base, cand).reason == "single runs under 30 s (run 34: 2 s)"
    b.measured_s = 5.0  # now run 24 is the shorter one, with its figure as its record says
    assert compare_runs([b], [a]).reason == (
        "single runs under 30 s (run 24: 3.1 s measured, 2 s of per-second TPS)"
    )
    a.series["pgbench"]["t"] = [v - 1 for v in a.series["pgbench"]["t"]]  # 0, 1, 2: no gap
    assert compare_runs([b], [a]).reason == "single runs under 30 s (run 24: 3.1 s)"


def test_too_short_says_when_the_per_second_values_cover_less_than_measured() -> None:
    a = make_record(tps=1000, seconds=40, warmup=0, seed=1)
    b = make_record(tps=1500, seconds=40, warmup=0, seed=2)
    a.id, b.id = 1, 2
    a.series["pgbench"] = {k: v[:12] for k, v in a.series["pgbench"].items()}  # log cut short
    assert compare_runs([a], [b]).reason == (
        "single runs under 30 s (run 1: 40 s measured, 12 s of per-second TPS)"
    )


def test_long_runs_get_at_most_ten_blocks() -> None:
    t = np.arange(300, dtype=float)
    assert len(engine.block_means(t, np.ones(300))) == 10  # blocks of 30 s


def test_single_runs_too_short_give_no_verdict_and_say_why() -> None:
    a = make_record(tps=1000, seconds=20, warmup=2, seed=1)
    b = make_record(tps=1500, seconds=20, warmup=2, seed=2)
    a.id, b.id = 1, 2
    c = compare_runs([a], [b])
    assert c.verdict is None and c.ratio == pytest.approx(1.5)
    assert c.reason == "single runs under 30 s (run 1: 20 s)"
    assert c.advice == (
        "an indicative verdict on single runs needs 30 s of per-second TPS (3 blocks of 10 s); "
        "repeat the runs (2+ per side) for a firm one"
    )
    assert c.ratio_text() == "x1.500"
    assert c.describe() == f"x1.500 no verdict: {c.reason}; {c.advice}"
    nopm = compare_runs([a], [b], "nopm")
    assert nopm.verdict is None and nopm.reason == "run 1 has no NOPM"


def test_one_run_against_repeats_pools_blocks() -> None:
    a = make_record(tps=1000, seconds=30, warmup=0, seed=1)
    bs = [make_record(tps=1000, seconds=30, warmup=0, seed=s) for s in (2, 3)]
    for i, r in enumerate([a, *bs]):
        r.id = i + 1
    c = compare_runs([a], bs)
    assert c.method == "blocks" and (c.n_baseline, c.n_candidate) == (3, 6)


# --- repeats needed ----------------------------------------------------------------------------
def test_repeats_needed_formula() -> None:
    log_b = np.log([1000.0, 1030.0, 985.0, 1010.0])
    log_c = np.log([1040.0, 1075.0, 1025.0, 1060.0])

    # independently: Shamos spread by brute force, normal-consistent, pooled
    def sd(x: np.ndarray) -> float:
        return statistics.median(abs(a - b) for a, b in itertools.combinations(x, 2)) / 0.9539

    s = math.sqrt((sd(log_b) ** 2 + sd(log_c) ** 2) / 2)
    d = statistics.median(c - b for c in log_c for b in log_b)
    m = min(abs(d - math.log(1.02)), abs(d - math.log(0.98)))
    z = 1.959964 + 0.841621
    expected = math.ceil(math.pi / 3 * 2 * (z * s / m) ** 2)
    assert engine.repeats_needed(log_b, log_c, 0.02, 0.05, have=4) == max(expected, 5)


def test_min_repeats() -> None:
    assert engine.min_repeats(0.05) == 4  # 3 vs 3: 2/20 = 0.1 > 0.05; 4 vs 4: 2/70
    assert engine.min_repeats(0.1) == 3
    assert engine.min_repeats(0.01) == 5  # 2/252


def test_repeats_needed_decides_about_eighty_percent_of_the_time() -> None:
    """Simulated runs, log-normal with sd 3%, a true +6% effect, threshold 2%: the estimate
    from 5 repeats per side is close to the n computed from the true parameters, and with that
    n the comparison decides ("faster") most of the time: 80% is the target of the normal
    approximation; the distribution-free bounds are a little wider, so about 70%."""
    rng = np.random.default_rng(7)
    sigma, effect = 0.03, 1.06
    m = math.log(effect) - math.log(1.02)
    true_n = math.ceil(math.pi / 3 * 2 * ((1.959964 + 0.841621) * sigma / m) ** 2)
    estimates = []
    for _ in range(200):
        b = np.exp(rng.normal(0, sigma, 5))
        c = np.exp(rng.normal(math.log(effect), sigma, 5))
        n = engine.repeats_needed(np.log(b), np.log(c), 0.02, 0.05, have=0)
        estimates.append(n if n is not None else 10**6)
    assert 0.5 * true_n <= statistics.median(estimates) <= 2 * true_n
    decided = 0
    for _ in range(300):
        b = 1000 * np.exp(rng.normal(0, sigma, true_n))
        c = 1000 * np.exp(rng.normal(math.log(effect), sigma, true_n))
        decided += compare_runs(group(list(b)), group(list(c), 100)).verdict == "faster"
    assert 0.6 <= decided / 300 <= 0.9, (true_n, decided)


# --- the property: a detected change is never called equivalent -------------------------------
def _simulated_comparisons(count: int) -> list[Comparison]:
    rng = random.Random(2024)
    out = []
    for _ in range(count):
        n, m = rng.randint(2, 8), rng.randint(2, 8)
        effect = rng.choice([0.0, 0.005, 0.01, 0.015, 0.02, 0.03, 0.05, -0.01, -0.03])
        noise = rng.choice([0.001, 0.005, 0.01, 0.03])
        base = [1000 * math.exp(rng.gauss(0, noise)) for _ in range(n)]
        cand = [1000 * math.exp(effect + rng.gauss(0, noise)) for _ in range(m)]
        threshold = rng.choice([0.0, 0.01, 0.02, 0.05])
        out.append(compare_runs(group(base), group(cand, 100), threshold=threshold))
    return out


def test_no_detected_change_is_ever_called_equivalent() -> None:
    seen: Counter[str] = Counter()
    for c in _simulated_comparisons(3000):
        assert c.verdict in engine.VERDICTS
        seen[c.verdict] += 1
        assert c.lower is not None and c.upper is not None
        if c.verdict == "equivalent":
            assert c.lower <= 1 <= c.upper
        if c.lower > 1 + c.threshold:
            assert c.verdict == "faster"
        if c.upper < 1 - c.threshold:
            assert c.verdict == "slower"
        assert "no detectable change" not in c.describe()
    assert all(seen[v] > 50 for v in engine.VERDICTS), seen


def test_repeats_needed_past_what_the_setup_resolves_is_said_in_words() -> None:
    import dataclasses

    base = [1000.0, 1030.0, 985.0, 1010.0]
    cand = [1040.0, 1075.0, 1025.0, 1060.0]
    c = compare_runs(group(base), group(cand, 10))
    huge = dataclasses.replace(c, repeats_needed=17_025)
    text = huge.verdict_text()
    assert "more than 100 repeats per side: below what this setup can resolve" in text
    assert "17,025" not in text
    assert "about 100 repeats" in dataclasses.replace(c, repeats_needed=100).verdict_text()
