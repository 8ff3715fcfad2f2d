"""The declared shape of a run record's JSON documents: `extra`, `host` and `insights`.

The archive keeps them as JSON (columns and blobs), so records archived by older versions may
lack any key: every document is `total=False`, and a reader handles a missing key. Writers
and readers (views, reports, the web, analysis) are checked by mypy against these keys: a new
key is declared here first, with what it holds, then written by one module and read by all.
Sub-documents are declared here too (total=False as well). What stays `dict[str, Any]` says
why beside it: a parser's dataclass (asdict) declares its own fields, and `db generate`'s
record has each scenario's keys.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

__all__ = [
    "BackupDoc",
    "ChangePointDoc",
    "CheckStatus",
    "ClockDoc",
    "ConnectionDoc",
    "CrosscheckDoc",
    "DataMount",
    "DiskDeviceDoc",
    "DiskLimitDoc",
    "DuringDoc",
    "DuringLoad",
    "FiguresFromDoc",
    "GeneratorDoc",
    "HarnessCostDoc",
    "HarnessLoadHost",
    "HostCheck",
    "HostDoc",
    "InsightPart",
    "InsightsDoc",
    "LatencyBasisDoc",
    "LoadDoc",
    "LoadEngineDoc",
    "LoadHost",
    "LoadShare",
    "NetworkDoc",
    "NetworkPath",
    "PercentileCheck",
    "PlanTopUpDoc",
    "PlanTopUpScript",
    "PoolerDoc",
    "PrewarmDoc",
    "ReplicaDoc",
    "ReplicaLag",
    "RowCount",
    "RunExtra",
    "RunWarning",
    "StabilityDoc",
    "TargetServer",
    "TargetsDoc",
    "TopologyDoc",
    "TpccDoc",
    "TpccType",
    "TxlogDoc",
    "TxlogModeDoc",
    "VerifyDoc",
    "WaitSamplerStats",
    "WaitSamplingDoc",
    "WaitSamplingFound",
    "WindowDoc",
]

CheckStatus = Literal["ok", "warn", "unavailable"]


class RunWarning(TypedDict):
    """What may make a run's numbers misleading (`busy_host`, ...): RunRecord.warnings()."""

    code: str
    message: str


class HostCheck(TypedDict, total=False):
    """One host check at the start of a run (machine/checks.py)."""

    name: str
    value: Any  # what was found (a number, a word, a list of CPUs)
    recommended: Any
    status: CheckStatus
    why: str


class DataMount(TypedDict, total=False):
    """The filesystem of the data directory (machine/facts.mount_of); unknown facts are None."""

    path: str
    fs_type: str | None
    mount_point: str | None
    device: str | None
    mount_options: str | None
    disk_total_bytes: int | None
    disk_free_bytes: int | None


class DiskDeviceDoc(TypedDict, total=False):
    """One disk under a disk limit: what it holds and what its throttle files held."""

    device: str  # "254:0"
    name: str  # "vda"
    holds: list[str]  # "data directory", "WAL"
    in_force: dict[str, int]  # the limits read back (keys as in `limit`)


class DiskLimitDoc(TypedDict, total=False):
    """RunRecord.disk_limit: the environment's disk limit at the start of the run and what
    the kernel held of it (provision/server/disk_throttle.in_force). None on the record: not
    recorded (runs before schema revision 0005, or servers pgrig does not run here)."""

    limit: dict[str, int]  # riops, wiops, rbps, wbps; {}: no limit
    text: str  # "wiops=300,wbps=50MB" or "none"
    in_force: bool | None  # all of it held by the kernel (None: no limit)
    mechanism: str  # "cgroup v1 blkio throttle" | "cgroup v2 io.max"
    cgroup: str
    devices: list[DiskDeviceDoc]
    server_in_cgroup: bool
    processes_outside: int
    problems: list[str]  # why it is not in force
    reapplied_because: list[str]  # found not in force at the run's start, so put back first
    not_throttled: str  # what this mechanism does not limit


class HostDoc(TypedDict, total=False):
    """RunRecord.host: the machine the server ran on (machine/facts.py); unknown facts are None.

    A record read from a list (not the whole run) holds only hostname and cpus.
    """

    hostname: str | None
    cpu_model: str | None
    cpu_logical: int | None
    cpu_physical: int | None
    cpus_allowed: int | None
    cpus: int | None  # what a listed record keeps of the CPU facts
    ram_bytes: int | None
    swap_bytes: int | None
    vm_overcommit_memory: int | None
    kernel: str | None
    os_release: str | None
    arch: str | None
    python: str
    pgrig: str | None
    boot_time: float | None
    data: DataMount  # the data directory's mount
    checks: list[HostCheck]


