"""The run's wait-event sources, chosen once: pg_stat_activity's rate and pg_wait_sampling.

open_sources() returns the extra Sampler sources (metrics/wait_sampler.py) and writes what it
chose, and why, to RunRecord.extra["wait_sampling"]: {"hz", "why", "pg_wait_sampling":
{"used", "version", "profile_period_ms", "samples_cpu"} or {"used": false, "reason"}}. The
insights' wait profile (insights/waits.py) reads it. A source that cannot be opened costs the
run nothing but its finer profile: the reason is recorded and the run goes on.
"""

from __future__ import annotations

from typing import Any

from pgrig.metrics import wait_sampler
from pgrig.provision.state.environment import Environment
from pgrig.record.documents import RunExtra, WaitSamplingDoc
from pgrig.request import RunRequest


def open_sources(
    env: Environment, conninfo: str, dbname: str, spec: RunRequest, extra: RunExtra
) -> list[Any]:
    hz, why = wait_sampler.choose_hz(spec.duration_s, spec.waits_hz)
    chosen: WaitSamplingDoc = {"hz": hz, "why": why}
    sources: list[Any] = []
    if hz > 1:
        sources.append(wait_sampler.WaitSampler(conninfo, dbname, hz))
    else:
        chosen["hz"] = 1.0  # the PostgreSQL sampler's own snapshot, once a second
    profile, found = wait_sampler.open_wait_sampling(conninfo, dbname, env.managed)
    chosen["pg_wait_sampling"] = found
    if profile is not None:
        sources.append(profile)
    else:
        chosen["why"] += f"; pg_stat_activity only: {found['reason']}"
    extra["wait_sampling"] = chosen
    return sources


def record_stats(extra: RunExtra, sources: list[Any]) -> None:
    """What the finer sampler cost and took (snapshots, CPU and round trip per snapshot)."""
    for source in sources:
        stats = getattr(source, "stats", None)
        if stats is not None and "wait_sampling" in extra:
            extra["wait_sampling"]["sampler"] = stats()
