"""The tuning study a user asks for (`pgrig tune ENV ...`): its flags checked and turned into
a TuneRequest, callable without the CLI."""

from __future__ import annotations

from pgrig.errors import PgrigError
from pgrig.tune import confirm, presets
from pgrig.tune import space as sp
from pgrig.tune.objective import objective
from pgrig.tune.runner import TuneRequest

# One run of a study (the baseline, a trial, a confirmation repeat) lasts at most a day, and
# a search's budget at most 30 days: past these a study is a typo ("100000h"), not a plan.
MAX_RUN_S = 24 * 3600.0
MAX_BUDGET_S = 30 * 86400.0


def build(
    *,
    env_name: str,
    preset: str | None,
    workload: list[str] | None,
    scale: int | None,
    trials: int,
    budget: str | None,
    objective_name: str,
    space_arg: str,
    allow_unsafe: bool,
    duration: str,
    warmup: str,
    clients: int,
    threads: int,
    confirm_repeats: int,
    ablation_repeats: int,
    ablation_units: int,
    study_name: str,
    db: str | None,
    seed: int,
) -> TuneRequest:
    """The tuning study asked, every flag checked against the environment (managed, its
    server's settings catalogue, a preset's disk limit) before anything runs; what the knob
    space left out and why is in its notes."""
    from pgrig.provision import cluster
    from pgrig.request import RunRequest, from_flags
    from pgrig.study.spec import DatasetSpec
    from pgrig.workloads import specs

    if not workload:
        raise PgrigError("--workload is required (e.g. --workload pgbench:tpcb)")
    if trials < 1:
        raise PgrigError(f"--trials must be at least 1 (got {trials})")
    if ablation_repeats < 0:
        raise PgrigError(f"--ablation-repeats must be 0 (none) or more (got {ablation_repeats})")
    if ablation_units < 1:
        raise PgrigError(f"--ablation-units must be at least 1 (got {ablation_units})")
    if scale is not None and scale < 1:
        raise PgrigError(f"--scale must be at least 1 (got {scale})")
    if confirm_repeats < 2:
        raise PgrigError(
            f"--confirm-repeats must be at least 2 (got {confirm_repeats}): a verdict needs "
            "repeats on each side"
        )
    load = from_flags(
        RunRequest,
        env_name=env_name,
        workload=specs.workload_label(workload),
        database=db,
        clients=clients,
        threads=threads,
        duration_s=duration,
        warmup_s=warmup,
    )
    budget_s = _budget(budget, _run_seconds(load.duration_s or 0.0, load.warmup_s, duration))
    obj = objective(objective_name, load.workload)
    env = cluster.get_environment(env_name)
    if not env.managed:
        raise PgrigError(
            f"{env_name} is an external server: tuning changes settings and restarts the "
            "server, so it needs a managed environment"
        )
    if preset is not None:
        presets.check_disk_limit(presets.get(preset), env_name, getattr(env, "disk_limit", None))
    dataset = None
    if scale is not None:
        if not load.workload.startswith("pgbench:") and "pgbench:" not in load.workload:
            raise PgrigError("--scale generates pgbench data: use it with a pgbench workload")
        dataset = DatasetSpec(scenario="pgbench", database=db, scale=scale)
    space = sp.for_server(
        env.bindir or "", env.version or "", space_arg, allow_unsafe, disk_path=env.datadir
    )
    pgtune, _notes = cluster.resolve_profile(confirm.PGTUNE_PROFILE, env.major or 0, env.bindir)
    return TuneRequest(
        name=study_name,
        load=load,
        objective=obj,
        space=space,
        trials=trials,
        budget_s=budget_s,
        confirm_repeats=confirm_repeats,
        allow_unsafe=allow_unsafe,
        pgtune_settings=pgtune,
        seed=seed,
        ablation_repeats=ablation_repeats,
        ablation_max_units=ablation_units,
        warm_start=sp.warm_start(space, pgtune),
        dataset=dataset,
    )


def _run_seconds(duration_s: float, warmup_s: float, duration: str) -> float:
    """One run's wall time (--duration + --warmup), refused past MAX_RUN_S with the range."""
    from pgrig.format import duration as shown

    if duration_s + warmup_s > MAX_RUN_S:
        raise PgrigError(
            f"--duration {duration} (plus --warmup {shown(warmup_s)}): one run of a tuning "
            f"study lasts from 1s to {shown(MAX_RUN_S)} (got {shown(duration_s + warmup_s)})"
        )
    return duration_s + warmup_s


def _budget(budget: str | None, run_s: float) -> float | None:
    """--budget: at least the baseline and one trial (two runs), at most MAX_BUDGET_S; less
    would run the baseline and stop with no trial."""
    from pgrig.format import duration as shown
    from pgrig.request.values import parse_duration

    if budget is None:
        return None
    try:
        budget_s = parse_duration(budget)
    except ValueError as e:
        raise PgrigError(f"--budget: {e}") from None
    low = 2 * run_s
    if not low <= budget_s <= MAX_BUDGET_S:
        raise PgrigError(
            f"--budget {budget}: must be from {shown(low)} (the baseline and one trial, each "
            f"--duration + --warmup = {shown(run_s)}) to {shown(MAX_BUDGET_S)} "
            f"(got {shown(budget_s)})"
        )
    return budget_s
