"""The figures of a run, defined once: key, how to read it from a run, label, unit, polarity
(higher or lower is better, or neither) and whether the comparison engine judges it.

Every list of figures derives from FIGURES: the comparison engine's metrics
(analysis/compare.METRICS: the judged ones), the comparison view's rows (views/compare.py),
the tune objective (tune/objective.py), the version series (track/figures.py) and the runs
list's headline figure. To add a figure, add one line here: every surface then shows it.

Here (record/, below analysis) because a figure is read from the run record and every reader
of figures stands above it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pgrig import format as fmt
from pgrig.record.documents import BackupDoc
from pgrig.record.json_values import number
from pgrig.record.run import RunRecord

Better = Literal["higher", "lower"]


@dataclass(frozen=True)
class Figure:
    key: str  # the JSON key; the engine's metric name where the engine judges it
    label: str  # in a sentence: "latency p95 ms" (verdicts, objectives, series)
    heading: str  # a table's row heading: "Latency p95, ms"
    unit: str  # "" (a count), "ms", "%", "s", "B", "B/s", "x" (a ratio)
    better: Better | None  # None: neither (CPU shares, sizes)
    value: Callable[[RunRecord], float | None]
    judged: bool = False  # the comparison engine gives it a verdict (analysis/compare.py)
    column: str | None = None  # per-second column of the "pgbench" series, for single runs
    digits: int = 1  # decimals below 1,000 in a table (format.in_unit)

    @property
    def higher_is_better(self) -> bool:
        return self.better == "higher"

    @property
    def lower_is_better(self) -> bool | None:
        """True, False, or None where neither is better."""
        return None if self.better is None else self.better == "lower"


def backup_figures(rec: RunRecord) -> BackupDoc | None:
    """A backup or restore run's figures (extra["backup"]), None for load runs."""
    return rec.extra.get("backup") or None


def _in(
    document: Callable[[RunRecord], Mapping[str, object] | None], key: str
) -> Callable[[RunRecord], float | None]:
    """The reader of one figure of a run's document (None: the run has no such document)."""

    def get(rec: RunRecord) -> float | None:
        doc = document(rec)
        value = None if doc is None else doc.get(key)
        # a figure is a number, kept as recorded (an int stays an int); anything else is none
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None

    return get


def _backup(key: str) -> Callable[[RunRecord], float | None]:
    return _in(backup_figures, key)


def max_lag_bytes(rec: RunRecord) -> int | None:
    """The largest replay lag of any replica over the run (None: no replicas, or not known: a
    replica that was not streaming in some samples had a lag nobody measured then)."""
    lag = (rec.extra.get("topology") or {}).get("lag") or {}
    if any(v.get("samples_not_streaming") for v in lag.values()):
        return None
    found = [b for v in lag.values() if (b := v.get("max_lag_bytes")) is not None]
    return max(found) if found else None


def tpch_figures(rec: RunRecord) -> Mapping[str, Any] | None:
    """A TPC-H run's document (extra["tpch"]: load/engines/tpch_driver.py), None for others."""
    doc = rec.extra.get("tpch")
    return doc if isinstance(doc, dict) and doc else None


def _tpch(key: str) -> Callable[[RunRecord], float | None]:
    return _in(tpch_figures, key)


TPCH_QUERIES = range(1, 23)
# The figure a TPC-H run stands for, by its test (tpch:power, tpch:throughput, tpch)
TPCH_HEADLINE = {
    "power": "tpch.power_at_size",
    "throughput": "tpch.throughput_at_size",
    "performance": "tpch.qphh_at_size",
}


def tpch_query_ms(rec: RunRecord, query: int) -> float | None:
    """One query's time in a TPC-H run, in ms (tpch_query_s)."""
    s = tpch_query_s(rec, query)
    return None if s is None else s * 1000


