"""Latency histograms with bounded relative error (HdrHistogram's log-linear bucket layout).

Latencies are integer microseconds. Values below EXACT_BELOW (2,048 us) get a bucket each, so
they are exact; above, every power of two is cut into SUB_BUCKETS (1,024) equal buckets, so a
bucket [lo, hi) is at most lo / 1,024 wide and its midpoint is within 1/2,048 (0.049%) of any
value in it. The index of 2^40 us (12 days) is about 32,700: a dense count array per script
stays small, and the memory does not depend on how many transactions were counted.

Quantiles interpolate linearly between order statistics (numpy's default, type 7) of the bucket
values; an interpolation between two values each within 0.049% stays within 0.049%.
"""

from __future__ import annotations

import numpy as np

PRECISION_BITS = 11
EXACT_BELOW = 1 << PRECISION_BITS  # 2048: one bucket per microsecond below this
SUB_BUCKETS = EXACT_BELOW >> 1  # 1024 buckets per power of two above it
MAX_VALUE = (1 << 53) - 1  # float64 represents every integer up to here exactly
RELATIVE_ERROR = 1.0 / EXACT_BELOW  # bound on |bucket value - true value| / true value


def bucket_index(values: np.ndarray) -> np.ndarray:
    """Bucket index (int64) of each latency (integer microseconds, >= 0)."""
    v = np.clip(np.asarray(values, dtype=np.int64), 0, MAX_VALUE)
    _, exp = np.frexp(v.astype(np.float64))  # v = m * 2^exp, 0.5 <= m < 1: exp = bit length
    shift = np.maximum(exp.astype(np.int64) - PRECISION_BITS, 0)
    top = v >> shift  # in [SUB_BUCKETS, EXACT_BELOW) once shifted
    return np.where(
        shift == 0, v, EXACT_BELOW + (shift - 1) * SUB_BUCKETS + (top - SUB_BUCKETS)
    ).astype(np.int64)


def bucket_value(index: np.ndarray) -> np.ndarray:
    """The value (microseconds, float64) reported for each bucket: exact below EXACT_BELOW,
    else the midpoint of the integers the bucket holds."""
    i = np.asarray(index, dtype=np.int64)
    k = np.maximum(i - EXACT_BELOW, 0)
    shift = k // SUB_BUCKETS + 1
    lo = (k % SUB_BUCKETS + SUB_BUCKETS) << shift
    hi = lo + (np.int64(1) << shift)
    return np.where(i < EXACT_BELOW, i.astype(np.float64), (lo + hi - 1) / 2.0)


def add(counts: np.ndarray, index: np.ndarray) -> np.ndarray:
    """counts + the histogram of index; grows counts when an index does not fit."""
    if index.size == 0:
        return counts
    needed = int(index.max()) + 1
    if needed > counts.size:
        counts = np.concatenate([counts, np.zeros(needed - counts.size, dtype=np.int64)])
    counts += np.bincount(index, minlength=counts.size)
    return counts


def merge(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The sum of two count arrays of possibly different lengths (a new array)."""
    if a.size < b.size:
        a, b = b, a
    out = a.copy()
    out[: b.size] += b
    return out


def quantiles(counts: np.ndarray, qs: dict[str, float]) -> dict[str, float | None]:
    """Type-7 quantiles (microseconds) of the values counted in counts (None when empty)."""
    nonzero = np.flatnonzero(counts)
    n = int(counts[nonzero].sum()) if nonzero.size else 0
    if n == 0:
        return dict.fromkeys(qs)
    values = bucket_value(nonzero)
    cum = np.cumsum(counts[nonzero])
    out: dict[str, float | None] = {}
    for name, q in qs.items():
        h = (n - 1) * q
        lo = int(np.floor(h))
        hi = int(np.ceil(h))
        x_lo = values[np.searchsorted(cum, lo, side="right")]
        x_hi = values[np.searchsorted(cum, hi, side="right")]
        out[name] = float(x_lo + (h - lo) * (x_hi - x_lo))
    return out
