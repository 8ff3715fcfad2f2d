"""Robust estimators and distribution-free bounds, with hand-computed answers (verdicts:
test_compare.py)."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest

from pgrig.analysis import stats
from pgrig.analysis.stats import (
    center,
    center_bounds,
    ratio,
    ratio_bounds,
    shift,
    shift_bounds,
    spread,
)
from pgrig.errors import PgrigError


# --- estimators, by hand ---------------------------------------------------------------------
def test_center_hodges_lehmann_by_hand() -> None:
    # Walsh averages of [1, 2, 3, 100] (i <= j): 1, 1.5, 2, 50.5, 2, 2.5, 51, 3, 51.5, 100;
    # sorted: 1 1.5 2 2 2.5 | 3 50.5 51 51.5 100 -> median (2.5 + 3) / 2
    assert center([1, 2, 3, 100]) == 2.75
    assert center([5]) == 5.0
    assert center([1, 2, 3]) == 2.0  # 1 1.5 2 2 2.5 3 -> 2


def test_spread_shamos_by_hand() -> None:
    # |xi - xj|, i < j: 1 2 99 1 98 97 -> sorted 1 1 2 | 97 98 99 -> 49.5
    assert spread([1, 2, 3, 100]) == 49.5
    assert spread([1, 2, 4]) == 2.0  # 1 3 2
    with pytest.raises(PgrigError, match="at least 2"):
        spread([1])


def test_shift_and_ratio_by_hand() -> None:
    # x - y: 1-0 1-0 2-0 ... x = [1, 2, 3], y = [0, 10]: 1 -9 2 -8 3 -7 -> sorted -9 -8 -7 1 2 3
    assert shift([1, 2, 3], [0, 10]) == -3.0
    assert ratio([2, 4, 8], [1, 2, 4]) == pytest.approx(2.0)
    assert ratio([110, 110], [100, 100]) == pytest.approx(1.1)
    with pytest.raises(PgrigError, match="positive"):
        ratio([1, 0], [1, 2])


def test_estimators_are_robust_to_one_outlier() -> None:
    x = [100, 101, 99, 100, 102, 98, 100]
    assert abs(center([*x, 10_000]) - center(x)) < 1.5
    assert shift([*x, 10_000], x) < 2


def test_bad_input_is_a_clear_error() -> None:
    for bad in ([], [1, float("nan")], [[1, 2], [3, 4]], ["a"]):
        with pytest.raises(PgrigError):
            center(bad)  # type: ignore[arg-type]
    with pytest.raises(PgrigError, match="misrate"):
        shift_bounds([1, 2], [3, 4], misrate=0)


# --- rank distributions ------------------------------------------------------------------
def _brute_mw_counts(n: int, m: int) -> list[int]:
    """Count U = #(x > y) over every assignment of ranks 0..n+m-1 to the x sample."""
    counts: Counter[int] = Counter()
    for xs in itertools.combinations(range(n + m), n):
        ys = set(range(n + m)) - set(xs)
        counts[sum(1 for a in xs for b in ys if a > b)] += 1
    return [counts[u] for u in range(n * m + 1)]


