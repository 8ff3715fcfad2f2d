"""Per-second series: CV, autocorrelation-aware trend, change points, drift, warm-up
suggestion, window means."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pgrig.analysis.series import change_points, mean_over, stability, warmup_suggestion
from pgrig.errors import PgrigError


def steady(n: int = 300, noise: float = 0.02, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return np.arange(float(n)), 1000 * (1 + noise * rng.standard_normal(n))


def ar1(n: int, phi: float, noise: float, rng: np.random.Generator) -> np.ndarray:
    """A stationary AR(1) level: consecutive seconds correlated like real per-second TPS."""
    e = np.empty(n)
    e[0] = rng.standard_normal() * noise
    z = rng.standard_normal(n) * noise * math.sqrt(1 - phi**2)
    for i in range(1, n):
        e[i] = phi * e[i - 1] + z[i]
    return 1000 * (1 + e)


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
    assert s.drift_flagged and s.trend_p == 0.0


def test_steady_series_not_flagged() -> None:
    t, y = steady()
    s = stability(t, y)
    assert not s.drift_flagged and not s.change_points and not s.reasons
    assert s.cv == pytest.approx(0.02, rel=0.15)
    assert abs(s.first_last_change_pct) < 2
    assert s.warmup_suggestion == 0.0
    assert "DRIFT" not in s.describe()


@pytest.mark.parametrize(("n", "phi"), [(20, 0.5), (20, 0.8), (60, 0.5), (300, 0.8)])
def test_stable_correlated_series_rarely_flagged(n: int, phi: float) -> None:
    """Stable runs whose seconds are correlated (the case a first-vs-last-fifth rule or an OLS
    trend test gets wrong): drift in at most 3% of 200 runs, change points in at most 5%."""
    rng = np.random.default_rng(7)
    runs = [stability(np.arange(float(n)), ar1(n, phi, 0.03, rng)) for _ in range(200)]
    assert sum(s.drift_flagged for s in runs) <= 6
    assert sum(bool(s.change_points) for s in runs) <= 10


def test_declining_series_flagged_like_seed_004() -> None:
    # Throughput falling 20% over 10 minutes while the data grows.
    t, y = steady(600)
    y = y * (1 - 0.2 * t / 600)
    s = stability(t, y)
    assert s.drift_flagged
    assert s.first_last_change_pct < -15
    assert s.trend_pct_per_min < -2 and s.trend_p < 1e-6
    assert any("trend" in r and "across the window" in r for r in s.reasons)
    assert s.describe().startswith("DRIFT:")


def test_slow_trend_flags_when_it_adds_up() -> None:
    # 1.5%/min over 3 minutes: 4.5% across the window, under 5%; over 6 minutes, 9%.
    t, y = steady(180, noise=0.005)
    assert not stability(t, y * (1 + 0.015 * t / 60)).drift_flagged
    t, y = steady(360, noise=0.005)
    s = stability(t, y * (1 + 0.015 * t / 60))
    assert s.drift_flagged and any("trend" in r for r in s.reasons)


def test_level_shift_is_a_change_point_and_drift() -> None:
    rng = np.random.default_rng(2)
    y = ar1(120, 0.5, 0.02, rng)
    y[80:] *= 0.9  # throughput drops 10% for good at t = 80 s
    s = stability(np.arange(120.0), y)
    assert [round(c.t) for c in s.change_points] == [80]
    (c,) = s.change_points
    assert c.change_pct == pytest.approx((y[80:].mean() / y[30:80].mean() - 1) * 100)
    assert c.p < 1e-4
    assert s.drift_flagged and any("level after t=80s" in r for r in s.reasons)
    assert "change points t=80s -" in s.describe()


def test_periodic_dips_are_change_points_not_drift() -> None:
    # a checkpoint every 120 s: 10 s at -30%, then back
    rng = np.random.default_rng(3)
    y = ar1(600, 0.3, 0.02, rng)
    for start in range(30, 600, 120):
        y[start : start + 10] *= 0.7
    s = stability(np.arange(600.0), y)
    assert [c.t for c in s.change_points] == [30, 40, 150, 160, 270, 280, 390, 400, 510, 520]
    assert all(abs(c.change_pct) > 20 for c in s.change_points)
    assert not s.drift_flagged


def test_change_points_need_a_real_shift() -> None:
    t = np.arange(40.0)
    assert change_points(t, np.full(40, 5.0)) == []  # constant
    assert change_points(t[:8], np.r_[np.ones(4), 2 * np.ones(4)]) == []  # too short
    tiny = np.r_[np.full(20, 1000.0), np.full(20, 1010.0)]  # 1%: below MIN_SHIFT_PCT
    assert change_points(t, tiny + np.random.default_rng(0).normal(0, 1, 40)) == []
    step = np.r_[np.full(20, 1000.0), np.full(20, 1100.0)]
    (c,) = change_points(t, step)  # a clean step, no noise at all
    assert (c.t, c.before, c.after, c.change_pct, c.p) == (20.0, 1000.0, 1100.0, 10.0, 0.0)


def test_as_record_is_json_safe() -> None:
    import json

    rec = stability([0], [5]).as_record()
    assert rec["cv"] is None and rec["change_points"] == []
    json.dumps(rec, allow_nan=False)
    rng = np.random.default_rng(2)
    y = ar1(120, 0.5, 0.02, rng)
    y[80:] *= 0.9
    rec = stability(np.arange(120.0), y).as_record()
    assert rec["drift_flagged"] and rec["change_points"][0]["t"] == 80.0
    json.dumps(rec, allow_nan=False)


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
