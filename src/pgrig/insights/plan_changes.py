"""Plan changes between two runs (or two groups of repeats): a pure function over insights.

A statement (same fingerprint: same normalised text) whose dominant plan (the plan hash with
the most samples, summed over the runs of a group) differs between A and B changed plan; both
plans are returned, with their shapes (outline), sample counts, mean durations, misestimates
and the plans themselves.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

from pgrig.insights.plans import clip
from pgrig.record.documents import InsightsDoc, Misestimate, PlanDoc, PlanStatement
from pgrig.record.json_values import JsonValue

Insights = InsightsDoc | None  # one run's insights (RunRecord.insights)


class PlanSide(TypedDict):
    """A statement's dominant plan on one side of a comparison."""

    hash: str
    samples: int
    share_pct: float | None  # of the statement's sampled plans
    mean_ms: float | None
    outline: list[str]
    misestimates: list[Misestimate]
    plan: dict[str, JsonValue] | None


class PlanChange(TypedDict):
    """A statement whose dominant plan differs between A and B."""

    fingerprint: str
    text: str | None
    function: str | None
    a: PlanSide
    b: PlanSide


def plan_changes(a: Sequence[Insights], b: Sequence[Insights]) -> list[PlanChange]:
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
            PlanChange(
                fingerprint=key,
                text=st_b.get("text"),
                function=st_b.get("function"),
                a=_side(st_a, pa),
                b=_side(st_b, pb),
            )
        )
    return out


def _statements(docs: Sequence[Insights]) -> dict[str, PlanStatement]:
    """The statements of a group's runs by fingerprint, plans merged by hash (samples summed,
    the first run's plan kept)."""
    merged: dict[str, PlanStatement] = {}
    for doc in docs:
        plans = (doc or InsightsDoc()).get("plans") or {}
        if not plans.get("collected"):
            continue
        for st in plans.get("statements") or []:
            into = merged.setdefault(st["fingerprint"], {**st, "plans": []})
            by_hash = {p["hash"]: p for p in into["plans"]}
            for p in st.get("plans") or []:
                if p["hash"] in by_hash:
                    by_hash[p["hash"]]["samples"] += p["samples"]
                else:
                    into["plans"].append(p.copy())
    return merged


def _dominant(st: PlanStatement) -> PlanDoc | None:
    plans = [p for p in st.get("plans") or [] if p.get("samples")]
    return max(plans, key=lambda p: (p["samples"], p["hash"])) if plans else None


def _side(st: PlanStatement, plan: PlanDoc) -> PlanSide:
    total = sum(p.get("samples", 0) for p in st.get("plans") or [])
    return PlanSide(
        hash=plan["hash"],
        samples=plan["samples"],
        share_pct=round(100.0 * plan["samples"] / total, 1) if total else None,
        mean_ms=plan.get("mean_ms"),
        outline=plan.get("outline") or [],
        misestimates=plan.get("misestimates") or [],
        plan=plan.get("plan"),
    )


def change_lines(changes: list[PlanChange], text_chars: int = 120) -> list[str]:
    """Plain-text lines of plan changes: the statement, then A's and B's plan shapes."""
    lines = []
    for ch in changes:
        lines.append(clip(ch.get("text") or "", text_chars))
        for side, p in (("a", ch["a"]), ("b", ch["b"])):
            mean = "" if p.get("mean_ms") is None else f", mean {p['mean_ms']:.3f} ms"
            lines.append(f"  {side.upper()}: plan {p['hash']} ({p['samples']} samples{mean})")
            lines.extend("      " + line for line in p["outline"])
    return lines
