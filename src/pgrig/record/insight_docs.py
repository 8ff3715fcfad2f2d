"""What a run collected for its insights: wait sources, plans topped up, RunRecord.insights."""

from __future__ import annotations

from typing_extensions import TypedDict

from pgrig.record.json_values import JsonValue

__all__ = [
    "AutovacuumDoc",
    "CheckpointsDoc",
    "InsightPart",
    "InsightsDoc",
    "LockWaitsDoc",
    "LogCount",
    "LogDigestDoc",
    "LogErrorsDoc",
    "LogExample",
    "LogExcerptDoc",
    "LogFirst",
    "LogInterval",
    "LogMessage",
    "LogWarningsDoc",
    "Misestimate",
    "MisestimateFlag",
    "PlanChangeWithin",
    "PlanDoc",
    "PlanSpan",
    "PlanStatement",
    "PlanTopUpDoc",
    "PlanTopUpScript",
    "PlansDoc",
    "PoolerLogDoc",
    "ServerLogDoc",
    "StatementDoc",
    "StatementsDoc",
    "TempFilesDoc",
    "WaitEvent",
    "WaitSamplerStats",
    "WaitSamplingDoc",
    "WaitSamplingFound",
    "WaitShares",
    "WaitsDoc",
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


class LogExcerptDoc(TypedDict, total=False):
    """What a server (or pooler) wrote during the run and what its kept excerpt holds
    (insights/log_excerpt.py LogExcerpt.summary): bytes, and records by kind."""

    written_bytes: int
    kept_bytes: int
    records: dict[str, int]
    dropped: dict[str, int]
    dropped_bytes: int


class ServerLogDoc(LogExcerptDoc, total=False):
    """extra["server_log"]: the run's part of the server log (load/core/server_log_follow.py)."""

    server_file_cut_bytes: int
    problems: list[str]


class PoolerLogDoc(LogExcerptDoc, total=False):
    """extra["pooler"]["log"]: the run's part of the pooler's log (load/core/pooler_log.py)."""

    collected: bool
    where: str  # "here", or the pooler's host
    reason: str
    truncated: bool
    cut: str  # why the log was not read to its end


# --- the four parts (insights/*.py): each an InsightPart with its own keys -------------------


class StatementDoc(TypedDict, total=False):
    """One of the run's top statements by time (insights/statements.py summarize); the counters
    are those the server's pg_stat_statements has (statements.METRICS)."""

    queryid: str
    toplevel: bool
    text: str
    calls: int
    total_ms: float
    mean_ms: float
    share_pct: float | None
    hit_ratio: float | None
    plan_ms: float
    rows: int
    shared_blks_hit: int
    shared_blks_read: int
    shared_blks_dirtied: int
    shared_blks_written: int
    temp_blks_read: int
    temp_blks_written: int
    blk_read_ms: float
    blk_write_ms: float
    wal_records: int
    wal_fpi: int
    wal_bytes: int
    wal_buffers_full: int
    jit_functions: int
    jit_generation_ms: float
    jit_inlining_ms: float
    jit_optimization_ms: float
    jit_emission_ms: float


class StatementsDoc(InsightPart, total=False):
    """insights["statements"]: pg_stat_statements over the measured window."""

    source: str
    window_s: float | None
    statements: int
    calls: int
    total_ms: float
    calls_per_s: float | None
    top: list[StatementDoc]
    snapshots_span_s: float
    notes: list[str]


class Misestimate(TypedDict, total=False):
    """A plan node whose estimated and actual rows differ (insights/plans.py misestimates)."""

    node: str
    node_type: str | None
    relation: str | None
    index: str | None
    estimated_rows: float
    actual_rows: float
    loops: int
    factor: float
    direction: str  # over | under


class PlanDoc(TypedDict, total=False):
    """One plan of a statement, as auto_explain logged it (insights/plans.py)."""

    hash: str
    samples: int
    first_t: float | None
    last_t: float | None
    mean_ms: float | None
    max_ms: float
    outline: list[str]
    misestimate_samples: int
    misestimates: list[Misestimate]
    plan: dict[str, JsonValue] | None  # EXPLAIN (FORMAT JSON)'s plan: PostgreSQL's keys


class PlanStatement(TypedDict, total=False):
    """A statement with its plans."""

    fingerprint: str
    text: str
    function: str | None
    samples: int
    top_up_samples: int
    sampled_ms: float
    plans: list[PlanDoc]


class MisestimateFlag(Misestimate, total=False):
    """A misestimated node with its statement and plan (insights/plans.py flag_list)."""

    fingerprint: str
    text: str
    function: str | None
    hash: str
    samples: int
    misestimate_samples: int


class PlanSpan(TypedDict, total=False):
    hash: str
    samples: int
    first_t: float | None
    last_t: float | None
    outline: list[str]


class PlanChangeWithin(TypedDict, total=False):
    """A statement seen with more than one plan during the run (plans.changes_within)."""

    fingerprint: str
    text: str
    pattern: str  # switched | alternating
    plans: list[PlanSpan]


class PlansDoc(InsightPart, total=False):
    """insights["plans"]: the plans auto_explain logged during the run."""

    samples: int
    top_up_samples: int
    skipped: dict[str, int]
    statements: list[PlanStatement]
    misestimates: list[MisestimateFlag]
    changes: list[PlanChangeWithin]
    # how pgrig set auto_explain's sample rate (insights/collector.py _sampling_doc)
    sampling: dict[str, JsonValue]
    top_up: PlanTopUpDoc


class LogExample(TypedDict, total=False):
    t: float | None  # seconds from the window's start
    text: str


class LogCount(TypedDict, total=False):
    """A count and the first examples of one kind of message (insights/log_digest.py)."""

    count: int
    examples: list[LogExample]


class LogFirst(TypedDict, total=False):
    t: float | None
    severity: str
    text: str


class LogMessage(TypedDict, total=False):
    message: str  # masked: numbers and literals out
    count: int
    first: LogFirst | None


class LogInterval(TypedDict, total=False):
    first_t: float | None
    last_t: float | None


class CheckpointsDoc(LogCount, total=False):
    requested: int
    timed: int
    by_reason: dict[str, int]
    completed: int
    buffers_written: int
    seconds: float


class AutovacuumDoc(TypedDict, total=False):
    vacuum: int
    analyze: int
    tables: dict[str, dict[str, int]]
    examples: list[LogExample]


class LogErrorsDoc(TypedDict, total=False):
    count: int
    by_severity: dict[str, int]
    messages: list[LogMessage]


class LockWaitsDoc(LogCount, total=False):
    by_lock: dict[str, int]
    acquired: int


class TempFilesDoc(LogCount, total=False):
    bytes: int
    max_bytes: int


class LogWarningsDoc(TypedDict, total=False):
    count: int
    messages: list[LogMessage]


class LogDigestDoc(InsightPart, total=False):
    """insights["log_digest"]: what the server logged during the run (insights/log_digest.py)."""

    records: int
    interval: LogInterval
    checkpoint_warnings: LogCount
    checkpoints: CheckpointsDoc
    autovacuum: AutovacuumDoc
    errors: LogErrorsDoc
    deadlocks: LogCount
    lock_waits: LockWaitsDoc
    temp_files: TempFilesDoc
    warnings: LogWarningsDoc


class WaitEvent(TypedDict, total=False):
    """One wait event's share of active time, with its bounds (insights/waits.py)."""

    event: str  # "LWLock:WALWrite", or "CPU": active with no wait event
    type: str
    seen: int
    share_pct: float
    low_pct: float
    high_pct: float
    effective_n: float


class WaitShares(InsightPart, total=False):
    """Shares of active (or waiting) time by wait event from one source."""

    source: str
    of: str  # active time | waiting time
    seconds: int
    samples: int
    active_seen: int
    bounds: str
    events: list[WaitEvent]
    by_type: dict[str, float]
    note: str
    why: str


class WaitsDoc(WaitShares, total=False):
    """insights["waits"]: pg_stat_activity's shares, pg_wait_sampling's beside them."""

    pg_wait_sampling: WaitShares


class InsightsDoc(TypedDict, total=False):
    """RunRecord.insights (insights/collector.py); {} when not collected. Each part holds
    `collected` and, when it was not, `reason`; the rest is the part's own (insights/*.py)."""

    statements: StatementsDoc
    plans: PlansDoc
    log_digest: LogDigestDoc
    waits: WaitsDoc
    notes: list[str]
