"""What a run's insights say, for people and for machines (one answer for CLI, web, reports).

- parts(insights): the four documents `runs show --json` prints under statements, plans,
  log_digest and waits (runs archived before insights existed say so in each);
- why(insights): short labelled lines for the "why" section of `runs show`: top statements,
  misestimates, plan changes during the run, the log's highlights, top waits;
- why_parts(insights): the same lines per part with the part's tables (top statements,
  misestimated nodes, plan changes during the run, wait events), for the run page and the run
  report. Text is plain: each renderer escapes it for its format.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, TypedDict

from pgrig import format
from pgrig.insights.plans import clip
from pgrig.record.documents import (
    InsightPart,
    InsightsDoc,
    LogDigestDoc,
    MisestimateFlag,
    PlansDoc,
    StatementsDoc,
    WaitEvent,
    WaitsDoc,
    WaitShares,
)
from pgrig.table import Table

PartName = Literal["statements", "plans", "log_digest", "waits"]
PARTS: tuple[PartName, ...] = ("statements", "plans", "log_digest", "waits")
NO_INSIGHTS = "not collected: the run has no insights (archived before pgrig collected them)"


class InsightParts(TypedDict):
    """The four parts of a run's insights, each collected or with the reason it was not."""

    statements: StatementsDoc
    plans: PlansDoc
    log_digest: LogDigestDoc
    waits: WaitsDoc


def parts(insights: InsightsDoc | None) -> InsightParts:
    doc: InsightsDoc = insights or {}
    return InsightParts(
        statements=doc.get("statements") or {"collected": False, "reason": NO_INSIGHTS},
        plans=doc.get("plans") or {"collected": False, "reason": NO_INSIGHTS},
        log_digest=doc.get("log_digest") or {"collected": False, "reason": NO_INSIGHTS},
        waits=doc.get("waits") or {"collected": False, "reason": NO_INSIGHTS},
    )


@dataclass
class WhyPart:
    key: str  # statements | plans | log_digest | waits
    title: str
    reason: str | None  # why the part was not collected; None when it was
    lines: list[tuple[str, str]]  # the `runs show` lines of this part
    tables: list[Table] = field(default_factory=list)


TITLES = {
    "statements": "Statements",
    "plans": "Plans",
    "log_digest": "Server log",
    "waits": "Wait profile",
}


def why(insights: InsightsDoc | None, top: int = 5, text_chars: int = 90) -> list[tuple[str, str]]:
    """(label, text) lines; parts not collected give their reason."""
    lines = _part_lines(parts(insights), top, text_chars)
    rows = [line for key in PARTS for line in lines[key]]
    for note in (insights or {}).get("notes") or []:
        rows.append(("note", note))
    return rows


def why_parts(
    insights: InsightsDoc | None, top: int = 5, text_chars: int = 90, rows: int = 10
) -> list[WhyPart]:
    """Each part: its `runs show` lines (`top` statements) and its tables (`rows` each)."""
    p = parts(insights)
    lines = _part_lines(p, top, text_chars)
    tables_of: dict[PartName, Callable[[], list[Table]]] = {
        "statements": lambda: _statement_table(p["statements"], rows),
        "plans": lambda: _plan_tables(p["plans"], rows),
        "waits": lambda: _wait_table(p["waits"], rows),
    }
    out = []
    for key in PARTS:
        doc: InsightPart = p[key]
        reason = None if doc.get("collected") else str(doc.get("reason") or "not collected")
        tables = [] if reason or key not in tables_of else tables_of[key]()
        out.append(WhyPart(key, TITLES[key], reason, lines[key], tables))
    return out


def _part_lines(p: InsightParts, top: int, text_chars: int) -> dict[str, list[tuple[str, str]]]:
    return {
        "statements": _statements(p["statements"], top, text_chars),
        "plans": _plans(p["plans"], top, text_chars),
        "log_digest": _log(p["log_digest"]),
        "waits": _waits(p["waits"]),
    }


def _statement_table(doc: StatementsDoc, rows: int) -> list[Table]:
    cols = [
        "#",
        "share",
        "total ms",
        "calls",
        "mean ms",
        "rows",
        "shared hit",
        "shared read",
        "hit %",
        "temp written",
        "statement",
    ]
    out: list[list[str | list[str]]] = []
    for i, st in enumerate(doc.get("top", [])[:rows], 1):
        text = st["text"] + ("" if st.get("toplevel", True) else " (nested)")
        out.append(
            [
                str(i),
                _pct(st.get("share_pct")),
                f"{st['total_ms']:,.1f}",
                f"{st['calls']:,}",
                f"{st['mean_ms']:.3f}",
                _int(st.get("rows")),
                _int(st.get("shared_blks_hit")),
                _int(st.get("shared_blks_read")),
                _pct(st.get("hit_ratio")),
                _int(st.get("temp_blks_written")),
                text,
            ]
        )
    note = None if out else "No statement ran in the measured window."
    return [Table.titled("Top statements by total time", cols, out, note, frozenset(range(1, 10)))]


