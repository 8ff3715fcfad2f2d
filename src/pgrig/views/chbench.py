"""A CH-benCHmark run's analytic side (extra["chbench"], load/engines/chbench_driver.py), said
once for every surface: `pgrig run`'s lines, `runs show` (text and --json), the run page, the
run report and the comparison's clients row. The transactions' figures (NOPM, TPM, latencies,
per type) are TPC-C's and shown as for any TPC-C run.
"""

from __future__ import annotations

from pgrig import format as fmt
from pgrig.archive.records import RunRecord
from pgrig.record.json_values import number, whole
from pgrig.record.stream_docs import ChbenchDoc
from pgrig.table import Table


def doc_of(rec: RunRecord) -> ChbenchDoc | None:
    """The run's analytic side, as read back (record/doc_read: keys that do not fit left out)."""
    return rec.extra.get("chbench")


def analytic_clients(rec: RunRecord) -> int | None:
    """The run's analytic streams (None: not a CH-benCHmark run)."""
    doc = doc_of(rec)
    return whole(doc.get("analytic_clients")) if doc is not None else None


def line(rec: RunRecord) -> str | None:
    """One line: queries per hour and what it counts ("analytic queries per hour 7,200: 16
    completed in the 8 s window by 1 stream; not counted: 1 cut at the window's end")."""
    doc = doc_of(rec)
    if doc is None:
        return None
    streams = whole(doc.get("analytic_clients")) or 0
    if not streams:
        return "no analytic stream (--analytic-clients 0): TPC-C alone on CH-benCHmark's data"
    window = doc.get("window_s")
    text = (
        f"analytic queries per hour {fmt.number(doc.get('qph'), 0)}: "
        f"{fmt.number(doc.get('completed'))} completed in the "
        + (f"{fmt.duration(window)} " if isinstance(window, int | float) else "")
        + f"window by {streams} stream{'s' if streams != 1 else ''}"
    )
    left = [
        f"{doc.get(key)} {what}"
        for key, what in (
            ("cut", "cut at the window's end"),
            ("timed_out", "timed out"),
            ("errors", "failed"),
        )
        if doc.get(key)
    ]
    return text + (f"; not counted: {', '.join(left)}" if left else "")


def items(rec: RunRecord) -> list[tuple[str, str]]:
    """The results' lines of a CH-benCHmark run."""
    doc = doc_of(rec)
    if doc is None:
        return []
    out = [("analytic", line(rec) or fmt.MISSING)]
    if doc.get("analytic_clients"):
        timeout = number(doc.get("query_timeout_s"))
        out.append(
            (
                "analytic timeout",
                f"{fmt.duration(timeout)} a query" if timeout else "none (--query-timeout)",
            )
        )
        out.append(("analytic counting", str(doc.get("counting") or fmt.MISSING)))
    return out


def table(rec: RunRecord) -> Table | None:
    """Per CH query over the measured window: completed, median and max ms, and the rest."""
    doc = doc_of(rec) or {}
    per = doc.get("per_query")
    if not isinstance(per, dict) or not per:
        return None

    def ms(v: object) -> str:
        return fmt.ms(float(v) * 1000) if isinstance(v, int | float) else fmt.MISSING

    def key(name: str) -> int:
        return int(name.removeprefix("Q")) if name.removeprefix("Q").isdigit() else 99

    rows = [
        [
            name,
            fmt.number(q.get("completed")),
            ms(q.get("median_s")),
            ms(q.get("max_s")),
            fmt.number(q.get("timed_out")),
            fmt.number(q.get("cut")),
            fmt.number(q.get("errors")),
        ]
        for name, q in sorted(per.items(), key=lambda kv: key(kv[0]))
        if isinstance(q, dict)
    ]
    return Table.build(
        ["query", "completed", "median ms", "max ms", "timed out", "cut", "failed"],
        rows,
        caption="Analytic queries (CH-benCHmark) over the measured window",
        numeric={1, 2, 3, 4, 5, 6},
        note=str(doc.get("counting") or "") or None,
    )
