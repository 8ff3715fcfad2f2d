"""The ablation: which of the best configuration's settings earned its gain, measured.

Search importances (PED-ANOVA over a dozen noisy trials) say which knobs the search varied
among its best trials, not what a knob is worth: on seed 000's workload they put
synchronous_commit at 0.4%, although synchronous_commit=off alone is worth x1.65 there. The
ablation measures it. From the best configuration, each unit (one knob, or a group of knobs
that only act together, such as max_wal_size with checkpoint_timeout) is put back to the
environment's own value, and that configuration is run interleaved with the best:

    round r:  best, best without unit 1, best without unit 2, ...

The comparison engine judges each "best without the unit" against the best (paired: the runs
of each round alternate), so every unit gets the ratio best / without-it with its bounds: the
part of the gain it carries. Its share of the confirmed gain is log(that ratio) / log(best /
baseline), the confirmation's paired ratio; its bounds are those of the unit's own ratio over
the same confirmed gain (the gain's own uncertainty is said beside it, not folded in). The
ablation asks several questions at once (one per unit, and durable-only), so its family of
comparisons is corrected for multiplicity with Holm's step-down rule at the default misrate
(5% for the whole family): the comparisons, ordered by the smallest misrate at which each is
decisive (faster or slower), are judged at 5%/k, 5%/(k-1), ... until the first that is not
decisive at its level; that one and every later one are judged at that level. So the chance
of any wrong "faster"/"slower" among the k stays within 5%, and each comparison carries the
misrate it was judged at (its bounds are that wide). Shares
need not sum to 100%: knobs that only help together (or get in each other's way) make the sum
differ, and the report shows the sum.

When the best configuration turned off durability (fsync, synchronous_commit,
full_page_writes), "durable only" (the best with all three back on) is measured too: what of
the gain a configuration you may deploy keeps.

Cost is bounded: at most `max_units` units; knobs beyond that are grouped into one unit
("the rest"), chosen by lowest search importance, and measured together. A group with no
measured effect is reported as such for all its knobs; a group with one is not split further
(the report says so). `repeats` rounds (5: the fewest whose paired bounds reach the levels
Holm asks of up to six comparisons, down to 5%/6; with 4 rounds a paired verdict needs a
level of at least 2.9%, so only a single comparison, or the first of two, could get one).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial

from pgrig.analysis import rounds
from pgrig.analysis.compare import DEFAULT_MISRATE, Comparison, compare_runs
from pgrig.archive.records import RunRecord
from pgrig.tune.space import UNSAFE

BEST = "best"
DURABLE = "durable-only"
REST = "the rest"
DEFAULT_REPEATS = 5
DEFAULT_MAX_UNITS = 6
# Knobs that only act together: taking one back alone would measure a half-setting.
TOGETHER: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("checkpoints", ("max_wal_size", "min_wal_size", "checkpoint_timeout",
                     "checkpoint_completion_target")),
    ("commit delay", ("commit_delay", "commit_siblings")),
    ("background writer", ("bgwriter_delay", "bgwriter_lru_maxpages", "bgwriter_lru_multiplier")),
    ("asynchronous I/O", ("io_method", "io_workers")),
    ("sort and hash memory", ("work_mem", "hash_mem_multiplier")),
    # whether JIT compiles a query is jit and the thresholds together
    ("jit", ("jit", "jit_above_cost", "jit_inline_above_cost", "jit_optimize_above_cost")),
    ("parallel query", ("max_parallel_workers_per_gather", "parallel_setup_cost",
                        "parallel_tuple_cost")),
)  # fmt: skip
_UNSAFE_OFF = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}


@dataclass(frozen=True)
class Unit:
    key: str  # the study point's suffix and the report's name
    knobs: tuple[str, ...]

    @property
    def label(self) -> str:
        return (
            self.knobs[0]
            if len(self.knobs) == 1 and self.key == self.knobs[0]
            else (f"{self.key} ({', '.join(self.knobs)})")
        )


def point_key(config: str) -> str:
    return f"ablate-{config}"


def changed_knobs(best: Mapping[str, str], own: Mapping[str, str | None]) -> list[str]:
    """The best configuration's knobs whose value is not the environment's own (`own`: the
    baseline's value of each knob as text, None when unknown: then it counts as changed)."""
    return [k for k, v in best.items() if own.get(k) is None or str(own[k]) != str(v)]


def unsafe_off(best: Mapping[str, str]) -> list[str]:
    """Durability settings the best configuration turned off."""
    return [k for k in UNSAFE if str(best.get(k, "")).lower() in ("off", "false", "0")]


def plan_units(
    changed: Sequence[str],
    importances: Mapping[str, float],
    max_units: int = DEFAULT_MAX_UNITS,
) -> list[Unit]:
    """The units to take back, in order: each durability knob alone (seed 000's question is
    which of them pays), then the groups of TOGETHER and every other knob alone, in the order
    of `changed`; past `max_units` the units of lowest search importance go together into one
    unit, REST."""
    left = list(dict.fromkeys(changed))
    units: list[Unit] = []
    for name in UNSAFE:
        if name in left:
            units.append(Unit(name, (name,)))
            left.remove(name)
    grouped: list[Unit] = []
    for key, names in TOGETHER:
        found = tuple(n for n in names if n in left)
        if found:
            grouped.append(Unit(key, found))
    inside = {n for u in grouped for n in u.knobs}
    grouped += [Unit(n, (n,)) for n in left if n not in inside]
    # in the space's order (its first knobs are the ones that matter most by design)
    grouped.sort(key=lambda u: min(left.index(k) for k in u.knobs))
    units += grouped
    if len(units) <= max_units:
        return units
    fixed = [u for u in units if u.key in UNSAFE]
    others = [u for u in units if u.key not in UNSAFE]
    room = max(0, max_units - len(fixed) - 1)  # one place for REST
    # by search importance; ties (no importances: fewer than 3 completed trials) keep the order
    ranked = sorted(others, key=lambda u: -sum(importances.get(k, 0.0) for k in u.knobs))
    kept, rest = ranked[:room], ranked[room:]
    kept.sort(key=others.index)
    merged = tuple(k for u in rest for k in u.knobs)
    return [*fixed, *kept, *([Unit(REST, merged)] if merged else [])]


def configs(best: Mapping[str, str], units: Sequence[Unit]) -> dict[str, dict[str, str]]:
    """Settings per ablation configuration: the best, and the best without each unit (a knob
    left out of the layer takes the environment's own value); DURABLE when the best turned
    off durability and more than one unit would not already measure it."""
    out = {BEST: dict(best)}
    for u in units:
        out[u.key] = {k: v for k, v in best.items() if k not in u.knobs}
    off = unsafe_off(best)
    if off and not any(set(u.knobs) == set(off) for u in units):
        out[DURABLE] = {k: v for k, v in best.items() if k not in off}
    return out


def plan(names: Sequence[str], repeats: int, study: str) -> list[tuple[str, int]]:
    """(config, repeat) in run order: round after round, each round in an order of its own
    (analysis/rounds.py), the same for a resumed study of that name."""
    return [
        (c, r) for r in range(repeats) for c in rounds.shuffled(names, f"tune-ablation:{study}", r)
    ]


def groups(runs: Sequence[RunRecord], names: Sequence[str]) -> dict[str, list[RunRecord]]:
    """The ok ablation runs per configuration, the latest per repeat."""
    out: dict[str, list[RunRecord]] = {}
    for name in names:
        latest: dict[int, RunRecord] = {}
        for r in runs:
            if r.study_point == point_key(name) and r.status == "ok":
                latest[r.repeat] = r
        out[name] = [latest[k] for k in sorted(latest)]
    return out


@dataclass(frozen=True)
class Share:
    unit: Unit
    comparison: Comparison | None  # the best (candidate) against the best without the unit
    share: float | None = None  # log(best / without) / log(confirmed gain)
    low: float | None = None
    high: float | None = None
    reason: str | None = None  # why there is no comparison or no share

    @property
    def effect_text(self) -> str:
        c = self.comparison
        return c.ratio_text() if c is not None else "-"

    @property
    def share_text(self) -> str:
        if self.share is None:
            return "-"
        if self.low is None or self.high is None:
            return f"{self.share * 100:.0f}%"
        return f"{self.share * 100:.0f}% [{self.low * 100:.0f}, {self.high * 100:.0f}]"

    @property
    def measured_effect(self) -> bool:
        """The unit's removal changed the objective beyond the threshold, either way."""
        c = self.comparison
        return c is not None and c.verdict in ("faster", "slower")


def shares(
    runs: Sequence[RunRecord],
    units: Sequence[Unit],
    metric: str,
    threshold: float,
    gain: float | None,
    misrate: float = DEFAULT_MISRATE,
    extra: Sequence[str] = (),
) -> list[Share]:
    """Each unit's part of the gain (module docstring). `gain`: the confirmation's ratio best /
    baseline (None, or not in the better direction: no gain to share out, the effects alone
    are given);
    `extra`: more configurations measured the same way (DURABLE)."""
    names = [u.key for u in units] + list(extra)
    by = groups(runs, [BEST, *names])
    judges: dict[str, Callable[[float], Comparison]] = {}
    missing: dict[str, str] = {}
    every = [*units, *(Unit(n, ()) for n in extra)]
    for unit in every:
        without = by.get(unit.key) or []
        if not by[BEST] or not without:
            gone = BEST if not by[BEST] else f"the best without {unit.key}"
            missing[unit.key] = f"no ok ablation run of {gone}"
            continue
        judges[unit.key] = partial(compare_runs, without, by[BEST], metric, threshold)
    judged = holm(judges, misrate)
    return [
        _share(u, judged[u.key], gain) if u.key in judged else Share(u, None, reason=missing[u.key])
        for u in every
    ]


def decisive(c: Comparison) -> bool:
    """Faster or slower at the misrate asked (not on the widest bounds of too few values)."""
    return c.verdict in ("faster", "slower") and not c.insufficient


def decisive_at(judge: Callable[[float], Comparison], misrate: float) -> float:
    """The smallest misrate (up to `misrate`) at which judge's verdict is decisive (faster or
    slower), found by bisection (bounds narrow as the misrate grows); inf when it is not
    decisive even at `misrate`."""
    if not decisive(judge(misrate)):
        return math.inf
    low, high = 0.0, misrate
    for _ in range(30):
        mid = (low + high) / 2
        if mid > 0 and decisive(judge(mid)):
            high = mid
        else:
            low = mid
    return high


def holm(
    judges: Mapping[str, Callable[[float], Comparison]], misrate: float
) -> dict[str, Comparison]:
    """Holm's step-down rule over a family of comparisons (module docstring): each key's
    comparison judged at the misrate its step allows. One comparison alone: at `misrate`."""
    k = len(judges)
    order = sorted(judges, key=lambda key: decisive_at(judges[key], misrate))
    out: dict[str, Comparison] = {}
    stopped: float | None = None
    for step, key in enumerate(order):
        level = stopped if stopped is not None else misrate / (k - step)
        c = judges[key](level)
        if stopped is None and not decisive(c):
            stopped = level
        out[key] = c
    return out


def _share(unit: Unit, c: Comparison, gain: float | None) -> Share:
    """share = log(best / without) / log(best / baseline): both logs have the sign of "better"
    (positive for TPS, negative for a latency), so the share is positive when the unit helps."""
    if c.ratio is None:
        return Share(unit, c, reason=c.reason)
    better = gain is not None and (gain > 1 if c.higher_is_better else 0 < gain < 1)
    if gain is None or not better:
        return Share(unit, c, reason="no gain over the baseline in the confirmation to share out")
    total = math.log(gain)
    point = math.log(c.ratio) / total
    if c.lower is None or c.upper is None:
        return Share(unit, c, point)
    ends = sorted(math.log(v) / total for v in (c.lower, c.upper))
    return Share(unit, c, point, ends[0], ends[1])