# --- the connection path, its placement and the servers (load/core/runner.py, load/core/topology.py


class ConnectionDoc(TypedDict, total=False):
    """extra["connection"]: how pgbench reached the server."""

    via: str  # direct | pooler
    connect: str  # tcp | socket


class PoolerDoc(TypedDict, total=False):
    """extra["pooler"]: the pooler's configuration (provision/pooler/config.PoolerConfig's
    fields), its version, and its totals over the run (metrics/pooler_metrics.py)."""

    kind: str
    mode: str
    pool_size: int
    max_client_conn: int
    processes: int
    port: int
    user: str
    stats_user: str
    listen: str
    on: str
    auth_from: str
    version: str | None
    nofile: int
    target: str
    # processes, samples, then SHOW STATS' totals and peaks by their own names (xact_count,
    # wait_time_s, max_cl_waiting...), and last_error when the pooler stopped answering
    totals: dict[str, int | float | str]


# "from" is a keyword: the functional form
NetworkPath = TypedDict(
    "NetworkPath",
    {
        "from": str,  # the load host (localhost: this machine)
        "to": str | None,  # the server's address as the client named it
        "address": str | None,
        "loopback": bool | None,
        "kind": str | None,  # unix socket, loopback or network
        "samples": int,  # round trips measured
        "rtt_p50_ms": float,
        "rtt_p99_ms": float,
        "rtt_max_ms": float,
        "error": str,
    },
    total=False,
)


class NetworkDoc(TypedDict, total=False):
    """extra["network"]: the path from the load to the server (load/remote/network.py)."""

    paths: list[NetworkPath]  # one per load host


class ReplicaDoc(TypedDict, total=False):
    """One replica of the run's environment (provision/server/replicas.py)."""

    name: str
    on: str  # the host it runs on, when not this machine
    host: str
    port: int
    slot: str


class ReplicaLag(TypedDict, total=False):
    """One replica's lag over the run (metrics/replication_metrics.py)."""

    max_lag_bytes: int | None
    samples_not_streaming: int
    samples: int


class TopologyDoc(TypedDict, total=False):
    """extra["topology"]: the replicas at the start of the run, their lag over it."""

    sync: str  # off | on | remote_write | remote_apply
    replicas: list[ReplicaDoc]
    lag: dict[str, ReplicaLag]  # replica name -> its lag


class TargetServer(TypedDict, total=False):
    """What one target server committed while pgbench ran (load/core/topology.py)."""

    server: str
    transactions: int | None  # None: it could not be read after the run
    share: float | None
    tps: float | None


class TargetsDoc(TypedDict, total=False):
    """extra["targets"]: where the load went (--target replica | split)."""

    role: str | None
    seconds: float
    servers: list[TargetServer]


class PrewarmDoc(TypedDict, total=False):
    """extra["prewarm"]: what load/core/prewarm.py read into shared buffers, or why not."""

    relations: int
    blocks: int
    seconds: float
    skipped: str


# --- results (load/engines/results.py and the drivers) --------------------------------------------


class WindowDoc(TypedDict, total=False):
    """extra["window"]: where the measured window lay (analysis/window.py), for audits."""

    start_us: int  # the per-transaction log's clock
    end_us: int
    whole_seconds: int
    late_start_s: int
    source: str  # sysbench: its own window (--report-checkpoints)
    lead_in_s: int
    threads_started_after_s: float | None


class ChangePointDoc(TypedDict, total=False):
    """A level shift of a series (analysis/series.ChangePoint)."""

    t: float
    before: float
    after: float
    change_pct: float
    p: float


class StabilityDoc(TypedDict, total=False):
    """extra["stability"]: analysis.series.Stability.as_record() of the window's whole
    seconds; NaN is stored as None."""

    seconds: int
    n: int
    duration: float | None
    mean: float | None
    cv: float | None
    trend_pct_per_min: float | None
    trend_se_pct_per_min: float | None
    trend_p: float | None
    first_fifth_mean: float | None
    last_fifth_mean: float | None
    first_last_change_pct: float | None
    drift_flagged: bool
    reasons: list[str]
    change_points: list[ChangePointDoc]
    warmup_suggestion: float | None


class PercentileCheck(TypedDict, total=False):
    """sysbench's own percentile against the one read from its histogram."""

    percentile: float | None
    sysbench_ms: float | None
    from_histogram_ms: float | None
    agrees: bool
    hosts: dict[str, PercentileCheck]  # several load hosts: each one's own check


class LatencyBasisDoc(TypedDict, total=False):
    """extra["latency_basis"]: what the percentiles rest on (analysis/quantile_bounds.py)."""

    source: str
    samples: int
    population: int | None
    resolution: str
    bounds: dict[str, list[float | None]]  # "p95" -> [lower, upper] at `confidence`
    confidence: float
    rests_on: str  # the sentence every surface shows
    sample_max_ms: float | None  # a sampled log: the sample's max, a lower bound of the run's
    check: PercentileCheck  # sysbench


