"""Bounds of wait shares: Wilson intervals, effective sample sizes of per-second clusters,
Newcombe's difference, and how every surface writes them ("36% [31, 41] of 1,204 samples")."""

from __future__ import annotations

import math
import random

import pytest
from scipy import stats

from pgrig import format
from pgrig.analysis.proportion import difference_bounds, effective_n, share_bounds, wilson


def test_wilson_matches_newcombes_published_examples() -> None:
    # Newcombe (1998), Statistics in Medicine 17:857, table I: 81/263 -> 0.2553 to 0.3662,
    # 15/148 -> 0.0624 to 0.1605, 0/20 -> 0 to 0.1611
    for k, n, lo, hi in ((81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605), (0, 20, 0, 0.1611)):
        got = wilson(k, n)
        assert got[0] == pytest.approx(lo, abs=5e-5) and got[1] == pytest.approx(hi, abs=5e-5)


def test_wilson_is_the_score_test_inversion() -> None:
    """Independently: the bounds are where the score test's |z| equals 1.96."""
    k, n = 36, 100
    lo, hi = wilson(k, n)
    for p in (lo, hi):
        z = (k / n - p) / math.sqrt(p * (1 - p) / n)
        assert abs(z) == pytest.approx(stats.norm.ppf(0.975), rel=1e-9)


def test_newcombe_difference_matches_the_published_example() -> None:
    # Newcombe (1998), Statistics in Medicine 17:873, example (a): 56/70 - 48/80 = 0.2000,
    # hybrid score interval 0.0524 to 0.3339
    a = share_bounds(48, 80, 80)
    b = share_bounds(56, 70, 70)
    lo, hi = difference_bounds(a, b)
    assert (b[0] - a[0]) == pytest.approx(20.0)
    assert lo == pytest.approx(5.24, abs=0.01) and hi == pytest.approx(33.39, abs=0.01)


def test_independent_states_keep_their_count_and_lockstep_states_count_as_clusters() -> None:
    rng = random.Random(7)
    # 200 seconds of 10 backends each, every state independent with p = 0.3
    k = [sum(rng.random() < 0.3 for _ in range(10)) for _ in range(200)]
    n_eff = effective_n(k, [10] * 200)
    assert 1400 < n_eff <= 2000  # close to the 2,000 states (sampling noise in the estimate)
    # the 10 backends move together: all waiting or none, so 200 seconds are 200 draws
    k = [10 * (rng.random() < 0.3) for _ in range(200)]
    n_eff = effective_n(k, [10] * 200)
    assert 140 < n_eff < 260
    # and the bounds widen accordingly
    _, lo, hi = share_bounds(sum(k), 2000, n_eff)
    _, naive_lo, naive_hi = share_bounds(sum(k), 2000, 2000)
    assert hi - lo > 2.5 * (naive_hi - naive_lo)


def test_effective_n_edge_cases() -> None:
    assert effective_n([], []) == 0.0
    assert effective_n([3], [10]) == 10.0  # one cluster: no spread to estimate, the count
    assert effective_n([0, 0], [5, 5]) == 10.0  # never seen
    assert effective_n([5, 5], [5, 5]) == 10.0  # always
    assert effective_n([2, 2, 2], [4, 4, 4]) == 12.0  # no spread at all: the count (capped)


def test_the_format_rule() -> None:
    assert format.share(36.2, 31.0, 41.4, 1204) == "36% [31, 41] of 1,204 samples"
    assert format.share(4.21, 3.1, 5.64) == "4.2% [3.1, 5.6]"
    assert format.share(55.0) == "55%"  # a run archived before bounds: the share alone
    assert format.share(None) == "-"
    assert format.points(5.06, 2.0, 8.3) == "+5.1 [+2.0, +8.3]"
    assert format.points(-55.0) == "-55.0"
