"""A run's load from several hosts (load/core/multi_runner.py): the split, each host's figures."""

from __future__ import annotations

from typing_extensions import TypedDict

__all__ = [
    "ClockDoc",
    "GeneratorDoc",
    "LoadDoc",
    "LoadHost",
    "LoadShare",
]


class LoadShare(TypedDict, total=False):
    """One load host's share of the clients, threads and rate (load/remote/split.py)."""

    host: str
    clients: int
    threads: int
    rate: float | None


class ClockDoc(TypedDict, total=False):
    """A load host's clock against this machine's (analysis/txlog_merge.ClockOffset)."""

    offset_ms: float
    error_ms: float
    rtt_ms: float
    samples: int


class GeneratorDoc(TypedDict, total=False):
    """What one load host's log gave the merge (analysis/txlog_merge.py)."""

    lines: int | None
    transactions: int | None
    failed: int | None
    skipped: int | None
    first_start_us: int | None
    first_end_us: int | None
    last_end_us: int | None


class LoadHost(TypedDict, total=False):
    """One load host over the run (load/remote/multi_load.py)."""

    clock: ClockDoc | None
    launch_delay_ms: float | None
    exit_code: int | None
    lost: str | None  # why its session ended before the agent said goodbye
    log_bytes_compressed: int
    ncpu: int | None
    generator: GeneratorDoc | None


class LoadDoc(TypedDict, total=False):
    """extra["load"]: the split of the load over the hosts, and each host's figures."""

    split: list[LoadShare]
    rule: str  # where the split is defined
    hosts: dict[str, LoadHost]
    start_skew_ms: float
    first_tx_skew_ms: float | None
    start_at_us: int | None
    saturated: dict[str, float]  # host -> % busy in the window (load_host_saturated)
