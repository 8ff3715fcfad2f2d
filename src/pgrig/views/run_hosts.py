"""The hosts of one run, computed once for `pgrig runs show`, the run page and the run report:
which host did what (load, database), how busy each was over the measured window (its own OS
sampler, series "os@HOST"), the network path to the server with its round-trip times, each load
host's clock offset, launch delay and share of the load, and the start skew.

A run without --load-from has one path (this machine) and no per-host series: the table then has
the control machine's row only when it has network facts.
"""

from __future__ import annotations

from typing import Any

from pgrig import format as fmt
from pgrig.archive.records import RunRecord
from pgrig.record.documents import NetworkPath
from pgrig.table import Cell, CellValue, Table

COLUMNS = [
    "host", "role", "CPU busy %", "process CPU %", "clients / threads", "transactions",
    "path", "RTT p50 / p99 ms", "clock offset ms", "launch ms",
]  # fmt: skip
SATURATED = 90.0


def window_mean(cols: dict[str, list[Any]], values: list[float | None], end: float) -> float | None:
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


def hosts_table(rec: RunRecord) -> Table | None:
    load = rec.extra.get("load") or {}
    per_host = load.get("hosts") or {}
    split = {s.get("host"): s for s in load.get("split") or [] if isinstance(s, dict)}
    paths = {p.get("from"): p for p in (rec.extra.get("network") or {}).get("paths") or []
             if isinstance(p, dict)}  # fmt: skip
    hosts = roles(rec)
    for name in paths:
        hosts.setdefault(str(name), ["load"])
    if not hosts:
        return None
    rows: list[list[CellValue]] = []
    for host, rs in hosts.items():
        group = "pgbench" if "load" in rs or not rs else ("server" if "db" in rs else "pooler")
        busy, proc = host_cpu(rec, host, group)
        info = per_host.get(host) or {}
        share = split.get(host)
        path = paths.get(host) or {}
        clock = info.get("clock") or {}
        gen = info.get("generator") or {}
        rows.append(
            [
                host,
                ", ".join(rs) or fmt.MISSING,
                Cell.of(
                    fmt.number(busy), "warn" if busy is not None and busy > SATURATED else None
                ),
                _process_cpu(rec, host, group, proc),
                f"{share['clients']} / {share['threads']}" if share else fmt.MISSING,
                fmt.number(gen.get("transactions")),
                _path(path),
                _rtt(path),
                (
                    f"{clock['offset_ms']:+.3f} ± {clock['error_ms']:.3f}"
                    if clock.get("offset_ms") is not None
                    else fmt.MISSING
                ),
                fmt.number(info.get("launch_delay_ms")),
            ]
        )
    return Table.build(
        COLUMNS,
        rows,
        caption="Hosts",
        numeric={2, 3, 5, 9},
        note="CPU busy: 100 - idle - iowait of all the host's CPUs, mean over the measured "
        "window; process CPU: pgbench (load), the server (db) or pgbouncer (pooler) in % of one "
        "core; transactions: each load host's own, whole run",
    )


def _process_cpu(rec: RunRecord, host: str, group: str, proc: float | None) -> str:
    """The host's process group's CPU; a db host that also runs the pooler shows both."""
    parts = [f"{group} {fmt.number(proc)}"] if proc is not None else []
    if group == "server" and "pooler" in roles(rec).get(host, []):
        pooled = host_cpu(rec, host, "pooler")[1]
        if pooled is not None:
            parts.append(f"pooler {fmt.number(pooled)}")
    return ", ".join(parts) or fmt.MISSING


def about_items(rec: RunRecord) -> list[tuple[str, str]]:
    """Lines for the run's "about": where the load came from and the start skew."""
    load = rec.extra.get("load") or {}
    items = []
    split = [s for s in load.get("split") or [] if isinstance(s, dict)]
    if split:
        items.append(
            (
                "load from",
                ", ".join(f"{s['host']} ({s['clients']} clients, {s['threads']} threads)"
                          for s in split),
            )
        )  # fmt: skip
    if load.get("start_skew_ms") is not None:
        text = f"{load['start_skew_ms']:.3f} ms between launches"
        if load.get("first_tx_skew_ms") is not None:
            text += f", first transactions {load['first_tx_skew_ms']:.1f} ms apart"
        items.append(("start skew", text))
    from pgrig.load.remote.network import describe

    line = describe(rec.extra.get("network"))
    if line:
        items.append(("network", line))
    return items


def _path(path: NetworkPath) -> str:
    if not path:
        return fmt.MISSING
    return str(path.get("kind") or ("loopback" if path.get("loopback") else "network"))


def _rtt(path: NetworkPath) -> str:
    if path.get("rtt_p50_ms") is None:
        return str(path.get("error") or fmt.MISSING)
    return f"{path['rtt_p50_ms']:.3f} / {path['rtt_p99_ms']:.3f}"
