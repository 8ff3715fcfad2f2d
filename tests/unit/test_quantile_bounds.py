"""quantile_bounds.binomial_quantile is scipy's binom.ppf."""

from __future__ import annotations

import random

import pytest
from scipy import stats

from pgrig.analysis import quantile_bounds


@pytest.mark.parametrize("q", sorted(quantile_bounds.QUANTILES.values()))
def test_binomial_quantile_equals_scipy(q: float) -> None:
    rng = random.Random(7)
    sizes = [*range(1, 200), *(rng.randint(200, 10_000_000) for _ in range(60))]
    for n in sizes:
        for p in (0.025, 0.975):  # the misrate/2 points rank_bounds asks for
            assert quantile_bounds.binomial_quantile(p, n, q) == int(stats.binom.ppf(p, n, q)), (
                n,
                q,
                p,
            )
