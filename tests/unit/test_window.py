"""Where the measured window lies on the launch grid (analysis/window.py)."""

from __future__ import annotations

import pytest

from pgrig.analysis.window import US, WindowPlan, ceil_second, grid_second, resolve

L0 = 1_700_000_000_123_456  # a launch instant, not on a whole epoch second


@pytest.mark.parametrize(
    ("warmup", "duration", "lead", "measured", "pgbench_t"),
    [
        (0, 20, 1, 20, 21),  # no warm-up: one lead-in second for pgbench's start-up
        (0.5, 20, 1, 20, 21),
        (10, 30, 10, 30, 40),
        (2.5, 2.5, 3, 3, 6),  # -T takes whole seconds: both round up
    ],
)
def test_plan(warmup: float, duration: float, lead: int, measured: int, pgbench_t: int) -> None:
    plan = WindowPlan.for_run(warmup, duration)
    assert (plan.lead_in_s, plan.measured_s, plan.pgbench_seconds) == (lead, measured, pgbench_t)
    assert plan.bounds_us(L0) == (L0 + lead * US, L0 + pgbench_t * US)


def test_transactions_plan_has_no_bounds() -> None:
    plan = WindowPlan.for_run(5, None)
    assert plan.pgbench_seconds is None and plan.bounds_us(L0) is None


def test_grid_helpers() -> None:
    assert grid_second(L0, L0) == 0 and grid_second(L0, L0 + US - 1) == 0
    assert grid_second(L0, L0 - 1) == -1
    assert ceil_second(L0, L0) == 0 and ceil_second(L0, L0 + 1) == 1
    assert ceil_second(L0, L0 + US) == 1


def test_completed_run_measures_exactly_its_whole_seconds() -> None:
    w = resolve(WindowPlan(1, 20), L0, L0 + 30_000, L0 + 21 * US + 5_000, completed=True)
    assert (w.start_us, w.end_us, w.measured_end_us) == (L0 + US, L0 + 21 * US, L0 + 21 * US)
    assert w.first_second == 1 and w.whole_seconds == 20 and w.measured_s == 20.0
    assert w.late_start_s == 0


def test_late_start_moves_the_window_to_the_next_whole_second() -> None:
    w = resolve(WindowPlan(1, 20), L0, L0 + 3 * US + 400_000, L0 + 21 * US, completed=True)
    assert w.late_start_s == 3 and w.first_second == 4
    assert w.start_us == L0 + 4 * US and w.whole_seconds == 17 and w.measured_s == 17.0
    # a start exactly on a second boundary loses nothing more
    w = resolve(WindowPlan(1, 20), L0, L0 + 2 * US, L0 + 21 * US, completed=True)
    assert w.late_start_s == 1 and w.whole_seconds == 19
    # started after the planned end: an empty window, not a negative one
    w = resolve(WindowPlan(1, 2), L0, L0 + 5 * US, L0 + 6 * US, completed=True)
    assert w.measured_s == 0.0 and w.whole_seconds == 0


def test_cut_short_run_ends_at_its_last_transaction() -> None:
    w = resolve(WindowPlan(2, 20), L0, L0 + 10_000, L0 + 7 * US + 250_000, completed=False)
    assert w.measured_end_us == L0 + 7 * US + 250_001
    assert w.measured_s == pytest.approx(5.250001) and w.whole_seconds == 5
    w = resolve(WindowPlan(5, 20), L0, L0 + 10_000, L0 + 3 * US, completed=False)  # in the lead-in
    assert w.measured_s == 0.0 and w.whole_seconds == 0


def test_transactions_run_measures_everything_and_whole_seconds_inside() -> None:
    w = resolve(WindowPlan(0, None), L0, L0 + 400_000, L0 + 5 * US + 300_000, completed=True)
    assert (w.start_us, w.end_us) == (L0 + 400_000, L0 + 5 * US + 300_001)
    assert w.first_second == 1 and w.whole_seconds == 4  # seconds 1..4 of the grid
