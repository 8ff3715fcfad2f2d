"""Plain records exchanged with the archive. The archive stores them; it does not compute them.

Its JSON documents (extra, host, insights) are declared in documents.py.

Everything above the archive (the runner, studies, reports, web) speaks in these types, so the
storage back end (SQLite or PostgreSQL via SQLAlchemy) stays an implementation detail.

A run's load parameters are flat fields of RunRecord, named as in the run request
(pgrig.request.LoadParams), rather than an embedded request: the archive keeps them as plain
columns of `runs` (listable, filterable, no JSON to open for "clients = 8"), every reader
keeps writing `rec.clients`, and records of runs archived before a parameter existed read it
as None ("not recorded") instead of failing today's validation rules. The request stays the
one definition: the runner fills these fields with one call (`load_values(request)`), the
archive derives their columns from the model, and a unit test fails when a field of the model
has no field here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, cast

from pgrig.record.documents import (
    DiskLimitDoc,
    HostDoc,
    InsightsDoc,
    RunExtra,
    RunWarning,
    SettingDoc,
    StudyExtra,
)

RunStatus = Literal["running", "ok", "failed", "aborted", "lost"]

# The settings layers, lowest first: each overrides the ones before it. The one definition of
# their order: pgrig.conf is merged by it (provision/settings/config.py), a run records its
# layers under these keys (RunRecord.settings_layers; "base" is pgrig's fixed listen address,
# port and socket, not recorded), and every surface shows them in it.
SETTINGS_LAYERS = ("base", "insights", "topology", "profile", "environment", "run")


def settings_layer_order(lowest: str = "PostgreSQL defaults") -> str:
    """The order in words: "PostgreSQL defaults < insights < topology < ... < run"."""
    return " < ".join([lowest, *SETTINGS_LAYERS[1:]])


# One kind of a run's series, columnar: {column: [values]} ("t" first: seconds from the window's
# start), and all of them by kind (RunRecord.series)
SeriesColumns = dict[str, list[float | None]]
RunSeries = dict[str, SeriesColumns]

LATENCY_FIELDS = ("avg", "stddev", "p50", "p90", "p95", "p99", "p999", "max")


@dataclass
class LatencyStats:
    """Latency in milliseconds, measured from per-transaction logs (None: not measured)."""

    avg: float | None = None
    stddev: float | None = None
    p50: float | None = None
    p90: float | None = None
    p95: float | None = None
    p99: float | None = None
    p999: float | None = None
    max: float | None = None

    def as_dict(self) -> dict[str, float | None]:
        return {name: getattr(self, name) for name in LATENCY_FIELDS}


@dataclass
class ScriptResult:
    """Figures for one pgbench script (one transaction type) over the measured window."""

    script_no: int
    name: str
    weight: int = 1
    transactions: int = 0
    failed: int = 0
    retried: int = 0
    skipped: int = 0
    rollbacks: int = 0
    tps: float | None = None
    latency: LatencyStats = field(default_factory=LatencyStats)


@dataclass
class RunRecord:
    """One benchmark run, whatever its outcome. Aborted and failed runs are kept, never dropped.

    Series are columnar: series["pgbench"] = {"t": [...], "tps": [...], "p95": [...]}, where t
    is seconds relative to the start of the measured window (negative during the warm-up).
    Kinds: "pgbench" (throughput/latency), "os", "pg", "pooler".
    """

    env_name: str
    workload: str
    clients: int
    threads: int
    status: RunStatus = "running"
    error: str | None = None
    id: int | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    # study membership
    study: str | None = None
    study_point: str | None = None
    repeat: int = 0
    # target
    managed: bool = True  # pgrig made the server (here, or on another host: extra.server_on)
    target: str | None = None  # masked DSN, never a password
    engine: str = "postgresql"
    server_version: str | None = None
    server_major: int | None = None
    pgbench_version: str | None = None
    database: str | None = None
    scenario: str | None = None  # pgbench, tpcc, tickets, custom
    scale: int | None = None  # pgbench scale or TPC-C warehouses
    db_size_bytes: int | None = None
    via: str = "direct"
    # load parameters (request.LoadParams; workload, clients, threads and via are above)
    duration_s: float | None = None
    transactions_per_client: int | None = None
    warmup_s: float = 0.0
    rate: float | None = None
    latency_limit_ms: float | None = None
    protocol: str = "simple"
    # None: not recorded (archived before schema revision 0002)
    max_tries: int | None = None
    connect: str | None = None
    server_cpus: str | None = None
    client_cpus: str | None = None
    defines: dict[str, str] | None = None  # -D as pgbench got them (the workload's own too)
    extra_pgbench_args: list[str] | None = None
    tpcc_mix: dict[str, int] | None = None
    all_warehouses: bool | None = None
    tpcc_stock_level: str | None = None
    keep_txlog: bool | None = None
    txlog: str | None = None  # full, sampled or off: the mode the run used (None: before 0004)
    command: str | None = None  # the exact pgbench command line
    note: str | None = None
    owner: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    # results over the measured window (None when not measured)
    measured_s: float | None = None
    tps: float | None = None
    transactions: int | None = None
    failed: int | None = None
    retried: int | None = None
    skipped: int | None = None
    rollbacks: int | None = None
    nopm: float | None = None
    tpm: float | None = None
    latency: LatencyStats = field(default_factory=LatencyStats)
    cpu_user: float | None = None
    cpu_system: float | None = None
    cpu_iowait: float | None = None
    cpu_idle: float | None = None
    hit_ratio: float | None = None
    scripts: list[ScriptResult] = field(default_factory=list)
    # context
    settings: dict[str, SettingDoc] = field(default_factory=dict)  # full pg_settings snapshot
    settings_layers: dict[str, dict[str, str]] = field(default_factory=dict)
    # the server's disk limit and what the kernel held of it (None: not recorded)
    disk_limit: DiskLimitDoc | None = None
    host: HostDoc = field(default_factory=lambda: HostDoc())
    series: RunSeries = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)  # name -> path
    extra: RunExtra = field(default_factory=lambda: RunExtra())
    # why: statements, plans, log_digest, waits (pgrig.insights); {} when not collected
    insights: InsightsDoc = field(default_factory=lambda: InsightsDoc())

    def data_scale(self) -> tuple[str, int | float] | None:
        """How much data the run ran on and what the number counts: ("scale", 10) for
        pgbench's data, ("warehouses", 4) for TPC-C's and CH-benCHmark's, ("SF", 0.01) for
        TPC-H's (its scale factor, in extra["tpch"]: `scale` holds whole numbers); None when
        the record has none. Every surface that says a run's data size reads it here."""
        if self.scale:
            return ("warehouses" if self.scenario in ("tpcc", "chbench") else "scale", self.scale)
        tpch = self.extra.get("tpch")
        sf = tpch.get("scale_factor") if isinstance(tpch, dict) else None
        if isinstance(sf, int | float) and not isinstance(sf, bool) and sf > 0:
            return ("SF", sf)
        return None

    def warnings(self) -> list[RunWarning]:
        """What may make this run's numbers misleading: [{"code", "message"}], in
        extra["warnings"] (the contract every surface reads: --json, web, reports)."""
        found: Any = self.extra.get("warnings")  # JSON from the archive: checked here
        if not isinstance(found, list):
            return []
        return [cast(RunWarning, w) for w in found if isinstance(w, dict)]

    def add_warning(self, code: str, message: str) -> None:
        """Record a warning; a second one with the same code replaces the first."""
        kept = [w for w in self.warnings() if w.get("code") != code]
        self.extra["warnings"] = [*kept, RunWarning(code=code, message=message)]

    def non_default_settings(self) -> dict[str, SettingDoc]:
        """Settings whose value differs from PostgreSQL's built-in default (boot_val)."""
        # "client"/"session" values (application_name, ...) belong to the sampling connection,
        # not to the server's configuration.
        ignored = (None, "default", "override", "client", "session")
        out = {}
        for name, s in self.settings.items():
            if s.get("source") not in ignored and str(s.get("setting")) != str(s.get("boot_val")):
                out[name] = s
        return out


@dataclass
class RunFilter:
    """Filters for listing runs; None means no filter."""

    env_name: str | None = None
    status: str | None = None
    study: str | None = None
    workload: str | None = None
    server_major: int | None = None
    tag: tuple[str, str] | None = None
    text: str | None = None  # substring of note


@dataclass
class StudyRecord:
    name: str
    kind: str  # iterations | sweep
    spec: str  # the study file's text, verbatim
    id: int | None = None
    created_at: datetime | None = None
    status: str = "running"  # running | done | interrupted
    extra: StudyExtra = field(default_factory=lambda: StudyExtra())
