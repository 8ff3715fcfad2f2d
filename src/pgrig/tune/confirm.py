"""The confirmation phase: interleaved repeats of the best trial's configuration, the
environment's own (baseline) and PGTune's OLTP profile, judged by the comparison engine.

A search ranks configurations by single short runs, each picked for being the highest of many
noisy figures: the winner's own figure is biased upwards. Only fresh repeats, interleaved so
slow changes of the host (other work, the data growing) spread over every configuration, say
whether it is really better, and by how much (ratio with bounds, analysis/compare.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pgrig.analysis.compare import Comparison, compare_runs
from pgrig.archive.records import RunRecord

BASELINE, BEST, PGTUNE = "baseline", "best", "pgtune-oltp"
CONFIGS = (BASELINE, BEST, PGTUNE)
PGTUNE_PROFILE = "pgtune-oltp"
DEFAULT_REPEATS = 4  # the fewest whose bounds reach 95% (compare.min_repeats(0.05))
# (label, baseline side, candidate side): the best configuration is always the candidate
QUESTIONS = (("best vs baseline", BASELINE, BEST), ("best vs pgtune-oltp", PGTUNE, BEST))


def point_key(config: str) -> str:
    return f"confirm-{config}"


def plan(repeats: int) -> list[tuple[str, int]]:
    """(config, repeat) in run order: every configuration once per round, round after round."""
    return [(config, r) for r in range(repeats) for config in CONFIGS]


def groups(runs: Sequence[RunRecord]) -> dict[str, list[RunRecord]]:
    """The ok confirmation runs per configuration, the latest per repeat (a resumed phase may
    have run a repeat again after an interruption)."""
    out: dict[str, list[RunRecord]] = {}
    for config in CONFIGS:
        latest: dict[int, RunRecord] = {}
        for r in runs:
            if r.study_point == point_key(config) and r.status == "ok":
                latest[r.repeat] = r
        out[config] = [latest[k] for k in sorted(latest)]
    return out


@dataclass(frozen=True)
class Verdict:
    question: str
    comparison: Comparison | None  # None: a side has no ok run
    reason: str | None = None


def verdicts(runs: Sequence[RunRecord], metric: str, threshold: float) -> list[Verdict]:
    """The best configuration against the baseline and against pgtune-oltp on `metric`."""
    by = groups(runs)
    out = []
    for question, base, cand in QUESTIONS:
        if not by[base] or not by[cand]:
            missing = base if not by[base] else cand
            out.append(Verdict(question, None, f"no ok confirmation run of {missing}"))
            continue
        out.append(Verdict(question, compare_runs(by[base], by[cand], metric, threshold)))
    return out
