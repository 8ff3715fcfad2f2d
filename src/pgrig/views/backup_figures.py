"""The figures of a backup or restore run (RunRecord.extra["backup"]) and of a run on an
environment with replicas (extra["topology"]), as every surface shows them: computed once
here, part of views/run_summary.py (`runs show`, the run page, `report run`); `summary()` is
the one cell of run lists; `runs compare` shows these figures from record/figures.py.

Rows are (label, text) pairs, values formatted by pgrig/format.py.
"""

from __future__ import annotations

from pgrig import format as fmt
from pgrig.archive.records import RunRecord
from pgrig.record.documents import BackupDoc, ReplicaDoc, ReplicaLag
from pgrig.record.figures import backup_figures
from pgrig.record.figures import max_lag_bytes as max_lag_bytes  # the lag a replica row says
from pgrig.views import settings


def figures(rec: RunRecord) -> BackupDoc | None:
    return backup_figures(rec)


def size_text(v: float | None) -> str:
    return fmt.size(v)


def _fig(v: object, digits: int = 2, suffix: str = "") -> str:
    """A figure as text with its unit after it ("0.82 s"); "-" when missing."""
    return fmt.MISSING if fmt.is_missing(v) else f"{fmt.number(v, digits)}{suffix}"


def rows(rec: RunRecord) -> list[tuple[str, str]]:
    """The backup table of one run (empty for load runs)."""
    b = figures(rec)
    if b is None:
        return []
    if b.get("type") == "restore":
        v = b.get("verify") or {}
        verified = "ok" if v.get("ok") else (v.get("problem") or "-")
        counts = ", ".join(
            f"{k} {c.get('found'):,}/{c.get('expected'):,}"
            for k, c in (v.get("counts") or {}).items()
        )
        return [
            ("restored", f"{b.get('backup', '-')} ({b.get('tool', '-')})"),
            ("chain", " + ".join(b.get("chain") or []) or "-"),
            ("restore time", _fig(b.get("restore_total_s"), 2, " s")),
            (
                "  files",
                f"{_fig(b.get('restore_s'), 2, ' s')} ({b.get('restore_method', '-')})",
            ),
            ("  start and recovery", _fig(b.get("start_s"), 2, " s")),
            ("verified", verified),
            ("row counts", counts or v.get("counts_note") or "-"),
            ("pg_amcheck", f"{v.get('amcheck', '-')} ({_fig(v.get('amcheck_s'), 2, ' s')})"),
        ]
    out = [
        ("tool", f"{b.get('tool', '-')} {b.get('type', '-')}"),
        ("backup", str(b.get("name") or "-")),
        ("duration", _fig(b.get("duration_s"), 2, " s")),
        ("throughput", f"{size_text(b.get('throughput_bytes_per_s'))}/s"),
        ("backup size", size_text(b.get("backup_bytes"))),
        ("databases", size_text(b.get("source_bytes"))),
        ("compression ratio", _fig(b.get("compression_ratio"), 3)),
        ("size ratio", _fig(b.get("size_ratio"), 3)),
        ("start LSN", str(b.get("start_lsn") or "-")),
        ("stop LSN", str(b.get("stop_lsn") or "-")),
        ("WAL generated", wal_text(b)),
    ]
    if b.get("wal_lsn_advance_bytes") not in (None, b.get("wal_generated_bytes")):
        out.append(
            (
                "LSN advance",
                f"{size_text(b.get('wal_lsn_advance_bytes'))} (with "
                "the padding of the segment switch the backup forces)",
            )
        )
    if b.get("parent"):
        out.insert(2, ("builds on", str(b["parent"])))
    if b.get("bytes_written_before_failure") is not None:
        out.append(("written before failing", size_text(b["bytes_written_before_failure"])))
    d = rec.extra.get("during")
    if isinstance(d, dict) and d.get("load"):
        load = d["load"]
        out.append(
            (
                "during load",
                f"run {load.get('id')} {load.get('workload')} -c {load.get('clients')}: "
                f"tps {_fig(load.get('tps'), 1)}, p95 {_fig(load.get('p95_ms'), 2, ' ms')}, "
                f"backup covered {_fig(100 * (d.get('covered_fraction') or 0), 0, '%')} of it",
            )
        )
        for metric, c in (d.get("comparison") or {}).items():
            out.append((f"vs no backup ({metric})", str(c.get("description") or "-")))
    return out


