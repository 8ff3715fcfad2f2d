"""What a run's insights say, for people and for machines (one answer for CLI, web, reports).

- parts(insights): the four documents `runs show --json` prints under statements, plans,
  log_digest and waits (runs archived before insights existed say so in each);
- why(insights): short labelled lines for the "why" section of `runs show`: top statements,
  misestimates, plan changes during the run, the log's highlights, top waits.
"""

from __future__ import annotations

from typing import Any

from pgrig.insights.plans import clip

PARTS = ("statements", "plans", "log_digest", "waits")
NO_INSIGHTS = "not collected: the run has no insights (archived before pgrig collected them)"


def parts(insights: dict[str, Any] | None) -> dict[str, Any]:
    doc = insights or {}
    return {p: doc.get(p) or {"collected": False, "reason": NO_INSIGHTS} for p in PARTS}


def why(
    insights: dict[str, Any] | None, top: int = 5, text_chars: int = 90
) -> list[tuple[str, str]]:
    """(label, text) lines; parts not collected give their reason."""
    p = parts(insights)
    rows: list[tuple[str, str]] = []
    rows += _statements(p["statements"], top, text_chars)
    rows += _plans(p["plans"], text_chars)
    rows += _log(p["log_digest"])
    rows += _waits(p["waits"])
    for note in (insights or {}).get("notes") or []:
        rows.append(("note", note))
    return rows


def _statements(doc: dict[str, Any], top: int, text_chars: int) -> list[tuple[str, str]]:
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


def _plans(doc: dict[str, Any], text_chars: int) -> list[tuple[str, str]]:
    if not doc.get("collected"):
        return [("plans", doc.get("reason", ""))]
    rows = [("plans", f"{doc['samples']:,} sampled plans of {len(doc['statements'])} statements")]
    flags = _one_per_statement(doc.get("misestimates") or [])
    if not flags:
        rows.append(("misestimates", "none (no node off by 10x or more)"))
    for f in flags[:3]:
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


def _one_per_statement(flags: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One flag per statement: a node reading one table (it names where the estimate went
    wrong) before a join, then the plan flagged most often, then the largest factor."""
    best: dict[str, dict[str, Any]] = {}
    for f in flags:
        old = best.get(f["fingerprint"])
        if old is None or _rank(f) > _rank(old):
            best[f["fingerprint"]] = f
    return sorted(best.values(), key=lambda f: -f["factor"])


def _rank(flag: dict[str, Any]) -> tuple[bool, int, float]:
    relation = flag.get("relation") or ""
    return (bool(relation) and "," not in relation, flag["misestimate_samples"], flag["factor"])


def _log(doc: dict[str, Any]) -> list[tuple[str, str]]:
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
    for key, label in (("deadlocks", "deadlocks"), ("lock_waits", "lock waits")):
        if doc[key]["count"]:
            rows.append((label, str(doc[key]["count"])))
    temp = doc["temp_files"]
    if temp["count"]:
        rows.append(("temp files", f"{temp['count']}, {temp['bytes'] / 2**20:,.1f} MiB"))
    return rows


def _waits(doc: dict[str, Any]) -> list[tuple[str, str]]:
    if not doc.get("collected"):
        return [("waits", doc.get("reason", ""))]
    if not doc["events"]:
        return [("waits", "no active backend seen by the sampler")]
    top = ", ".join(f"{e['event']} {e['share_pct']:.1f}%" for e in doc["events"][:5])
    return [("waits", f"{top} (of {doc['active_seen']:,} active backends seen)")]


def _span(first: float | None, last: float | None) -> str:
    if first is None or last is None:
        return ""
    return f"({first:+.1f} s .. {last:+.1f} s)"
