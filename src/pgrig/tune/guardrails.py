"""Guardrails: a trial that fails, or whose p95 latency exceeds twice the baseline's, is pruned.

The baseline is the environment's own configuration, measured once before the first trial.
A pruned trial stays in the archive (its run keeps its status and gets a `tune_pruned`
warning) and in the Optuna study (state PRUNED, with the reason): it is never dropped, and the
sampler learns to avoid its region.
"""

from __future__ import annotations

from dataclasses import dataclass

from pgrig.archive.records import RunRecord

P95_FACTOR = 2.0


@dataclass(frozen=True)
class Judgement:
    pruned: bool
    reason: str | None = None


@dataclass(frozen=True)
class Guardrails:
    baseline_p95_ms: float | None
    factor: float = P95_FACTOR

    @property
    def p95_limit_ms(self) -> float | None:
        return None if self.baseline_p95_ms is None else self.baseline_p95_ms * self.factor

    def judge(self, rec: RunRecord) -> Judgement:
        if rec.status != "ok":
            return Judgement(True, f"run {rec.id} {rec.status}: {rec.error or 'no reason given'}")
        limit, p95 = self.p95_limit_ms, rec.latency.p95
        if limit is not None and p95 is not None and p95 > limit:
            return Judgement(
                True,
                f"p95 {p95:.2f} ms exceeds {self.factor:g} x the baseline's "
                f"{self.baseline_p95_ms:.2f} ms",
            )
        return Judgement(False)
