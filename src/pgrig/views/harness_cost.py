"""What the harness took from a run, in one line every surface prints: `run`, `runs show`
(text and --json), `runs compare`, the reports and the web.

    harness: 1.4 CPU-s, 3.5% of the machine, 27 wake-ups/s; 212 plans, 0.4 MiB log

CPU-s: pgrig's own processes on this machine (without the load generator), the server
backends of its sessions (samplers, insights) and the load hosts' agents, over the load's
span (extra["harness_cost"], load/core/harness_meter.py); "% of the machine" is this machine's
share: its CPU-s over span x logical CPUs. Wake-ups/s: how often pgrig's own threads went to
sleep and woke over the span (voluntary context switches; runs before this was measured leave
it out). Plans: what auto_explain wrote to the server log
during the run; log: the bytes the server wrote to its log meanwhile. A run recorded before
pgrig measured this says "not recorded", never 0.

Comparisons state when two columns' harness costs differ by more than DIFF_POINTS points of
the machine: CPU the harness takes is CPU the benchmark does not get, so on a CPU-bound run a
difference of 1 point of the machine can move the result by about 1%, half the smallest
change a comparison reports by default (its practical threshold, 2%): below it, the two
sides' harnesses are the same for the verdict; above it, part of the difference in the
figures may be the harness's.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from pgrig import format as fmt
from pgrig.archive.records import RunRecord
from pgrig.metrics.harness_cost import machine_pct
from pgrig.record.json_values import JsonObject, number, whole

NOT_RECORDED = "not recorded"
DIFF_POINTS = 1.0  # points of the machine (module docstring)


@dataclass(frozen=True)
class HarnessCost:
    """One run's harness cost (or a group's medians); recorded False: "not recorded"."""

    recorded: bool
    cpu_s: float | None = None  # everything the harness used, every host
    machine_pct: float | None = None  # this machine's share
    pgrig_cpu_s: float | None = None
    backends_cpu_s: float | None = None
    backends: int | None = None
    load_hosts_cpu_s: float | None = None
    # each load host's agent: its CPU-s (None: it did not say), by host name
    load_hosts: dict[str, float | None] = field(default_factory=dict)
    span_s: float | None = None
    cpus: int | None = None
    wakeups_per_s: float | None = None  # pgrig's own threads (voluntary context switches)
    preempted_per_s: float | None = None  # ... and involuntary ones
    plans: int | None = None
    log_bytes: int | None = None
    notes: list[str] = field(default_factory=list)  # what was not measured, and why
    runs: int = 1  # runs it rests on (a group's medians)

    @property
    def text(self) -> str:
        """The figures without the "harness:" label."""
        if not self.recorded:
            return NOT_RECORDED
        cpu = f"{_cpu(self.cpu_s)} CPU-s"
        if self.machine_pct is not None:
            cpu += f", {fmt.number(self.machine_pct)}% of the machine"
        if self.wakeups_per_s is not None:
            cpu += f", {self.wakeups_per_s:,.0f} wake-ups/s"
        if self.plans is None and self.log_bytes is None:
            log = "log not measured"
        else:
            parts = []
            if self.plans is not None:
                parts.append(f"{self.plans:,} plan{'s' if self.plans != 1 else ''}")
            parts.append(
                f"{fmt.size(self.log_bytes)} log"
                if self.log_bytes is not None
                else "log not measured"
            )
            log = ", ".join(parts)
        return f"{cpu}; {log}"

    @property
    def line(self) -> str:
        return f"harness: {self.text}"

    @property
    def detail(self) -> str:
        """Where the CPU went, and what was not measured."""
        if not self.recorded:
            return NOT_RECORDED
        parts = [f"pgrig's processes {_cpu(self.pgrig_cpu_s)} CPU-s"]
        if self.backends_cpu_s is not None:
            n = self.backends or 0
            parts.append(
                f"backends of its {n} session{'s' if n != 1 else ''} "
                f"{_cpu(self.backends_cpu_s)} CPU-s"
            )
        if self.load_hosts_cpu_s is not None:
            each = ", ".join(f"{h} {_cpu(v)}" for h, v in sorted(self.load_hosts.items()))
            parts.append(
                f"load hosts' agents {_cpu(self.load_hosts_cpu_s)} CPU-s"
                + (f" ({each})" if len(self.load_hosts) > 1 else "")
            )
        text = ", ".join(parts)
        if self.span_s is not None:
            text += f" over {fmt.number(self.span_s)} s"
        if self.cpus:
            text += f" on {self.cpus} CPUs"
        if self.wakeups_per_s is not None and self.preempted_per_s is not None:
            text += (
                f"; pgrig's threads woke {self.wakeups_per_s:,.1f} times a second and were "
                f"preempted {self.preempted_per_s:,.1f} times"
            )
        if self.runs > 1:
            text += f" (medians of {self.runs} runs)"
        return "; ".join([text, *self.notes])

    def as_dict(self) -> JsonObject:
        if not self.recorded:
            return {"recorded": False, "line": f"harness: {NOT_RECORDED}"}
        return {
            "recorded": True,
            "line": self.line,
            "detail": self.detail,
            "cpu_s": self.cpu_s,
            "machine_pct": None if self.machine_pct is None else round(self.machine_pct, 2),
            "pgrig_cpu_s": self.pgrig_cpu_s,
            "backends_cpu_s": self.backends_cpu_s,
            "backends": self.backends,
            "load_hosts_cpu_s": self.load_hosts_cpu_s,
            "load_hosts": dict(self.load_hosts),
            "span_s": self.span_s,
            "cpus": self.cpus,
            "wakeups_per_s": self.wakeups_per_s,
            "preempted_per_s": self.preempted_per_s,
            "plans": self.plans,
            "log_bytes": self.log_bytes,
            "notes": list(self.notes),
            "runs": self.runs,
        }


def _cpu(v: float | None) -> str:
    if v is None:
        return fmt.MISSING
    return f"{v:.2f}" if v < 0.1 else f"{v:,.1f}"


def _per_s(count: int | None, span_s: float | None) -> float | None:
    if count is None or not span_s:
        return None
    return round(count / span_s, 1)


def of(rec: RunRecord) -> HarnessCost:
    doc = rec.extra.get("harness_cost") if isinstance(rec.extra, dict) else None
    if not isinstance(doc, dict):
        return HarnessCost(False)
    notes: list[str] = []
    own = number(doc.get("pgrig_cpu_s"))
    backends = number(doc.get("backends_cpu_s"))
    if backends is None:
        notes.append(f"backends not measured: {doc.get('backends_reason') or 'unknown'}")
    hosts = doc.get("load_hosts") or {}
    per_host = {
        str(name): number(h.get("cpu_s")) for name, h in hosts.items() if isinstance(h, dict)
    }
    agents = list(per_host.values())
    agents_s = (
        sum(a for a in agents if a is not None) if any(a is not None for a in agents) else None
    )
    if hosts and any(a is None for a in agents):
        notes.append("a load host's agent did not say its CPU")
    span, cpus = number(doc.get("span_s")), doc.get("cpus")
    here = None if own is None else own + (backends or 0.0)
    total = None if here is None else here + (agents_s or 0.0)
    if doc.get("log_reason"):
        notes.append(str(doc["log_reason"]))
    return HarnessCost(
        True,
        cpu_s=None if total is None else round(total, 3),
        wakeups_per_s=_per_s(whole(doc.get("pgrig_wakeups")), span),
        preempted_per_s=_per_s(whole(doc.get("pgrig_preempted")), span),
        machine_pct=machine_pct(here, span, cpus if isinstance(cpus, int) else None),
        pgrig_cpu_s=own,
        backends_cpu_s=backends,
        backends=doc.get("backends"),
        load_hosts_cpu_s=agents_s,
        load_hosts=per_host,
        span_s=span,
        cpus=cpus if isinstance(cpus, int) else None,
        plans=whole(doc.get("plans")),
        log_bytes=whole(doc.get("log_bytes")),
        notes=notes,
    )


def of_group(runs: Sequence[RunRecord]) -> HarnessCost:
    """A run's cost, or the medians of a group's (the runs that recorded one)."""
    costs = [of(r) for r in runs]
    kept = [c for c in costs if c.recorded]
    if len(costs) == 1 or not kept:
        return costs[0] if len(costs) == 1 else HarnessCost(False)
    if len(kept) == 1:
        return kept[0]

    def med(name: str) -> float | None:
        values = [getattr(c, name) for c in kept if getattr(c, name) is not None]
        return statistics.median(values) if values else None

    notes = [] if len(kept) == len(costs) else [f"{len(costs) - len(kept)} run(s) {NOT_RECORDED}"]
    plans, log_bytes = med("plans"), med("log_bytes")
    return HarnessCost(
        True,
        cpu_s=med("cpu_s"),
        machine_pct=med("machine_pct"),
        pgrig_cpu_s=med("pgrig_cpu_s"),
        backends_cpu_s=med("backends_cpu_s"),
        backends=kept[0].backends,
        load_hosts_cpu_s=med("load_hosts_cpu_s"),
        load_hosts=_host_medians(kept),
        span_s=med("span_s"),
        cpus=kept[0].cpus,
        wakeups_per_s=med("wakeups_per_s"),
        preempted_per_s=med("preempted_per_s"),
        plans=None if plans is None else round(plans),
        log_bytes=None if log_bytes is None else round(log_bytes),
        notes=notes + sorted({n for c in kept for n in c.notes}),
        runs=len(kept),
    )


def _host_medians(costs: Sequence[HarnessCost]) -> dict[str, float | None]:
    """Per load host, the median of its agent's CPU-s over the runs that name it."""
    names = sorted({h for c in costs for h in c.load_hosts})
    out: dict[str, float | None] = {}
    for h in names:
        values = [v for c in costs if (v := c.load_hosts.get(h)) is not None]
        out[h] = statistics.median(values) if values else None
    return out