class TxlogDoc(TypedDict, total=False):
    """extra["txlog"]: the per-transaction log's reading (load/engines/txlog_follower.py)."""

    files: int
    bytes_read: int
    max_backlog_bytes: int
    hole_punching: bool
    lines: int
    late_lines: int


class TxlogModeDoc(TypedDict, total=False):
    """extra["txlog_mode"]: the log mode chosen and why (load/engines/txlog_mode.py)."""

    mode: str  # full | sampled | off
    sampling_rate: float | None
    expected_tps: float | None
    basis: str


class CrosscheckDoc(TypedDict, total=False):
    """extra["crosscheck"]: pgbench's summary disagreed with its log (engines/crosscheck.py)."""

    summary_transactions: int | None
    logged_lines: int | None


class FiguresFromDoc(TypedDict, total=False):
    """extra["figures_from"]: pgbench printed no summary, the figures come from its progress
    lines (load/engines/progress_totals.py)."""

    source: str
    transactions: int
    window_s: float
    tps: float | None
    latency_avg_ms: float | None
    latency_stddev_ms: float | None
    failed: int | None
    skipped: int | None
    retried: int | None
    lines: int


class TpccType(TypedDict, total=False):
    """One TPC-C transaction type's figures over the window (workloads/tpcc/metrics.py)."""

    transactions: int
    failed: int
    retried: int
    per_minute: float | None
    share_pct: float | None
    latency_ms: dict[str, float | None]  # LatencyStats.as_dict(): avg, stddev, p50...


class TpccDoc(TypedDict, total=False):
    """extra["tpcc"]: NOPM, TPM, rollbacks, the mix and per-type figures."""

    nopm: float | None
    tpm: float | None
    new_orders: int
    rollbacks: int
    rollback_pct: float | None
    transactions: int
    failures: int
    retried: int
    tpm_per_nopm: float | None
    mix_pct: dict[str, float | None]  # type -> its share of the transactions
    types: dict[str, TpccType]


class LoadEngineDoc(TypedDict, total=False):
    """extra["load_engine"]: the load engine and its version (load/engines/driver.py)."""

    name: str  # pgbench | sysbench
    version: str | None


# --- wait events and plans (load/core/wait_sources.py, load/core/plan_top_up.py) ------------------


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


# --- several hosts (load/core/multi_runner.py, load/remote/multi_load.py) -------------------------


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


# --- operations (load/backup/backup_run.py, load/backup/backup_during.py) -------------------------


class DuringLoad(TypedDict, total=False):
    """The load run measured during a backup."""

    id: int | None
    status: str
    workload: str
    clients: int
    threads: int
    duration_s: float | None
    tps: float | None
    avg_ms: float | None
    p95_ms: float | None
    p99_ms: float | None


class DuringDoc(TypedDict, total=False):
    """extra["during"] of a backup run with `--during`: the load beside it and the verdict
    against the same load without a backup."""

    load: DuringLoad
    baseline_runs: list[int | None]
    load_runs: list[int | None]
    backup_started_s: float | None  # from the start of the load's window
    overlap_s: float | None
    covered_fraction: float | None
    comparison: dict[str, dict[str, Any]]  # metric -> analysis.compare's Comparison.as_dict()


class RowCount(TypedDict, total=False):
    expected: int
    found: int


class VerifyDoc(TypedDict, total=False):
    """What the restored server showed (load/backup/backup_verify.py): row counts and pg_amcheck."""

    ok: bool
    problem: str | None
    counts: dict[str, RowCount]  # "<database>.<table>" -> expected and found rows
    counts_note: str  # why no row counts were checked (a backup that recorded no data)
    counts_s: float
    amcheck: str  # ok | failed | not available
    amcheck_s: float
    amcheck_error: str | None


