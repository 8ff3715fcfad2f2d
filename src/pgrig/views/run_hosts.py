"""The hosts of one run, computed once for `pgrig runs show` (text and --json), `pgrig run
--json`, the run page and the run report: which host did what (load, database), how busy each
was over the measured window (its own OS sampler, series "os@HOST"), the network path to the
server with its round-trip times, each load host's clock offset, launch delay and share of the
load, and the start skew.

`of(rec)` is the view model (RunHosts); its `items()` are the summary's lines, `table()` the
hosts table, `as_dict()` the same facts as data. A run without --load-from has one path (this
machine) and no per-host series: the table then has the control machine's row only when it has
network facts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from pgrig import format as fmt
from pgrig.archive.records import RunRecord
from pgrig.record.documents import LoadShare as ShareDoc
from pgrig.record.documents import NetworkPath
from pgrig.record.json_values import number, whole
from pgrig.record.run import SeriesColumns
from pgrig.table import Cell, CellValue, Table

COLUMNS = [
    "host", "role", "CPU busy %", "process CPU %", "clients / threads", "transactions",
    "path", "RTT p50 / p99 ms", "clock offset ms", "launch ms",
]  # fmt: skip
SATURATED = 90.0
TABLE_NOTE = (
    "CPU busy: 100 - idle - iowait of all the host's CPUs, mean over the measured window; "
    "process CPU: pgbench (load), the server (db) or pgbouncer (pooler) in % of one core; "
    "transactions: each load host's own, whole run"
)


@dataclass(frozen=True)
class LoadShare:
    """One load host's share of the load (load/remote/split.py)."""

    host: str
    clients: int | None
    threads: int | None
    rate: float | None = None


@dataclass
class HostRow:
    """One host of the run and what was measured of it (None: not measured)."""

    host: str
    roles: list[str]
    cpu_busy_pct: float | None = None
    process_cpu_pct: dict[str, float] = field(default_factory=dict)  # group -> % of one core
    clients: int | None = None
    threads: int | None = None
    transactions: int | None = None
    path: str | None = None  # unix socket, loopback or network
    rtt_p50_ms: float | None = None
    rtt_p99_ms: float | None = None
    rtt_error: str | None = None
    clock_offset_ms: float | None = None
    clock_error_ms: float | None = None
    launch_delay_ms: float | None = None


@dataclass
class RunHosts:
    """Where one run's load came from and what each of its hosts did."""

    load_from: list[LoadShare] = field(default_factory=list)
    start_skew_ms: float | None = None
    first_tx_skew_ms: float | None = None
    network: str | None = None  # the paths as one line (load/remote/network.describe)
    paths: list[NetworkPath] = field(default_factory=list)  # extra.network.paths
    rows: list[HostRow] = field(default_factory=list)

    def items(self) -> list[tuple[str, str]]:
        """Lines for the run's "about": where the load came from and the start skew."""
        items = []
        if self.load_from:
            items.append(
                (
                    "load from",
                    ", ".join(f"{s.host} ({s.clients} clients, {s.threads} threads)"
                              for s in self.load_from),
                )
            )  # fmt: skip
        if self.start_skew_ms is not None:
            text = f"{self.start_skew_ms:.3f} ms between launches"
            if self.first_tx_skew_ms is not None:
                text += f", first transactions {self.first_tx_skew_ms:.1f} ms apart"
            items.append(("start skew", text))
        if self.network:
            items.append(("network", self.network))
        return items

    def table(self) -> Table | None:
        if not self.rows:
            return None
        return Table.build(
            COLUMNS,
            [_cells(r) for r in self.rows],
            caption="Hosts",
            numeric={2, 3, 5, 9},
            note=TABLE_NOTE,
        )

    def as_dict(self) -> dict[str, object]:
        """`runs show --json`: load_from, start_skew_ms, first_tx_skew_ms, network (the
        line), network_paths and hosts (one object per row of the hosts table)."""
        return {
            "load_from": [asdict(s) for s in self.load_from],
            "start_skew_ms": self.start_skew_ms,
            "first_tx_skew_ms": self.first_tx_skew_ms,
            "network": self.network,
            "network_paths": self.paths,
            "hosts": [asdict(r) for r in self.rows],
        }


def window_mean(cols: SeriesColumns, values: list[float | None], end: float) -> float | None:
    kept = [
        v for t, v in zip(cols.get("t", []), values, strict=False)
        if v is not None and t is not None and 0.0 < float(t) <= end + 0.5
    ]  # fmt: skip
    return sum(kept) / len(kept) if kept else None


def host_cpu(
    rec: RunRecord, host: str, group: str = "pgbench"
) -> tuple[float | None, float | None]:
    """(busy %, the process group's % of one core) of a host over the measured window, from
    its series "os@HOST" (group: pgbench on a load host, server on the db host)."""
    cols = rec.series.get(f"os@{host}")
    if not cols:
        return None, None
    end = float(rec.measured_s or 0.0)
    idle, wait = cols.get("cpu_idle") or [], cols.get("cpu_iowait") or []
    busy = [
        None if i is None else 100.0 - float(i) - float(w or 0.0)
        for i, w in zip(idle, wait + [None] * (len(idle) - len(wait)), strict=False)
    ]
    return window_mean(cols, busy, end), window_mean(
        cols, list(cols.get(f"proc_{group}_cpu") or []), end
    )


