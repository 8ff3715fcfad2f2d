"""What pgrig itself took from a run over its load (load/core/harness_meter.py): harness_cost."""

from __future__ import annotations

from typing_extensions import TypedDict

__all__ = [
    "HarnessCostDoc",
    "HarnessLoadHost",
]


class HarnessLoadHost(TypedDict, total=False):
    """A load host's agent over the load (load/remote/remote_agent.py)."""

    cpu_s: float | None  # the agent's own process, pgbench not included
    cpus: int | None


class HarnessCostDoc(TypedDict, total=False):
    """extra["harness_cost"]: what pgrig took from the run over its load's span (from just
    before the load generator started to its end). CPU in seconds (/proc utime + stime)."""

    span_s: float
    cpus: int | None  # this machine's logical CPUs
    pgrig_cpu_s: float | None  # pgrig's own processes here, without the load generator
    pgrig_processes: int
    # pgrig's own process (every thread, getrusage): how often its threads slept and woke
    # (voluntary switches) and were preempted (involuntary) over the span; on a saturated
    # machine each wake-up can displace the load or a backend, a cost CPU-s do not show
    pgrig_wakeups: int | None
    pgrig_preempted: int | None
    backends_cpu_s: float | None  # the server backends of pgrig's sessions, by pid
    backends: int
    backends_reason: str | None  # why they were not measured (server on another host...)
    load_hosts: dict[str, HarnessLoadHost]  # host -> its agent's CPU
    plans: int | None  # plans auto_explain wrote to the server log during the run
    log_bytes: int | None  # what the server wrote to its log during the run
    log_reason: str | None  # why plans and log bytes are unknown
