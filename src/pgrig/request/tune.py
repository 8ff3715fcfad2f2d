"""The tuning request: what `pgrig tune ENV ...` asks for, its flags checked once.

Like the run request, a frozen pydantic model whose problems name the flag
(`--trials must be at least 1 (got 0)`, problems.from_flags). The fields are checked in the
order they are declared, so the first wrong flag is the one said. What needs the environment
(its server's knob space, a preset's disk limit) and the run's length (--budget against
--duration + --warmup) is checked when tune/request.py resolves the request.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, BeforeValidator

from pgrig.request.fields import STRICT, flag_field
from pgrig.request.problems import Refusal
from pgrig.request.vocabulary import NAME_MAX, valid_name

__all__ = ["TuneRequest"]


# a search that could not end: 10,000 trials of the shortest run a tune takes is days
MAX_TRIALS = 10_000
_MAX_TRIALS_WHY = ": a longer search cannot end (give --budget to bound it by time)"
# the confirmation and the ablation run on after the budget: 1,000 rounds of three or more
# configurations are as many runs as the longest search (--confirm-repeats 100000 was taken)
MAX_ROUNDS = 1_000
_MAX_ROUNDS_WHY = ": more rounds cannot end (the budget bounds only the search)"


def _none_is_empty(value: object) -> object:
    return [] if value is None else value


def _workload_given(value: list[str]) -> list[str]:
    if not value:
        raise Refusal("is required (e.g. --workload pgbench:tpcb)")
    return value


def _at_least(low: int, why: str = "") -> AfterValidator:
    def check(value: int) -> int:
        if value < low:
            raise Refusal(f"must be at least {low} (got {value}){why}")
        return value

    return AfterValidator(check)


def _at_most(high: int, why: str) -> AfterValidator:
    def check(value: int) -> int:
        if value > high:
            raise Refusal(f"must be at most {high:,} (got {value:,}){why}")
        return value

    return AfterValidator(check)


# a study's name as study files take one, the length of tune-ENV for the longest environment
# name: it names the search's journal file (tune/NAME.optuna.log: 'a/b' made a directory, 300
# characters failed on the file system after the study was recorded)
TUNE_NAME_MAX = NAME_MAX + len("tune-")


def _study_name(value: str) -> str:
    if not value.strip():
        raise Refusal("must not be empty (leave it out for tune-ENV)")
    if not valid_name(value, TUNE_NAME_MAX):
        raise Refusal(
            f"{value!r}: use letters, digits, '_', '.', '-' (at most {TUNE_NAME_MAX}, starting "
            "with a letter or digit)"
        )
    return value


def _none_or_more(value: int) -> int:
    if value < 0:
        raise Refusal(f"must be 0 (none) or more (got {value})")
    return value


class TuneRequest(BaseModel):
    """A tuning study as asked: the environment, the load of every run, the search, the
    confirmation and the ablation after it."""

    model_config = STRICT

    env_name: str = flag_field("ENV")
    workload: Annotated[
        list[str], BeforeValidator(_none_is_empty), AfterValidator(_workload_given)
    ] = flag_field("--workload", default_factory=list)
    trials: Annotated[int, _at_least(1), _at_most(MAX_TRIALS, _MAX_TRIALS_WHY)] = flag_field(
        "--trials", default=20
    )
    ablation_repeats: Annotated[
        int, AfterValidator(_none_or_more), _at_most(MAX_ROUNDS, _MAX_ROUNDS_WHY)
    ] = flag_field("--ablation-repeats", default=5)
    ablation_units: Annotated[int, _at_least(1)] = flag_field("--ablation-units", default=6)
    scale: Annotated[int, _at_least(1)] | None = flag_field("--scale", default=None)
    # TPC-H's data (tpch:power); its range is the dataset request's, checked when resolved
    scale_factor: float | None = flag_field("--scale-factor", default=None)
    # TPC-C's or CH-benCHmark's data; its range is the dataset request's, checked when resolved
    warehouses: int | None = flag_field("--warehouses", default=None)
    confirm_repeats: Annotated[
        int,
        _at_least(2, ": a verdict needs repeats on each side"),
        _at_most(MAX_ROUNDS, _MAX_ROUNDS_WHY),
    ] = flag_field("--confirm-repeats", default=4)
    preset: str | None = flag_field("--preset", default=None)
    # the search's time budget ("30m"): checked against one run's length when resolved
    budget: str | None = flag_field("--budget", default=None)
    objective: str = flag_field("--objective", default="tps")
    space: str = flag_field("--space", default="default")  # a space's name or a TOML file
    allow_unsafe: bool = flag_field("--allow-unsafe", default=False)
    # each run's load, checked as a run request's (tune/request.py)
    duration: str | None = flag_field("--duration", default="20s")  # None: to completion
    warmup: str = flag_field("--warmup", default="0")
    clients: int = flag_field("--clients", default=1)
    threads: int = flag_field("--threads", default=1)
    # CH-benCHmark's analytic streams beside the clients: checked as a run request's
    analytic_clients: int | None = flag_field("--analytic-clients", default=None)
    # the study's name (the CLI's default: tune-ENV)
    name: Annotated[str, AfterValidator(_study_name)] = flag_field("--name")
    database: str | None = flag_field("--db", default=None)
    seed: int = flag_field("--seed", default=0)
