"""`db check --scenario tpcc`: the consistency conditions of spec clause 3.3.2.

Conditions 1-10 and 12 always; 11 only while no Delivery has run (it stops holding by
design once orders are delivered). Every condition reports how many rows of its unit
(warehouses, districts, orders, order lines, customers) break it. All queries read one
snapshot (REPEATABLE READ, READ ONLY), so a check during a run does not see half-done work.

Note on 2: a district with no undelivered order has no max(no_o_id); it passes when
d_next_o_id - 1 = max(o_id) holds.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import psycopg

from pgrig.workloads.tpcc.meta import connect, read_meta


@dataclass
class CheckResult:
    number: int
    description: str
    passed: bool | None  # None: skipped
    offending: int | None = None
    unit: str = ""
    skipped: str | None = None  # why the condition was not checked

    def as_dict(self) -> dict:
        return asdict(self)


# (number, description, unit, SQL returning the offending count)
CONDITIONS: tuple[tuple[int, str, str, str], ...] = (
    (
        1,
        "w_ytd = sum(d_ytd) per warehouse",
        "warehouses",
        """SELECT count(*) FROM warehouse w
           LEFT JOIN (SELECT d_w_id, sum(d_ytd) AS s FROM district GROUP BY d_w_id) d
             ON d.d_w_id = w.w_id
           WHERE w.w_ytd IS DISTINCT FROM d.s""",
    ),
    (
        2,
        "d_next_o_id - 1 = max(o_id) = max(no_o_id) per district",
        "districts",
        """SELECT count(*) FROM district d
           CROSS JOIN LATERAL (SELECT max(o_id) AS m FROM orders
                               WHERE o_w_id = d.d_w_id AND o_d_id = d.d_id) o
           CROSS JOIN LATERAL (SELECT max(no_o_id) AS m FROM new_order
                               WHERE no_w_id = d.d_w_id AND no_d_id = d.d_id) n
           WHERE d.d_next_o_id - 1 IS DISTINCT FROM o.m OR n.m <> o.m""",
    ),
    (
        3,
        "max(no_o_id) - min(no_o_id) + 1 = count(new_order) per district",
        "districts",
        """SELECT count(*) FROM (
             SELECT 1 FROM new_order GROUP BY no_w_id, no_d_id
             HAVING max(no_o_id) - min(no_o_id) + 1 <> count(*)) x""",
    ),
    (
        4,
        "sum(o_ol_cnt) = count(order_line) per district",
        "districts",
        """SELECT count(*) FROM
             (SELECT o_w_id AS w, o_d_id AS d, sum(o_ol_cnt) AS s FROM orders GROUP BY 1, 2) o
           FULL JOIN
             (SELECT ol_w_id AS w, ol_d_id AS d, count(*) AS c FROM order_line GROUP BY 1, 2) l
             USING (w, d)
           WHERE o.s IS DISTINCT FROM l.c""",
    ),
    (
        5,
        "o_carrier_id IS NULL exactly when the order has a new_order row",
        "orders",
        """SELECT
             (SELECT count(*) FROM orders o
              LEFT JOIN new_order n
                ON n.no_w_id = o.o_w_id AND n.no_d_id = o.o_d_id AND n.no_o_id = o.o_id
              WHERE (o.o_carrier_id IS NULL) <> (n.no_o_id IS NOT NULL))
           + (SELECT count(*) FROM new_order n
              WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.o_w_id = n.no_w_id
                                AND o.o_d_id = n.no_d_id AND o.o_id = n.no_o_id))""",
    ),
    (
        6,
        "o_ol_cnt = number of order lines per order",
        "orders",
        """SELECT count(*) FROM orders o
           FULL JOIN (SELECT ol_w_id, ol_d_id, ol_o_id, count(*) AS c FROM order_line
                      GROUP BY 1, 2, 3) l
             ON l.ol_w_id = o.o_w_id AND l.ol_d_id = o.o_d_id AND l.ol_o_id = o.o_id
           WHERE o.o_ol_cnt IS DISTINCT FROM l.c""",
    ),
    (
        7,
        "ol_delivery_d IS NULL exactly when o_carrier_id IS NULL",
        "order lines",
        """SELECT count(*) FROM order_line l
           JOIN orders o ON o.o_w_id = l.ol_w_id AND o.o_d_id = l.ol_d_id AND o.o_id = l.ol_o_id
           WHERE (l.ol_delivery_d IS NULL) <> (o.o_carrier_id IS NULL)""",
    ),
    (
        8,
        "w_ytd = sum(h_amount) per warehouse",
        "warehouses",
        """SELECT count(*) FROM warehouse w
           LEFT JOIN (SELECT h_w_id, sum(h_amount) AS s FROM history GROUP BY h_w_id) h
             ON h.h_w_id = w.w_id
           WHERE w.w_ytd IS DISTINCT FROM h.s""",
    ),
    (
        9,
        "d_ytd = sum(h_amount) per district",
        "districts",
        """SELECT count(*) FROM district d
           LEFT JOIN (SELECT h_w_id, h_d_id, sum(h_amount) AS s FROM history
                      GROUP BY h_w_id, h_d_id) h
             ON h.h_w_id = d.d_w_id AND h.h_d_id = d.d_id
           WHERE d.d_ytd IS DISTINCT FROM h.s""",
    ),
)

# 10 and 12 share the expensive per-customer sums: one query, two counts.
CUSTOMER_SQL = """
WITH delivered AS (
    SELECT o.o_w_id AS w, o.o_d_id AS d, o.o_c_id AS c, sum(l.ol_amount) AS s
    FROM orders o
    JOIN order_line l ON l.ol_w_id = o.o_w_id AND l.ol_d_id = o.o_d_id AND l.ol_o_id = o.o_id
    WHERE l.ol_delivery_d IS NOT NULL
    GROUP BY 1, 2, 3
), paid AS (
    SELECT h_c_w_id AS w, h_c_d_id AS d, h_c_id AS c, sum(h_amount) AS s
    FROM history GROUP BY 1, 2, 3
)
SELECT
    count(*) FILTER (WHERE cu.c_balance <> coalesce(dl.s, 0) - coalesce(pd.s, 0)),
    count(*) FILTER (WHERE cu.c_balance + cu.c_ytd_payment <> coalesce(dl.s, 0))
