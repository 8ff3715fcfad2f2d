"""Bisection: the first version that shows a change seen between two measured versions.

Between a last-good version G and a bad one B (their levels differ by the engine's verdict),
the unmeasured versions in between are halved: the midpoint is measured and joins the side
whose level it is nearer to (on a log scale: the half-way mark of the change), about log2(N)
measurements for N versions in between. A midpoint that cannot be measured is dropped and the
next one tried. The result is then confirmed by re-running G and the first bad version
interleaved (`confirm`), which needs the engine's faster/slower verdict at 95%.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Step:
    version: str
    centre: float | None  # None: could not be measured
    side: str  # "good" | "bad" | "unmeasured"
    position: float | None = None  # 0 = the good level, 1 = the bad level


@dataclass
class Bisection:
    good: str
    bad: str
    good_centre: float
    bad_centre: float
    steps: list[Step] = field(default_factory=list)
    last_good: str = ""
    first_bad: str = ""
    remaining: list[str] = field(default_factory=list)  # unmeasurable versions left between

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def bisect(
    good: str,
    bad: str,
    between: list[str],
    centres: dict[str, float],
    measure: Callable[[str], float | None],
) -> Bisection:
    """`between`: the versions strictly between `good` and `bad`, in order; `centres`: the
    measured levels of good and bad; `measure(version)` returns the level of a new version
    (None when it cannot be measured)."""
    g, b = centres[good], centres[bad]
    if g <= 0 or b <= 0 or g == b:
        raise ValueError("bisection needs two different positive levels")
    out = Bisection(good, bad, g, b, last_good=good, first_bad=bad)
    lo, hi = good, bad
    pool = list(between)
    span = math.log(b / g)
    while pool:
        mid = pool[(len(pool) - 1) // 2]
        level = measure(mid)
        if level is None or level <= 0:
            out.steps.append(Step(mid, None, "unmeasured"))
            pool.remove(mid)
            continue
        position = math.log(level / g) / span
        if position >= 0.5:
            hi = mid
            out.steps.append(Step(mid, level, "bad", position))
            pool = pool[: pool.index(mid)]
        else:
            lo = mid
            out.steps.append(Step(mid, level, "good", position))
            pool = pool[pool.index(mid) + 1 :]
    out.last_good, out.first_bad = lo, hi
    out.remaining = [s.version for s in out.steps if s.side == "unmeasured"]
    return out
