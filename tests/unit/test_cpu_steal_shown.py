"""CPU steal over the measured window: kept where /proc/stat counts it, shown by the summary."""

from __future__ import annotations

from datetime import UTC, datetime

from pgrig.archive.records import RunRecord
from pgrig.load.engines import results
from pgrig.views import run_summary


def test_steal_is_kept_and_shown() -> None:
    rec = RunRecord(env_name="e", workload="w", clients=1, threads=1, status="ok")
    rec.started_at, rec.measured_s = datetime.fromtimestamp(1000, UTC), 3.0
    os_cols = {"ts": [1001.0, 1002.0, 1003.0], "cpu_user": [50.0] * 3, "cpu_steal": [2.0, 4.0, 6.0]}
    results.attach_samples(rec, {"os": os_cols}, 1000.0)
    assert rec.extra["cpu_steal"] == 4.0
    assert any(k == "CPU steal %" for k, _v in run_summary.results(rec))


def test_no_steal_column_no_row() -> None:
    rec = RunRecord(env_name="e", workload="w", clients=1, threads=1, status="ok")
    rec.started_at, rec.measured_s = datetime.fromtimestamp(1000, UTC), 3.0
    results.attach_samples(rec, {"os": {"ts": [1001.0], "cpu_user": [50.0]}}, 1000.0)
    assert "cpu_steal" not in rec.extra
    assert all(k != "CPU steal %" for k, _v in run_summary.results(rec))