FROM customer cu
LEFT JOIN delivered dl ON dl.w = cu.c_w_id AND dl.d = cu.c_d_id AND dl.c = cu.c_id
LEFT JOIN paid pd ON pd.w = cu.c_w_id AND pd.d = cu.c_d_id AND pd.c = cu.c_id
"""
C10 = "c_balance = sum(delivered ol_amount) - sum(h_amount) per customer"
C12 = "c_balance + c_ytd_payment = sum(delivered ol_amount) per customer"
C11 = "count(orders) - count(new_order) = 2100 per district"
C11_SQL = """SELECT count(*) FROM district d
   CROSS JOIN LATERAL (SELECT count(*) AS c FROM orders
                       WHERE o_w_id = d.d_w_id AND o_d_id = d.d_id) o
   CROSS JOIN LATERAL (SELECT count(*) AS c FROM new_order
                       WHERE no_w_id = d.d_w_id AND no_d_id = d.d_id) n
   WHERE o.c - n.c <> 2100"""


def check(conninfo: str) -> list[CheckResult]:
    """Check conditions 1-12 (11 skipped once a Delivery has run), in number order."""
    with connect(conninfo) as conn:
        read_meta(conn)
        conn.execute("SET work_mem = '256MB'")
        with conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            return _run(conn)


def _run(conn: psycopg.Connection) -> list[CheckResult]:
    out = []
    for number, description, unit, query in CONDITIONS:
        out.append(_result(number, description, unit, _count(conn, query)))
    row = conn.execute(CUSTOMER_SQL).fetchone()
    assert row is not None
    out.append(_result(10, C10, "customers", int(row[0])))
    deliveries = _count(conn, "SELECT coalesce(sum(c_delivery_cnt), 0) FROM customer")
    if deliveries:
        out.append(
            CheckResult(
                11,
                C11,
                None,
                unit="districts",
                skipped=f"Delivery has run ({deliveries} orders delivered)",
            )
        )
    else:
        out.append(_result(11, C11, "districts", _count(conn, C11_SQL)))
    out.append(_result(12, C12, "customers", int(row[1])))
    return out


def _count(conn: psycopg.Connection, query: str) -> int:
    row = conn.execute(query).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def _result(number: int, description: str, unit: str, offending: int) -> CheckResult:
    return CheckResult(number, description, offending == 0, offending, unit)


def format_check(results: list[CheckResult]) -> str:
    """One line per condition and a verdict line, for the terminal."""
    lines = []
    for r in results:
        if r.passed is None:
            lines.append(f"{r.number:>2}  SKIP  {r.description}: {r.skipped}")
        elif r.passed:
            lines.append(f"{r.number:>2}  PASS  {r.description}")
        else:
            lines.append(f"{r.number:>2}  FAIL  {r.description}: {r.offending} {r.unit} offending")
    passed = sum(1 for r in results if r.passed)
    failed = sum(1 for r in results if r.passed is False)
    skipped = sum(1 for r in results if r.passed is None)
    verdict = "consistent" if failed == 0 else "INCONSISTENT"
    lines.append(
        f"TPC-C consistency: {verdict} ({passed} passed, {failed} failed, {skipped} skipped)"
    )
    return "\n".join(lines)


def all_passed(results: list[CheckResult]) -> bool:
    return all(r.passed is not False for r in results)
