"""Where a run's measured window lies on pgbench's clock, in whole seconds.

Every per-second figure (series, CV, trend, drift, change points) is only honest over whole
seconds in which pgbench ran the whole second. The rules, in one place:

- Seconds are counted on a grid anchored at the launch: `origin`, pgrig's wall clock read just
  before it starts pgbench (pgbench's log timestamps use the same clock, advanced by a monotonic
  one). Second k of the grid is [origin + k s, origin + (k + 1) s).
- A `-T` run is `lead_in + measured` seconds long: `measured` is the requested duration rounded up
  to whole seconds (-T only takes whole seconds), and `lead_in` the warm-up rounded up, but at
  least 1 s, so that pgbench's own start-up (connecting every client before the first
  transaction) never falls inside the window.
- The window is [origin + lead_in, origin + lead_in + measured). It ends no later than pgbench's
  own -T deadline: pgbench arms its timer after it started (so after `origin`) and keeps every
  client busy until then, so the last window second is whole. Transactions ending after the
  window (the drain, when clients finish their last transaction) are not measured.
- Slow logins: pgbench's -T clock runs while the clients connect (with 1,000 clients that can
  take seconds), and all clients start together once every one is connected. When the first
  transaction starts after the planned window start, the window starts at the first whole
  second after it and is that much shorter (a `late_start` warning says by how much; a longer
  warm-up avoids it).
- A run cut short (aborted, failed) measures up to its last transaction; per-second statistics
  then drop the last, partial, second.
- A `-t` run (a number of transactions, no duration) measures from its first transaction's start
  to its last transaction's end; per-second statistics use the whole grid seconds in between.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

US = 1_000_000


@dataclass(frozen=True)
class WindowPlan:
    """The planned shape of a run on the launch grid (whole seconds)."""

    lead_in_s: int  # seconds before the window (warm-up and start-up); 0 for -t runs
    measured_s: int | None  # whole seconds in the window; None for -t runs

    @classmethod
    def for_run(cls, warmup_s: float, duration_s: float | None) -> WindowPlan:
        if duration_s is None:
            return cls(lead_in_s=0, measured_s=None)
        return cls(lead_in_s=max(1, math.ceil(warmup_s)), measured_s=math.ceil(duration_s))

    @property
    def pgbench_seconds(self) -> int | None:
        """pgbench's -T: lead-in plus window (None for -t runs)."""
        return None if self.measured_s is None else self.lead_in_s + self.measured_s

    def bounds_us(self, origin_us: int) -> tuple[int, int] | None:
        """The planned window [start, end) in epoch microseconds (None for -t runs)."""
        if self.measured_s is None:
            return None
        start = origin_us + self.lead_in_s * US
        return start, start + self.measured_s * US


@dataclass(frozen=True)
class Window:
    """The window a run actually measured, decided once the run is over."""

    start_us: int  # totals count transactions ending in [start_us, end_us)
    end_us: int
    measured_end_us: int  # end of the measured time (earlier than end_us for a cut-short run)
    first_second: int  # grid second at which the series' t = 0
    whole_seconds: int  # seconds t = 0 .. whole_seconds - 1 are whole: the statistics use these
    late_start_s: int = 0  # seconds lost to slow client start-up (see the module doc)

    @property
    def measured_s(self) -> float:
        return max(0.0, (self.measured_end_us - self.start_us) / US)


def grid_second(origin_us: int, t_us: int) -> int:
    """The grid second holding instant t_us."""
    return (t_us - origin_us) // US


def ceil_second(origin_us: int, t_us: int) -> int:
    """The first grid second starting at or after t_us."""
    return -((origin_us - t_us) // US)


def resolve(
    plan: WindowPlan, origin_us: int, first_start_us: int, last_end_us: int, completed: bool
) -> Window:
    """The measured window of a run whose first transaction started at first_start_us and whose
    last one ended at last_end_us (see the module doc for the rules)."""
    bounds = plan.bounds_us(origin_us)
    if bounds is None:  # -t: everything, whole seconds inside for the statistics
        first = ceil_second(origin_us, first_start_us)
        last = grid_second(origin_us, last_end_us + 1)  # [.., last_end] ends inside this second
        return Window(
            start_us=first_start_us,
            end_us=last_end_us + 1,
            measured_end_us=last_end_us + 1,
            first_second=first,
            whole_seconds=max(0, last - first),
        )
    planned_start, end = bounds
    first = grid_second(origin_us, planned_start)
    late = 0
    if first_start_us > planned_start:
        late = ceil_second(origin_us, first_start_us) - first
        first += late
    start = origin_us + first * US
    end = max(end, start)
    measured_end = end if completed else max(start, min(end, last_end_us + 1))
    return Window(
        start_us=start,
        end_us=end,
        measured_end_us=measured_end,
        first_second=first,
        whole_seconds=(measured_end - start) // US,
        late_start_s=late,
    )
