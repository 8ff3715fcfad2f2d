"""Interleaved pairs of benchmark runs in ABBA order, shared by the overhead benchmarks."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable

from pgrig.analysis import stats


def interleave(
    base: Callable[[], float],
    candidate: Callable[[], float],
    rounds: int,
    names: tuple[str, str],
    unit: str = "tps",
) -> list[float]:
    """Run `rounds` pairs, alternating which goes first (ABBA: whichever goes second in a pair
    is not systematically favoured); print each pair and the median ratio candidate/base."""
    ratios = []
    for k in range(rounds):
        if k % 2 == 0:
            a, b = base(), candidate()
        else:
            b, a = candidate(), base()
        ratios.append(b / a)
        first = names[0] if k % 2 == 0 else names[1]
        print(f"round {k + 1} ({first} first): {names[0]} {a:,.0f} {unit}, "
              f"{names[1]} {b:,.0f} {unit}, ratio {b / a:.3f}", flush=True)  # fmt: skip
    print(
        f"median ratio {names[1]}/{names[0]} over {rounds} interleaved pairs: "
        f"{statistics.median(ratios):.3f} (bar: >= 0.97)"
    )
    if rounds >= 2:
        # The pairs' ratios as one sample: Hodges-Lehmann centre of their logarithms with
        # distribution-free (signed-rank) bounds, so the figure carries this host's noise.
        logs = [math.log(r) for r in ratios]
        b = stats.center_bounds(logs, 0.05)
        short = ", too few pairs for 95%" if b.insufficient else ""
        print(
            f"paired estimate x{math.exp(stats.center(logs)):.3f} "
            f"[{math.exp(b.lower):.3f}, {math.exp(b.upper):.3f}] "
            f"({100 * b.confidence:.1f}% bounds{short})"
        )
    return ratios
