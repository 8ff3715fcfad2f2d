"""TPC-C figures of a run: NOPM, TPM, rollbacks, per-type counts and latencies.

summarize() works from the per-script results the runner derives from pgbench's
per-transaction log; fidelity() measures the realised inputs from the data a run leaves.

Definitions (HammerDB's, computed from the log instead of server counters):
- NOPM: committed New-Orders per minute of the measured window (the rollback script's
  transactions are not New-Orders that count).
- TPM: all finished transactions per minute, committed and rolled back, every type.
- failures: transactions that failed after --max-tries (neither NOPM nor TPM).
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from pgrig.archive.records import ScriptResult
from pgrig.record.documents import TpccDoc, TpccType
from pgrig.workloads.tpcc.meta import connect, read_meta
from pgrig.workloads.tpcc.scripts import ROLLBACK, SCRIPTS, TYPES


def script_type(name: str) -> str | None:
    """tpcc:new_order, new_order, /x/tpcc_new_order.sql -> new_order (None: not TPC-C)."""
    base = PurePath(name).name if "/" in name else name
    base = base.removesuffix(".sql").removeprefix("tpcc:").removeprefix("tpcc_")
    return base if base in SCRIPTS else None


def summarize(script_results: list[ScriptResult], measured_s: float) -> TpccDoc:
    """NOPM, TPM, rollbacks, failures and per-type figures over the measured window."""
    minutes = measured_s / 60 if measured_s and measured_s > 0 else None
    by_type: dict[str, ScriptResult] = {}
    for r in script_results:
        kind = script_type(r.name)
        if kind is not None:
            by_type[kind] = r
    committed_no = by_type["new_order"].transactions if "new_order" in by_type else 0
    rollbacks = by_type[ROLLBACK].transactions if ROLLBACK in by_type else 0
    total = sum(r.transactions for r in by_type.values())
    failed = sum(r.failed for r in by_type.values())
    retried = sum(r.retried for r in by_type.values())

    def per_min(n: int) -> float | None:
        return round(n / minutes, 1) if minutes else None

    types: dict[str, TpccType] = {}
    for kind in SCRIPTS:
        found = by_type.get(kind)
        if found is None:
            continue
        types[kind] = {
            "transactions": found.transactions,
            "failed": found.failed,
            "retried": found.retried,
            "per_minute": per_min(found.transactions),
            "share_pct": round(100 * found.transactions / total, 3) if total else None,
            "latency_ms": found.latency.as_dict(),
        }
    no_all = committed_no + rollbacks
    return {
        "nopm": per_min(committed_no),
        "tpm": per_min(total),
        "new_orders": committed_no,
        "rollbacks": rollbacks,
        "rollback_pct": round(100 * rollbacks / no_all, 3) if no_all else None,
        "transactions": total,
        "failures": failed,
        "retried": retried,
        "tpm_per_nopm": round(total / committed_no, 3) if committed_no else None,
        "mix_pct": _mix(by_type, total),
        "types": types,
    }


def _mix(by_type: dict[str, ScriptResult], total: int) -> dict[str, float | None]:
    """Realised share of each of the five transaction types (rollbacks are New-Orders)."""
    out: dict[str, float | None] = {}
    for kind in TYPES:
        n = by_type[kind].transactions if kind in by_type else 0
        if kind == "new_order" and ROLLBACK in by_type:
            n += by_type[ROLLBACK].transactions
        out[kind] = round(100 * n / total, 3) if total else None
    return out


FIDELITY_SQL = """
SELECT
  (SELECT sum(d_next_o_id - 3001) FROM district) AS new_orders,
  (SELECT count(*) FROM orders WHERE o_id > 3000) AS orders,
  (SELECT count(*) FROM orders WHERE o_id > 3000 AND o_all_local = 0) AS remote_orders,
  (SELECT count(*) FROM order_line WHERE ol_o_id > 3000) AS lines,
  (SELECT count(*) FROM order_line WHERE ol_o_id > 3000 AND ol_supply_w_id <> ol_w_id)
      AS remote_lines,
  (SELECT count(*) FROM history) AS history_rows,
  (SELECT count(*) FROM history WHERE h_c_w_id <> h_w_id) AS remote_payments,
  (SELECT sum(c_delivery_cnt) FROM customer) AS delivered_orders,
  (SELECT sum(c_payment_cnt) - count(*) FROM customer) AS payments_by_customer
"""

FUNCTION_CALLS_SQL = """
SELECT funcname, calls FROM pg_stat_user_functions
WHERE funcname IN ('tpcc_customer_by_name', 'tpcc_payment', 'tpcc_order_status')
"""


def fidelity(conninfo: str) -> dict[str, Any]:
    """Realised inputs measured from the data since the load (all runs together).

    - new_orders: committed New-Orders (sum of d_next_o_id advances).
    - remote_line_pct: order lines of new orders supplied by another warehouse (spec 1%).
    - remote_payment_pct: payments for a customer of another warehouse (spec 15%).
    - by_name_pct: Payment and Order-Status customers selected by last name (spec 60%);
      needs track_functions = 'pl' during the run (pg_stat_user_functions), else None.
    """
    with connect(conninfo) as conn:
        meta = read_meta(conn)
        cur = conn.execute(FIDELITY_SQL)
        names = [d.name for d in cur.description or []]
        row = dict(zip(names, cur.fetchone() or (), strict=True))
        calls: dict[str, int] = dict(conn.execute(FUNCTION_CALLS_SQL).fetchall())
    payments = int(row["history_rows"]) - 30000 * meta.warehouses
    lines = int(row["lines"])
    by_name = calls.get("tpcc_customer_by_name")
    lookups = calls.get("tpcc_payment", 0) + calls.get("tpcc_order_status", 0)

    def pct(part: float, whole: float) -> float | None:
        return round(100 * part / whole, 3) if whole else None

    return {
        "new_orders": int(row["new_orders"]),
        "orders": int(row["orders"]),
        "order_lines": lines,
        "remote_line_pct": pct(int(row["remote_lines"]), lines),
        "remote_order_pct": pct(int(row["remote_orders"]), int(row["orders"])),
        "payments": payments,
        "payments_by_customer": int(row["payments_by_customer"]),
        "remote_payment_pct": pct(int(row["remote_payments"]), payments),
        "delivered_orders": int(row["delivered_orders"]),
        "by_name_lookups": by_name,
        "by_name_pct": pct(by_name, lookups) if by_name is not None else None,
    }
