"""Knob importances: Optuna's fANOVA over the finished trials (share of the objective's
variance each knob explains; the shares sum to 1). Pruned trials are left out: fANOVA reads
only completed ones."""

from __future__ import annotations

from typing import Any

MIN_TRIALS = 3  # fewer completed trials say nothing about which knob matters


def knob_importances(study: Any) -> tuple[dict[str, float], str | None]:
    """({knob: share}, None), or ({}, why there are none). `study`: an optuna.Study."""
    import optuna

    complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    if len(complete) < MIN_TRIALS:
        return {}, f"needs {MIN_TRIALS}+ completed trials (have {len(complete)})"
    try:
        evaluator = optuna.importance.FanovaImportanceEvaluator(seed=0)
        found = optuna.importance.get_param_importances(study, evaluator=evaluator)
    except (RuntimeError, ValueError) as e:
        return {}, f"fANOVA failed: {e}"
    return {k: float(v) for k, v in found.items()}, None
