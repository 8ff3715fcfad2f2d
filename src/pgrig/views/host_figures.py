"""What one run measured of each of its hosts: per host and role, CPU busy, iowait and steal
over the measured window with the number of samples they rest on, each process group's CPU
(the server, pgbouncer, pgbench, in % of one core), and the network path from that host to
where pgbench connected (RTT p50/p99 of its TCP connects, extra.network.paths).

The study's hosts table (views/study_hosts.py) is made of these, point by point. The figures
are read the way `runs show` and `runs compare` read them (views/run_hosts.py,
views/compare_hosts.py): the host's own sampler (series "os@HOST"), and this machine's
(series "os") for the roles no other host had.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pgrig.archive.records import RunRecord
from pgrig.record.documents import NetworkPath
from pgrig.record.json_values import number
from pgrig.views.compare_hosts import THIS_MACHINE, cpu_figures, has_hosts, local_roles
from pgrig.views.run_hosts import roles, window_mean

# role -> the process group its sampler measures (metrics/cpu_share.py)
GROUPS = {"db": "server", "pooler": "pooler", "load": "pgbench"}
LOCAL_SOURCES = ("localhost", "127.0.0.1", "::1")  # load/remote/network.local_path's source


@dataclass
class PathRun:
    """One run's network path from a host to where pgbench connected."""

    to: str  # address:port (or the socket) as recorded
    to_host: str | None  # the host behind it, from the run's roles (None: not known)
    kind: str | None  # unix socket, loopback or network
    p50_ms: float | None
    p99_ms: float | None
    samples: int  # TCP connects the percentiles rest on
    error: str | None = None


@dataclass
class HostRun:
    """One host in one role, in one run (None: not measured)."""

    host: str
    role: str  # "db", "load", "db, pooler", ...
    busy: float | None = None
    iowait: float | None = None
    steal: float | None = None
    cpu_samples: int = 0  # sampler seconds inside the measured window
    process: dict[str, float | None] = field(default_factory=dict)  # group -> % of one core
    saturated: bool | None = None  # load hosts: the run's own verdict
    paths: list[PathRun] = field(default_factory=list)
    sampler_error: str | None = None


def measured(rec: RunRecord) -> bool:
    """Whether the run has per-host figures (a sampler on another host, or its roles)."""
    return has_hosts(rec)


def run_hosts(rec: RunRecord) -> list[HostRun]:
    """Every host of one run with what was measured of it ([] for a run on this machine
    alone: the study's own CPU columns already show it)."""
    if not measured(rec):
        return []
    saturated = (rec.extra.get("load") or {}).get("saturated") or {}
    errors = rec.extra.get("host_sampler_errors") or {}
    out = []
    for host, rs in roles(rec).items():
        row = _figures(rec, f"os@{host}", HostRun(host, ", ".join(rs) or "-"), rs)
        row.saturated = (host in saturated) if "load" in rs else None
        row.sampler_error = str(errors[host]) if host in errors else None
        out.append(row)
    mine = local_roles(rec)
    if mine and "os" in rec.series:
        out.append(_figures(rec, "os", HostRun(THIS_MACHINE, ", ".join(mine)), mine))
    by_name = {h.host: h for h in out}
    for path in (rec.extra.get("network") or {}).get("paths") or []:
        if not isinstance(path, dict):
            continue
        source = str(path.get("from") or "")
        if source in LOCAL_SOURCES:
            source = THIS_MACHINE
        if source not in by_name:  # a load host without a sampler: its path is still a figure
            by_name[source] = HostRun(source, "load")
            out.append(by_name[source])
        by_name[source].paths.append(_path(rec, path))
    return out


def _figures(rec: RunRecord, kind: str, row: HostRun, rs: list[str]) -> HostRun:
    figs = cpu_figures(rec, kind)
    row.busy, row.iowait, row.steal = figs.get("busy"), figs.get("iowait"), figs.get("steal")
    cols = rec.series.get(kind) or {}
    end = float(rec.measured_s or 0.0)
    row.cpu_samples = sum(
        1
        for t, i in zip(cols.get("t") or [], cols.get("cpu_idle") or [], strict=False)
        if i is not None and t is not None and 0.0 < float(t) <= end + 0.5
    )  # the seconds window_mean averages
    for role in rs:
        group = GROUPS.get(role)
        if group and f"proc_{group}_cpu" in cols:
            row.process[group] = window_mean(cols, list(cols[f"proc_{group}_cpu"]), end)
    return row


def _path(rec: RunRecord, path: NetworkPath) -> PathRun:
    return PathRun(
        to=str(path.get("to") or "-"),
        to_host=target_host(rec),
        kind=path.get("kind") or ("loopback" if path.get("loopback") else None),
        p50_ms=number(path.get("rtt_p50_ms")),
        p99_ms=number(path.get("rtt_p99_ms")),
        samples=int(path.get("samples") or 0),
        error=str(path["error"]) if path.get("error") else None,
    )


def target_host(rec: RunRecord) -> str | None:
    """The host pgbench connected to: the pooler's through a pooler, else the server's (None
    when the run targeted a replica or no host had that role)."""
    if (rec.extra.get("target_role") or "primary") != "primary":
        return None
    wanted = "pooler" if rec.via != "direct" else "db"
    for host, rs in roles(rec).items():
        if wanted in rs:
            return host
    return THIS_MACHINE if wanted in local_roles(rec) else None
