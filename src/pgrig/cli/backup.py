"""`pgrig run ENV --workload backup:...`: backup and restore runs, alone or --during a load."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from pgrig.cli import common

if TYPE_CHECKING:
    from pgrig.archive.records import RunRecord
    from pgrig.load.backup.backup_run import BackupRequest
    from pgrig.request import RunRequest


def run_backups(
    req: BackupRequest,
    load: RunRequest | None,
    repeat: int,
    baseline: bool,
    archive: str | None,
    as_json: bool,
) -> None:
    from pgrig.archive.export import run_to_json
    from pgrig.load.backup import backup_repeats

    store = common.open_archive(archive)
    console = common.err_console()
    records: list[RunRecord] = []
    docs: list[dict[str, Any]] = []
    try:
        for rec in backup_repeats.each(req, load, repeat, baseline, store, console):
            records.append(rec)
            docs.append(run_to_json(rec))
            if not as_json:
                print_backup(rec)
    except KeyboardInterrupt:
        if as_json:
            common.print_json(docs)
        sys.exit(130)
    if as_json:
        common.print_json(docs[0] if len(docs) == 1 else docs)
    if any(r.status != "ok" for r in records):
        sys.exit(1)


def _size(v: float | None) -> str:
    from pgrig import format as fmt

    return fmt.size(v)  # the one byte-size rule (pgrig/format.py)


def print_backup(rec: RunRecord) -> None:
    from rich.markup import escape

    from pgrig.views import backup_figures

    console = common.out_console()  # the result is data: stdout, as a load run's summary
    colour = common.STATUS_STYLE.get(rec.status, "white")
    console.print(
        f"run [bold]{rec.id}[/bold] {escape(rec.workload)} [{colour}]{rec.status}[/{colour}]"
        + (f": {escape(rec.error)}" if rec.error else ""),
        highlight=False,
    )
    b = rec.extra.get("backup") or {}
    if b.get("backup_bytes") is not None and b.get("type") != "restore":
        console.print(
            f"  {b.get('tool')} {b.get('type')}  {b['duration_s']:.1f} s  "
            f"{_size(b.get('backup_bytes'))} of {_size(b.get('source_bytes'))}  "
            f"{_size(b.get('throughput_bytes_per_s'))}/s  compression "
            f"x{b.get('compression_ratio', '-')}  size ratio x{b.get('size_ratio', '-')}",
            highlight=False,
        )
        console.print(
            f"  LSN {b.get('start_lsn', '-')} .. {b.get('stop_lsn', '-')}  WAL during the backup "
            f"{escape(backup_figures.wal_text(b))}",
            highlight=False,
        )
    if b.get("type") == "restore" and b.get("restore_total_s") is not None:
        v = b.get("verify") or {}
        console.print(
            f"  restored {b.get('backup')} ({' + '.join(b.get('chain') or [])}) in "
            f"{b['restore_total_s']:.1f} s (files {b.get('restore_s')} s, start "
            f"{b.get('start_s')} s); verified: {'ok' if v.get('ok') else v.get('problem')}, "
            f"pg_amcheck {v.get('amcheck', '-')}"
            + (f" ({v['counts_note']})" if v.get("counts_note") else ""),
            highlight=False,
        )
    d = rec.extra.get("during")
    if d:
        load = d.get("load") or {}
        console.print(
            f"  during: run {load.get('id')} {load.get('workload')} -c {load.get('clients')}: "
            f"tps {load.get('tps') or 0:,.1f}, p95 {load.get('p95_ms') or 0:.2f} ms; backup "
            f"covered {100 * (d.get('covered_fraction') or 0):.0f}% of its window",
            highlight=False,
        )
        for key, c in (d.get("comparison") or {}).items():
            console.print(f"  vs without backup ({key}): {c.get('description')}", highlight=False)