def tpch_query_s(rec: RunRecord, query: int) -> float | None:
    """One query's time in a TPC-H run, in seconds: a power test's (a performance test's
    power test's: one stream, the spec's order), a throughput run's mean over its streams;
    None when any of its executions did not complete (its time is then not known)."""
    doc = tpch_figures(rec)
    if doc is None:
        return None
    runs = [q for q in doc.get("queries") or [] if isinstance(q, dict) and q.get("query") == query]
    if doc.get("mode") == "performance":
        runs = [q for q in runs if q.get("test") == "power"]
    if not runs or any(q.get("status") != "ok" for q in runs):
        return None
    return sum(float(q["seconds"]) for q in runs) / len(runs)


def _tpch_query(q: int) -> Figure:
    return Figure(
        f"tpch.q{q}", f"Q{q} time ms", f"TPC-H Q{q}, ms", "ms", "lower",
        lambda r: tpch_query_ms(r, q), True,
    )  # fmt: skip


def analytic_qph(rec: RunRecord) -> float | None:
    """CH-benCHmark's analytic queries per hour (extra["chbench"]; None: not such a run, or
    no analytic stream)."""
    doc = rec.extra.get("chbench")
    return number(doc.get("qph")) if isinstance(doc, dict) else None


def _latency(q: str, judged: bool) -> Figure:
    return Figure(
        f"latency.{q}", f"latency {q} ms", f"Latency {q}, ms", "ms", "lower",
        lambda r: getattr(r.latency, q), judged, q if q.startswith("p") and judged else None,
    )  # fmt: skip


def _attr(name: str) -> Callable[[RunRecord], float | None]:
    return lambda r: getattr(r, name)


# fmt: off
FIGURES: tuple[Figure, ...] = (
    Figure("tps", "TPS", "TPS", "", "higher", _attr("tps"), True, "tps"),
    Figure("nopm", "NOPM", "NOPM", "", "higher", _attr("nopm"), True),
    Figure("tpm", "TPM", "TPM", "", "higher", _attr("tpm"), True),
    _latency("avg", True),
    _latency("stddev", False),
    _latency("p50", True),
    _latency("p90", False),
    _latency("p95", True),
    _latency("p99", True),
    _latency("p999", False),
    _latency("max", False),
    Figure("transactions", "transactions", "Transactions", "", "higher", _attr("transactions")),
    Figure("failed", "failed", "Failed", "", "lower", _attr("failed")),
    Figure("retried", "retried", "Retried", "", "lower", _attr("retried")),
    Figure("skipped", "skipped", "Skipped", "", "lower", _attr("skipped")),
    Figure("rollbacks", "rollbacks", "Rollbacks", "", "lower", _attr("rollbacks")),
    Figure("chbench.qph", "analytic queries per hour", "Analytic queries per hour", "",
           "higher", analytic_qph),
    Figure("cpu_user", "CPU user %", "CPU user %", "%", None, _attr("cpu_user")),
    Figure("cpu_system", "CPU system %", "CPU system %", "%", None, _attr("cpu_system")),
    Figure("cpu_iowait", "CPU iowait %", "CPU iowait %", "%", "lower", _attr("cpu_iowait")),
    Figure("cpu_idle", "CPU idle %", "CPU idle %", "%", None, _attr("cpu_idle")),
    Figure("hit_ratio", "cache hit ratio %", "Cache hit ratio %", "%", "higher",
           _attr("hit_ratio"), digits=2),
    # backups, replica lag
    Figure("backup.duration_s", "backup duration s", "Backup duration, s", "s", "lower",
           _backup("duration_s"), digits=2),
    Figure("backup.backup_bytes", "backup size", "Backup size", "B", None,
           _backup("backup_bytes")),
    Figure("backup.throughput_bytes_per_s", "backup throughput", "Backup throughput, /s", "B/s",
           "higher", _backup("throughput_bytes_per_s")),
    Figure("backup.compression_ratio", "compression ratio", "Compression ratio", "x", None,
           _backup("compression_ratio"), digits=3),
    Figure("backup.wal_generated_bytes", "WAL during the backup", "WAL during the backup", "B",
           None, _backup("wal_generated_bytes")),
    Figure("backup.restore_total_s", "restore time s", "Restore time, s", "s", "lower",
           _backup("restore_total_s"), digits=2),
    Figure("replication.max_lag_bytes", "max replica replay lag", "Max replica replay lag", "B",
           "lower", max_lag_bytes),
    # TPC-H (clause 5.4): its tests' figures in their units (queries per hour x SF), then
    # each query's time
    Figure("tpch.qphh_at_size", "QphH@Size", "QphH@Size", "QphH@Size", "higher",
           _tpch("qphh_at_size"), True),
    Figure("tpch.power_at_size", "Power@Size", "Power@Size, QppH@Size", "QppH@Size", "higher",
           _tpch("power_at_size"), True),
    Figure("tpch.throughput_at_size", "Throughput@Size", "Throughput@Size, QthH@Size",
           "QthH@Size", "higher", _tpch("throughput_at_size"), True),
    *(_tpch_query(q) for q in TPCH_QUERIES),
)
# fmt: on

