"""What a tuning study optimises: TPS, p95 latency or NOPM of a trial's run, or a TPC-H power
test's Power@Size.

Each objective names a judged figure of the registry (record/figures.py: its reader and
polarity), so a trial's value, the confirmation verdicts and every report read the same figure
the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from pgrig.archive.records import RunRecord
from pgrig.errors import PgrigError
from pgrig.record.figures import JUDGED, Figure

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


@dataclass(frozen=True)
class Objective:
    name: str
    metric: Figure

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

    def better(self, a: float, b: float) -> bool:
        """a is better than b."""
        return a > b if self.metric.higher_is_better else a < b


def objective(name: str, workload: str) -> Objective:
    """--objective NAME for this workload (NOPM only exists for TPC-C, Power@Size only for
    TPC-H's power test, which has no TPS or latency)."""
    if name not in METRIC_OF:
        raise PgrigError(f"--objective {name!r}: use one of {', '.join(OBJECTIVES)}")
    if name == "nopm" and workload != "tpcc":
        raise PgrigError("--objective nopm needs --workload tpcc (NOPM is a TPC-C figure)")
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
    return Objective(name, JUDGED[METRIC_OF[name]])
