"""The tables of a study file, declared: what each key takes, checked before anything runs.

study/spec.py validates the file's text through `StudyFile` (every table's keys, types, ranges
and own rules, each problem with its key path in the style of the run request:
`iterations[1].settings.shared_buffers: expected a string, number or boolean (got [1])`),
then joins the tables (environments to iterations, the [run] table to each point: the
request's rules) into a StudySpec. [run] is request.LoadParams (spec.StudyRun), [dataset] is
request.DatasetRequest (spec.DatasetSpec) and `pooler` is request.PoolerRequest: the same
models the CLI builds from flags.
"""

from __future__ import annotations

import difflib
from typing import Annotated, Literal, Self

from pydantic import AfterValidator, BaseModel, BeforeValidator, Field, model_validator

from pgrig.request.environment import Replicas, SyncMode, Version, check_topology
from pgrig.request.fields import STRICT
from pgrig.request.pooler import PoolerRequest
from pgrig.request.problems import Refusal
from pgrig.request.tables import NonEmptyList, SettingName, Settings, one_per_setting
from pgrig.request.values import number_text

__all__ = [
    "ACTIONS",
    "ORDERS",
    "Actions",
    "EnvironmentTable",
    "IterationTable",
    "StudyFile",
    "StudyTable",
    "SweepTable",
]

ACTIONS = ("restart", "checkpoint", "vacuum", "analyze", "prewarm", "regenerate")
ORDERS = ("sequential", "interleaved")


def _fraction(what: str) -> AfterValidator:
    def check(value: float) -> float:
        if not 0 < value < 1:
            raise Refusal(f"must be {what}, between 0 and 1 (got {number_text(value)})")
        return float(value)

    return AfterValidator(check)


def _repeats(value: int) -> int:
    from pgrig.request.load import MAX_REPEATS

    if value > MAX_REPEATS:
        raise Refusal(
            f"{value} is more than {MAX_REPEATS}: more repeats of one point resolve nothing "
            "more on one machine"
        )
    return value


def _tag(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise Refusal(f"expected a string (got {value!r})")
    return str(value)


def _action(value: object) -> str:
    if not isinstance(value, str) or value not in ACTIONS:
        close = difflib.get_close_matches(str(value), ACTIONS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise Refusal(f"unknown action {value!r}{hint}; known: {', '.join(ACTIONS)}")
    return value


def _one_or_list(value: object) -> object:
    return [value] if isinstance(value, str) else value


def _as_tuple(value: object) -> object:
    """One action or a list of them (TOML has lists; the model keeps a tuple)."""
    if isinstance(value, str):
        return (value,)
    return tuple(value) if isinstance(value, list) else value


# actions in order, each checked (`iterations[0].actions[1]: unknown action 'reboot'`)
Actions = Annotated[
    tuple[Annotated[str, BeforeValidator(_action)], ...], BeforeValidator(_as_tuple)
]
Tags = dict[str, Annotated[str, BeforeValidator(_tag)]]


class StudyTable(BaseModel):
    """[study]: the name, how many repeats, the comparison's threshold and error rate."""

    model_config = STRICT

    name: str | None = None
    description: str | None = None
    repeats: Annotated[int, Field(ge=1), AfterValidator(_repeats)] = 3
    order: Literal["sequential", "interleaved"] = "sequential"
    threshold: Annotated[float, _fraction("a fraction such as 0.02 (2%)")] = 0.02
    misrate: Annotated[float, _fraction("a probability such as 0.05")] = 0.05
    on_failure: Literal["continue", "stop"] = "continue"
    tags: Tags = Field(default_factory=dict)


class EnvironmentTable(BaseModel):
    """[environment] or [environments.<key>]: a server the study creates, or one that exists."""

    model_config = STRICT

    name: str | None = None  # an existing pgrig environment (or the name of the created one)
    # version, replicas and sync: the environment request's rules (request/environment.py),
    # said at this table's keys in the words `env create` says them at its flags
    version: Version | None = None
    profile: str | None = None
    settings: Settings = Field(default_factory=dict)  # the study's base settings layer
    create: bool = True
    pooler: PoolerRequest | None = None  # required when runs go through pgbouncer
    replicas: Replicas = 0
    sync: SyncMode = "off"

    @model_validator(mode="after")
    def _rules(self) -> Self:
        if self.name is None and self.version is None:
            raise Refusal(
                "is required (or give name = an existing pgrig environment)", field="version"
            )
        if self.name is None and not self.create:
            raise Refusal("is required when create = false", field="name")
        check_topology(self.replicas, self.sync)
        return self


def _settings_names(value: object) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(r, str) for r in value):
        raise Refusal("expected a list of setting names")
    return value


class IterationTable(BaseModel):
    """One [[iterations]] table: settings changed from the previous iteration, actions once,
    run parameters changed (sticky), another environment (sticky)."""

    model_config = STRICT

    name: str | None = None
    note: str | None = None
    settings: Settings = Field(default_factory=dict)
    # settings dropped from the study layer (back to the profile's)
    reset: Annotated[list[SettingName], BeforeValidator(_settings_names)] = Field(
        default_factory=list
    )
    actions: Actions = ()
    environment: str | None = None
    run: dict[str, object] = Field(default_factory=dict)  # checked as [run] is, with its changes

    @model_validator(mode="after")
    def _rules(self) -> Self:
        both = [r for r in self.reset if r in self.settings]
        if both:
            raise Refusal(f"{both[0]!r} is also set in settings", field="reset")
        return self


class SweepTable(BaseModel):
    """[sweep]: the values of each swept dimension (run parameters, settings, versions,
    environments) and how the charts and the report lay them out."""

    model_config = STRICT

    clients: NonEmptyList | None = None
    threads: NonEmptyList | None = None
    rate: NonEmptyList | None = None
    workload: NonEmptyList | None = None
    via: NonEmptyList | None = None
    protocol: NonEmptyList | None = None
    connect: NonEmptyList | None = None
    server_cpus: NonEmptyList | None = None
    client_cpus: NonEmptyList | None = None
    settings: Annotated[dict[SettingName, NonEmptyList], BeforeValidator(one_per_setting)] = Field(
        default_factory=dict
    )
    version: list[Version] | None = None
    environment: NonEmptyList | None = None
    compare: str | None = None  # the axis the report compares along
    x: str | None = None  # the dimension on the x axis of the charts
    series: Annotated[list[str], BeforeValidator(_one_or_list)] | None = None

    @model_validator(mode="after")
    def _rules(self) -> Self:
        if self.version is not None and not self.version:
            raise Refusal("expected a non-empty list of values", field="version")
        if self.version is not None and self.environment is not None:
            raise Refusal("sweep over version or environment, not both", field="version")
        return self


class StudyFile(BaseModel):
    """A whole study file: its tables, each checked by its model ([dataset] and [run] are
    checked by spec.py against the request models, where the study's own keys are mapped)."""

    model_config = STRICT

    study: StudyTable = Field(default_factory=StudyTable)
    environment: EnvironmentTable | None = None
    environments: dict[str, EnvironmentTable] | None = None
    dataset: dict[str, object] = Field(default_factory=dict)
    run: dict[str, object] = Field(default_factory=dict)
    iterations: list[IterationTable] | None = None
    sweep: SweepTable | None = None
