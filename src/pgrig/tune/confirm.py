"""The confirmation phase: interleaved repeats of the best trial's configuration, the
environment's own (baseline) and a reference profile (PGTune's OLTP profile, or the preset's:
pgtune-dw for analytics), judged by the comparison engine.

A search ranks configurations by single short runs, each picked for being the highest of many
noisy figures: the winner's own figure is biased upwards. Only fresh repeats, interleaved so
slow changes of the host (other work, the data growing) spread over every configuration, say
whether it is really better, and by how much (ratio with bounds, analysis/compare.py).

Early stop (sequential, with an honest error rate). The verdicts are looked at after a fixed
schedule of rounds (`looks`), decided before the first run: with 6 repeats, after round 4 and
after round 6. Each look spends part of the misrate (alpha spending with a Bonferroni split:
0.6 of it at the early look, 0.4 at the last), so the chance of any wrong firm verdict over
all looks stays at most the misrate (the union bound), however the looks turn out. The phase
stops at a look where every question is decisive (faster, slower or equivalent) at that look's
misrate; the verdicts are then reported at the misrate of the look that stopped it (or of the
last look), never at the full misrate. Fewer than 5 repeats: one look, at the end, with the
whole misrate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pgrig.analysis import rounds
from pgrig.analysis.compare import DEFAULT_MISRATE, Comparison, compare_runs
from pgrig.analysis.compare_paired import min_pairs
from pgrig.archive.records import RunRecord
from pgrig.record.documents import StudyExtra
from pgrig.record.json_values import number

BASELINE, BEST, PGTUNE = "baseline", "best", "pgtune-oltp"
PGTUNE_PROFILE = PGTUNE  # the reference profile of studies that name none (their point keys)
DEFAULT_REPEATS = 4  # the fewest whose bounds reach 95% (compare.min_repeats(0.05))
VS_BASELINE = "best vs baseline"


def configs(reference: str = PGTUNE_PROFILE) -> tuple[str, ...]:
    """The confirmation's configurations: the reference profile is named by its profile."""
    return (BASELINE, BEST, reference)


def questions(reference: str = PGTUNE_PROFILE) -> tuple[tuple[str, str, str], ...]:
    """(label, baseline side, candidate side): the best configuration is always the
    candidate."""
    return ((VS_BASELINE, BASELINE, BEST), (f"best vs {reference}", reference, BEST))


def reference_of(extra: StudyExtra) -> str:
    """The study's reference profile (older studies: pgtune-oltp)."""
    value = extra.get("reference_profile")
    return value if isinstance(value, str) and value else PGTUNE_PROFILE


EARLY_SHARE = 0.6  # of the misrate, spent at the early look; the rest at the last
DECISIVE = ("faster", "slower", "equivalent")


@dataclass(frozen=True)
class Look:
    rounds: int  # repeats per configuration done when the verdicts are looked at
    misrate: float  # spent at this look


def looks(repeats: int, misrate: float = DEFAULT_MISRATE) -> list[Look]:
    """The fixed look schedule (module docstring): the misrates sum to `misrate`, and each look
    has enough pairs for its misrate (compare_paired.min_pairs), else one look at the end."""
    early_rate, last_rate = misrate * EARLY_SHARE, misrate * (1 - EARLY_SHARE)
    early = max(min_pairs(early_rate), (repeats + 1) // 2)
    if early < repeats and min_pairs(last_rate) <= repeats:
        return [Look(early, early_rate), Look(repeats, last_rate)]
    return [Look(repeats, misrate)]


def decisive(found: Sequence[Verdict]) -> bool:
    """Every question has a firm verdict (what stops the confirmation at a look)."""
    return bool(found) and all(
        v.comparison is not None and v.comparison.verdict in DECISIVE for v in found
    )


def point_key(config: str) -> str:
    return f"confirm-{config}"


def round_order(study: str, repeat: int, reference: str = PGTUNE_PROFILE) -> list[str]:
    """The configurations of one round, in an order of the round's own (analysis/rounds.py:
    in one fixed order, the defaults would always follow pgtune and inherit its runs' dead
    tuples and WAL); the same for a resumed study of that name."""
    return rounds.shuffled(configs(reference), f"tune-confirm:{study}", repeat)


def plan(repeats: int, study: str, reference: str = PGTUNE_PROFILE) -> list[tuple[str, int]]:
    """(config, repeat) in run order: every configuration once per round, round after round."""
    return [(config, r) for r in range(repeats) for config in round_order(study, r, reference)]


def misrate_of(extra: StudyExtra) -> float:
    """The misrate a study's verdicts are judged at (older studies: the default)."""
    value = number(extra.get("confirm_misrate"))
    return DEFAULT_MISRATE if value is None else value


def groups(
    runs: Sequence[RunRecord], reference: str = PGTUNE_PROFILE
) -> dict[str, list[RunRecord]]:
    """The ok confirmation runs per configuration, the latest per repeat (a resumed phase may
    have run a repeat again after an interruption)."""
    out: dict[str, list[RunRecord]] = {}
    for config in configs(reference):
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


def verdicts(
    runs: Sequence[RunRecord],
    metric: str,
    threshold: float,
    misrate: float = DEFAULT_MISRATE,
    reference: str = PGTUNE_PROFILE,
) -> list[Verdict]:
    """The best configuration against the baseline and against the reference profile on
    `metric`, at `misrate` (the study's: the misrate of the look that ended its
    confirmation)."""
    by = groups(runs, reference)
    out = []
    for question, base, cand in questions(reference):
        if not by[base] or not by[cand]:
            missing = base if not by[base] else cand
            out.append(Verdict(question, None, f"no ok confirmation run of {missing}"))
            continue
        found = compare_runs(by[base], by[cand], metric, threshold, misrate)
        out.append(Verdict(question, found.at_its_level()))  # no firm word from wider bounds
    return out
