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
from typing import NotRequired, TypedDict, TypeVar

from pgrig import format
from pgrig.analysis.compare import format_ratio
from pgrig.analysis.host_diff import host_differences
from pgrig.analysis.proportion import difference_bounds, share_bounds
from pgrig.archive.records import RunRecord
from pgrig.insights.plan_changes import PlanChange, plan_changes
from pgrig.insights.plans import clip, fingerprint, normalize_query
from pgrig.insights.summary import InsightParts, parts
from pgrig.record.documents import (
    InsightPart,
    InsightsDoc,
    LogDigestDoc,
    PlansDoc,
    StatementDoc,
    StatementsDoc,
    WaitsDoc,
)
from pgrig.table import Table

TOP_STATEMENTS = 10
TOP_WAITS = 8
STATEMENT_FIELDS = ("calls", "total_ms", "shared_blks_read", "temp_blks_written")
COUNT_COLUMNS = ("calls", "shared_blks_read", "temp_blks_written")  # A and B side by side
# (key, label, count in a log_digest document)
LOG_COUNTS: tuple[tuple[str, str, Callable[[LogDigestDoc], float]], ...] = (
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


# --- the comparison's document (`what_changed`): what every surface renders ------------------


class Sides(TypedDict):
    a: int
    b: int


class SideMeans(TypedDict):
    a: float
    b: float


class StatementSide(TypedDict):
    """A statement's per-run means on one side (the STATEMENT_FIELDS and the mean time)."""

    calls: float
    total_ms: float
    shared_blks_read: float
    temp_blks_written: float
    mean_ms: float | None


class StatementChange(TypedDict):
    fingerprint: str
    text: str | None
    toplevel: bool
    a: StatementSide | None  # None: not among that side's top statements
    b: StatementSide | None
    total_ms_change: float | None
    mean_ratio: float | None  # mean time per call, B/A


class StatementChanges(TypedDict):
    collected: bool
    reason: NotRequired[str]  # when not collected on a side
    runs: NotRequired[Sides]
    total_ms: NotRequired[SideMeans]
    calls: NotRequired[SideMeans]
    top: NotRequired[list[StatementChange]]


class LogCountChange(TypedDict):
    key: str
    label: str
    a: float
    b: float
    differs: bool


class LogChanges(TypedDict):
    collected: bool
    reason: NotRequired[str]
    runs: NotRequired[Sides]
    counts: NotRequired[list[LogCountChange]]


class WaitChange(TypedDict):
    """An event's share of active time in A and B, in percent, and the change in points;
    the bounds when both sides carry them."""

    event: str
    a_pct: float
    b_pct: float
    change_pp: float
    a_low_pct: NotRequired[float]
    a_high_pct: NotRequired[float]
    b_low_pct: NotRequired[float]
    b_high_pct: NotRequired[float]
    change_low_pp: NotRequired[float]
    change_high_pp: NotRequired[float]


class WaitChanges(TypedDict):
    collected: bool
    reason: NotRequired[str]
    samples: NotRequired[Sides]
    events: NotRequired[list[WaitChange]]


class WhatChanged(TypedDict):
    """The `what_changed` document (`runs compare --json`)."""

    statements: StatementChanges
    plan_changes: list[PlanChange]
    log: LogChanges
    waits: WaitChanges
    host: list[str]


def what_changed(
    a: Sequence[RunRecord], b: Sequence[RunRecord], top: int = TOP_STATEMENTS
) -> WhatChanged:
    """The `what_changed` document of baseline group `a` against candidate group `b`."""
    ia, ib = [r.insights for r in a], [r.insights for r in b]
    return WhatChanged(
        statements=_statements(ia, ib, top),
        plan_changes=plan_changes(ia, ib),
        log=_log(ia, ib),
        waits=_waits(ia, ib),
        host=host_differences(a[0].host, b[0].host, a[0].extra, b[0].extra) if a and b else [],
    )


# --- collection per side ---------------------------------------------------------------------

Part = TypeVar("Part", bound=InsightPart)
Group = Sequence[InsightsDoc | None]  # the insights of a group's runs


def _collected(docs: Group, pick: Callable[[InsightParts], Part]) -> tuple[list[Part], str | None]:
    """The group's collected documents of one part, and the reason when there are none."""
    found = [p for p in (pick(parts(d)) for d in docs) if p.get("collected")]
    first: InsightPart = pick(parts(docs[0] if docs else None))
    return found, None if found else first.get("reason")


def _statements_part(p: InsightParts) -> StatementsDoc:
    return p["statements"]


def _plans_part(p: InsightParts) -> PlansDoc:
    return p["plans"]


def _log_part(p: InsightParts) -> LogDigestDoc:
    return p["log_digest"]


def _waits_part(p: InsightParts) -> WaitsDoc:
    return p["waits"]


def _not_collected(ra: str | None, rb: str | None) -> str:
    """Why a part is not compared: each side's reason."""
    return "; ".join(f"{side}: {r}" for side, r in (("A", ra), ("B", rb)) if r)


def _statement_key(st: StatementDoc) -> str:
    key = fingerprint(normalize_query(str(st.get("text") or "")))
    return key if st.get("toplevel", True) else key + ":nested"


class _StatementSums(TypedDict):
    text: str | None
    toplevel: bool
    sums: dict[str, float]  # STATEMENT_FIELDS summed over the runs


class _SideOf(TypedDict):
    text: str | None
    toplevel: bool
    side: StatementSide


def _statement_side(docs: list[StatementsDoc]) -> dict[str, _SideOf]:
    """Per-run means of each statement's counters (over the runs that collected statements)."""
    sums: dict[str, _StatementSums] = {}
    for doc in docs:
        for st in doc.get("top") or []:
            into = sums.setdefault(
                _statement_key(st),
                _StatementSums(
                    text=st.get("text"),
                    toplevel=st.get("toplevel", True),
                    sums=dict.fromkeys(STATEMENT_FIELDS, 0.0),
                ),
            )
            counted = (st.get("calls"), st.get("total_ms"), st.get("shared_blks_read"),
                       st.get("temp_blks_written"))  # fmt: skip
            for f, v in zip(STATEMENT_FIELDS, counted, strict=True):
                into["sums"][f] += float(v or 0)
    n = len(docs)
    out = {}
    for key, s in sums.items():
        total = s["sums"]
        side = StatementSide(
            calls=total["calls"] / n,
            total_ms=total["total_ms"] / n,
            shared_blks_read=total["shared_blks_read"] / n,
            temp_blks_written=total["temp_blks_written"] / n,
            mean_ms=total["total_ms"] / total["calls"] if total["calls"] else None,
        )
        out[key] = _SideOf(text=s["text"], toplevel=s["toplevel"], side=side)
    return out


def _statements(ia: Group, ib: Group, top: int) -> StatementChanges:
    da, ra = _collected(ia, _statements_part)
    db, rb = _collected(ib, _statements_part)
    if not da or not db:
        return StatementChanges(collected=False, reason=_not_collected(ra, rb))
    sa, sb = _statement_side(da), _statement_side(db)
    rows = []
    for key in dict.fromkeys([*sb, *sa]):
        a, b = sa.get(key), sb.get(key)
        one = b or a
        assert one is not None
        pa, pb = (a["side"] if a else None), (b["side"] if b else None)
        change = pb["total_ms"] - pa["total_ms"] if pa and pb else None
        ma, mb = (pa["mean_ms"] if pa else None), (pb["mean_ms"] if pb else None)
        rows.append(
            StatementChange(
                fingerprint=key,
                text=one["text"],
                toplevel=one["toplevel"],
                a=pa,
                b=pb,
                total_ms_change=change,
                mean_ratio=mb / ma if ma and mb is not None else None,
            )
        )
    rows.sort(key=_change_size, reverse=True)
    return StatementChanges(
        collected=True,
        runs=Sides(a=len(da), b=len(db)),
        total_ms=SideMeans(
            a=_mean([d.get("total_ms") for d in da]), b=_mean([d.get("total_ms") for d in db])
        ),
        calls=SideMeans(
            a=_mean([d.get("calls") for d in da]), b=_mean([d.get("calls") for d in db])
        ),
        top=rows[:top],
    )


def _change_size(row: StatementChange) -> float:
    """How much a statement's total time changed; one seen on one side only: its whole time."""
    if row["total_ms_change"] is not None:
        return float(abs(row["total_ms_change"]))
    seen = row["b"] or row["a"]
    assert seen is not None  # a statement is on one side at least
    return float(seen["total_ms"])


def _mean(values: list[float | None]) -> float:
    """The per-run mean of a total (a run without it counts 0)."""
    return sum(float(v or 0) for v in values) / len(values)


def _log(ia: Group, ib: Group) -> LogChanges:
    da, ra = _collected(ia, _log_part)
    db, rb = _collected(ib, _log_part)
    if not da or not db:
        return LogChanges(collected=False, reason=_not_collected(ra, rb))
    rows = []
    for key, label, count in LOG_COUNTS:
        a = sum(count(d) for d in da) / len(da)
        b = sum(count(d) for d in db) / len(db)
        rows.append(LogCountChange(key=key, label=label, a=a, b=b, differs=a != b))
    return LogChanges(collected=True, runs=Sides(a=len(da), b=len(db)), counts=rows)


class _Share(TypedDict):
    """An event's share over a group's summed samples, with bounds when every run had them."""

    pct: float
    samples: float
    low: NotRequired[float]
    high: NotRequired[float]


def _wait_shares(docs: list[WaitsDoc]) -> dict[str, _Share]:
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
    out: dict[str, _Share] = {}
    for k, v in seen.items():
        share = _Share(pct=100.0 * v / total if total else 0.0, samples=total)
        samples, n_eff = eff[k]
        if bounded[k] and total and n_eff > 0:
            _, low, high = share_bounds(v, total, total * n_eff / samples)
            share["low"], share["high"] = low, high
        out[k] = share
    return out


def _side(share: _Share | None, total: float) -> _Share:
    if share is not None:
        return share
    return _Share(pct=0.0, samples=total)  # not seen on that side


def _waits(ia: Group, ib: Group) -> WaitChanges:
    da, ra = _collected(ia, _waits_part)
    db, rb = _collected(ib, _waits_part)
    if not da or not db:
        return WaitChanges(collected=False, reason=_not_collected(ra, rb))
    wa, wb = _wait_shares(da), _wait_shares(db)
    na = sum(float(d.get("active_seen") or 0) for d in da)
    nb = sum(float(d.get("active_seen") or 0) for d in db)
    rows: list[WaitChange] = []
    for e in dict.fromkeys([*wa, *wb]):
        a, b = _side(wa.get(e), na), _side(wb.get(e), nb)
        row = WaitChange(event=e, a_pct=a["pct"], b_pct=b["pct"], change_pp=b["pct"] - a["pct"])
        if "low" in a:
            row["a_low_pct"], row["a_high_pct"] = a["low"], a["high"]
        if "low" in b:
            row["b_low_pct"], row["b_high_pct"] = b["low"], b["high"]
        if "low" in a and "low" in b:
            row["change_low_pp"], row["change_high_pp"] = difference_bounds(
                (a["pct"], a["low"], a["high"]), (b["pct"], b["low"], b["high"])
            )
        rows.append(row)
    rows.sort(key=lambda r: (-abs(r["change_pp"]), r["event"]))
    return WaitChanges(collected=True, samples=Sides(a=int(na), b=int(nb)), events=rows)


# --- the same tables for every surface ----------------------------------------------------------


def tables(doc: WhatChanged, text_chars: int = 90, wide: bool = True) -> list[Table]:
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


def _statement_table(doc: StatementChanges, text_chars: int, wide: bool = True) -> Table:
    title = "Statements (pg_stat_statements, per run)"
    if not doc.get("collected"):
        return Table.titled(title, note=doc.get("reason"))
    cols = ["statement", "total ms A", "total ms B", "change ms", "mean ms A", "mean ms B",
            "mean B/A", "calls A", "calls B", "shared read A", "shared read B", "temp written A",
            "temp written B"]  # fmt: skip
    rows: list[list[str | list[str]]] = []
    for r in doc["top"]:
        a, b = r["a"], r["b"]
        text = clip(r["text"] or "", text_chars) + ("" if r["toplevel"] else " (nested)")
        change = r["total_ms_change"]
        rows.append(
            [
                text,
                _ms(a["total_ms"] if a else None),
                _ms(b["total_ms"] if b else None),
                "-" if change is None else f"{change:+,.1f}",
                _ms(a["mean_ms"] if a else None, 3),
                _ms(b["mean_ms"] if b else None, 3),
                format_ratio(r["mean_ratio"]),
                *(_count(_counter(side, f)) for f in COUNT_COLUMNS for side in (a, b)),
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


def _counter(side: StatementSide | None, name: str) -> float | None:
    return None if side is None else side[name]  # type: ignore[literal-required]


def _plan_table(changes: list[PlanChange], text_chars: int) -> Table:
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


def _log_table(doc: LogChanges) -> Table:
    title = "Server log"
    if not doc.get("collected"):
        return Table.titled(title, note=doc.get("reason"))
    rows: list[list[str | list[str]]] = [
        [c["label"], _count(c["a"]), _count(c["b"])] for c in doc["counts"] if c["differs"]
    ]
    note = None if rows else "The same counts in A and B (checkpoints, autovacuum, errors, ...)."
    return Table.titled(title, ["per run", "A", "B"], rows, note, frozenset({1, 2}))


def _wait_table(doc: WaitChanges) -> Table:
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
    samples = doc.get("samples") or Sides(a=0, b=0)
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
    logs, _ = _collected(docs, _log_part)
    if logs:
        mean = {key: sum(count(d) for d in logs) / len(logs) for key, _, count in LOG_COUNTS}
        text = f"checkpoints requested {_count(mean['checkpoints_requested'])}"
        if mean["checkpoint_warnings"]:
            text += f" ({_count(mean['checkpoint_warnings'])} 'too frequently')"
        lines.append(text)
        lines.append(f"autovacuum {_count(mean['autovacuum'] + mean['autoanalyze'])}")
    plans, _ = _collected(docs, _plans_part)
    if plans:
        seq, index = _scans(plans)
        lines.append(f"plan scans seq {_count(seq)} / index {_count(index)}")
    waits, _ = _collected(docs, _waits_part)
    shares = _wait_shares(waits)
    if shares:
        event, share = max(shares.items(), key=lambda kv: (kv[1]["pct"], kv[0]))
        text = format.share(share["pct"], share.get("low"), share.get("high"), share["samples"])
        lines.append(f"top wait {event} {text}")
    return lines


def _scans(docs: list[PlansDoc]) -> tuple[float, float]:
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
