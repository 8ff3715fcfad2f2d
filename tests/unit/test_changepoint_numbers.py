"""Every number of a change point is finite, right-signed and valid JSON (issue 30, class 3):
a level from 0 has no ratio (it printed `"ratio": Infinity`), -10 to -20 is -100% (it
printed +100%), values near the float limits neither overflow nor warn, and the permutation
count has a stated bound (100,000,000 ran for minutes)."""

from __future__ import annotations

import json
import warnings

import pytest

from pgrig.analysis import changepoints
from pgrig.errors import PgrigError


def _one(values: list[float]) -> changepoints.Change:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow warnings fail the test
        found = changepoints.detect(values)
    json.dumps(found.to_dict(), allow_nan=False)  # strict JSON: no Infinity, no NaN
    assert len(found.changes) == 1
    return found.changes[0]


def test_a_level_from_zero_has_no_ratio_and_is_valid_json() -> None:
    c = _one([0.0] * 8 + [50.0] * 8)
    assert (c.before, c.after, c.ratio, c.change_pct) == (0.0, 50.0, None, None)
    assert "from 0" in c.describe()


def test_negative_levels_change_with_the_right_sign() -> None:
    c = _one([-10.0] * 8 + [-20.0] * 8)
    assert c.ratio is None  # a ratio of negative levels says +100% for a fall
    assert c.change_pct == pytest.approx(-100.0)
    c = _one([-20.0] * 8 + [-10.0] * 8)
    assert c.change_pct == pytest.approx(50.0)


def test_values_near_the_float_limits_stay_finite() -> None:
    c = _one([1e308] * 8 + [-1e308] * 8)
    assert (c.before, c.after) == (1e308, -1e308)
    assert c.change_pct == pytest.approx(-200.0)
    assert c.index == 8


def test_the_same_changes_at_any_scale() -> None:
    small = changepoints.detect([1.0] * 6 + [2.0] * 6)
    large = changepoints.detect([1e300] * 6 + [2e300] * 6)
    assert [c.index for c in small.changes] == [c.index for c in large.changes] == [6]
    assert small.changes[0].p_value == large.changes[0].p_value


def test_permutations_are_bounded() -> None:
    with pytest.raises(PgrigError, match="between 19 and 9999"):
        changepoints.detect([1.0] * 8, permutations=100_000_000)
    with pytest.raises(PgrigError, match="between 19 and 9999"):
        changepoints.detect([1.0] * 8, permutations=18)
