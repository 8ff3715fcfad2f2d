"""The declared shape of a run record's JSON documents: RunRecord.extra, and where the others are.

The archive keeps them as JSON (columns and blobs), so records archived by older versions may
lack any key: every document is `total=False`, and a reader handles a missing key. Writers
and readers (views, reports, the web, analysis) are checked by mypy against these keys: a new
key is declared first (RunExtra here, its sub-document in the *_docs.py module of its theme),
with what it holds, then written by one module and read by all. Every document is imported from
here. What stays `dict[str, Any]` says why beside it: a parser's dataclass (asdict) declares its
own fields.
"""

from __future__ import annotations

import math
from typing import Any

from typing_extensions import TypedDict

from pgrig.record.backup_docs import BackupDoc, DuringDoc, DuringLoad, RowCount, VerifyDoc
from pgrig.record.connection_docs import (
    BackendEnded,
    ConnectionDoc,
    NetworkDoc,
    NetworkPath,
    PoolerDoc,
    PrewarmDoc,
    ReplicaDoc,
    ReplicaLag,
    RttDoc,
    TargetsDoc,
    TargetServer,
    TopologyDoc,
)
from pgrig.record.dataset_docs import DatasetDoc, TpchTableLoad
from pgrig.record.harness_docs import HarnessCostDoc, HarnessLoadHost
from pgrig.record.host_docs import (
    CheckStatus,
    DataMount,
    DiskDeviceDoc,
    DiskLimitDoc,
    HostCheck,
    HostDoc,
)
from pgrig.record.insight_docs import (
    AutovacuumDoc,
    CheckpointsDoc,
    InsightPart,
    InsightsDoc,
    LockWaitsDoc,
    LogCount,
    LogDigestDoc,
    LogErrorsDoc,
    LogExample,
    LogExcerptDoc,
    LogFirst,
    LogInterval,
    LogMessage,
    LogWarningsDoc,
    Misestimate,
    MisestimateFlag,
    PlanChangeWithin,
    PlanDoc,
    PlansDoc,
    PlanSpan,
    PlanStatement,
    PlanTopUpDoc,
    PlanTopUpScript,
    PoolerLogDoc,
    ServerLogDoc,
    StatementDoc,
    StatementsDoc,
    TempFilesDoc,
    WaitEvent,
    WaitSamplerStats,
    WaitSamplingDoc,
    WaitSamplingFound,
    WaitsDoc,
    WaitShares,
)
from pgrig.record.load_host_docs import ClockDoc, GeneratorDoc, LoadDoc, LoadHost, LoadShare
from pgrig.record.result_docs import (
    ChangePointDoc,
    CrosscheckDoc,
    FiguresFromDoc,
    LatencyBasisDoc,
    LoadEngineDoc,
    PercentileCheck,
    StabilityDoc,
    TpccDoc,
    TpccType,
    TxlogDoc,
    TxlogModeDoc,
    WindowDoc,
)
from pgrig.record.stream_docs import (
    ChbenchDoc,
    ChbenchQuery,
    ChbenchQueryRow,
    ChbenchStreamError,
    StreamEvent,
    TpchDoc,
    TpchTestDoc,
)
from pgrig.record.study_docs import (
    AblationDoc,
    AblationUnit,
    BestTrial,
    ConfirmLook,
    DestroyedDoc,
    SpaceKnobDoc,
    StudyExtra,
    TrialDoc,
)

__all__ = [
    "AblationDoc",
    "AblationUnit",
    "AutovacuumDoc",
    "BackendEnded",
    "BackupDoc",
    "BestTrial",
    "ChangePointDoc",
    "ChbenchDoc",
    "ChbenchQuery",
    "ChbenchQueryRow",
    "ChbenchStreamError",
    "CheckStatus",
    "CheckpointsDoc",
    "ClockDoc",
    "ConfirmLook",
    "ConnectionDoc",
    "CrosscheckDoc",
    "DataMount",
    "DatasetDoc",
    "DestroyedDoc",
    "DiskDeviceDoc",
    "DiskLimitDoc",
    "DuringDoc",
    "DuringLoad",
    "FiguresFromDoc",
    "ForcedChange",
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
    "NetworkDoc",
    "NetworkPath",
    "PercentileCheck",
    "PlanChangeWithin",
    "PlanDoc",
    "PlanSpan",
    "PlanStatement",
    "PlanTopUpDoc",
    "PlanTopUpScript",
    "PlansDoc",
    "PoolerDoc",
    "PoolerLogDoc",
    "PrewarmDoc",
    "ReplicaDoc",
    "ReplicaLag",
    "RowCount",
    "RttDoc",
    "RunExtra",
    "RunWarning",
    "ServerLogDoc",
    "SettingDoc",
    "SpaceKnobDoc",
    "StabilityDoc",
    "StatementDoc",
    "StatementsDoc",
    "StreamEvent",
    "StudyExtra",
    "TargetServer",
    "TargetsDoc",
    "TempFilesDoc",
    "TopologyDoc",
    "TpccDoc",
    "TpccType",
    "TpchDoc",
    "TpchTableLoad",
    "TpchTestDoc",
    "TrialDoc",
    "TxlogDoc",
    "TxlogModeDoc",
    "VerifyDoc",
    "WaitEvent",
    "WaitSamplerStats",
    "WaitSamplingDoc",
    "WaitSamplingFound",
    "WaitShares",
    "WaitsDoc",
    "WindowDoc",
]


