"""Change points of a version series (analysis/changepoints.py) and `pgrig track detect`."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from pgrig.analysis import changepoints
from pgrig.errors import PgrigError

SERIES = 200
POINTS = 20


def _noisy(seed: int, n: int = POINTS) -> np.ndarray:
    rng = np.random.default_rng(10_000 + seed)
    return 1000.0 * (1 + 0.01 * rng.standard_normal(n))


def test_flat_series_with_1pct_noise_rarely_shows_a_change() -> None:
    false = sum(bool(changepoints.detect(_noisy(s), seed=s).changes) for s in range(SERIES))
    assert false <= 0.05 * SERIES, f"{false} of {SERIES} flat series had a change"


def test_a_5pct_step_with_1pct_noise_is_found_within_2_points() -> None:
    step_at = POINTS // 2
    found = 0
    for s in range(SERIES):
        y = _noisy(s)
        y[step_at:] *= 1.05
        changes = changepoints.detect(y, seed=s).changes
        found += any(abs(c.index - step_at) <= 2 for c in changes)
    assert found >= 0.95 * SERIES, f"found in {found} of {SERIES}"


def test_change_describes_the_new_level() -> None:
    y = [100.0, 101, 99, 100, 100.5, 99.5, 95, 94.5, 95.5, 95, 94.8, 95.2]
    labels = [f"17.{i}" for i in range(len(y))]
    found = changepoints.detect(y, labels, max_p_value=0.05)
    (c,) = found.changes
    assert c.index == 6 and c.label == "17.6"  # the first point of the new level
    assert c.before == pytest.approx(np.mean(y[:6]))
    assert c.after == pytest.approx(np.mean(y[6:]))
    assert c.ratio == pytest.approx(c.after / c.before)
    assert c.p_value <= 0.05 and c.confidence == pytest.approx(1 - c.p_value)


def test_two_steps_are_both_found() -> None:
    rng = np.random.default_rng(3)
    y = np.concatenate([np.full(12, 100.0), np.full(12, 110.0), np.full(12, 104.0)])
    y *= 1 + 0.005 * rng.standard_normal(len(y))
    idx = [c.index for c in changepoints.detect(y).changes]
    assert idx == [12, 24]


def test_divergence_matches_its_definition() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal(11)
    q = changepoints._divergence(x[None, :], 2)[0]
    for k, tau in enumerate(range(2, 10)):
        left, right = x[:tau], x[tau:]
        cross = np.abs(left[:, None] - right[None, :]).mean()
        wl = np.abs(left[:, None] - left[None, :]).sum() / (len(left) * (len(left) - 1))
        wr = np.abs(right[:, None] - right[None, :]).sum() / (len(right) * (len(right) - 1))
        expected = len(left) * len(right) / len(x) * (2 * cross - wl - wr)
        assert q[k] == pytest.approx(expected)


def test_groups_restrict_cuts_to_group_boundaries() -> None:
    rng = np.random.default_rng(7)
    # 8 versions x 3 repeats; the step starts at the 5th version (index 12 of the runs)
    groups = [v for v in range(8) for _ in range(3)]
    y = np.array([100.0 if v < 4 else 106.0 for v in groups]) * (
        1 + 0.01 * rng.standard_normal(len(groups))
    )
    y[12] = 101.0  # a low first repeat would pull an unrestricted cut to 13
    changes = changepoints.detect(y, groups=groups).changes
    assert [c.index for c in changes] == [12]
    with pytest.raises(PgrigError, match="not contiguous"):
        changepoints.detect([1.0, 2, 3, 4, 5, 6], groups=[1, 2, 1, 2, 3, 3])


def test_too_short_or_bad_series() -> None:
    assert changepoints.detect([1.0, 2.0, 3.0]).changes == []
    with pytest.raises(PgrigError, match="finite"):
        changepoints.detect([1.0, float("nan"), 3.0])
    with pytest.raises(PgrigError, match="labels"):
        changepoints.detect([1.0, 2.0], ["a"])


def test_parse_csv_names_the_bad_line() -> None:
    labels, values = changepoints.parse_csv("version,tps\n# nightly\n17.0,100\n\n17.1, 99.5\n")
    assert labels == ["17.0", "17.1"] and values == [100.0, 99.5]
    with pytest.raises(PgrigError, match=r"f\.csv:3: 'x' is not a number"):
        changepoints.parse_csv("a,1\nb,2\nc,x\n", "f.csv")
    with pytest.raises(PgrigError, match="label,value"):
        changepoints.parse_csv("17.0 100\n", "f.csv")
    with pytest.raises(PgrigError, match="no `label,value`"):
        changepoints.parse_csv("# nothing\n", "f.csv")


def test_track_detect_cli(tmp_path) -> None:
    from pgrig.cli.app import _register, app

    _register()
    rng = np.random.default_rng(5)
    y = 1000 * (1 + 0.01 * rng.standard_normal(24))
    y[14:] *= 0.95
    f = tmp_path / "nightly.csv"
    f.write_text("night,tps\n" + "".join(f"n{i},{v:.2f}\n" for i, v in enumerate(y)))
    res = CliRunner().invoke(app, ["track", "detect", str(f), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    (c,) = doc["changes"]
    assert c["index"] == 14 and c["label"] == "n14"
    assert c["ratio"] == pytest.approx(np.mean(y[14:]) / np.mean(y[:14]), rel=1e-4)
    assert 0 < c["p_value"] <= 0.01
    res = CliRunner().invoke(app, ["track", "detect", str(tmp_path / "missing.csv")])
    assert res.exit_code != 0


def test_a_level_near_zero_gives_no_infinite_ratio() -> None:
    """8 values of 1e-320 then 8 of 5: after/before overflows to inf, which `--json` printed
    as `Infinity` (invalid JSON); now None, as from a level of 0."""
    from pgrig.analysis import changepoints

    found = changepoints.detect([1e-320] * 8 + [5.0] * 8)
    [change] = found.changes
    assert change.ratio is None and change.change_pct is None
    json.dumps(found.to_dict(), allow_nan=False)  # strict JSON: raises on inf or NaN


def test_a_negative_seed_is_refused_not_a_traceback() -> None:
    from pgrig.analysis import changepoints

    with pytest.raises(PgrigError, match="seed must be 0 or more, not -1"):
        changepoints.detect([1.0] * 8 + [2.0] * 8, seed=-1)


def test_track_detect_reads_its_file_to_a_bound() -> None:
    """`pgrig track detect /dev/zero` read until memory ran out."""
    from typer.testing import CliRunner

    from pgrig.cli import track

    result = CliRunner().invoke(track.app, ["detect", "/dev/zero"])
    assert isinstance(result.exception, PgrigError), result.exception
    assert "longer than 4 MiB" in str(result.exception)


def test_track_detect_takes_only_a_named_first_line_as_a_header() -> None:
    from pgrig.analysis.changepoints import parse_csv

    assert parse_csv("version,tps\n17.1,10\n17.2,11\n") == (["17.1", "17.2"], [10.0, 11.0])
    for bad in ("12.5x", "", "-", ".5.5", "+-1"):
        with pytest.raises(PgrigError, match=r"input:1: .* is not a number"):
            parse_csv(f"17.0,{bad}\n17.1,10\n17.2,11\n")