def difference(base: HarnessCost, other: HarnessCost) -> str | None:
    """Said when two harness costs differ by more than DIFF_POINTS points of the machine (or
    one side's is unknown): part of the figures' difference may then be the harness's."""
    if not base.recorded or not other.recorded:
        if base.recorded != other.recorded:
            return "harness cost recorded on one side only"
        return None
    if base.machine_pct is None or other.machine_pct is None:
        return None
    d = other.machine_pct - base.machine_pct
    if abs(d) <= DIFF_POINTS:
        return None
    return (
        f"harness cost differs by {d:+.1f} points of the machine (more than {DIFF_POINTS:g}): "
        "part of the difference may be the harness's"
    )


@dataclass(frozen=True)
class HarnessComparison:
    """The harness cost of each column of a comparison, and what differs from the first."""

    costs: list[HarnessCost]
    differences: list[str | None]  # per candidate column

    @property
    def texts(self) -> list[str]:
        out = [self.costs[0].text]
        for c, d in zip(self.costs[1:], self.differences, strict=True):
            out.append(f"{c.text} ({d})" if d else c.text)
        return out

    @property
    def differs(self) -> bool:
        return any(self.differences)

    def as_dict(self, names: Sequence[str]) -> JsonObject:
        out: JsonObject = {n: c.as_dict() for n, c in zip(names, self.costs, strict=False)}
        out["threshold_points"] = DIFF_POINTS
        out["differences"] = {
            n: d for n, d in zip(names[1:], self.differences, strict=False) if d is not None
        }
        return out


def compare(groups: Sequence[Sequence[RunRecord]]) -> HarnessComparison:
    costs = [of_group(g) for g in groups]
    return HarnessComparison(costs, [difference(costs[0], c) for c in costs[1:]])
