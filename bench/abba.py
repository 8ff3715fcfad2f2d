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
    results = rotate({names[0]: base, names[1]: candidate}, rounds, unit)
    ratios = [b / a for a, b in zip(results[names[0]], results[names[1]], strict=True)]
    summarize(ratios, f"{names[1]}/{names[0]}", bar=0.97)
    return ratios


def rotate(
    arms: dict[str, Callable[[], float]], rounds: int, unit: str = "tps"
) -> dict[str, list[float]]:
    """Run every arm once per round, in the given order in even rounds and reversed in odd
    ones (ABBA for two arms, ABC CBA for three); print each round."""
    names = list(arms)
    results: dict[str, list[float]] = {name: [] for name in names}
    for k in range(rounds):
        order = names if k % 2 == 0 else names[::-1]
        row = {name: arms[name]() for name in order}
        for name in names:
            results[name].append(row[name])
        figures = ", ".join(f"{name} {row[name]:,.0f} {unit}" for name in names)
        print(f"round {k + 1} ({order[0]} first): {figures}", flush=True)
    return results


def summarize(ratios: list[float], label: str, bar: float | None = None) -> None:
    """The median of paired ratios, and their Hodges-Lehmann centre (of the logarithms) with
    distribution-free signed-rank bounds, so the figure carries this host's noise."""
    target = f" (bar: >= {bar})" if bar is not None else ""
    print(
        f"{label}: median ratio over {len(ratios)} interleaved pairs "
        f"{statistics.median(ratios):.3f}{target}"
    )
    if len(ratios) >= 2:
        logs = [math.log(r) for r in ratios]
        b = stats.center_bounds(logs, 0.05)
        short = ", too few pairs for 95%" if b.insufficient else ""
        print(
            f"{label}: paired estimate x{math.exp(stats.center(logs)):.3f} "
            f"[{math.exp(b.lower):.3f}, {math.exp(b.upper):.3f}] "
            f"({100 * b.confidence:.1f}% bounds{short})",
            flush=True,
        )
