"""How a run reached its servers and what it found there: connection, pooler, network, replicas."""

from __future__ import annotations

from typing_extensions import TypedDict

from pgrig.record.insight_docs import PoolerLogDoc

__all__ = [
    "BackendEnded",
    "ConnectionDoc",
    "NetworkDoc",
    "NetworkPath",
    "PoolerDoc",
    "PrewarmDoc",
    "ReplicaDoc",
    "ReplicaLag",
    "RttDoc",
    "TargetServer",
    "TargetsDoc",
    "TopologyDoc",
]


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
    log: PoolerLogDoc  # what the run kept of the pooler's log (load/core/pooler_log.py)


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


class RttDoc(TypedDict, total=False):
    """A round-trip measurement as the load agent answers it (load/remote/remote_agent.py
    measure_rtt): the connects' times, where they went, or why there are none."""

    target: str  # host:port
    samples_us: list[float]
    loopback: bool
    address: str
    kind: str  # unix socket, loopback or network
    error: str


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


class BackendEnded(TypedDict, total=False):
    """One of the run's backends still on a server after its client ended, terminated by
    pgrig (load/core/left_backends.py)."""

    server: str
    pid: int
    state: str | None
    wait: str | None  # wait_event_type:wait_event, e.g. IPC:SyncRep
    query_seconds: float | None  # how long its statement had run
