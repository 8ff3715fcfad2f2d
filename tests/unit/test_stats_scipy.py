"""The statistics of analysis/stats.py cross-checked against scipy.stats' exact p-values
(issue 24, item 7): the rank distributions behind every bound pgrig prints, the achieved
misrates of the bounds, and the Hodges-Lehmann estimators.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from scipy import stats as sp

from pgrig.analysis import stats


def _sample_with_u(n: int, m: int, u: int) -> tuple[list[float], list[float]]:
    """x (n values) and y = 0..m-1 whose Mann-Whitney count #{x_i > y_j} is exactly u."""
    ks = []
    left = u
    for _ in range(n):  # each x_i = k - 0.5 beats the k values of y below it
        k = min(m, left)
        ks.append(k)
        left -= k
    assert left == 0
    return [k - 0.5 for k in ks], [float(j) for j in range(m)]


@pytest.mark.parametrize(("n", "m"), [(1, 1), (2, 3), (3, 3), (4, 7), (5, 5), (6, 9), (10, 10)])
def test_mann_whitney_cdf_is_scipys_exact_distribution(n: int, m: int) -> None:
    cdf = stats.mann_whitney_cdf(n, m)
    assert len(cdf) == n * m // 2 + 1
    for u in range(len(cdf)):
        x, y = _sample_with_u(n, m, u)
        res = sp.mannwhitneyu(x, y, alternative="less", method="exact")
        assert res.statistic == u
        assert cdf[u] == pytest.approx(res.pvalue, rel=1e-12, abs=1e-15), (n, m, u)


def _differences_with_w(n: int, w: int) -> list[float]:
    """n differences of distinct sizes 1..n whose positive ranks sum to w (greedy subset)."""
    positive = set()
    left = w
    for r in range(n, 0, -1):
        if r <= left:
            positive.add(r)
            left -= r
    assert left == 0
    return [float(r) if r in positive else -float(r) for r in range(1, n + 1)]


@pytest.mark.parametrize("n", [1, 2, 5, 8, 12, 20])
def test_signed_rank_cdf_is_scipys_exact_distribution(n: int) -> None:
    cdf = stats.signed_rank_cdf(n)
    assert len(cdf) == n * (n + 1) // 4 + 1
    for w in range(len(cdf)):
        d = _differences_with_w(n, w)
        res = sp.wilcoxon(d, alternative="greater", method="exact")
        # scipy: P(W+ >= observed) for "greater"; by symmetry P(W+ <= w) = P(W+ >= n(n+1)/2 - w)
        assert res.statistic == w
        mirrored = sp.wilcoxon([-v for v in d], alternative="greater", method="exact").pvalue
        assert cdf[w] == pytest.approx(mirrored, rel=1e-12, abs=1e-15), (n, w)


@pytest.mark.parametrize(("n", "m"), [(3, 4), (5, 5), (4, 9), (8, 8), (12, 15)])
def test_shift_bounds_achieved_misrate_from_scipy(n: int, m: int) -> None:
    """The bounds are the k-th smallest and largest pairwise differences, k the largest with
    P(U <= k-1) <= misrate/2: their misrate is 2 P(U <= k-1), from scipy's exact test."""
    rng = random.Random(n * 100 + m)
    x = [rng.gauss(10, 1) for _ in range(n)]
    y = [rng.gauss(10, 1) for _ in range(m)]
    b = stats.shift_bounds(x, y, misrate=0.05)
    assert b.method == "exact"
    diffs = np.sort(np.subtract.outer(np.array(x), np.array(y)).ravel())
    k = int(np.searchsorted(diffs, b.lower, side="left")) + 1  # which order statistic
    assert diffs[k - 1] == b.lower and diffs[-k] == b.upper
    u_x, u_y = _sample_with_u(n, m, k - 1)
    p = sp.mannwhitneyu(u_x, u_y, alternative="less", method="exact").pvalue
    assert b.achieved_misrate == pytest.approx(2 * p, rel=1e-12)
    assert b.achieved_misrate <= 0.05 or b.insufficient
    if not b.insufficient:  # and the next order statistic would have missed more often
        u_x, u_y = _sample_with_u(n, m, k)
        assert 2 * sp.mannwhitneyu(u_x, u_y, alternative="less", method="exact").pvalue > 0.05


def test_estimators_match_direct_computation() -> None:
    rng = random.Random(7)
    x = [rng.lognormvariate(7, 0.05) for _ in range(9)]
    y = [rng.lognormvariate(7, 0.05) for _ in range(6)]
    walsh = [(a + b) / 2 for i, a in enumerate(x) for b in x[i:]]
    assert stats.center(x) == pytest.approx(float(np.median(walsh)))
    assert stats.shift(x, y) == pytest.approx(float(np.median(np.subtract.outer(x, y))))
    logs = np.subtract.outer(np.log(x), np.log(y))
    assert stats.ratio(x, y) == pytest.approx(float(np.exp(np.median(logs))))
    # scipy's Hodges-Lehmann-free check: the shift is where the Mann-Whitney statistic of
    # x - shift against y is balanced (nm/2 within one pair)
    s = stats.shift(x, y)
    u = sp.mannwhitneyu([v - s for v in x], y, method="exact").statistic
    assert abs(u - len(x) * len(y) / 2) <= 1
