"""Guardrails: a trial that fails, or whose p95 latency exceeds twice the baseline's, is pruned.

While a trial runs, `early_stop()` watches the p95 of each whole second: STOP_AFTER_S seconds
in a row above the limit stop pgbench at once (the run is archived "aborted", with the reason),
so a disastrous configuration does not cost a whole trial. A single slow second (a checkpoint,
a cold cache after a restart) does not stop it; the whole run's p95 is judged at the end.

The baseline is the environment's own configuration, measured once before the first trial.
A trial whose run had its environment changed under it (`env set ... --force` while it ran:
its `changed_under_run` events) measured two configurations, not its own: it is pruned too.
A pruned trial stays in the archive (its run keeps its status and gets a `tune_pruned`
warning) and in the Optuna study (state PRUNED, with the reason): it is never dropped, and the
sampler learns to avoid its region.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pgrig.analysis.compare import changed_under_run
from pgrig.archive.records import RunRecord

P95_FACTOR = 2.0
STOP_AFTER_S = 5  # consecutive whole seconds above the limit before a trial is stopped


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

    def early_stop(self, seconds: int = STOP_AFTER_S) -> Callable[[float | None], str | None]:
        """A `stop_if` for the run orchestrator (load/core/runner.execute): the reason to stop, once
        `seconds` whole seconds in a row had a p95 above the limit."""
        limit = self.p95_limit_ms
        above = 0

        def stop_if(p95_ms: float | None) -> str | None:
            nonlocal above
            if limit is None or p95_ms is None:
                return None
            above = above + 1 if p95_ms > limit else 0
            if above < seconds:
                return None
            return (
                f"p95 above {limit:.2f} ms ({self.factor:g} x the baseline's) for {seconds} "
                "seconds in a row"
            )

        return stop_if

    def judge(self, rec: RunRecord) -> Judgement:
        changed = "; ".join(changed_under_run(rec))
        if rec.status != "ok":  # a change under it is said too: it is a fact of the run
            also = f"; and it was changed while running ({changed})" if changed else ""
            return Judgement(
                True, f"run {rec.id} {rec.status}: {rec.error or 'no reason given'}{also}"
            )
        if changed:
            return Judgement(
                True,
                f"run {rec.id} was changed while running ({changed}): not a trial "
                "of its settings alone, not comparable",
            )
        limit, p95 = self.p95_limit_ms, rec.latency.p95
        if limit is not None and p95 is not None and p95 > limit:
            return Judgement(
                True,
                f"p95 {p95:.2f} ms exceeds {self.factor:g} x the baseline's "
                f"{self.baseline_p95_ms:.2f} ms",
            )
        return Judgement(False)
