"""Bounds of a share estimated from samples: what a wait profile's "36% [31, 41]" rests on.

A wait profile counts backend states seen at sampling instants. Those are not independent
draws: the backends seen at one instant, and at instants a tenth of a second apart, share the
same moment of the run (a checkpoint, a lock queue). So the count of states is not the sample
size. The share is a ratio estimator over clusters (one cluster per second of samples: its
count of an event K_s and of all active states M_s); its variance is estimated from the
clusters (Cochran's ratio estimator),

    var(p) = sum_s (K_s - p M_s)^2 / (c (c - 1) mean(M)^2)       (c clusters)

and the effective sample size n_eff = p (1 - p) / var(p), at most the states seen, is what
the Wilson score interval gets. With independent states n_eff equals the count; the more the
states move together, the fewer they count. Differences of two shares get Newcombe's hybrid
score interval from the two Wilson intervals.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

Z95 = 1.959963984540054  # the two-sided 95% normal quantile
MIN_CLUSTERS = 2  # fewer: no variance estimate, the count of states is the (optimistic) size


def wilson(k: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of the proportion k/n (k, n may be fractional: an effective
    sample size). (0, 1) when n is 0: nothing is known."""
    if n <= 0:
        return 0.0, 1.0
    p = min(max(k / n, 0.0), 1.0)
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def effective_n(k: Sequence[float], m: Sequence[float]) -> float:
    """Effective sample size of sum(k) / sum(m) from per-cluster counts (see module doc)."""
    pairs = [(float(a), float(b)) for a, b in zip(k, m, strict=True) if b > 0]
    total = sum(b for _, b in pairs)
    if total <= 0:
        return 0.0
    c = len(pairs)
    p = sum(a for a, _ in pairs) / total
    if c < MIN_CLUSTERS or p <= 0.0 or p >= 1.0:
        return total
    mean_m = total / c
    var = sum((a - p * b) ** 2 for a, b in pairs) / (c * (c - 1) * mean_m * mean_m)
    if var <= 0:
        return total
    return min(total, p * (1 - p) / var)


def share_bounds(k: float, n_states: float, n_eff: float) -> tuple[float, float, float]:
    """(share, low, high) in percent: the share k / n_states with the Wilson bounds of an
    effective sample size n_eff."""
    if n_states <= 0:
        return 0.0, 0.0, 100.0
    p = k / n_states
    lo, hi = wilson(p * n_eff, n_eff)
    return 100.0 * p, 100.0 * lo, 100.0 * hi


def difference_bounds(
    a: tuple[float, float, float], b: tuple[float, float, float]
) -> tuple[float, float]:
    """Newcombe's bounds of b - a (percentage points) from two (share, low, high) in percent."""
    pa, la, ua = a
    pb, lb, ub = b
    d = pb - pa
    return d - math.hypot(pb - lb, ua - pa), d + math.hypot(ub - pb, pa - la)
