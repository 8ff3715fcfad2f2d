"""Paired comparison of interleaved repeats: which runs pair up, and the paired t on log ratios.

Interleaved repeats (a study's "interleaved" order, tune's confirmation rounds, track's
round-robin over versions) run one repeat of each configuration per round. The host changes
between rounds (other work, the data growing, a checkpoint cycle), and an unpaired comparison
counts that drift as noise on both sides. Pairing the two runs of each round and judging the
per-round ratios removes it.

The pairing has to be known, never guessed from the values. It is known when:
- every run of both groups belongs to one study, each group to one study point, the groups
  are different points and share no run;
- each side has distinct repeat numbers and both sides the same set, of at least
  `min_pairs(misrate)` repeats (the number the unpaired test needs to reach the misrate, so
  pairing never gives a firm verdict from fewer runs than the unpaired test would: it only uses
  them better);
- the runs were made in alternation: ordered by their start (archive id where a start is
  missing), the two runs of each repeat are next to each other among these runs (A B B A and
  A B A B both qualify; A A B B, a sequential study, does not, nor a repeat run again later).
Anything else falls back to the unpaired comparison.

Test: d_i = log(candidate_i) - log(baseline_i); ratio = exp(mean d); bounds = exp(mean d +/-
t(1 - misrate/2, n - 1) * sd(d) / sqrt(n)), Student's t with n - 1 degrees of freedom (the
paired t-test's confidence interval). Log ratios of two runs of one round are close to normal;
an outlier pair widens the bounds rather than narrowing them.

Pairs likely needed (for inconclusive verdicts): the smallest n with
(t(1 - misrate/2, n - 1) + t(POWER, n - 1)) * s / sqrt(n) <= m, s the sd of d and m the
distance from mean d to the nearer of log(1 - t) and log(1 + t).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from pgrig.analysis import student_t
from pgrig.record.run import RunRecord

TEST_NAME = "paired t on log ratios"
MAX_PAIRS_NEEDED = 1_000_000  # beyond this the estimate means "the effect sits on the threshold"


@dataclass(frozen=True)
class PairedBounds:
    ratio: float  # exp(mean log ratio)
    lower: float
    upper: float
    n: int  # pairs
    sd: float  # of the log ratios
    t_statistic: float | None  # mean / (sd / sqrt n) against "no change"; None when sd == 0
    p_value: float | None  # two-sided, against "no change"


def min_pairs(misrate: float) -> int:
    """The fewest pairs judged paired: as many as the unpaired bounds need for `misrate`."""
    n = 2
    while 2 / math.comb(2 * n, n) > misrate:
        n += 1
    return n


def interleaved_pairs(
    baseline: Sequence[RunRecord], candidate: Sequence[RunRecord], misrate: float
) -> list[tuple[RunRecord, RunRecord]] | None:
    """(baseline run, candidate run) per repeat, in repeat order, when the pairing is known
    (module docstring); else None."""
    runs = [*baseline, *candidate]
    studies = {r.study for r in runs}
    if len(studies) != 1 or None in studies:
        return None
    points = [{r.study_point for r in side} for side in (baseline, candidate)]
    if any(len(p) != 1 or None in p for p in points) or points[0] == points[1]:
        return None
    ids = [r.id for r in runs]
    if None in ids or len(set(ids)) != len(ids):
        return None
    by_repeat = [{r.repeat: r for r in side} for side in (baseline, candidate)]
    if any(len(m) != len(side) for m, side in zip(by_repeat, (baseline, candidate), strict=True)):
        return None
    if set(by_repeat[0]) != set(by_repeat[1]) or len(by_repeat[0]) < min_pairs(misrate):
        return None
    position = {r.id: i for i, r in enumerate(_in_run_order(runs))}
    pairs = [(by_repeat[0][k], by_repeat[1][k]) for k in sorted(by_repeat[0])]
    if any(abs(position[b.id] - position[c.id]) != 1 for b, c in pairs):
        return None
    return pairs


def _in_run_order(runs: Sequence[RunRecord]) -> list[RunRecord]:
    """By start time (then id); by archive id alone when a start is missing."""
    if all(r.started_at is not None for r in runs):
        return sorted(runs, key=lambda r: (r.started_at, r.id))
    return sorted(runs, key=lambda r: r.id or 0)


def paired_bounds(base: np.ndarray, cand: np.ndarray, misrate: float) -> PairedBounds:
    """The paired t-test's interval for exp(mean log(cand / base)) (module docstring)."""
    d = np.log(cand) - np.log(base)
    n = int(d.size)
    mean = float(d.mean())
    sd = float(d.std(ddof=1))
    half = student_t.quantile(1 - misrate / 2, n - 1) * sd / math.sqrt(n)
    t_stat: float | None = None
    p: float | None = None
    if sd > 0:
        t_stat = mean / (sd / math.sqrt(n))
        p = student_t.two_sided_p(t_stat, n - 1)
    return PairedBounds(
        math.exp(mean), math.exp(mean - half), math.exp(mean + half), n, sd, t_stat, p
    )


def pairs_needed(
    b: PairedBounds, threshold: float, misrate: float, power: float, have: int
) -> int | None:
    """Pairs likely needed to decide (module docstring); None when the effect sits on a
    threshold. At least one more than `have`."""
    d = math.log(b.ratio)
    m = min(abs(d - math.log1p(threshold)), abs(d - math.log1p(-threshold)))
    smallest = max(min_pairs(misrate), have + 1)
    if b.sd == 0:
        return smallest
    if m == 0:
        return None
    z = NormalDist().inv_cdf(1 - misrate / 2) + NormalDist().inv_cdf(power)
    n = max(smallest, math.ceil((z * b.sd / m) ** 2))  # the normal approximation: a floor
    if n > MAX_PAIRS_NEEDED:
        return None
    while True:  # t quantiles are wider than z: step up to the t-based size
        q = student_t.quantile(1 - misrate / 2, n - 1) + student_t.quantile(power, n - 1)
        if q * b.sd / math.sqrt(n) <= m or n > MAX_PAIRS_NEEDED:
            return n if n <= MAX_PAIRS_NEEDED else None
        n += 1
