"""Per-second series: CV, trend, first/last fifth drift, warm-up suggestion, window means."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pgrig.analysis.series import mean_over, stability, warmup_suggestion
from pgrig.errors import PgrigError


def steady(n: int = 300, noise: float = 0.02, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return np.arange(float(n)), 1000 * (1 + noise * rng.standard_normal(n))


def test_hand_computed_linear_series() -> None:
    # y = 100 + t over t = 0..9: slope 1/s = 60/min; mean 104.5 -> 57.42% of the mean per minute.
    t = np.arange(10.0)
    y = 100 + t
    s = stability(t, y)
    assert s.n == 10 and s.duration == 9.0 and s.mean == 104.5
    assert s.trend_pct_per_min == pytest.approx(60 / 104.5 * 100)
    assert s.trend_se_pct_per_min == pytest.approx(0.0, abs=1e-9)
    # fifths of 2 points: first (100 + 101) / 2, last (108 + 109) / 2
    assert (s.first_fifth_mean, s.last_fifth_mean) == (100.5, 108.5)
    assert s.first_last_change_pct == pytest.approx(8 / 100.5 * 100)
    assert s.first_last_pct == s.first_last_change_pct
    assert s.cv == pytest.approx(np.std(y, ddof=1) / 104.5)
    assert s.drift_flagged


def test_steady_series_not_flagged() -> None:
    t, y = steady()
    s = stability(t, y)
    assert not s.drift_flagged
    assert s.cv == pytest.approx(0.02, rel=0.15)
    assert abs(s.first_last_change_pct) < 2
    assert s.warmup_suggestion == 0.0
    assert "DRIFT" not in s.describe()


def test_declining_series_flagged_like_seed_004() -> None:
    # Throughput falling 20% over 10 minutes while the data grows.
    t, y = steady(600)
    y = y * (1 - 0.2 * t / 600)
    s = stability(t, y)
    assert s.drift_flagged
    assert s.first_last_change_pct < -15
    assert s.trend_pct_per_min < -2
    assert any("fifth" in r for r in s.reasons) and any("trend" in r for r in s.reasons)
    assert s.describe().startswith("DRIFT:")


def test_slow_trend_alone_flags() -> None:
    # 1.5%/min over 3 minutes: the fifths differ by ~3.6% (< 5%), the trend is clearly real.
    t, y = steady(180, noise=0.005)
    y = y * (1 + 0.015 * t / 60)
    s = stability(t, y)
    assert abs(s.first_last_change_pct) < 5
    assert s.drift_flagged and any("trend" in r for r in s.reasons)


def test_short_noisy_run_trend_is_within_noise() -> None:
    # 12 points with 5% noise: the fitted slope is large per minute but not significant.
    rng = np.random.default_rng(4)
    t = np.arange(12.0)
    y = 1000 * (1 + 0.03 * rng.standard_normal(12))
    s = stability(t, y, drift_pct=50)  # isolate the trend test
    assert abs(s.trend_pct_per_min) > 1
    assert not s.drift_flagged
    assert any("within noise" in r for r in s.reasons)


def test_too_few_points() -> None:
    s = stability([0, 1, 2], [10, 20, 30])
    assert not s.drift_flagged and "too few points" in s.reasons[0]
    assert s.warmup_suggestion is None
    one = stability([0], [5])
    assert one.n == 1 and math.isnan(one.cv) and math.isnan(one.trend_pct_per_min)


def test_warmup_after_a_ramp() -> None:
    t, y = steady(600)
    y[:60] *= np.linspace(0.5, 1.0, 60)  # reaches 95% of the level at t = 54
    w = warmup_suggestion(t, y)
    assert w is not None and 45 <= w <= 65
    assert stability(t, y).warmup_suggestion == w


def test_warmup_after_a_fast_start() -> None:
    # first run after a restart is faster (seed 000): 10 s at +50%
    t = np.arange(100.0)
    y = np.full(100, 1000.0)
    y[:10] = 1500
    assert warmup_suggestion(t, y) == 12.0  # first centred 5-point window clear of the burst


def test_warmup_not_found_or_too_short() -> None:
    t = np.arange(100.0)
    assert warmup_suggestion(t, 1000 + 20 * t) is None  # never settles in the first half
    assert warmup_suggestion(t[:10], np.ones(10)) is None


def test_mean_over_half_open_window() -> None:
    t = [0, 1, 2, 3, 4]
    y = [10, 20, 30, 40, 50]
    assert mean_over(t, y, 1, 3) == 25.0  # t = 1, 2
    assert mean_over(t, y, 0, 100) == 30.0
    assert math.isnan(mean_over(t, y, 10, 20))
    with pytest.raises(PgrigError, match="before"):
        mean_over(t, y, 3, 1)


def test_gaps_and_unsorted_input() -> None:
    t = [3, 0, 2, 1, 4]
    y = [40, 10, float("nan"), 20, 50]
    assert mean_over(t, y, 0, 5) == 30.0  # NaN dropped
    s = stability(t, y)
    assert s.n == 4 and s.first_fifth_mean == 10.0 and s.last_fifth_mean == 50.0


def test_mismatched_lengths_is_an_error() -> None:
    with pytest.raises(PgrigError, match="t has 3 values but y has 2"):
        stability([0, 1, 2], [1, 2])
    with pytest.raises(PgrigError):
        stability([0, 1], ["a", "b"])