BY_KEY: dict[str, Figure] = {f.key: f for f in FIGURES}
JUDGED: dict[str, Figure] = {f.key: f for f in FIGURES if f.judged}


def headline(rec: RunRecord) -> Figure:
    """The one figure a run list shows of a run: NOPM for TPC-C runs (CH-benCHmark's
    transactions too), a TPC-H run's figure (Power@Size, Throughput@Size or QphH@Size, by its
    test), TPS for the rest."""
    if rec.nopm is not None or (rec.scenario or "").lower() in ("tpcc", "chbench"):
        return BY_KEY["nopm"]
    doc = tpch_figures(rec)
    if doc is not None and doc.get("mode") in TPCH_HEADLINE:
        return BY_KEY[TPCH_HEADLINE[str(doc["mode"])]]
    return BY_KEY["tps"]


def tpch_mode(workload: str) -> str | None:
    """A TPC-H workload's test (power, throughput, performance), None for other workloads."""
    w = workload.strip()
    if w == "tpch":
        return "performance"
    mode = w.removeprefix("tpch:")
    return mode if w.startswith("tpch:") and mode in TPCH_HEADLINE else None


def judged_figure(workloads: Iterable[str]) -> Figure:
    """The figure runs of these workloads are judged on together (a study's points): TPS, or
    a TPC-H test's own (Power@Size, Throughput@Size, QphH@Size). Raises ValueError, saying
    why, for workloads that share no figure (TPC-H with other workloads, or two TPC-H tests)."""
    ws = sorted({w.strip() for w in workloads})
    modes = {w: tpch_mode(w) for w in ws}
    tpch = [w for w in ws if modes[w] is not None]
    if not tpch:
        return BY_KEY["tps"]
    if len(tpch) < len(ws) or len(tpch) > 1:
        raise ValueError(
            f"workloads {', '.join(ws)} share no figure to judge: a TPC-H run has no TPS, and "
            "each TPC-H test has its own (tpch:power Power@Size, tpch:throughput "
            "Throughput@Size, tpch QphH@Size); give one TPC-H workload to every point"
        )
    return BY_KEY[TPCH_HEADLINE[str(modes[tpch[0]])]]


def headline_text(rec: RunRecord, figure: Figure | None = None) -> tuple[str, str]:
    """The headline's value and what follows it: ("4,322", "TPS"), ("2,043", "QppH@Size")
    (a figure whose unit is a word says it; TPS and NOPM are their own units)."""
    figure = figure or headline(rec)
    text = fmt.in_unit(figure.value(rec), figure.unit, figure.digits)
    return text, figure.unit if figure.unit in WORD_UNITS else figure.label


WORD_UNITS = ("QphH@Size", "QppH@Size", "QthH@Size")  # TPC-H's (format.in_unit: numbers)