def summary(rec: RunRecord) -> str:
    """One cell for run lists: 'full 60.4 MiB in 0.8 s' or 'restore 5.4 s ok'."""
    b = figures(rec)
    if b is None:
        return ""
    if b.get("type") == "restore":
        ok = (b.get("verify") or {}).get("ok")
        return f"restore {_fig(b.get('restore_total_s'), 1, ' s')} {'ok' if ok else '-'}"
    took = _fig(b.get("duration_s"), 1, " s")
    return f"{b.get('type')} {size_text(b.get('backup_bytes'))} in {took}"


def wal_text(b: BackupDoc) -> str:
    """The WAL written during the backup and what the figure is (older runs: the LSN
    advance, which counts a segment switch's padding, said so)."""
    if b.get("wal_generated_bytes") is None:
        return size_text(None)
    what = b.get("wal_generated_what") or "LSN advance: includes segment-switch padding"
    return f"{size_text(b.get('wal_generated_bytes'))} ({what})"


def lag_text(lag: ReplicaLag) -> str:
    """A replica's lag over the run, saying what was measured: a replica that was not
    streaming has no lag to show (unknown), one that streamed in part shows its lag then."""
    missed = lag.get("samples_not_streaming") or 0
    samples = lag.get("samples")
    measured = lag.get("max_lag_bytes")
    if measured is None or (samples and missed >= samples):
        return f"max replay lag unknown: not streaming in {missed} of {samples} samples"
    text = f"max replay lag {size_text(measured)}"
    if missed:
        text += f" while streaming; not streaming in {missed} of {samples} samples (lag unknown)"
    return text


def sync_text(rec: RunRecord, topology_sync: str) -> str:
    """The sync mode the run had: the topology's, unless a layer above it set another
    synchronous_commit for the run (as the server reported it at the start)."""
    if topology_sync == "off":
        return "off"
    effective = (rec.settings.get("synchronous_commit") or {}).get("setting")
    if not effective or effective == topology_sync:
        return topology_sync
    layer = settings.layer_of(rec.settings_layers, "synchronous_commit") or "server"
    return (
        f"{effective} (synchronous_commit from layer {layer}; "
        f"the topology's mode is {topology_sync})"
    )


def _where(replica: ReplicaDoc) -> str:
    """r1 (port 5441), or r1 (host db2, 10.0.0.12:5441) for a replica on another host."""
    if replica.get("on"):
        return (
            f"{replica.get('name')} (host {replica['on']}, {replica.get('host')}:"
            f"{replica.get('port')})"
        )
    return f"{replica.get('name')} (port {replica.get('port')})"


def topology_rows(rec: RunRecord) -> list[tuple[str, str]]:
    """Replicas of the run's environment and their lag over the run (empty: standalone)."""
    t = rec.extra.get("topology")
    if not isinstance(t, dict) or not t.get("replicas"):
        return []
    out = [
        ("sync mode", sync_text(rec, str(t.get("sync", "off")))),
        ("replicas", ", ".join(_where(r) for r in t["replicas"])),
    ]
    targets = rec.extra.get("targets")
    if isinstance(targets, dict) and targets.get("servers"):
        out.append(("load sent to", str(targets.get("role") or "primary")))
        for row in targets["servers"]:
            share = row.get("share")
            out.append(
                (
                    f"  {row.get('server')}",
                    f"{fmt.number(row.get('transactions'))} transactions committed"
                    + (f" ({fmt.percent(100 * share)})" if share is not None else "")
                    + f", {fmt.number(row.get('tps'))} per second over the whole load",
                )
            )
    for name, lag in (t.get("lag") or {}).items():
        out.append((f"replica {name}", lag_text(lag)))
    return out