class BackupDoc(TypedDict, total=False):
    """extra["backup"]: a backup's or a restore's figures, assembled by the backup tools'
    modules (provision/server/basebackup.py, pgbackrest.py, restore.py) and
    load/backup/backup_run.py. Sizes in bytes, durations in seconds."""

    tool: str  # pg_basebackup | pgbackrest | "restore (<tool>)"
    type: str  # full | incremental | diff | incr | restore
    name: str | None
    path: str
    parent: str | None  # the backup an incremental one builds on
    source_bytes: int  # the databases' size when the backup started
    wal_lsn_before: str
    wal_lsn_after: str
    wal_generated_bytes: int  # pg_stat_wal's wal_bytes grown (14+), else the LSN advance
    wal_generated_what: str  # which of the two, in words
    wal_lsn_advance_bytes: int  # with the padding of the segment switch the backup forces
    duration_s: float | None
    bytes_written_before_failure: int
    start_lsn: str | None  # the backup's WAL range (backup_manifest, pgbackrest info)
    stop_lsn: str | None
    wal_bytes: int
    files: int  # files in the backup (backup_manifest)
    backup_bytes: int | None  # what the backup stores
    backup_wal_bytes: int
    copied_bytes: int | None  # what the tool read (pgBackRest's delta), uncompressed
    throughput_bytes_per_s: int
    compression_ratio: float
    size_ratio: float
    # pgBackRest's own (pgbackrest info)
    label: str | None
    pgbackrest_type: str | None
    database_bytes: int | None
    delta_bytes: int | None
    repository_bytes: int | None
    wal_start: str | None
    wal_stop: str | None
    tool_seconds: float | None
    # a restore (provision/server/restore.py): the backup restored and its chain
    backup: str
    chain: list[str]
    restore_method: str  # pg_combinebackup, or cp -a (a lone full backup before PostgreSQL 17)
    scratch: str  # the scratch server's data directory
    port: int
    restore_s: float  # the files
    start_s: float  # start and recovery until ready
    restore_total_s: float
    verify: VerifyDoc
    # load/backup/backup_run.py: the wall clock (ISO 8601, UTC)
    started_at: str
    ended_at: str


# --- what the harness itself cost (load/core/harness_meter.py, metrics/harness_cost.py) ----


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
    backends_cpu_s: float | None  # the server backends of pgrig's sessions, by pid
    backends: int
    backends_reason: str | None  # why they were not measured (server on another host...)
    load_hosts: dict[str, HarnessLoadHost]  # host -> its agent's CPU
    plans: int | None  # plans auto_explain wrote to the server log during the run
    log_bytes: int | None  # what the server wrote to its log during the run
    log_reason: str | None  # why plans and log bytes are unknown


class RunExtra(TypedDict, total=False):
    """RunRecord.extra: what a run records beside its columns, by the module that writes it."""

    warnings: list[RunWarning]  # RunRecord.add_warning
    pgrig_version: str  # the pgrig that ran it
    # what `db generate` recorded for the database (workloads/datasets.py): its keys are
    # each scenario's own (scale, warehouses, rows, tables...), read back from env's JSON file
    dataset: dict[str, Any] | None
    # the connection path and CPU placement (load/core/runner.py)
    connection: ConnectionDoc
    cpus: dict[str, str]  # side (server, client, pooler) -> the CPUs it was pinned to
    pooler: PoolerDoc
    network: NetworkDoc
    target_role: str
    targets: TargetsDoc
    topology: TopologyDoc
    restored_before_run: list[str]  # what load/core/guard.verify_live put back before the run
    prewarm: PrewarmDoc
    # results (load/engines/results.py and the drivers)
    window: WindowDoc
    stability: StabilityDoc
    latency_basis: LatencyBasisDoc
    # the parsers' own dataclasses (asdict): load/engines/pgbench_output.Summary,
    # load/engines/sysbench_output.Statistics and Checkpoint declare their fields
    pgbench_summary: dict[str, Any] | None
    sysbench_summary: dict[str, Any]
    sysbench_checkpoint: dict[str, Any]
    pgbench_launched_at: float
    txlog: TxlogDoc
    txlog_mode: TxlogModeDoc
    results_error: str  # why figures are missing
    crosscheck: CrosscheckDoc
    tpcc: TpccDoc
    cpu_steal: float  # % of the window the hypervisor took (/proc/stat)
    # CPU per process group (metrics/cpu_share.py): "<group>_cpu_pct_core" for pgbench,
    # server, pooler, pgrig and other; client_share_pct, cpus, other_cpu_pct_host
    cpu_share: dict[str, float]
    load_engine: LoadEngineDoc
    figures_from: FiguresFromDoc
    # wait events (load/core/wait_sources.py): the sources chosen, their rate and cost
    wait_sampling: WaitSamplingDoc
    plan_top_up: PlanTopUpDoc
    # the server log during the run: written, kept, left out (load/core/server_log_follow.py)
    server_log: dict[str, Any]
    # what pgrig itself took from the run (load/core/harness_meter.py)
    harness_cost: HarnessCostDoc
    # several hosts (load/core/multi_runner.py, load/remote/host_samplers.py)
    load: LoadDoc
    load_error: str
    host_roles: dict[str, list[str]]  # host -> its roles in the run (db, load, pooler)
    host_sampler_errors: dict[str, str]
    # operations (load/backup/backup_run.py, load/backup/backup_during.py)
    backup: BackupDoc
    during: DuringDoc


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
