"""Per-query evidence of a TPC-H tuning study (`--preset analytics`): for each of the 22
queries and each confirmation configuration (baseline, best, the reference profile), the
median time over its ok runs, the median temp bytes it wrote (the run's TPC-H record), its JIT
time (pg_stat_statements' jit_*_time over the run) and whether its sampled plans differ from
the baseline's (the insights' plans: a query may go unsampled in a run, then unknown).

Which settings bought the gain says the ablation; this says where: which queries got faster,
which stopped spilling, which changed plan.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pgrig import format
from pgrig.archive.records import RunRecord
from pgrig.insights.statements import JIT_MS
from pgrig.record.figures import tpch_query_s
from pgrig.record.json_values import number
from pgrig.workloads.tpch import queries


@dataclass
class QueryRow:
    query: int
    seconds: dict[str, float | None] = field(default_factory=dict)  # config -> median s
    temp_bytes: dict[str, float | None] = field(default_factory=dict)
    jit_ms: dict[str, float | None] = field(default_factory=dict)
    plans: dict[str, set[str]] = field(default_factory=dict)  # config -> sampled plan hashes

    def ratio(self, base: str, cand: str) -> float | None:
        """base time / candidate time: above 1, the candidate is faster."""
        a, b = self.seconds.get(base), self.seconds.get(cand)
        return a / b if a and b else None

    def plan_changed(self, base: str, cand: str) -> bool | None:
        """None: a side has no sampled plan of this query."""
        a, b = self.plans.get(base), self.plans.get(cand)
        return None if not a or not b else a != b


def is_tpch_study(runs: Sequence[RunRecord]) -> bool:
    return any((r.workload or "").strip().startswith("tpch:") for r in runs)


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _query_events(rec: RunRecord) -> dict[int, Mapping[str, object]]:
    doc = rec.extra.get("tpch") or {}
    out: dict[int, Mapping[str, object]] = {}
    for e in doc.get("queries") or []:
        if isinstance(e, dict) and e.get("status") == "ok" and int(e.get("stream") or 0) == 0:
            out[int(e["query"])] = e
    return out


def _jit(rec: RunRecord) -> dict[int, float]:
    """JIT ms per query of one run (statements it ran; none where the run collected none)."""
    doc = rec.insights.get("statements") or {}
    out: dict[int, float] = {}
    for s in doc.get("top") or []:
        entry: Mapping[str, Any] = s
        q = queries.query_of(str(entry.get("text") or ""))
        if q is not None and any(k in entry for k in JIT_MS):
            out[q] = out.get(q, 0.0) + sum(float(entry.get(k) or 0) for k in JIT_MS)
    return out


def _plans(rec: RunRecord) -> dict[int, set[str]]:
    doc = rec.insights.get("plans") or {}
    out: dict[int, set[str]] = {}
    for s in doc.get("statements") or []:
        q = queries.query_of(str(s.get("text") or ""))
        if q is not None:
            out.setdefault(q, set()).update(str(p.get("hash")) for p in s.get("plans") or [])
    return out


def query_rows(groups: Mapping[str, Sequence[RunRecord]]) -> list[QueryRow]:
    """The 22 rows from the confirmation's runs per configuration (whole records)."""
    rows = {q: QueryRow(q) for q in queries.QUERIES}
    for config, runs in groups.items():
        events = [_query_events(r) for r in runs]
        jits = [_jit(r) for r in runs]
        plans = [_plans(r) for r in runs]
        for q, row in rows.items():
            times = [tpch_query_s(r, q) for r in runs]
            row.seconds[config] = _median([t for t in times if t is not None])
            temps = [number(e[q].get("temp_bytes")) for e in events if q in e]
            row.temp_bytes[config] = _median([t for t in temps if t is not None])
            row.jit_ms[config] = _median([j[q] for j in jits if q in j])
            row.plans[config] = {h for p in plans for h in p.get(q, set())}
    return [rows[q] for q in queries.QUERIES]


def table(rows: Sequence[QueryRow], configs: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    """Headings and cells: per query each configuration's time, then best vs the others
    (base time / best time), temp MiB, JIT ms and whether the plan changed against the
    baseline."""
    base, best, *others = configs
    head = ["query", *(f"{c} s" for c in configs)]
    head += [f"{best} vs {c}" for c in (base, *others)]
    head += [f"temp MiB {c}" for c in configs] + [f"JIT ms {c}" for c in configs]
    head.append("plan vs baseline")
    cells = []
    for r in rows:
        line = [f"Q{r.query}", *(format.number(r.seconds.get(c), 2) for c in configs)]
        for c in (base, *others):
            x = r.ratio(c, best)
            line.append(f"x{x:.2f}" if x is not None else "-")
        for c in configs:
            t = r.temp_bytes.get(c)
            line.append(format.number(None if t is None else t / 2**20, 0))
        line += [format.number(r.jit_ms.get(c), 0) for c in configs]
        changed = {c: r.plan_changed(base, c) for c in (best, *others)}
        said = [f"{c}: {'changed' if v else 'same'}" for c, v in changed.items() if v is not None]
        line.append("; ".join(said) or "not sampled")
        cells.append(line)
    return head, cells
