"""What changed between A and B: one pure function over two groups of runs, for every surface.

`pgrig runs compare` (text and `--json` key `what_changed`), `pgrig report compare` and the web
compare page all call what_changed() and render tables(); the same runs give the same answer.

A group is the runs of one configuration (one run, or repeats). Each part is a per-run mean over
the group's runs that collected it (a group of repeats counts like one run):
- statements: pg_stat_statements over the measured window, matched by fingerprint (the
  normalised text, as plans are, plus top level or nested): total time, calls, mean time per
  call (its change a plain ratio B/A), shared blocks read, temp blocks written. Only each run's
  top statements are stored: a statement missing on one side is "not in the top", never 0.
  Ordered by the size of the change in total time.
- plan_changes: insights.compare.plan_changes (dominant plan per statement, A against B).
- log: counts from the server log's digest (checkpoint warnings, checkpoints requested and
  timed, autovacuum and autoanalyze runs, errors, deadlocks, lock waits, temp files), A and B.
- waits: each wait event's share of active time, recomputed from the summed samples of the
  group's runs, and the change in percentage points.
- host: analysis.host_diff.host_differences of the first run of each group.
A part not collected on a side says why (the first run's reason), instead of empty numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pgrig import format
from pgrig.analysis.compare import format_ratio
from pgrig.analysis.host_diff import host_differences
from pgrig.analysis.proportion import difference_bounds, share_bounds
from pgrig.archive.records import RunRecord
from pgrig.insights.plan_changes import plan_changes
from pgrig.insights.plans import clip, fingerprint, normalize_query
from pgrig.insights.summary import parts
from pgrig.record.documents import InsightsDoc
from pgrig.table import Table

TOP_STATEMENTS = 10
TOP_WAITS = 8
STATEMENT_FIELDS = ("calls", "total_ms", "shared_blks_read", "temp_blks_written")
COUNT_COLUMNS = ("calls", "shared_blks_read", "temp_blks_written")  # A and B side by side
# (key, label, count in a log_digest document)
LOG_COUNTS: tuple[tuple[str, str, Callable[[dict[str, Any]], float]], ...] = (
    ("checkpoint_warnings", "'checkpoints are occurring too frequently'",
     lambda d: d["checkpoint_warnings"]["count"]),
    ("checkpoints_requested", "checkpoints requested", lambda d: d["checkpoints"]["requested"]),
    ("checkpoints_timed", "checkpoints timed", lambda d: d["checkpoints"]["timed"]),
    ("autovacuum", "autovacuum runs", lambda d: d["autovacuum"]["vacuum"]),
    ("autoanalyze", "autoanalyze runs", lambda d: d["autovacuum"]["analyze"]),
    ("errors", "errors", lambda d: d["errors"]["count"]),
    ("deadlocks", "deadlocks", lambda d: d["deadlocks"]["count"]),
    ("lock_waits", "lock waits", lambda d: d["lock_waits"]["count"]),
    ("temp_files", "temp files", lambda d: d["temp_files"]["count"]),
    ("temp_mib", "temp file MiB", lambda d: d["temp_files"]["bytes"] / 2**20),
)  # fmt: skip


def what_changed(
    a: Sequence[RunRecord], b: Sequence[RunRecord], top: int = TOP_STATEMENTS
) -> dict[str, Any]:
    """The `what_changed` document of baseline group `a` against candidate group `b`."""
    ia, ib = [r.insights for r in a], [r.insights for r in b]
    return {
        "statements": _statements(ia, ib, top),
        "plan_changes": plan_changes(ia, ib),
        "log": _log(ia, ib),
        "waits": _waits(ia, ib),
        "host": host_differences(a[0].host, b[0].host, a[0].extra, b[0].extra) if a and b else [],
    }


# --- collection per side ---------------------------------------------------------------------


def _collected(docs: Sequence[InsightsDoc | None], part: str) -> tuple[list[dict], str | None]:
    """The group's collected documents of one part, and the reason when there are none."""
    found = [p for p in (parts(d)[part] for d in docs) if p.get("collected")]
    reason = None if found else parts(docs[0] if docs else None)[part].get("reason")
    return found, reason


def _not_collected(ra: str | None, rb: str | None) -> dict[str, Any]:
    reason = "; ".join(f"{side}: {r}" for side, r in (("A", ra), ("B", rb)) if r)
    return {"collected": False, "reason": reason}


def _statement_key(st: dict[str, Any]) -> str:
    key = fingerprint(normalize_query(str(st.get("text") or "")))
    return key if st.get("toplevel", True) else key + ":nested"