def roles(rec: RunRecord) -> dict[str, list[str]]:
    """host -> its roles in the run (load, db, pooler), in a stable order."""
    out: dict[str, list[str]] = {}
    for host, rs in (rec.extra.get("host_roles") or {}).items():
        out.setdefault(str(host), []).extend(str(r) for r in rs)
    for host in (rec.extra.get("load") or {}).get("hosts") or {}:
        if "load" not in out.setdefault(str(host), []):
            out[str(host)].append("load")
    for kind in rec.series:
        if kind.startswith("os@"):
            out.setdefault(kind[3:], [])
    return out


def of(rec: RunRecord) -> RunHosts:
    """The run's hosts, its load split, start skew and network paths, from its record."""
    from pgrig.load.remote.network import describe

    load = rec.extra.get("load") or {}
    split = [s for s in load.get("split") or [] if isinstance(s, dict)]
    paths = [p for p in (rec.extra.get("network") or {}).get("paths") or [] if isinstance(p, dict)]
    return RunHosts(
        load_from=[_share(s) for s in split],
        start_skew_ms=number(load.get("start_skew_ms")),
        first_tx_skew_ms=number(load.get("first_tx_skew_ms")),
        network=describe(rec.extra.get("network")),
        paths=[p.copy() for p in paths],
        rows=_rows(rec, {s.get("host"): s for s in split}, {p.get("from"): p for p in paths}),
    )


def _share(s: ShareDoc) -> LoadShare:
    rate = number(s.get("rate"))
    return LoadShare(str(s.get("host")), whole(s.get("clients")), whole(s.get("threads")), rate)


def _rows(
    rec: RunRecord, split: dict[str | None, ShareDoc], paths: dict[str | None, NetworkPath]
) -> list[HostRow]:
    per_host = (rec.extra.get("load") or {}).get("hosts") or {}
    hosts = roles(rec)
    for name in paths:
        hosts.setdefault(str(name), ["load"])
    out = []
    for host, rs in hosts.items():
        group = "pgbench" if "load" in rs or not rs else ("server" if "db" in rs else "pooler")
        busy, proc = host_cpu(rec, host, group)
        info = per_host.get(host) or {}
        share = split.get(host) or {}
        path = paths.get(host) or {}
        clock = info.get("clock") or {}
        process = {group: proc} if proc is not None else {}
        if group == "server" and "pooler" in rs:  # a db host that also runs the pooler
            pooled = host_cpu(rec, host, "pooler")[1]
            if pooled is not None:
                process["pooler"] = pooled
        out.append(
            HostRow(
                host=host,
                roles=list(rs),
                cpu_busy_pct=busy,
                process_cpu_pct=process,
                clients=whole(share.get("clients")),
                threads=whole(share.get("threads")),
                transactions=whole((info.get("generator") or {}).get("transactions")),
                path=_path(path),
                rtt_p50_ms=number(path.get("rtt_p50_ms")),
                rtt_p99_ms=number(path.get("rtt_p99_ms")),
                rtt_error=str(path["error"]) if path.get("error") else None,
                clock_offset_ms=number(clock.get("offset_ms")),
                clock_error_ms=number(clock.get("error_ms")),
                launch_delay_ms=number(info.get("launch_delay_ms")),
            )
        )
    return out


def _cells(r: HostRow) -> list[CellValue]:
    busy = r.cpu_busy_pct
    process = ", ".join(f"{g} {fmt.number(v)}" for g, v in r.process_cpu_pct.items())
    return [
        r.host,
        ", ".join(r.roles) or fmt.MISSING,
        Cell.of(fmt.number(busy), "warn" if busy is not None and busy > SATURATED else None),
        process or fmt.MISSING,
        f"{r.clients} / {r.threads}" if r.clients is not None else fmt.MISSING,
        fmt.number(r.transactions),
        r.path or fmt.MISSING,
        (
            f"{r.rtt_p50_ms:.3f} / {r.rtt_p99_ms:.3f}"
            if r.rtt_p50_ms is not None and r.rtt_p99_ms is not None
            else r.rtt_error or fmt.MISSING
        ),
        (
            f"{r.clock_offset_ms:+.3f} ± {r.clock_error_ms:.3f}"
            if r.clock_offset_ms is not None and r.clock_error_ms is not None
            else fmt.MISSING
        ),
        fmt.number(r.launch_delay_ms),
    ]


def hosts_table(rec: RunRecord) -> Table | None:
    """The hosts table of the run (the run page and the report call it by this name)."""
    return of(rec).table()


def about_items(rec: RunRecord) -> list[tuple[str, str]]:
    """Lines for the run's "about": where the load came from and the start skew."""
    return of(rec).items()


def _path(path: NetworkPath) -> str | None:
    if not path:
        return None
    return str(path.get("kind") or ("loopback" if path.get("loopback") else "network"))
