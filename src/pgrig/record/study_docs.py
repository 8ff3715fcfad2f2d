"""What a study keeps beside its spec: StudyRecord.extra, by the module that writes it."""

from __future__ import annotations

from typing_extensions import TypedDict

from pgrig.record.json_values import JsonValue

__all__ = [
    "AblationDoc",
    "AblationUnit",
    "BestTrial",
    "ConfirmLook",
    "DestroyedDoc",
    "SpaceKnobDoc",
    "StudyExtra",
    "TrialDoc",
]


class SpaceKnobDoc(TypedDict, total=False):
    """A knob of a tune study's space (tune/space.py Space.as_dicts)."""

    name: str
    group: str
    range: str
    restart: bool


class ConfirmLook(TypedDict, total=False):
    """A planned look of the confirmation (tune/confirm.py): after `rounds`, at `misrate`."""

    rounds: int
    misrate: float


class TrialDoc(TypedDict, total=False):
    """A trial of a tune study, as Optuna ended it (tune/runner.py trials)."""

    number: int
    state: str  # complete | pruned | fail | running
    value: float | None
    run_id: int | None
    settings: dict[str, str]
    reason: str | None
    # figures reported beside the objective (tune/objective.BESIDE), by figure key:
    # CH-benCHmark's analytic queries per hour ("chbench.qph") beside its NOPM
    beside: dict[str, float | None]


class BestTrial(TypedDict, total=False):
    trial: int
    value: float | None
    run_id: int | None
    settings: dict[str, str]
    beside: dict[str, float | None]  # as the trial's


class AblationUnit(TypedDict, total=False):
    key: str
    knobs: list[str]


class AblationDoc(TypedDict, total=False):
    """The ablation's plan, saved before its first run (tune/ablation.py)."""

    units: list[AblationUnit]
    configs: dict[str, dict[str, str]]  # config -> its settings
    repeats: int


class DestroyedDoc(TypedDict, total=False):
    at: str  # ISO 8601
    names: list[str]


class StudyExtra(TypedDict, total=False):
    """StudyRecord.extra: what a study records beside its spec (total=False: each kind writes
    its own keys, and a study of an older pgrig may lack any)."""

    # a study file's sweep or iterations (study/runner.py)
    points: int
    repeats: int
    runs: int  # runs planned (tune: baseline, trials, confirmation at most)
    base_dir: str
    # a tune study (tune/runner.py)
    journal: str
    phase: str  # where it is: "data generation", "baseline" (what an interruption stopped)
    error: str  # why a tune that failed stopped (its error's first line; said when failed)
    dataset: str  # the data its preset generates, in words ("pgbench data, scale 10")
    space: list[SpaceKnobDoc]
    notes: list[str]
    objective: str
    trials_planned: int
    confirm_looks: list[ConfirmLook]
    confirm_repeats: int
    ablation_repeats: int  # rounds asked (--ablation-repeats; 0: none); absent before issue 43
    threshold: float
    pgtune_settings: dict[str, str]
    reference_profile: str  # the profile the best is confirmed against (tune/confirm.py)
    confirm_stopped_at: int
    confirm_misrate: float
    ablation: AblationDoc
    baseline_run: int | None
    baseline_p95_ms: float | None
    trials: list[TrialDoc]
    best: BestTrial | None
    importances: dict[str, float]
    importances_note: str | None
    # a track series (track/runner.py, track/flow.py): the version points and what was found
    repeat: int
    versions: list[dict[str, JsonValue]]
    last_check: dict[str, JsonValue]
    bisections: list[dict[str, JsonValue]]
    environments_destroyed: DestroyedDoc  # track/cleanup.py
