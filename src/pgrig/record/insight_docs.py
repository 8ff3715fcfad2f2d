"""What a run collected for its insights: wait sources, plans topped up, RunRecord.insights."""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict

__all__ = [
    "InsightPart",
    "InsightsDoc",
    "PlanTopUpDoc",
    "PlanTopUpScript",
    "WaitSamplerStats",
    "WaitSamplingDoc",
    "WaitSamplingFound",
]


class WaitSamplingFound(TypedDict, total=False):
    """pg_wait_sampling's profile: used, or why not (metrics/wait_sampler.py)."""

    used: bool
    reason: str
    version: str | None
    profile_period_ms: int | None
    samples_cpu: bool | None
    notes: list[str]  # what pgrig did to use it (CREATE EXTENSION)


class WaitSamplerStats(TypedDict, total=False):
    """What the 10 Hz sampler of pg_stat_activity took and cost (metrics/wait_sampler.py)."""

    hz: float
    snapshots: int
    missed_ticks: int
    cpu_ms_per_snapshot: float | None
    query_ms_per_snapshot: float | None
    error: str | None


class WaitSamplingDoc(TypedDict, total=False):
    """extra["wait_sampling"]: the wait-event sources chosen, their rate and cost."""

    hz: float
    why: str
    pg_wait_sampling: WaitSamplingFound
    sampler: WaitSamplerStats


class PlanTopUpScript(TypedDict, total=False):
    """One transaction type run alone after the window for its plans."""

    name: str
    transactions: int
    expected_plans: float
    ran: int
    error: str


# "from" is a keyword: the functional form
PlanTopUpDoc = TypedDict(
    "PlanTopUpDoc",
    {
        "why": str,
        "from": float,  # epoch seconds: when the top-up started
        "to": float,  # and ended
        "scripts": list[PlanTopUpScript],
    },
    total=False,
)
"""extra["plan_top_up"]: plans collected after the run (load/core/plan_top_up.py)."""


class InsightPart(TypedDict, total=False):
    """One part of the insights: collected, or the reason it was not."""

    collected: bool
    reason: str


class InsightsDoc(TypedDict, total=False):
    """RunRecord.insights (insights/collector.py); {} when not collected. Each part holds
    `collected` and, when it was not, `reason`; the rest is the part's own (insights/*.py)."""

    statements: dict[str, Any]
    plans: dict[str, Any]
    log_digest: dict[str, Any]
    waits: dict[str, Any]
    notes: list[str]
