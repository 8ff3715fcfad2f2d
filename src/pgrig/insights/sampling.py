"""How many plans auto_explain logs during a run: a budget, whatever the run's length.

auto_explain decides per top-level statement (with probability sample_rate) whether to
instrument and log it, nested statements included; with log_min_duration = 0 every sampled
statement is logged. So the expected number of plans is sample_rate times the statements run
(top-level and nested, as pg_stat_statements with track = all counts them). The collector
reads that count now and then and asks PlanBudget for the rate that spends what is left of
the budget evenly over the rest of the run, never more than MAX_PER_S plans a second: the
server log, the run's artifacts and the time to read them stay bounded (a few MB) for a
10-second run and a 10-hour one alike, and the overhead stays a small, measured fraction
(bench/insights_overhead.py). The cap matters for short runs: a budget spent over 20 s meant
~250 plans/s of log writes on the disk that also takes the WAL's fsyncs.

One rate samples every statement alike, so the cap can starve a rare transaction type: beside
a script run 20,000 times a second, a script run 10 times a second expects 0.025 plans a
second. shortfall() names the scripts whose statements expect fewer than MIN_PER_SCRIPT plans;
after the window each gets its own short pgbench run with every statement explained
(load/core/plan_top_up.py), so every transaction type has plans, counted apart from the window's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

BUDGET = 5000  # plans per run: about 2 kB each in the log (JSON with buffers)
# Plans a second at most, whatever is left of the budget: a few, so a default run stays within
# 3% of raw pgbench (bench/default_overhead.py). Each sampled statement runs instrumented and
# writes ~2 kB of JSON from inside the benchmark's own backend; at 50 a second a 20 s
# select-only run wrote ~1,000 plans (2 MiB) where 100 tell the same plans apart.
MAX_PER_S = 5.0
# Silent until the first measurement of the statement rate (1 s in, during pgbench's lead-in,
# which is outside the measured window): a fixed first guess (0.01) meant 120-200 plans in
# that second at select-only rates, before any was needed. The rate is then chosen from the
# statements actually run (the revisions below), never written first and trimmed after.
FIRST_RATE = 0.0
# The statement rate a revision measures can be far below the run's while its clients still
# connect (seconds on a busy host): a rate chosen from it logged every statement for a second
# (5,000 plans, 4.8 MiB, in a 15 s select-only run). So the first rate assumes at least
# FIRST_FLOOR_PER_S statements a second (pgbench's built-ins on one core do more; a slower
# workload gets fewer plans until the next revision), and a rate rises at most MAX_RISE
# times per revision: an underestimate costs a few plans, never a flood.
FIRST_FLOOR_PER_S = 1000.0
MAX_RISE = 5.0
# When the rate is revised (s after the start): often while connections ramp up, then every
# EVERY_S. Each revision corrects the previous one's estimate of the statement rate.
CHECKS_S = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
EVERY_S = 30.0
UNKNOWN_REMAINING_S = 60.0  # runs bounded by transactions: the rest is guessed
# Plans each transaction type (pgbench script) should have whatever its share of the load: a
# type whose expected plans fall short is topped up after the window (load/core/plan_top_up.py).
MIN_PER_SCRIPT = 10


@dataclass
class PlanBudget:
    budget: float = BUDGET
    rate: float = FIRST_RATE
    max_per_s: float = MAX_PER_S
    spent: float = 0.0  # expected plans logged so far
    calls: float = 0.0  # statements run over the revisions so far
    history: list[tuple[float, float]] = field(default_factory=list)  # (t, rate) set

    def revise(self, calls: float, seconds: float, remaining_s: float | None) -> float | None:
        """Account for `calls` statements run at the current rate over the last `seconds`;
        return the new rate when it should change (by 2x or more, or to/from 0), else None."""
        self.spent += self.rate * max(calls, 0.0)
        self.calls += max(calls, 0.0)
        left = self.budget - self.spent
        if remaining_s is None:
            remaining_s = UNKNOWN_REMAINING_S
        if left <= 0 or remaining_s <= 0:
            new = 0.0
        elif calls <= 0 or seconds <= 0:
            new = 1.0 if self.rate > 0 else self.rate  # nothing ran: stay ready
        else:
            per_s = calls / seconds
            if self.rate <= 0:  # the first rate: the clients may still be connecting
                per_s = max(per_s, FIRST_FLOOR_PER_S)
            new = min(1.0, left / (per_s * remaining_s), self.max_per_s / per_s)
        if self.rate > 0 and new > 0:
            new = min(new, self.rate * MAX_RISE)
        new = float(f"{new:.3g}")
        if new == self.rate:
            return None
        if new > 0 and self.rate > 0 and 0.5 < new / self.rate < 2.0:
            return None
        self.rate = new
        return new

    def mean_rate(self) -> float:
        """The sample rate the run's statements met on average (the current one before any
        revision counted statements)."""
        return self.spent / self.calls if self.calls > 0 else self.rate


def shortfall(
    rate: float, transactions: list[tuple[str, int]], minimum: int = MIN_PER_SCRIPT
) -> list[dict[str, object]]:
    """Scripts (name, transactions in the window) whose statements expect fewer than
    `minimum` plans at the mean sample rate: auto_explain samples every statement with one
    rate, so a rare transaction type next to a hot one gets its share of a capped budget, which
    can be none. Each with its expected plans and the transactions a top-up should run."""
    out: list[dict[str, object]] = []
    for i, (name, n) in enumerate(transactions):
        expected = rate * max(n, 0)
        if expected < minimum:
            out.append(
                {
                    "script_no": i,
                    "name": name,
                    "transactions": n,
                    "expected_plans": round(expected, 2),
                    "top_up": minimum - math.floor(expected),
                }
            )
    return out


def runtime_settings(rate: float) -> dict[str, str]:
    """The insights layer's run-time values for a sample rate (0: auto_explain silent)."""
    if rate <= 0:
        return {"auto_explain.log_min_duration": "-1", "auto_explain.sample_rate": "1"}
    return {"auto_explain.log_min_duration": "0", "auto_explain.sample_rate": f"{rate:.3g}"}


def next_check(elapsed_s: float) -> float:
    """Seconds after the start of the next revision of the rate."""
    for t in CHECKS_S:
        if t > elapsed_s:
            return t
    return elapsed_s + EVERY_S
