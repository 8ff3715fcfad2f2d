"""What to run: the parameters of one pgbench run, independent of how it is executed."""

from __future__ import annotations

from dataclasses import dataclass, field

from pgrig.workloads.script import ScriptSpec

__all__ = ["RunSpec", "ScriptSpec"]


@dataclass
class RunSpec:
    """A run request. The runner validates it (clear errors before anything starts)."""

    env_name: str
    workload: str  # as given: "pgbench:select-only", "tpcc", "a.sql@3,b.sql@1"
    scripts: list[ScriptSpec] = field(default_factory=list)
    database: str | None = None  # default: the environment's default database
    clients: int = 1
    threads: int = 1
    duration_s: float | None = None  # -T (measured window; warm-up comes on top)
    transactions: int | None = None  # -t per client
    warmup_s: float = 0.0
    rate: float | None = None  # -R
    latency_limit_ms: float | None = None  # -L
    protocol: str = "simple"  # -M
    max_tries: int = 1  # --max-tries (retries of serialization/deadlock failures)
    defines: dict[str, str] = field(default_factory=dict)  # -D var=value
    settings: dict[str, str] = field(default_factory=dict)  # per-run settings layer
    profile: str | None = None  # a profile applied for this run only (under `settings`)
    scenario: str | None = None
    note: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    study: str | None = None
    study_point: str | None = None
    repeat: int = 0
    via: str = "direct"  # direct | pooler (the environment's pooler; "pgbouncer" too)
    connect: str = "tcp"  # tcp | socket: how pgbench reaches the server or the pooler
    server_cpus: str | None = None  # "0-1": pin the server's processes for the run
    client_cpus: str | None = None  # "2-3": run pgbench under taskset
    extra_pgbench_args: list[str] = field(default_factory=list)
    # TPC-C only: transaction mix weights by type, and a warehouse per transaction
    tpcc_mix: dict[str, int] | None = None
    all_warehouses: bool = False
    tpcc_stock_level: str = "standard"  # "hammerdb": its single-query form (misestimated range)
