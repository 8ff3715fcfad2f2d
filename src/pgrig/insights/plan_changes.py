"""Plan changes between two runs (or two groups of repeats): a pure function over insights.

A statement (same fingerprint: same normalised text) whose dominant plan (the plan hash with
the most samples, summed over the runs of a group) differs between A and B changed plan; both
plans are returned, with their shapes (outline), sample counts, mean durations, misestimates
and the plans themselves.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pgrig.insights.plans import clip
from pgrig.record.documents import InsightsDoc

Insights = InsightsDoc | None  # one run's insights (RunRecord.insights)


def plan_changes(a: Sequence[Insights], b: Sequence[Insights]) -> list[dict[str, Any]]:
    """Statements planned differently in B than in A (each a list of runs' insights), B's
    heaviest first."""
    in_a, in_b = _statements(a), _statements(b)
    out = []
    for key, st_b in in_b.items():  # in B's order: most sampled time first
        st_a = in_a.get(key)
        if st_a is None:
            continue
        pa, pb = _dominant(st_a), _dominant(st_b)
        if pa is None or pb is None or pa["hash"] == pb["hash"]:
            continue
        out.append(
            {
                "fingerprint": key,
                "text": st_b.get("text"),
                "function": st_b.get("function"),
                "a": _side(st_a, pa),
                "b": _side(st_b, pb),
            }
        )
    return out


def _statements(docs: Sequence[Insights]) -> dict[str, dict[str, Any]]:
    """The statements of a group's runs by fingerprint, plans merged by hash (samples summed,
    the first run's plan kept)."""
    merged: dict[str, dict[str, Any]] = {}
    for doc in docs:
        plans = (doc or {}).get("plans") or {}
        if not plans.get("collected"):
            continue
        for st in plans.get("statements") or []:
            into = merged.setdefault(st["fingerprint"], {**st, "plans": []})
            by_hash = {p["hash"]: p for p in into["plans"]}
            for p in st.get("plans") or []:
                if p["hash"] in by_hash:
                    by_hash[p["hash"]]["samples"] += p["samples"]
                else:
                    into["plans"].append(dict(p))
    return merged


def _dominant(st: dict[str, Any]) -> dict[str, Any] | None:
    plans = [p for p in st.get("plans") or [] if p.get("samples")]
    return max(plans, key=lambda p: (p["samples"], p["hash"])) if plans else None


def _side(st: dict[str, Any], plan: dict[str, Any]) -> dict[str, Any]:
    total = sum(p.get("samples", 0) for p in st.get("plans") or [])
    return {
        "hash": plan["hash"],
        "samples": plan["samples"],
        "share_pct": round(100.0 * plan["samples"] / total, 1) if total else None,
        "mean_ms": plan.get("mean_ms"),
        "outline": plan.get("outline") or [],
        "misestimates": plan.get("misestimates") or [],
        "plan": plan.get("plan"),
    }


def change_lines(changes: list[dict[str, Any]], text_chars: int = 120) -> list[str]:
    """Plain-text lines of plan changes: the statement, then A's and B's plan shapes."""
    lines = []
    for ch in changes:
        lines.append(clip(ch.get("text") or "", text_chars))
        for side in ("a", "b"):
            p = ch[side]
            mean = "" if p.get("mean_ms") is None else f", mean {p['mean_ms']:.3f} ms"
            lines.append(f"  {side.upper()}: plan {p['hash']} ({p['samples']} samples{mean})")
            lines.extend("      " + line for line in p["outline"])
    return lines