class SettingDoc(TypedDict, total=False):
    """One row of pg_settings as a run records it (RunRecord.settings[name];
    metrics/pg_snapshot.SETTING_FIELDS): PostgreSQL's text columns."""

    setting: str | None
    unit: str | None
    boot_val: str | None
    reset_val: str | None
    source: str | None
    context: str | None
    vartype: str | None


class RunWarning(TypedDict):
    """What may make a run's numbers misleading (`busy_host`, ...): RunRecord.warnings()."""

    code: str
    message: str


# how a forced disk limit change is said (cli env set): unlike settings, which a study puts
# back before its next run, it lasts: runs before and after it ran on different disks
DISK_LIMIT_CHANGE = "disk limit set to"


class ForcedChange(TypedDict):
    """A change forced on the run's environment while it ran (`env set ... --force`, a
    restart...): an event of the run (load/core/run_steps.py forced_changes), said in its
    `changed_under_run` warning too."""

    after_s: float  # seconds after the run started; < 0: before, during its set-up
    command: str  # "env set --force"
    change: str  # in words: "disk limit set to riops=500,wbps=10MB", "server restarted"


def forced_after_s(at: float, start: float) -> float:
    """A ForcedChange's after_s, to 0.1 s: a change before the run's start stays negative
    (rounded down), so it is never said '-0 s after it started' nor taken for one during it."""
    delta = at - start
    return math.floor(delta * 10) / 10 if delta < 0 else round(delta, 1)


def forced_during_setup(after_s: float) -> bool:
    """A change forced before the run started (while it took the environment and read its
    settings); -0.0 too, as records stored a change a few ms before the start."""
    return math.copysign(1.0, after_s) < 0


def forced_when(after_s: float) -> str:
    """When a forced change came, in words: 'during its set-up' or 'at 5.2 s'."""
    return "during its set-up" if forced_during_setup(after_s) else f"at {after_s:g} s"


class RunExtra(TypedDict, total=False):
    """RunRecord.extra: what a run records beside its columns, by the module that writes it."""

    warnings: list[RunWarning]  # RunRecord.add_warning
    changed_under_run: list[ForcedChange]  # load/core/run_steps.py forced_changes
    pgrig_version: str  # the pgrig that ran it
    # what `db generate` recorded for the database (workloads/datasets.py, DatasetDoc)
    dataset: DatasetDoc | None
    # the host the server runs on, for an environment pgrig made there (`env create --on`;
    # load/core/runner.py): the run's record is managed, its server not on this machine
    server_on: str
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
    # TPC-H's run (load/engines/tpch_driver.py, workloads/tpch/metrics.summarize)
    tpch: TpchDoc
    # CH-benCHmark's analytic side (load/engines/chbench_driver.py, workloads/chbench/metrics
    # .summarize): every query with its status and times, queries per hour, per query
    chbench: ChbenchDoc
    cpu_steal: float  # % of the window the hypervisor took (/proc/stat)
    # CPU per process group (metrics/cpu_share.py): "<group>_cpu_pct_core" for pgbench,
    # server, pooler, pgrig and other; client_share_pct, cpus, other_cpu_pct_host
    cpu_share: dict[str, float]
    load_engine: LoadEngineDoc
    figures_from: FiguresFromDoc
    # wait events (load/core/run_scaffold.py): the sources chosen, their rate and cost
    wait_sampling: WaitSamplingDoc
    plan_top_up: PlanTopUpDoc
    # the server log during the run: written, kept, left out (load/core/server_log_follow.py)
    server_log: ServerLogDoc
    # what pgrig itself took from the run (load/core/harness_meter.py)
    harness_cost: HarnessCostDoc
    # the run's backends left on its servers after the client ended, terminated
    # (load/core/left_backends.py)
    backends_ended: list[BackendEnded]
    # several hosts (load/core/multi_runner.py, load/remote/host_samplers.py)
    load: LoadDoc
    load_error: str
    host_roles: dict[str, list[str]]  # host -> its roles in the run (db, load, pooler)
    host_sampler_errors: dict[str, str]
    # operations (load/backup/backup_run.py, load/backup/backup_during.py)
    backup: BackupDoc
    during: DuringDoc