@pytest.mark.parametrize(("n", "m"), [(1, 1), (2, 3), (3, 4), (4, 4), (5, 3)])
def test_mann_whitney_cdf_matches_enumeration(n: int, m: int) -> None:
    counts = _brute_mw_counts(n, m)
    total = math.comb(n + m, n)
    expected = np.cumsum(counts)[: n * m // 2 + 1] / total
    assert np.allclose(stats.mann_whitney_cdf(n, m), expected)


def test_signed_rank_cdf_matches_enumeration() -> None:
    n = 6
    counts: Counter[int] = Counter()
    for signs in itertools.product((0, 1), repeat=n):
        counts[sum(r + 1 for r, s in enumerate(signs) if s)] += 1
    expected = np.cumsum([counts[w] for w in range(n * (n + 1) // 2 + 1)]) / 2**n
    assert np.allclose(stats.signed_rank_cdf(n), expected[: n * (n + 1) // 4 + 1])


def test_cutoffs_match_textbook_critical_values() -> None:
    # Two-sided 5% Mann-Whitney critical values: n=m=5 -> U=2, n=m=10 -> U=23; the bounds use
    # the (U+1)-th smallest and largest pairwise difference.
    assert stats._pairwise_cutoff(5, 5, 0.05)[0] == 3
    assert stats._pairwise_cutoff(10, 10, 0.05)[0] == 24
    # Wilcoxon signed rank, two-sided 5%: n=10 -> T=8, n=20 -> T=52.
    assert stats._signed_rank_cutoff(10, 0.05)[0] == 9
    assert stats._signed_rank_cutoff(20, 0.05)[0] == 53


def test_normal_approximation_close_to_exact() -> None:
    for n, m in [(60, 60), (100, 100), (40, 200)]:
        exact, achieved, method, _ = stats._pairwise_cutoff(n, m, 0.05)
        assert method == "exact"
        sd = math.sqrt(n * m * (n + m + 1) / 12)
        approx, _, _ = stats._cutoff_normal(n * m / 2, sd, 0.05)
        assert abs(approx - exact) <= max(2, exact * 0.002)
        assert achieved <= 0.05
    assert stats._pairwise_cutoff(101, 100, 0.05)[2] == "normal"


# --- bounds ------------------------------------------------------------------------------
def test_shift_bounds_by_hand() -> None:
    # n = m = 5, cutoff 3: the 3rd smallest and 3rd largest of the 25 differences.
    x, y = [10, 11, 12, 13, 14], [0, 1, 2, 3, 4]
    z = sorted(a - b for a in x for b in y)
    b = shift_bounds(x, y)
    assert (b.lower, b.upper) == (z[2], z[-3])
    assert b.method == "exact" and not b.insufficient
    assert b.achieved_misrate == pytest.approx(8 / 252)
    assert b.lower <= shift(x, y) <= b.upper


def test_too_few_points_gives_widest_bounds_and_flag() -> None:
    # n = m = 3: even [min, max] misses with probability 2/20 = 0.1 > 0.05.
    x, y = [10.0, 11.0, 12.5], [1.0, 2.0, 3.5]
    b = shift_bounds(x, y)
    assert b.insufficient
    assert (b.lower, b.upper) == (10.0 - 3.5, 12.5 - 1.0)
    assert b.achieved_misrate == pytest.approx(0.1)
    assert not shift_bounds(x, y, misrate=0.2).insufficient
    one = center_bounds([1.0, 2.0, 3.0])  # 2^-3 = 0.125 > 0.025
    assert one.insufficient and (one.lower, one.upper) == (1.0, 3.0)


def test_shift_bounds_coverage_about_95_percent() -> None:
    rng = np.random.default_rng(20240601)
    trials, hits, true_shift = 400, 0, 1.5
    for _ in range(trials):
        x = rng.normal(10 + true_shift, 1, 10)
        y = rng.normal(10, 1, 12)
        b = shift_bounds(x, y)
        hits += b.lower <= true_shift <= b.upper
    assert 0.92 <= hits / trials <= 0.99


def test_ratio_bounds_coverage_about_95_percent() -> None:
    rng = np.random.default_rng(7)
    trials, hits = 300, 0
    for _ in range(trials):
        x = 1.1 * np.exp(rng.normal(0, 0.05, 8)) * 1000
        y = np.exp(rng.normal(0, 0.05, 8)) * 1000
        b = ratio_bounds(x, y)
        hits += b.lower <= 1.1 <= b.upper
    assert 0.92 <= hits / trials <= 0.995


def test_center_bounds_coverage_and_hand_case() -> None:
    x = list(range(1, 11))  # n = 10, cutoff 9: 9th smallest/largest of 55 Walsh averages
    w = sorted((a + b) / 2 for i, a in enumerate(x) for b in x[i:])
    b = center_bounds(x)
    assert (b.lower, b.upper) == (w[8], w[-9])
    rng = np.random.default_rng(11)
    hits = sum(
        (bb := center_bounds(rng.normal(5, 2, 15))).lower <= 5 <= bb.upper for _ in range(300)
    )
    assert 0.92 <= hits / 300 <= 0.99


def test_large_samples_use_normal_approximation() -> None:
    rng = np.random.default_rng(3)
    x, y = rng.normal(101, 5, 400), rng.normal(100, 5, 400)
    b = shift_bounds(x, y)
    assert b.method == "normal" and not b.insufficient
    assert b.lower < shift(x, y) < b.upper
    assert center_bounds(rng.normal(0, 1, 300)).method == "normal"
