"""Knob importances: Optuna's PED-ANOVA (its default evaluator since 5.0; fANOVA would need
scikit-learn) over the completed trials: how much each knob's values in the best trials differ
from its values overall, as shares summing to 1. Pruned trials are left out."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import optuna

MIN_TRIALS = 3  # fewer completed trials say nothing about which knob matters
METHOD = "PED-ANOVA (Optuna)"


def knob_importances(study: optuna.Study) -> tuple[dict[str, float], str | None]:
    """({knob: share}, None), or ({}, why there are none)."""
    import optuna

    complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    if len(complete) < MIN_TRIALS:
        return {}, f"needs {MIN_TRIALS}+ completed trials (have {len(complete)})"
    try:
        evaluator = optuna.importance.PedAnovaImportanceEvaluator()
        found = optuna.importance.get_param_importances(study, evaluator=evaluator)
    except (RuntimeError, ValueError, ImportError) as e:
        return {}, f"{METHOD} failed: {e}"
    return {k: float(v) for k, v in found.items()}, None
