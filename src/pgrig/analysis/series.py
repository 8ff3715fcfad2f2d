"""Stability of one run's per-second series: noise, trend, drift and a warm-up suggestion.

Per-second values are autocorrelated, so this module describes a run (is it steady? did it
drift? how long was the warm-up?) rather than comparing configurations (see stats.compare).

Drift (seed 004: throughput fell from 120k to 15k orders/s as data grew) is flagged when
- the mean of the last fifth differs from the mean of the first fifth by more than
  DRIFT_PCT (5%) of the first fifth, or
- the least-squares trend exceeds TREND_PCT_PER_MIN (1% of the mean per minute) in absolute
  value AND is at least TREND_MIN_SE (3) standard errors from zero. The plain OLS standard error
  ignores autocorrelation and is therefore optimistic, hence 3 rather than 2; without this test
  a noisy 10-second run would "trend" by tens of percent per minute.
Both need at least MIN_POINTS_DRIFT (10) points, so each fifth holds two or more.

Warm-up suggestion (a hint to check on the chart, not a measurement): the steady level is the
median of the second half; the warm-up ends at the centre of the first window (of
WARMUP_WINDOW_FRACTION of the run, at least 5 points) whose mean is within WARMUP_TOLERANCE_PCT
(5%) of that level. Searched only in the first half; None if not found there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from pgrig.errors import PgrigError

DRIFT_PCT = 5.0
TREND_PCT_PER_MIN = 1.0
TREND_MIN_SE = 3.0
MIN_POINTS_DRIFT = 10
WARMUP_TOLERANCE_PCT = 5.0
WARMUP_WINDOW_FRACTION = 0.05
WARMUP_MIN_WINDOW = 5
MIN_POINTS_WARMUP = 20


@dataclass(frozen=True)
class Stability:
    """How steady one series was. Percentages are of the series mean unless said otherwise."""

    n: int
    duration: float  # seconds from the first to the last sample
    mean: float
    cv: float  # coefficient of variation: sample standard deviation / mean
    trend_pct_per_min: float  # least-squares slope, % of the mean per minute
    trend_se_pct_per_min: float  # its (optimistic, OLS) standard error
    first_fifth_mean: float
    last_fifth_mean: float
    first_last_change_pct: float  # (last fifth - first fifth) / first fifth, in %
    drift_flagged: bool
    reasons: list[str] = field(default_factory=list)
    warmup_suggestion: float | None = None  # seconds to exclude from the start, if found

    @property
    def first_last_pct(self) -> float:
        """Alias of first_last_change_pct (the name reports/summary.py reads)."""
        return self.first_last_change_pct

    def as_dict(self) -> dict[str, object]:
        return asdict(self)

    def describe(self) -> str:
        parts = [
            f"CV {self.cv * 100:.1f}%",
            f"trend {self.trend_pct_per_min:+.2f}%/min",
            f"last vs first fifth {self.first_last_change_pct:+.1f}%",
        ]
        text = ", ".join(p for p in parts if "nan" not in p)
        if self.drift_flagged:
            text = "DRIFT: " + text
        if self.warmup_suggestion:
            text += f", suggested warm-up {self.warmup_suggestion:g} s"
        return text


def stability(
    t: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    drift_pct: float = DRIFT_PCT,
    trend_pct_per_min: float = TREND_PCT_PER_MIN,
) -> Stability:
    """Describe a series y sampled at times t (seconds). Non-finite y values are dropped."""
    ta, ya = _series(t, y)
    n = ya.size
    duration = float(ta[-1] - ta[0]) if n else 0.0
    mean = float(ya.mean()) if n else math.nan
    cv = float(ya.std(ddof=1) / mean) if n >= 2 and mean != 0 else math.nan
    reasons: list[str] = []

    slope_pct, slope_se = _trend(ta, ya, mean)
    k = max(1, n // 5)
    first = float(ya[:k].mean()) if n else math.nan
    last = float(ya[-k:].mean()) if n else math.nan
    change = (last - first) / first * 100 if n and first != 0 else math.nan

    flagged = False
    if n < MIN_POINTS_DRIFT:
        reasons.append(f"too few points for drift detection ({n} < {MIN_POINTS_DRIFT})")
    else:
        if abs(change) > drift_pct:
            flagged = True
            reasons.append(
                f"last fifth differs from first fifth by {change:+.1f}% (> {drift_pct:g}%)"
            )
        if (
            abs(slope_pct) > trend_pct_per_min
            and slope_se > 0
            and abs(slope_pct) >= TREND_MIN_SE * slope_se
        ):
            flagged = True
            reasons.append(
                f"trend {slope_pct:+.2f}%/min (> {trend_pct_per_min:g}%/min, "
                f"{abs(slope_pct) / slope_se:.1f} standard errors)"
            )
        elif abs(slope_pct) > trend_pct_per_min:
            reasons.append(
                f"trend {slope_pct:+.2f}%/min is within noise ({TREND_MIN_SE:g} standard errors)"
            )

    return Stability(
        n=n,
        duration=duration,
        mean=mean,
        cv=cv,
        trend_pct_per_min=slope_pct,
        trend_se_pct_per_min=slope_se,
        first_fifth_mean=first,
        last_fifth_mean=last,
        first_last_change_pct=change,
        drift_flagged=flagged,
        reasons=reasons,
        warmup_suggestion=warmup_suggestion(ta, ya),
    )


def warmup_suggestion(
    t: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    tolerance_pct: float = WARMUP_TOLERANCE_PCT,
) -> float | None:
    """Seconds to exclude at the start so the rest is near the steady level (see module doc).

    0.0 when the run is steady from the start; None when there are too few points or no
    steady window appears in the first half (the run never settled: a longer run is needed).
    """
    ta, ya = _series(t, y)
    n = ya.size
    if n < MIN_POINTS_WARMUP:
        return None
    level = float(np.median(ya[n // 2 :]))
    if level == 0:
        return None
    w = max(WARMUP_MIN_WINDOW, int(n * WARMUP_WINDOW_FRACTION))
    means = np.convolve(ya, np.ones(w) / w, mode="valid")  # means[j] = mean(ya[j:j+w])
    centres = np.arange(means.size) + w // 2  # centred windows: less bias at a ramp's end
    close = np.abs(means - level) <= abs(level) * tolerance_pct / 100
    hits = np.flatnonzero(close & (centres < n // 2))
    if hits.size == 0:
        return None
    if hits[0] == 0:
        return 0.0  # already steady in the first window
    return float(ta[centres[hits[0]]] - ta[0])


def mean_over(
    t: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    t0: float,
    t1: float,
) -> float:
    """Mean of the samples with t0 <= t < t1 (NaN if there are none)."""
    if t1 < t0:
        raise PgrigError(f"empty window: t1 ({t1:g}) is before t0 ({t0:g})")
    ta, ya = _series(t, y)
    mask = (ta >= t0) & (ta < t1)
    return float(ya[mask].mean()) if mask.any() else math.nan


# --- helpers ---------------------------------------------------------------------------------
def _series(
    t: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Checked float arrays sorted by time, without non-finite samples (gaps in sampling)."""
    try:
        ta = np.asarray(t, dtype=float)
        ya = np.asarray(y, dtype=float)
    except (TypeError, ValueError) as e:
        raise PgrigError(f"series: expected numbers ({e})") from e
    if ta.ndim != 1 or ya.ndim != 1:
        raise PgrigError("series: t and y must be flat lists")
    if ta.size != ya.size:
        raise PgrigError(f"series: t has {ta.size} values but y has {ya.size}")
    keep = np.isfinite(ta) & np.isfinite(ya)
    ta, ya = ta[keep], ya[keep]
    order = np.argsort(ta, kind="stable")
    return ta[order], ya[order]


def _trend(ta: np.ndarray, ya: np.ndarray, mean: float) -> tuple[float, float]:
    """Least-squares slope and its OLS standard error, both in % of the mean per minute."""
    n = ya.size
    if n < 3 or mean == 0 or not math.isfinite(mean):
        return math.nan, math.nan
    tc = ta - ta.mean()
    sxx = float(tc @ tc)
    if sxx == 0:
        return math.nan, math.nan
    slope = float(tc @ (ya - mean)) / sxx
    resid = ya - mean - slope * tc
    se = math.sqrt(float(resid @ resid) / (n - 2) / sxx)
    scale = 60 * 100 / abs(mean)
    return slope * scale, se * scale
