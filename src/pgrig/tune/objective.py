"""What a tuning study optimises: TPS, p95 latency or NOPM of a trial's run, or a TPC-H power
test's Power@Size; and what it reports beside as evidence, never optimised (CH-benCHmark's
analytic queries per hour beside its transactions' NOPM).

Each objective names a judged figure of the registry (record/figures.py: its reader and
polarity), so a trial's value, the confirmation verdicts and every report read the same figure
the same way; the figures beside are the registry's too, read here once for every surface
(`tune show`, `study show` text and --json, the report): per trial, and per confirmation
configuration as the median over its ok runs.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pgrig import format
from pgrig.archive.records import RunRecord
from pgrig.errors import PgrigError
from pgrig.record.documents import StudyExtra, TrialDoc
from pgrig.record.figures import BY_KEY, JUDGED, Figure
from pgrig.request.vocabulary import CHBENCH_WORKLOAD, TPCC_WORKLOAD

ObjectiveName = Literal["tps", "p95", "nopm", "power"]
METRIC_OF: dict[str, str] = {
    "tps": "tps",
    "p95": "latency.p95",
    "nopm": "nopm",
    # TPC-H's own figure of a power test (3600 x SF / the geometric mean of the 22 query and
    # 2 refresh times): the spec's, and the one `runs compare` judges power runs on
    "power": "tpch.power_at_size",
}
TPCH_POWER = "tpch:power"
OBJECTIVES = tuple(METRIC_OF)
# NOPM: TPC-C's, and CH-benCHmark's transactions' (the same mix on the same tables)
NOPM_WORKLOADS = (TPCC_WORKLOAD, CHBENCH_WORKLOAD)
# figures reported beside the objective, by workload: what the trials traded for it, shown
# with every trial and confirmation, never optimised
BESIDE: dict[str, tuple[str, ...]] = {CHBENCH_WORKLOAD: ("chbench.qph",)}


@dataclass(frozen=True)
class Objective:
    name: str
    metric: Figure
    beside: tuple[Figure, ...] = field(default=())

    @property
    def direction(self) -> Literal["maximize", "minimize"]:
        return "maximize" if self.metric.higher_is_better else "minimize"

    @property
    def label(self) -> str:
        return self.metric.label

    def value(self, rec: RunRecord) -> float | None:
        """The run's figure, or None when it has none (a failed run, TPC-C-only NOPM)."""
        if rec.status != "ok":
            return None
        v = self.metric.value(rec)
        return float(v) if v is not None and math.isfinite(v) and v > 0 else None

    def beside_values(self, rec: RunRecord) -> dict[str, float | None]:
        """The figures beside the objective of this run, by figure key (None: not measured,
        e.g. no analytic query completed in the window)."""
        out: dict[str, float | None] = {}
        for f in self.beside:
            v = f.value(rec) if rec.status == "ok" else None
            out[f.key] = float(v) if v is not None and math.isfinite(v) else None
        return out

    def better(self, a: float, b: float) -> bool:
        """a is better than b."""
        return a > b if self.metric.higher_is_better else a < b


def objective(name: str, workload: str) -> Objective:
    """--objective NAME for this workload (NOPM only exists for TPC-C and CH-benCHmark's
    transactions, Power@Size only for TPC-H's power test, which has no TPS or latency)."""
    if name not in METRIC_OF:
        raise PgrigError(f"--objective {name!r}: use one of {', '.join(OBJECTIVES)}")
    if name == "nopm" and workload.strip() not in NOPM_WORKLOADS:
        raise PgrigError(
            "--objective nopm needs --workload tpcc or chbench (NOPM is a TPC-C figure: "
            "CH-benCHmark's transactions are TPC-C's)"
        )
    power = workload.strip() == TPCH_POWER
    if name == "power" and not power:
        raise PgrigError(
            f"--objective power needs --workload {TPCH_POWER} (Power@Size is the figure of "
            "TPC-H's power test)"
        )
    if power and name != "power":
        raise PgrigError(
            f"--objective {name}: a {TPCH_POWER} run has no TPS or latency; use --objective "
            "power (Power@Size)"
        )
    beside = tuple(BY_KEY[key] for key in BESIDE.get(workload.strip(), ()))
    return Objective(name, JUDGED[METRIC_OF[name]], beside)


def of_study(x: StudyExtra, runs: Sequence[RunRecord]) -> Objective:
    """A tuning study's objective, with the figures beside it (its runs' workload)."""
    return objective(x.get("objective", "tps"), runs[0].workload if runs else "")


@dataclass(frozen=True)
class BesideRow:
    """One figure beside the objective: per confirmation configuration, its median over the
    configuration's ok runs (None: no run measured it) and how many runs measured it."""

    figure: Figure
    medians: dict[str, float | None]
    runs: dict[str, int]

    def per_config(self) -> str:
        """'baseline 1,440 (6 runs), best 1,200 (6 runs), pgtune-mixed -'."""
        return ", ".join(
            f"{config} {format.number(m, 0)} ({_runs(self.runs[config])})"
            if m is not None
            else f"{config} -"
            for config, m in self.medians.items()
        )

    def text(self) -> str:
        """'analytic queries per hour: baseline 1,440 (6 runs), ...'."""
        return f"{self.figure.label}: {self.per_config()}"

    def as_json(self) -> dict[str, object]:
        return {"label": self.figure.label, "medians": self.medians, "runs": self.runs}


def _runs(n: int) -> str:
    return "1 run" if n == 1 else f"{n} runs"


def beside_rows(objective: Objective, groups: Mapping[str, Sequence[RunRecord]]) -> list[BesideRow]:
    """Each figure beside `objective` over the confirmation's runs per configuration (whole
    records: a light one lacks the figures' documents)."""
    out = []
    for f in objective.beside:
        medians: dict[str, float | None] = {}
        counts: dict[str, int] = {}
        for config, runs in groups.items():
            values = [objective.beside_values(r)[f.key] for r in runs]
            kept = [v for v in values if v is not None]
            medians[config] = statistics.median(kept) if kept else None
            counts[config] = len(kept)
        out.append(BesideRow(f, medians, counts))
    return out


def beside_cells(objective: Objective, trial: TrialDoc) -> list[str]:
    """A trial's figures beside the objective, as table cells ('-': not measured)."""
    saved = trial.get("beside") or {}
    return [format.number(saved.get(f.key), 0) for f in objective.beside]


def beside_headings(objective: Objective) -> list[str]:
    return [f.label for f in objective.beside]


def beside_intro(objective: Objective) -> str:
    """What these figures are, said wherever they are shown."""
    names = ", ".join(f.label for f in objective.beside)
    return (
        f"{names}: reported beside {objective.label} as evidence (what each configuration "
        f"traded for it), not optimised and not judged"
    )
