"""Change-point detection on synthetic version series: false alarms, power, position, time.

    PYTHONPATH=src python bench/changepoints_rates.py [--series 500]

Series of N points (one value per version) with 1% Gaussian noise: flat (how often a change
is found where there is none) and with a step of 2%, 3% or 5% in the middle (how often it is
found within 2 points of the truth), at the default significance (p <= 0.01, 499
permutations). Also the grouped form `track show` uses: 3 repeats per version, cuts only
between versions. Prints rates and the time per detection; asserts nothing.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from pgrig.analysis import changepoints


def rates(n: int, step: float, series: int, repeats: int = 1) -> tuple[float, float, float]:
    hits = 0
    t0 = time.perf_counter()
    for s in range(series):
        rng = np.random.default_rng(50_000 + s)
        versions = n // repeats
        y = 1000 * (1 + 0.01 * rng.standard_normal(versions * repeats))
        at = (versions // 2) * repeats
        y[at:] *= 1 + step
        groups = [v for v in range(versions) for _ in range(repeats)] if repeats > 1 else None
        found = changepoints.detect(y, groups=groups, seed=s).changes
        if step == 0:
            hits += bool(found)
        else:
            hits += any(abs(c.index - at) <= 2 * repeats for c in found)
    elapsed = time.perf_counter() - t0
    return hits / series, elapsed / series * 1000, at


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--series", type=int, default=300)
    args = ap.parse_args()
    print(f"{'points':>6} {'repeats':>7} {'step':>5} {'rate':>7} {'ms/series':>9}")
    for n, repeats in ((10, 1), (20, 1), (40, 1), (36, 3)):
        for step in (0.0, 0.02, 0.03, 0.05):
            rate, ms, _ = rates(n, step, args.series, repeats)
            what = "false" if step == 0 else "found"
            print(f"{n:>6} {repeats:>7} {step:>5.0%} {rate:>6.1%} {ms:>9.1f}  ({what})")


if __name__ == "__main__":
    main()
