"""What a run's latency percentiles rest on, as every surface says it: how many samples (all
transactions, a sample of them, or none) and each percentile's distribution-free bounds.

The runner records it (RunRecord.extra["latency_basis"], analysis/quantile_bounds.py: the
order statistics bracketing each percentile at 95%); `runs show`, the run page, `report run`
and the comparisons render these lines, so "p95 1.234 ms" never stands without its n.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pgrig import format as fmt
from pgrig.analysis import quantile_bounds
from pgrig.archive.records import RunRecord
from pgrig.record.documents import LatencyBasisDoc
from pgrig.record.json_values import number, whole

SHOWN = ("p95", "p99")  # the percentiles whose bounds the summaries spell out
NOT_RECORDED = "not recorded (an older run)"


@dataclass(frozen=True)
class LatencyBasis:
    rests_on: str  # "53,939 samples", "7,557 of 53,939 transactions (sampled)", or why none
    source: str | None = None  # "pgbench per-transaction log (every transaction)", ...
    samples: int | None = None
    population: int | None = None
    confidence: float | None = None  # of the bounds, 0.95
    bounds: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)
    sample_max_ms: float | None = None  # sampled logs: the sample's max, a lower bound
    declared_sampled: bool | None = None  # the engine's own word, where it gave one

    @property
    def sampled(self) -> bool:
        if self.declared_sampled is not None:
            return self.declared_sampled
        return (
            self.samples is not None
            and self.population is not None
            and 0 < self.samples < self.population
        )


def of(rec: RunRecord) -> LatencyBasis | None:
    """The run's basis; None when it recorded neither percentiles nor a basis."""
    doc = rec.extra.get("latency_basis") if isinstance(rec.extra, dict) else None
    if not isinstance(doc, dict):
        has = any(getattr(rec.latency, q) is not None for q in ("p50", "p95", "p99"))
        return LatencyBasis(NOT_RECORDED) if has else None
    bounds: dict[str, tuple[float | None, float | None]] = {}
    for key, pair in (doc.get("bounds") or {}).items():
        if isinstance(pair, list | tuple) and len(pair) == 2:
            bounds[str(key)] = (number(pair[0]), number(pair[1]))
    return LatencyBasis(
        rests_on=str(doc.get("rests_on") or _rests_on(doc)),
        source=_text(doc.get("source")),
        samples=whole(doc.get("samples")),
        population=whole(doc.get("population")),
        confidence=number(doc.get("confidence")),
        bounds=bounds,
        sample_max_ms=number(doc.get("sample_max_ms")),
        declared_sampled=_declared_sampled(doc),
    )


def bounds_text(basis: LatencyBasis | None, q: str) -> str | None:
    """'[1.200, 1.270]' of percentile q; a side without enough samples says 'unbounded'."""
    if basis is None or q not in basis.bounds:
        return None
    lo, hi = basis.bounds[q]
    if lo is None and hi is None:
        return "[unbounded]"
    return f"[{_ms_or(lo)}, {_ms_or(hi)}]"


def value_text(rec: RunRecord, q: str, basis: LatencyBasis | None = None) -> str:
    """'1.234 [1.200, 1.270]': the percentile in ms with its bounds where recorded."""
    basis = basis if basis is not None else of(rec)
    value = getattr(rec.latency, q)
    if value is None:
        return fmt.MISSING
    b = bounds_text(basis, q)
    return fmt.ms(value) + (f" {b}" if b else "")


def items(rec: RunRecord) -> list[tuple[str, str]]:
    """The run summary's lines: what the percentiles rest on, then p95 and p99 with their
    bounds (nothing when the run has no percentiles and no basis: a failed run)."""
    basis = of(rec)
    if basis is None:
        return []
    rests = basis.rests_on
    if basis.source and basis.samples:
        rests += f", from {basis.source}"
    out = [("percentiles rest on", rests)]
    if basis.bounds:
        conf = f"{(basis.confidence or 0.95) * 100:g}%"
        shown = [f"{q} {value_text(rec, q, basis)}" for q in SHOWN if getattr(rec.latency, q)]
        if shown:
            out.append((f"latency ms, {conf} bounds", ", ".join(shown)))
    if basis.sample_max_ms is not None:
        out.append(("sample max ms", f"{fmt.ms(basis.sample_max_ms)} (a lower bound of the max)"))
    return out


def group_text(runs: Sequence[RunRecord]) -> str:
    """What a comparison column's percentiles rest on: one run's words, or for repeats the
    range of samples per run ("4 runs, 7,412-7,701 samples each (sampled)")."""
    ok = [r for r in runs if r.status == "ok"] or list(runs)
    bases = [b for b in (of(r) for r in ok) if b is not None]
    if not bases:
        return fmt.MISSING
    if len(ok) == 1:
        return bases[0].rests_on
    counts = [b.samples for b in bases if b.samples]
    if not counts:
        return " / ".join(dict.fromkeys(b.rests_on for b in bases))
    lo, hi = min(counts), max(counts)
    each = f"{lo:,}" if lo == hi else f"{lo:,}-{hi:,}"
    text = f"{len(ok)} runs, {each} samples each"
    if any(b.sampled for b in bases):
        text += " (sampled)"
    if len(bases) < len(ok):
        text += f"; {len(ok) - len(bases)} not recorded"
    return text


def _declared_sampled(doc: LatencyBasisDoc) -> bool | None:
    """sysbench's histogram holds every transaction of the window, whatever its count says
    (runs archived before the "sampled" key: the source tells)."""
    sampled = doc.get("sampled")
    if isinstance(sampled, bool):
        return sampled
    return False if str(doc.get("source", "")).startswith("sysbench") else None


def _rests_on(doc: LatencyBasisDoc) -> str:
    n, total = whole(doc.get("samples")), whole(doc.get("population"))
    if not n:
        return "no samples"
    if _declared_sampled(doc) is False:
        return quantile_bounds.describe_every(n, total or None)
    return quantile_bounds.describe(n, total or None)


def _ms_or(v: float | None) -> str:
    return "unbounded" if v is None else fmt.ms(v)


def _text(v: object) -> str | None:
    return str(v) if v else None
