"""Distribution-free bounds of a latency percentile from the n samples it rests on.

Among n independent samples, the number below the true q-quantile is Binomial(n, q); the
order statistics X(l) and X(u) with l, u the binomial's misrate/2 and 1 - misrate/2 points
bracket the q-quantile with probability at least 1 - misrate, whatever the distribution.
When a rank falls outside 1..n (too few samples for that percentile), that side is unbounded:
the record says None, and the surfaces say so rather than invent a figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pgrig.record.documents import LatencyBasisDoc

QUANTILES = {"p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99, "p999": 0.999}
MISRATE = 0.05


@dataclass(frozen=True)
class RankBounds:
    lower: int | None  # 1-based rank of the lower bound, None: unbounded below
    upper: int | None  # None: unbounded above (fewer samples than the percentile needs)


def rank_bounds(n: int, q: float, misrate: float = MISRATE) -> RankBounds:
    """Ranks (1-based) of the order statistics bracketing the q-quantile of n samples."""
    if n <= 0:
        return RankBounds(None, None)
    lo = binomial_quantile(misrate / 2, n, q)  # P(B <= lo - 1) <= misrate / 2
    hi = binomial_quantile(1 - misrate / 2, n, q) + 1
    return RankBounds(lo if lo >= 1 else None, hi if hi <= n else None)


def binomial_quantile(p: float, n: int, q: float) -> int:
    """Smallest k with P(Binomial(n, q) <= k) >= p (scipy's binom.ppf, which every run would
    otherwise pay about a second to import). The pmf is summed over the mean +- 12 standard
    deviations (+- 12), outside which the mass is below 1e-15; checked equal to scipy for
    n up to 1e7 at every percentile of QUANTILES (tests/unit/test_quantile_bounds.py)."""
    mean, sd = n * q, math.sqrt(n * q * (1 - q))
    lo = max(0, int(mean - 12 * sd) - 12)
    hi = min(n, int(mean + 12 * sd) + 12)
    j = np.arange(lo, hi, dtype=np.float64)  # pmf(j + 1) / pmf(j) = (n - j) / (j + 1) * q / (1 - q)
    steps = np.log(n - j) - np.log(j + 1) + (math.log(q) - math.log1p(-q))
    first = math.lgamma(n + 1) - math.lgamma(lo + 1) - math.lgamma(n - lo + 1)
    first += lo * math.log(q) + (n - lo) * math.log1p(-q)
    cdf = np.cumsum(np.exp(first + np.concatenate(([0.0], np.cumsum(steps)))))
    at = int(np.searchsorted(cdf, p * (1 - 1e-12), side="left"))  # a cdf equal to p counts
    return lo + min(at, hi - lo)


def describe(samples: int, population: int | None = None) -> str:
    """Words for what percentiles rest on: "2,691 samples" or "4,012 of 98,765 (sampled)"."""
    if population is not None and population != samples:
        return f"{samples:,} of {population:,} transactions (sampled)"
    return f"{samples:,} samples"


def describe_every(samples: int, counted: int | None) -> str:
    """describe() for a histogram that holds every transaction of the window (sysbench's),
    whose count can differ from the engine's counter: sysbench resets its counters, then its
    histogram, then its timers at the checkpoint, one after the other (sysbench.c,
    report_cumulative). Transactions that end in between are in one and not the other: a few,
    more when the reporting thread is descheduled between the resets."""
    if counted is None or counted == samples:
        return f"{samples:,} samples"
    return (
        f"{samples:,} samples, every transaction of the window "
        f"(sysbench counted {counted:,}: it resets its counter and its histogram a moment apart)"
    )


def hdr_bounds(counts: np.ndarray, misrate: float = MISRATE) -> dict[str, list[float | None]]:
    """[lower, upper] (ms) of each percentile of QUANTILES from an analysis/hdr.py histogram
    of microseconds (bucket values: within 0.049% of the latencies they hold)."""
    from pgrig.analysis import hdr

    nonzero = np.flatnonzero(counts)
    n = int(counts[nonzero].sum()) if nonzero.size else 0
    values = hdr.bucket_value(nonzero) if n else np.zeros(0)
    cum = np.cumsum(counts[nonzero]) if n else np.zeros(0, np.int64)

    def at(rank: int | None) -> float | None:
        if rank is None or n == 0:
            return None
        return float(values[int(np.searchsorted(cum, rank, side="left"))]) / 1000.0

    out: dict[str, list[float | None]] = {}
    for key, q in QUANTILES.items():
        r = rank_bounds(n, q, misrate)
        out[key] = [at(r.lower), at(r.upper)]
    return out


def basis(
    source: str,
    samples: int,
    population: int | None,
    bounds: dict[str, list[float | None]],
    resolution: str,
) -> LatencyBasisDoc:
    """What a run's percentiles rest on (RunRecord.extra["latency_basis"], every engine)."""
    return {
        "source": source,
        "samples": samples,
        "population": population,
        "resolution": resolution,
        "bounds": bounds,
        "confidence": 1 - MISRATE,
        "rests_on": describe(samples, population),
    }
