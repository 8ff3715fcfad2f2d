"""The tuning study a user asks for (`pgrig tune ENV ...`, a request.TuneRequest whose flags
are checked alone) resolved against its environment into the TunePlan the runner follows,
callable without the CLI."""

from __future__ import annotations

from pgrig.errors import PgrigError
from pgrig.request.tune import TuneRequest
from pgrig.tune import confirm, presets
from pgrig.tune import space as sp
from pgrig.tune.objective import objective
from pgrig.tune.runner import TunePlan

# One run of a study (the baseline, a trial, a confirmation repeat) lasts at most a day, and
# a search's budget at most 30 days: past these a study is a typo ("100000h"), not a plan.
MAX_RUN_S = 24 * 3600.0
MAX_BUDGET_S = 30 * 86400.0


def build(asked: TuneRequest) -> TunePlan:
    """The tuning study asked, resolved against the environment (managed, its server's
    settings catalogue, a preset's disk limit) before anything runs; what the knob space left
    out and why is in its notes. The flags were checked alone when `asked` was made."""
    from pgrig.provision import cluster
    from pgrig.provision.settings import config
    from pgrig.provision.state.environment import require_managed
    from pgrig.request import RunRequest, from_flags
    from pgrig.study.spec import DatasetSpec
    from pgrig.workloads import specs

    label = specs.workload_label(asked.workload)
    # TPC-H: every run of a study asks the same queries (the study's seed gives the
    # substitution parameters), so runs differ by their settings alone
    tpch = {"tpch_seed": asked.seed} if label.strip().startswith("tpch:") else {}
    _tune_run_bound(asked.duration, asked.warmup)  # a tune's own bound, before a run's
    load = from_flags(
        RunRequest,
        env_name=asked.env_name,
        workload=label,
        database=asked.database,
        clients=asked.clients,
        threads=asked.threads,
        duration_s=asked.duration,
        warmup_s=asked.warmup,
        analytic_clients=asked.analytic_clients,
        **tpch,
    )
    if asked.scale_factor is not None and not load.is_tpch:
        raise PgrigError("--scale-factor generates TPC-H data: use it with --workload tpch:power")
    if asked.warehouses is not None and not load.is_tpcc:
        raise PgrigError(
            "--warehouses generates TPC-C's data (CH-benCHmark's with its three tables): use it "
            "with --workload tpcc or chbench"
        )
    run_s = _run_seconds(load.duration_s or 0.0, load.warmup_s, asked.duration or "")
    budget_s = _budget(asked.budget, run_s)
    obj = objective(asked.objective, load.workload)
    env = cluster.get_environment(asked.env_name)
    require_managed(env, "tune it (tuning changes its settings and restarts it)")
    reference = confirm.PGTUNE_PROFILE
    if asked.preset is not None:
        preset = presets.get(asked.preset)
        presets.check_disk_limit(preset, asked.env_name, getattr(env, "disk_limit", None))
        reference = preset.reference
    dataset = None
    if asked.scale is not None:
        if not load.workload.startswith("pgbench:") and "pgbench:" not in load.workload:
            raise PgrigError("--scale generates pgbench data: use it with a pgbench workload")
        dataset = DatasetSpec(scenario="pgbench", database=asked.database, scale=asked.scale)
    if asked.scale_factor is not None:
        dataset = from_flags(
            DatasetSpec, scenario="tpch", database=asked.database,
            scale_factor=asked.scale_factor,
        )  # fmt: skip
    if asked.warehouses is not None:
        # chbench's data holds TPC-C's too; TPC-C's alone lacks CH-benCHmark's three tables
        dataset = from_flags(
            DatasetSpec, scenario="chbench" if load.is_chbench else "tpcc",
            database=asked.database, warehouses=asked.warehouses,
        )  # fmt: skip
    space = sp.for_server(
        env.bindir or "",
        env.version or "",
        asked.space,
        asked.allow_unsafe,
        disk_path=env.datadir,
    )
    sp.check_connections(
        space,
        load.clients + (load.analytic_clients or 0),
        config.layers(env).effective(),
        env.major or 0,
    )
    pgtune, _notes = cluster.resolve_profile(reference, env.major or 0, env.bindir)
    return TunePlan(
        name=asked.name,
        load=load,
        objective=obj,
        space=space,
        trials=asked.trials,
        budget_s=budget_s,
        confirm_repeats=asked.confirm_repeats,
        allow_unsafe=asked.allow_unsafe,
        pgtune_settings=pgtune,
        reference=reference,
        seed=asked.seed,
        ablation_repeats=asked.ablation_repeats,
        ablation_max_units=asked.ablation_units,
        warm_start=sp.warm_start(space, pgtune),
        dataset=dataset,
    )


def _tune_run_bound(duration: str | None, warmup: str) -> None:
    """One run of a tuning study lasts at most MAX_RUN_S: said as the tune's bound even when
    the run's own (a month, request/load.py) would refuse the same typo with its own."""
    from pgrig.request.values import parse_duration

    try:
        duration_s, warmup_s = parse_duration(duration or 0), parse_duration(warmup)
    except ValueError:
        return  # the run's request says what is wrong with them
    _run_seconds(duration_s, warmup_s, duration or "")


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
