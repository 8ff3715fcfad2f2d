"""Issue 43, class 1: a run that measured nothing (0 s measured, 0 transactions, no TPS) is not
archived ok, whichever runner drove its load; an interrupted one stays aborted."""

from __future__ import annotations

from typing import Any

import pytest

from pgrig.archive.records import RunRecord
from pgrig.load.core import measure_here, multi_runner, run_steps


def _record(measured_s: float | None, transactions: int | None, late: int = 0) -> RunRecord:
    """A run as fill_results leaves one whose clients connected after its whole window (the
    case of the issue: 0 s measured, 0 transactions, no TPS, a late_start warning)."""
    rec = RunRecord(env_name="e", workload="pgbench:tpcb", clients=2, threads=1, status="running")
    rec.id = 7
    rec.measured_s, rec.transactions, rec.failed = measured_s, transactions, 0
    rec.tps = transactions / measured_s if measured_s and transactions is not None else None
    rec.extra["window"] = {"start_us": 0, "end_us": 0, "whole_seconds": 0, "late_start_s": late}
    return rec


def _here(rec: RunRecord, interrupted: str = "") -> tuple[str, str | None]:
    driver: Any = None  # not asked: the load ended with 0
    return measure_here._outcome(rec, driver, 0, interrupted, None, None, "", "")


def _multi(rec: RunRecord, interrupted: str = "") -> tuple[str, str | None]:
    load: Any = None
    multi_runner._set_status(rec, 0, interrupted, None, load)
    return rec.status, rec.error


@pytest.mark.parametrize("decide", [_here, _multi], ids=["here", "load hosts"])
def test_a_run_that_measured_nothing_is_failed_and_says_why(decide: Any) -> None:
    status, error = decide(_record(0.0, 0, late=2))
    assert status == "failed"
    assert error == (
        "measured nothing: 0 s measured, 0 transactions "
        "(the clients took 2 s longer than the warm-up to connect)"
    )
    status, error = decide(_record(None, None))  # no transaction logged at all
    assert (status, error) == ("failed", "measured nothing: 0 s measured, 0 transactions")
    status, error = decide(_record(20.0, 0))  # a window, but not one transaction in it
    assert (status, error) == ("failed", "measured nothing: 20 s measured, 0 transactions")


@pytest.mark.parametrize("decide", [_here, _multi], ids=["here", "load hosts"])
def test_an_interrupted_run_stays_aborted_and_a_measured_one_ok(decide: Any) -> None:
    assert decide(_record(0.0, 0), "interrupted (Ctrl-C)") == ("aborted", "interrupted (Ctrl-C)")
    assert decide(_record(2.0, 740)) == ("ok", None)
    assert run_steps.measured_nothing(_record(2.0, 740)) is None
