"""Robust statistics for comparing configurations (Akinshin, "Pragmatic Statistics").

Estimators (reference/measurement.md):
- center(x): Hodges-Lehmann, the median of all Walsh averages (x_i + x_j) / 2, i <= j.
- spread(x): Shamos, the median of |x_i - x_j|, i < j (no normal-consistency factor).
- shift(x, y): median of all x_i - y_j;  ratio(x, y) = exp(shift(log x, log y)).

Bounds are distribution-free order statistics of those pairwise values:
- shift_bounds / ratio_bounds: the sorted differences z_(k) and z_(nm+1-k), with k the largest
  index such that P(U <= k-1) <= misrate/2 under the Mann-Whitney U distribution (the same
  construction as Akinshin's ShiftBounds/PairwiseMargin, rounded to the conservative side so
  the achieved misrate never exceeds the requested one). U's distribution is exact (Gaussian
  binomial coefficients in integer arithmetic) when n*m <= EXACT_MAX_PAIRS, otherwise the
  normal approximation with continuity correction, mean nm/2, variance nm(n+m+1)/12.
- center_bounds: the same with Walsh averages and the Wilcoxon signed-rank distribution (exact
  for n <= EXACT_MAX_SIGNED_RANK, normal approximation above).
When the samples are too small for the requested misrate (even the full range of differences
misses more often), the widest bounds (min and max) are returned with `insufficient = True`.
Ties are handled as if broken at random (the usual practice; bounds then become slightly
conservative rather than wrong).

Per-second values inside one run are autocorrelated, so these bounds are honest for repeats
(one value per run), not for the seconds of a single run. Verdicts (faster, slower, equivalent,
inconclusive) are made from these bounds by the comparison engine, analysis/compare.py.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist
from typing import Literal, cast

import numpy as np

from pgrig.errors import PgrigError

EXACT_MAX_PAIRS = 10_000  # n*m up to this: exact Mann-Whitney distribution (~50 ms at 100x100)
EXACT_MAX_SIGNED_RANK = 100  # n up to this: exact signed-rank distribution
MAX_PAIRS = 50_000_000  # memory guard: 50M float64 pairwise values are 400 MB

Method = Literal["exact", "normal"]
Values = Sequence[float] | np.ndarray


@dataclass(frozen=True)
class Bounds:
    """An interval that misses the true value with probability at most `achieved_misrate`."""

    lower: float
    upper: float
    misrate: float  # requested
    achieved_misrate: float  # of the order statistics used (<= misrate unless insufficient)
    method: Method
    insufficient: bool = False  # too few points for `misrate`: the widest bounds are returned

    @property
    def confidence(self) -> float:
        return 1.0 - self.achieved_misrate


# --- estimators --------------------------------------------------------------------------------
def center(x: Values) -> float:
    """Hodges-Lehmann location: median of the Walsh averages (x_i + x_j)/2 over i <= j."""
    return float(np.median(_walsh(_values(x, "x"))))


def spread(x: Values) -> float:
    """Shamos scale: median of |x_i - x_j| over i < j. Needs at least two values."""
    a = _values(x, "x")
    if a.size < 2:
        raise PgrigError("spread needs at least 2 values")
    _guard(a.size * (a.size - 1) // 2)
    i, j = np.triu_indices(a.size, k=1)
    return float(np.median(np.abs(a[i] - a[j])))


def shift(x: Values, y: Values) -> float:
    """Median of all pairwise differences x_i - y_j (how much larger x is than y)."""
    return float(np.median(_diffs(_values(x, "x"), _values(y, "y"))))


def ratio(x: Values, y: Values) -> float:
    """exp(shift(log x, log y)): how many times larger x is than y. Values must be positive."""
    return math.exp(shift(_logs(x, "x"), _logs(y, "y")))


def shift_bounds(x: Values, y: Values, misrate: float = 0.05) -> Bounds:
    """Distribution-free bounds for shift(x, y) from the sorted pairwise differences."""
    return _shift_with_bounds(_values(x, "x"), _values(y, "y"), misrate)[1]


def ratio_bounds(x: Values, y: Values, misrate: float = 0.05) -> Bounds:
    """Bounds for ratio(x, y): exp of the shift bounds of the logarithms."""
    return _exp_bounds(_shift_with_bounds(_logs(x, "x"), _logs(y, "y"), misrate)[1])


def center_bounds(x: Values, misrate: float = 0.05) -> Bounds:
    """One-sample bounds for center(x): Walsh averages with the signed-rank distribution."""
    _check_misrate(misrate)
    a = _values(x, "x")
    k, achieved, method, insufficient = _signed_rank_cutoff(a.size, misrate)
    lo, hi = _order_stats(_walsh(a), k)
    return Bounds(lo, hi, misrate, achieved, method, insufficient)


def _shift_with_bounds(a: np.ndarray, b: np.ndarray, misrate: float) -> tuple[float, Bounds]:
    """shift(a, b) and its bounds from one array of pairwise differences."""
    _check_misrate(misrate)
    k, achieved, method, insufficient = _pairwise_cutoff(a.size, b.size, misrate)
    z = _diffs(a, b)
    lo, hi = _order_stats(z, k)
    return float(np.median(z)), Bounds(lo, hi, misrate, achieved, method, insufficient)


def _exp_bounds(s: Bounds) -> Bounds:
    return Bounds(
        math.exp(s.lower),
        math.exp(s.upper),
        s.misrate,
        s.achieved_misrate,
        s.method,
        s.insufficient,
    )


# --- rank distributions --------------------------------------------------------------------
def mann_whitney_cdf(n: int, m: int) -> np.ndarray:
    """P(U <= u) for u = 0 .. floor(nm/2), U the Mann-Whitney count for sizes n, m (exact)."""
    return _mw_cdf(min(n, m), max(n, m)).copy()


def signed_rank_cdf(n: int) -> np.ndarray:
    """P(W+ <= w) for w = 0 .. floor(n(n+1)/4), the Wilcoxon signed-rank statistic (exact)."""
    return _sr_cdf(n).copy()


@lru_cache(maxsize=64)
def _mw_cdf(n: int, m: int) -> np.ndarray:
    # Counts of U are the coefficients of the Gaussian binomial [n+m choose n](q) =
    # prod_{i=1..n} (1 - q^(m+i)) / (1 - q^i). Each step only looks at lower coefficients, so
    # computing the lower half (all bounds need) is exact. Python integers: no overflow.
    upto = n * m // 2
    poly = np.zeros(upto + 1, dtype=object)
    poly[:] = 0
    poly[0] = 1
    for i in range(1, n + 1):
        a = m + i
        if a <= upto:
            poly[a:] = poly[a:] - poly[:-a]
        for r in range(min(i, upto + 1)):
            poly[r::i] = np.cumsum(poly[r::i])
    total = math.comb(n + m, n)
    return np.array([c / total for c in np.cumsum(poly)], dtype=float)


@lru_cache(maxsize=64)
def _sr_cdf(n: int) -> np.ndarray:
    # Counts of W+ are the coefficients of prod_{i=1..n} (1 + q^i), over 2^n sign patterns.
    upto = n * (n + 1) // 4
    poly = np.zeros(upto + 1, dtype=object)
    poly[:] = 0
    poly[0] = 1
    for i in range(1, n + 1):
        if i <= upto:
            poly[i:] = poly[i:] + poly[:-i]
    total = 2**n
    return np.array([c / total for c in np.cumsum(poly)], dtype=float)


def _cutoff_from_cdf(cdf: np.ndarray, misrate: float) -> tuple[int, float, bool]:
    """Largest k >= 1 with P(stat <= k-1) <= misrate/2, the achieved misrate, insufficient."""
    count = int(np.searchsorted(cdf, misrate / 2, side="right"))
    if count == 0:
        return 1, min(1.0, 2 * float(cdf[0])), True
    return count, 2 * float(cdf[count - 1]), False


def _cutoff_normal(mean: float, sd: float, misrate: float) -> tuple[int, float, bool]:
    """Normal approximation (continuity-corrected) of the same cutoff."""
    z = NormalDist().inv_cdf(misrate / 2)
    k = math.floor(mean + 0.5 + z * sd)
    if k < 1:
        return 1, min(1.0, 2 * NormalDist().cdf((0.5 - mean) / sd)), True
    return k, 2 * NormalDist().cdf((k - 0.5 - mean) / sd), False


def _pairwise_cutoff(n: int, m: int, misrate: float) -> tuple[int, float, Method, bool]:
    if n * m <= EXACT_MAX_PAIRS:
        k, achieved, insufficient = _cutoff_from_cdf(_mw_cdf(min(n, m), max(n, m)), misrate)
        return k, achieved, "exact", insufficient
    sd = math.sqrt(n * m * (n + m + 1) / 12)
    k, achieved, insufficient = _cutoff_normal(n * m / 2, sd, misrate)
    return k, achieved, "normal", insufficient


def _signed_rank_cutoff(n: int, misrate: float) -> tuple[int, float, Method, bool]:
    if n <= EXACT_MAX_SIGNED_RANK:
        k, achieved, insufficient = _cutoff_from_cdf(_sr_cdf(n), misrate)
        return k, achieved, "exact", insufficient
    sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
    k, achieved, insufficient = _cutoff_normal(n * (n + 1) / 4, sd, misrate)
    return k, achieved, "normal", insufficient


# --- helpers ---------------------------------------------------------------------------------
def _values(x: Values, name: str) -> np.ndarray:
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as e:
        raise PgrigError(f"{name}: expected numbers ({e})") from e
    if a.ndim != 1 or a.size == 0:
        raise PgrigError(f"{name}: expected a non-empty list of numbers")
    if not np.all(np.isfinite(a)):
        raise PgrigError(f"{name}: contains NaN or infinite values")
    return a


def _logs(x: Values, name: str) -> np.ndarray:
    a = _values(x, name)
    if np.any(a <= 0):
        raise PgrigError(f"{name}: ratios need positive values (got {float(a.min()):g})")
    return cast(np.ndarray, np.log(a))


def _guard(pairs: int) -> None:
    if pairs > MAX_PAIRS:
        raise PgrigError(
            f"{pairs:,} pairwise values exceed the limit of {MAX_PAIRS:,}: "
            "aggregate the samples first (e.g. one value per repeat)"
        )


def _diffs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    _guard(a.size * b.size)
    return cast(np.ndarray, np.subtract.outer(a, b).ravel())


def _walsh(a: np.ndarray) -> np.ndarray:
    _guard(a.size * (a.size + 1) // 2)
    i, j = np.triu_indices(a.size)
    return cast(np.ndarray, (a[i] + a[j]) / 2)


def _order_stats(z: np.ndarray, k: int) -> tuple[float, float]:
    """The k-th smallest and k-th largest of z (1-based k)."""
    lo, hi = k - 1, z.size - k
    part = np.partition(z, [lo, hi])
    return float(part[lo]), float(part[hi])


def _check_misrate(misrate: float) -> None:
    if not 0 < misrate < 1:
        raise PgrigError(f"misrate {misrate!r} must be between 0 and 1, e.g. 0.05 for 95% bounds")
