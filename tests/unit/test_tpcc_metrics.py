"""TPC-C figures from per-script results, and the consistency report's format."""

from __future__ import annotations

import pytest

from pgrig.archive.records import LatencyStats, ScriptResult
from pgrig.workloads.tpcc import consistency as tcheck
from pgrig.workloads.tpcc import metrics


def _results() -> list[ScriptResult]:
    return [
        ScriptResult(
            0,
            "tpcc:new_order",
            4455,
            transactions=4500,
            failed=2,
            retried=3,
            latency=LatencyStats(avg=2.0, p95=5.0),
        ),
        ScriptResult(1, "tpcc:new_order_rollback", 45, transactions=50),
        ScriptResult(2, "tpcc:payment", 4300, transactions=4300, failed=1),
        ScriptResult(3, "tpcc:order_status", 400, transactions=400),
        ScriptResult(4, "tpcc:delivery", 400, transactions=350),
        ScriptResult(5, "tpcc:stock_level", 400, transactions=400),
    ]


def test_summarize_nopm_tpm_rollbacks() -> None:
    s = metrics.summarize(_results(), 120.0)
    assert s["nopm"] == 2250.0  # committed New-Orders only
    assert s["tpm"] == 5000.0  # all finished transactions incl. rollbacks
    assert s["rollbacks"] == 50
    assert s["rollback_pct"] == pytest.approx(100 * 50 / 4550, abs=1e-3)
    assert s["failures"] == 3 and s["retried"] == 3
    assert s["transactions"] == 10000
    assert s["tpm_per_nopm"] == pytest.approx(10000 / 4500, abs=1e-3)
    assert s["mix_pct"] == {
        "new_order": 45.5,
        "payment": 43.0,
        "order_status": 4.0,
        "delivery": 3.5,
        "stock_level": 4.0,
    }
    no = s["types"]["new_order"]
    assert no["transactions"] == 4500 and no["per_minute"] == 2250.0
    assert no["latency_ms"]["avg"] == 2.0 and no["latency_ms"]["p95"] == 5.0
    assert set(s["types"]) == {
        "new_order",
        "new_order_rollback",
        "payment",
        "order_status",
        "delivery",
        "stock_level",
    }


def test_summarize_without_window_gives_counts_only() -> None:
    s = metrics.summarize(_results(), 0)
    assert s["nopm"] is None and s["tpm"] is None and s["rollbacks"] == 50


def test_summarize_partial_mix() -> None:
    s = metrics.summarize([ScriptResult(0, "tpcc:payment", 100, transactions=10)], 60)
    assert s["nopm"] == 0.0 and s["tpm"] == 10.0 and s["rollback_pct"] is None
    assert s["mix_pct"]["payment"] == 100.0 and s["mix_pct"]["new_order"] == 0.0


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("tpcc:new_order", "new_order"),
        ("new_order_rollback", "new_order_rollback"),
        ("/tmp/x/tpcc_stock_level.sql", "stock_level"),
        ("tpcc_payment.sql", "payment"),
        ("pgbench:tpcb", None),
        ("other.sql", None),
    ],
)
def test_script_type(name: str, kind: str | None) -> None:
    assert metrics.script_type(name) == kind


def test_format_check_pass_fail_skip() -> None:
    results = [
        tcheck.CheckResult(1, "w_ytd = sum(d_ytd) per warehouse", True, 0, "warehouses"),
        tcheck.CheckResult(8, "w_ytd = sum(h_amount) per warehouse", False, 1, "warehouses"),
        tcheck.CheckResult(11, "count check", None, unit="districts", skipped="Delivery has run"),
    ]
    text = tcheck.format_check(results)
    assert " 1  PASS  w_ytd = sum(d_ytd) per warehouse" in text
    assert " 8  FAIL  w_ytd = sum(h_amount) per warehouse: 1 warehouses offending" in text
    assert "11  SKIP  count check: Delivery has run" in text
    assert (
        text.splitlines()[-1] == "TPC-C consistency: INCONSISTENT (1 passed, 1 failed, 1 skipped)"
    )
    assert not tcheck.all_passed(results)
    assert tcheck.all_passed([results[0], results[2]])
    assert results[1].as_dict()["offending"] == 1