def _statement_side(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per-run means of each statement's counters (over the runs that collected statements)."""
    sums: dict[str, dict[str, Any]] = {}
    for doc in docs:
        for st in doc.get("top") or []:
            into = sums.setdefault(
                _statement_key(st),
                {"text": st.get("text"), "toplevel": st.get("toplevel", True)}
                | dict.fromkeys(STATEMENT_FIELDS, 0.0),
            )
            for f in STATEMENT_FIELDS:
                into[f] += float(st.get(f) or 0)
    n = len(docs)
    out = {}
    for key, s in sums.items():
        side = {f: s[f] / n for f in STATEMENT_FIELDS}
        side["mean_ms"] = s["total_ms"] / s["calls"] if s["calls"] else None
        out[key] = {"text": s["text"], "toplevel": s["toplevel"], "side": side}
    return out


def _statements(ia: list, ib: list, top: int) -> dict[str, Any]:
    da, ra = _collected(ia, "statements")
    db, rb = _collected(ib, "statements")
    if not da or not db:
        return _not_collected(ra, rb)
    sa, sb = _statement_side(da), _statement_side(db)
    rows = []
    for key in dict.fromkeys([*sb, *sa]):
        a, b = sa.get(key), sb.get(key)
        one = b or a
        assert one is not None
        pa, pb = (a or {}).get("side"), (b or {}).get("side")
        change = pb["total_ms"] - pa["total_ms"] if pa and pb else None
        ma, mb = (pa or {}).get("mean_ms"), (pb or {}).get("mean_ms")
        rows.append(
            {
                "fingerprint": key,
                "text": one["text"],
                "toplevel": one["toplevel"],
                "a": pa,
                "b": pb,
                "total_ms_change": change,
                "mean_ratio": mb / ma if ma and mb is not None else None,
            }
        )
    rows.sort(key=_change_size, reverse=True)
    return {
        "collected": True,
        "runs": {"a": len(da), "b": len(db)},
        "total_ms": {"a": _mean(da, "total_ms"), "b": _mean(db, "total_ms")},
        "calls": {"a": _mean(da, "calls"), "b": _mean(db, "calls")},
        "top": rows[:top],
    }


def _change_size(row: dict[str, Any]) -> float:
    """How much a statement's total time changed; one seen on one side only: its whole time."""
    if row["total_ms_change"] is not None:
        return float(abs(row["total_ms_change"]))
    return float((row["b"] or row["a"])["total_ms"])


def _mean(docs: list[dict[str, Any]], key: str) -> float:
    return sum(float(d.get(key) or 0) for d in docs) / len(docs)


def _log(ia: list, ib: list) -> dict[str, Any]:
    da, ra = _collected(ia, "log_digest")
    db, rb = _collected(ib, "log_digest")
    if not da or not db:
        return _not_collected(ra, rb)
    rows = []
    for key, label, count in LOG_COUNTS:
        a = sum(count(d) for d in da) / len(da)
        b = sum(count(d) for d in db) / len(db)
        rows.append({"key": key, "label": label, "a": a, "b": b, "differs": a != b})
    return {"collected": True, "runs": {"a": len(da), "b": len(db)}, "counts": rows}


def _wait_shares(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each event's share over the group's summed samples, with bounds when every run that saw
    it carries its effective sample size (insights/waits.py): the group's effective size is
    its samples over the pooled design effect (samples / effective size of those runs)."""
    seen: dict[str, float] = {}
    eff: dict[str, list[float]] = {}  # event -> [samples of runs with it, their effective n]
    bounded: dict[str, bool] = {}
    for d in docs:
        active = float(d.get("active_seen") or 0)
        for e in d.get("events") or []:
            k = e["event"]
            seen[k] = seen.get(k, 0.0) + float(e["seen"])
            pair = eff.setdefault(k, [0.0, 0.0])
            n_eff = e.get("effective_n")
            bounded[k] = bounded.get(k, True) and n_eff is not None
            pair[0] += active
            pair[1] += float(n_eff or 0)
    total = sum(float(d.get("active_seen") or 0) for d in docs)
    out: dict[str, dict[str, Any]] = {}
    for k, v in seen.items():
        share: dict[str, Any] = {"pct": 100.0 * v / total if total else 0.0, "samples": total}
        samples, n_eff = eff[k]
        if bounded[k] and total and n_eff > 0:
            _, low, high = share_bounds(v, total, total * n_eff / samples)
            share.update(low=low, high=high)
        out[k] = share
    return out


def _side(share: dict[str, Any] | None, total: float) -> dict[str, Any]:
    if share is not None:
        return share
    return {"pct": 0.0, "samples": total}  # not seen on that side


def _waits(ia: list, ib: list) -> dict[str, Any]:
    da, ra = _collected(ia, "waits")
    db, rb = _collected(ib, "waits")
    if not da or not db:
        return _not_collected(ra, rb)
    wa, wb = _wait_shares(da), _wait_shares(db)
    na = sum(float(d.get("active_seen") or 0) for d in da)
    nb = sum(float(d.get("active_seen") or 0) for d in db)
    rows: list[dict[str, Any]] = []
    for e in dict.fromkeys([*wa, *wb]):
        a, b = _side(wa.get(e), na), _side(wb.get(e), nb)
        row: dict[str, Any] = {
            "event": e,
            "a_pct": a["pct"],
            "b_pct": b["pct"],
            "change_pp": b["pct"] - a["pct"],
        }
        for key, side in (("a", a), ("b", b)):
            if "low" in side:
                row[f"{key}_low_pct"], row[f"{key}_high_pct"] = side["low"], side["high"]
        if "low" in a and "low" in b:
            row["change_low_pp"], row["change_high_pp"] = difference_bounds(
                (a["pct"], a["low"], a["high"]), (b["pct"], b["low"], b["high"])
            )
        rows.append(row)
    rows.sort(key=lambda r: (-abs(r["change_pp"]), r["event"]))
    return {"collected": True, "samples": {"a": int(na), "b": int(nb)}, "events": rows}


# --- the same tables for every surface ----------------------------------------------------------


def tables(doc: dict[str, Any], text_chars: int = 90, wide: bool = True) -> list[Table]:
    """The `what_changed` document as titled tables (CLI, report and web render these).

    wide=False: the statements table keeps its time columns (total and mean time, A and B,
    the change, mean B/A: 7 columns, which fit 120 terminal columns) and leaves out calls,
    shared blocks read and temp blocks written (13 columns fold into a block per statement);
    the terminal's default, `--wide` and the other surfaces show them all."""
    return [
        _statement_table(doc["statements"], text_chars, wide),
        _plan_table(doc["plan_changes"], text_chars),
        _log_table(doc["log"]),
        _wait_table(doc["waits"]),
        _host_table(doc["host"]),
    ]


def _count(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f}" if float(v).is_integer() else f"{v:,.1f}"


def _ms(v: float | None, digits: int = 1) -> str:
    return "-" if v is None else f"{v:,.{digits}f}"


TIME_COLUMNS = 7  # statement, total ms A and B, change, mean ms A and B, mean B/A


def _statement_table(doc: dict[str, Any], text_chars: int, wide: bool = True) -> Table:
    title = "Statements (pg_stat_statements, per run)"
    if not doc.get("collected"):
        return Table.titled(title, note=doc.get("reason"))
    cols = ["statement", "total ms A", "total ms B", "change ms", "mean ms A", "mean ms B",
            "mean B/A", "calls A", "calls B", "shared read A", "shared read B", "temp written A",
            "temp written B"]  # fmt: skip
    rows: list[list[str | list[str]]] = []
    for r in doc["top"]:
        a, b = r["a"] or {}, r["b"] or {}
        text = clip(r["text"] or "", text_chars) + ("" if r["toplevel"] else " (nested)")
        change = r["total_ms_change"]
        rows.append(
            [
                text,
                _ms(a.get("total_ms")),
                _ms(b.get("total_ms")),
                "-" if change is None else f"{change:+,.1f}",
                _ms(a.get("mean_ms"), 3),
                _ms(b.get("mean_ms"), 3),
                format_ratio(r["mean_ratio"]),
                *(_count(side.get(f)) for f in COUNT_COLUMNS for side in (a, b)),
            ]
        )
    note = (
        f"Top statements by the change in total time over the measured window; "
        f"top-level time A {_ms(doc['total_ms']['a'])} ms, B {_ms(doc['total_ms']['b'])} ms. "
        "'-': not among that side's top statements."
    )
    if not wide:
        cols, rows = cols[:TIME_COLUMNS], [r[:TIME_COLUMNS] for r in rows]
        note += " Calls, shared blocks read and temp blocks written: --wide, --json, the report."
    return Table.titled(title, cols, rows, note, frozenset(range(1, len(cols))))


def _plan_table(changes: list[dict[str, Any]], text_chars: int) -> Table:
    title = "Plan changes"
    if not changes:
        return Table.titled(title, note="No statement's dominant plan differs between A and B.")
    rows: list[list[str | list[str]]] = []
    for ch in changes:
        sides = []
        for side in (ch["a"], ch["b"]):
            mean = "" if side.get("mean_ms") is None else f", mean {side['mean_ms']:.3f} ms"
            sides.append([f"plan {side['hash']} ({side['samples']} samples{mean})",
                          *side["outline"]])  # fmt: skip
        rows.append([clip(ch.get("text") or "", text_chars), *sides])
    return Table.titled(title, ["statement", "A", "B"], rows)


def _log_table(doc: dict[str, Any]) -> Table:
    title = "Server log"
    if not doc.get("collected"):
        return Table.titled(title, note=doc.get("reason"))
    rows: list[list[str | list[str]]] = [
        [c["label"], _count(c["a"]), _count(c["b"])] for c in doc["counts"] if c["differs"]
    ]
    note = None if rows else "The same counts in A and B (checkpoints, autovacuum, errors, ...)."
    return Table.titled(title, ["per run", "A", "B"], rows, note, frozenset({1, 2}))


def _wait_table(doc: dict[str, Any]) -> Table:
    title = "Wait profile (share of active time)"
    if not doc.get("collected"):
        return Table.titled(title, note=doc.get("reason"))
    rows: list[list[str | list[str]]] = [
        [
            e["event"],
            format.share(e["a_pct"], e.get("a_low_pct"), e.get("a_high_pct")),
            format.share(e["b_pct"], e.get("b_low_pct"), e.get("b_high_pct")),
            format.points(e["change_pp"], e.get("change_low_pp"), e.get("change_high_pp")),
        ]
        for e in doc["events"][:TOP_WAITS]
    ]
    samples = doc.get("samples") or {}
    note = (
        f"Samples: A {samples.get('a', 0):,}, B {samples.get('b', 0):,}; 95% bounds (an event "
        "not in a side's top is counted 0 there)."
        if rows
        else "No active backend seen by the sampler on either side."
    )
    return Table.titled(title, ["event", "A", "B", "change, points"], rows, note,
                       frozenset({1, 2, 3}))  # fmt: skip


def _host_table(lines: list[str]) -> Table:
    title = "Host differences"
    if not lines:
        return Table.titled(title, note="None recorded: the same host state in A and B.")
    return Table.titled(title, ["difference"], [[line] for line in lines])


# --- evidence of one group of runs (a study point) ----------------------------------------------

_SEQ_SCANS = ("Seq Scan", "Parallel Seq Scan")
_INDEX_SCANS = ("Index Scan", "Index Only Scan", "Bitmap Index Scan")


def evidence(runs: Sequence[RunRecord]) -> list[str]:
    """Short lines of what a group's runs show (per run, over the runs that collected it):
    requested checkpoints and the log's warnings, autovacuum runs, sequential against index
    scans in the sampled plans, the top wait event. Empty when nothing was collected."""
    docs = [r.insights for r in runs]
    lines = []
    logs, _ = _collected(docs, "log_digest")
    if logs:
        mean = {key: sum(count(d) for d in logs) / len(logs) for key, _, count in LOG_COUNTS}
        text = f"checkpoints requested {_count(mean['checkpoints_requested'])}"
        if mean["checkpoint_warnings"]:
            text += f" ({_count(mean['checkpoint_warnings'])} 'too frequently')"
        lines.append(text)
        lines.append(f"autovacuum {_count(mean['autovacuum'] + mean['autoanalyze'])}")
    plans, _ = _collected(docs, "plans")
    if plans:
        seq, index = _scans(plans)
        lines.append(f"plan scans seq {_count(seq)} / index {_count(index)}")
    waits, _ = _collected(docs, "waits")
    shares = _wait_shares(waits)
    if shares:
        event, share = max(shares.items(), key=lambda kv: (kv[1]["pct"], kv[0]))
        text = format.share(share["pct"], share.get("low"), share.get("high"), share["samples"])
        lines.append(f"top wait {event} {text}")
    return lines


def _scans(docs: list[dict[str, Any]]) -> tuple[float, float]:
    """Sequential and index scan nodes in the sampled plans (each plan counted per sample),
    per run."""
    seq = index = 0
    for doc in docs:
        for st in doc.get("statements") or []:
            for p in st.get("plans") or []:
                nodes = [line.strip().split(": ", 1)[-1] for line in p.get("outline") or []]
                seq += p.get("samples", 0) * sum(n.startswith(_SEQ_SCANS) for n in nodes)
                index += p.get("samples", 0) * sum(n.startswith(_INDEX_SCANS) for n in nodes)
    return seq / len(docs), index / len(docs)