def _plan_tables(doc: PlansDoc, rows: int) -> list[Table]:
    cols = [
        "statement",
        "node",
        "relation",
        "estimated rows",
        "actual rows per loop",
        "loops",
        "factor",
        "flagged samples",
    ]
    flags: list[list[str | list[str]]] = [
        [
            f["text"],
            f["node"],
            f.get("relation") or "-",
            f"{f['estimated_rows']:,.0f}",
            f"{f['actual_rows']:,.0f}",
            _int(f.get("loops")),
            f"{f['factor']:g}x {f['direction']}",
            f"{f['misestimate_samples']} of {f['samples']}",
        ]
        for f in (doc.get("misestimates") or [])[:rows]
    ]
    none = "No node's estimated and actual rows differ by 10x or more."
    out = [
        Table.titled("Misestimates", cols, flags, None if flags else none, frozenset({3, 4, 5, 6}))
    ]
    sampled: list[list[str | list[str]]] = []
    for st in (doc.get("statements") or [])[:rows]:
        p = st["plans"][0] if st.get("plans") else {}
        flagged = sum(x.get("misestimate_samples", 0) for x in st.get("plans") or [])
        top = st.get("top_up_samples") or 0
        sampled.append(
            [
                st["text"],
                f"{st['samples']:,}" + (f" ({top:,} top-up)" if top else ""),
                f"{st['sampled_ms']:,.1f}",
                str(len(st.get("plans") or [])),
                list(p.get("outline") or []),
                str(flagged),
            ]
        )
    out.append(
        Table.titled(
            "Sampled plans (auto_explain)",
            [
                "statement",
                "samples",
                "sampled ms",
                "plans",
                "most sampled plan",
                "misestimated samples",
            ],
            sampled,
            None if sampled else "No plan was sampled.",
            frozenset({1, 2, 3, 5}),
        )
    )
    changes: list[list[str | list[str]]] = [
        [
            ch["text"],
            ch["pattern"],
            [
                f"{x['hash']} x{x['samples']} {_span(x['first_t'], x['last_t'])}".strip()
                for x in ch["plans"]
            ],
        ]
        for ch in doc.get("changes") or []
    ]
    if changes:
        out.append(
            Table.titled("Plan changes during the run", ["statement", "pattern", "plans"], changes)
        )
    return out


def _wait_table(doc: WaitsDoc, rows: int) -> list[Table]:
    out = [_one_wait_table(doc, rows, "Wait events, share of active time")]
    ws = doc.get("pg_wait_sampling")
    if ws and ws.get("collected"):
        title = f"Wait events by pg_wait_sampling, share of {ws.get('of', 'active time')}"
        out.append(_one_wait_table(ws, rows, title))
    return out


def _one_wait_table(doc: WaitShares, rows: int, title: str) -> Table:
    events: list[list[str | list[str]]] = [
        [e["event"], e["type"], wait_share(e, doc), f"{e['seen']:,}"]
        for e in doc.get("events", [])[:rows]
    ]
    note = f"{doc.get('source', '')}: {doc.get('active_seen', 0):,} samples, {BOUNDS_WORDS}."
    if doc.get("note"):
        note += f" {doc['note']}."
    if not events:
        note = "No active backend seen by the sampler. " + note
    return Table.titled(
        title, ["event", "type", "share [95% bounds]", "samples"], events, note, frozenset({2, 3})
    )


BOUNDS_WORDS = "bounds from the per-second spread of the samples"


def wait_share(event: WaitEvent, doc: WaitShares | None = None) -> str:
    """ "36% [31, 41]", and "of 1,204 samples" when `doc` (the profile) is given; runs archived
    before bounds existed show the share alone."""
    return format.share(
        event.get("share_pct"),
        event.get("low_pct"),
        event.get("high_pct"),
        None if doc is None else doc.get("active_seen"),
    )


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}%"


