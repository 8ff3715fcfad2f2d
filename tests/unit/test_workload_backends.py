"""Activity and wait figures count the workload's backends only (issue 30, class 4): a sync
replica's walsender is 'active' in Activity:WalSenderMain all run long, and counted it made
88% of a select-only run's "active time"."""

from __future__ import annotations

import pytest

from pgrig.metrics import wait_sampler
from pgrig.metrics.pg_metrics import sample_query
from pgrig.metrics.pg_snapshot import WORKLOAD_BACKENDS_SQL


@pytest.mark.parametrize(
    "query",
    [wait_sampler.ACTIVITY_SQL, wait_sampler.PROFILE_SQL, sample_query(150000),
     sample_query(180000)],
    ids=["waits", "pg_wait_sampling", "pg15", "pg18"],
)  # fmt: skip
def test_every_activity_query_filters_to_the_workload_backends(query: str) -> None:
    assert WORKLOAD_BACKENDS_SQL in query


def test_the_filter_names_client_backends_and_leaves_walsenders_out() -> None:
    assert "backend_type IN ('client backend', 'parallel worker')" in WORKLOAD_BACKENDS_SQL
    assert "pgrig-%" in WORKLOAD_BACKENDS_SQL  # pgrig's own sessions stay out as before


def test_the_snapshot_count_said_is_the_one_taken() -> None:
    # 10 Hz over 3 s is 30 snapshots, not the 600 the default rate aims at
    hz, why = wait_sampler.choose_hz(3)
    assert hz == 10 and why == "10 Hz for a 3 s window (30 snapshots)"
    assert wait_sampler.choose_hz(120)[1] == "5 Hz for a 120 s window (600 snapshots)"