def _int(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def _statements(doc: StatementsDoc, top: int, text_chars: int) -> list[tuple[str, str]]:
    if not doc.get("collected"):
        return [("statements", doc.get("reason", ""))]
    rows = [
        (
            "statements",
            f"{doc['statements']:,} statements, {doc['calls']:,} top-level calls, "
            f"{doc['total_ms'] / 1000:,.1f} s top-level time over {doc.get('window_s') or 0:.1f} s",
        )
    ]
    for i, st in enumerate(doc.get("top", [])[:top], 1):
        share = "" if st.get("share_pct") is None else f"{st['share_pct']:.1f}%  "
        nested = "" if st.get("toplevel", True) else "(nested) "
        rows.append(
            (
                f"  #{i}",
                f"{share}{st['total_ms']:,.0f} ms, {st['calls']:,} calls, "
                f"{st['mean_ms']:.3f} ms mean  {nested}{clip(st['text'], text_chars)}",
            )
        )
    return rows


def _plans(doc: PlansDoc, top: int, text_chars: int) -> list[tuple[str, str]]:
    if not doc.get("collected"):
        return [("plans", doc.get("reason", ""))]
    rows = [("plans", f"{doc['samples']:,} sampled plans of {len(doc['statements'])} statements")]
    top_up = doc.get("top_up")
    if top_up and top_up.get("scripts"):
        names = ", ".join(
            f"{x['name']} ({x['expected_plans']:g} expected, {x['ran']} run"
            + (f", failed: {x['error']}" if x.get("error") else "")
            + ")"
            for x in top_up["scripts"]
        )
        rows.append(
            (
                "plan top-up",
                f"{doc.get('top_up_samples', 0):,} of them after the window, for rare "
                f"transaction types: {names}",
            )
        )
    flags = _one_per_statement(doc.get("misestimates") or [])
    if not flags:
        rows.append(("misestimates", "none (no node off by 10x or more)"))
    for f in flags[:top]:  # as many as the statements shown: a rare type's flag is not crowded out
        rows.append(
            (
                "misestimate",
                f"{f['node']}: estimated {f['estimated_rows']:,.0f} rows, actual "
                f"{f['actual_rows']:,.0f} per loop ({f['factor']:g}x {f['direction']}, "
                f"{f['misestimate_samples']} of {f['samples']} samples) in "
                f"{clip(f['text'], text_chars)}",
            )
        )
    for ch in doc.get("changes") or []:
        spans = ", ".join(
            f"{p['hash'][:8]} x{p['samples']} {_span(p['first_t'], p['last_t'])}"
            for p in ch["plans"]
        )
        rows.append((f"plan {ch['pattern']}", f"{clip(ch['text'], text_chars)}: {spans}"))
    return rows


def _one_per_statement(flags: list[MisestimateFlag]) -> list[MisestimateFlag]:
    """One flag per statement: a node reading one table (it names where the estimate went
    wrong) before a join, then the plan flagged most often, then the largest factor."""
    best: dict[str, MisestimateFlag] = {}
    for f in flags:
        old = best.get(f["fingerprint"])
        if old is None or _rank(f) > _rank(old):
            best[f["fingerprint"]] = f
    return sorted(best.values(), key=lambda f: -f["factor"])


def _rank(flag: MisestimateFlag) -> tuple[bool, int, float]:
    relation = flag.get("relation") or ""
    return (bool(relation) and "," not in relation, flag["misestimate_samples"], flag["factor"])


def _log(doc: LogDigestDoc) -> list[tuple[str, str]]:
    if not doc.get("collected"):
        return [("server log", doc.get("reason", ""))]
    ck = doc["checkpoints"]
    text = "none"
    if ck["count"]:
        reasons = ", ".join(f"{k} {v}" for k, v in ck["by_reason"].items())
        text = f"{ck['count']} (requested {ck['requested']}, timed {ck['timed']}; {reasons})"
    warnings = doc["checkpoint_warnings"]["count"]
    if warnings:
        text += f"; 'checkpoints are occurring too frequently' {warnings} times"
    rows = [("checkpoints", text)]
    av = doc["autovacuum"]
    if av["vacuum"] or av["analyze"]:
        tables = ", ".join(f"{t} {sum(c.values())}" for t, c in list(av["tables"].items())[:4])
        rows.append(
            (
                "autovacuum",
                f"{av['vacuum']} vacuums, {av['analyze']} analyzes on "
                f"{len(av['tables'])} tables ({tables})",
            )
        )
    errors = doc["errors"]
    if errors["count"]:
        top = "; ".join(f"{m['message']} x{m['count']}" for m in errors["messages"][:3])
        rows.append(("errors", f"{errors['count']}: {top}"))
    for counted, label in ((doc["deadlocks"], "deadlocks"), (doc["lock_waits"], "lock waits")):
        if counted["count"]:
            rows.append((label, str(counted["count"])))
    temp = doc["temp_files"]
    if temp["count"]:
        rows.append(("temp files", f"{temp['count']}, {format.size(temp['bytes'])}"))
    return rows


def _waits(doc: WaitsDoc) -> list[tuple[str, str]]:
    if not doc.get("collected"):
        return [("waits", doc.get("reason", ""))]
    if not doc["events"]:
        return [("waits", "no active backend seen by the sampler")]
    top = ", ".join(f"{e['event']} {wait_share(e)}" for e in doc["events"][:5])
    rows = [("waits", f"{top} (of {doc['active_seen']:,} samples; {doc.get('source', '')})")]
    ws = doc.get("pg_wait_sampling")
    if ws and ws.get("collected") and ws.get("events"):
        top = ", ".join(f"{e['event']} {wait_share(e)}" for e in ws["events"][:5])
        rows.append(
            (
                "pg_wait_sampling",
                f"{top} (of {ws['active_seen']:,} samples, share of {ws.get('of')})",
            )
        )
    elif ws and not ws.get("collected"):
        rows.append(("pg_wait_sampling", str(ws.get("reason", ""))))
    return rows


def _span(first: float | None, last: float | None) -> str:
    if first is None or last is None:
        return ""
    return f"({first:+.1f} s .. {last:+.1f} s)"
