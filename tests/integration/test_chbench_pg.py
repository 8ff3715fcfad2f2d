"""CH-benCHmark data through the CLI against a real PostgreSQL 18: TPC-C's nine tables with
REGION, NATION and SUPPLIER beside them, every analytic query answering over them, TPC-C runs
and TPC-C's consistency check on the same data."""

from __future__ import annotations

import json
from collections.abc import Iterator

import psycopg
import pytest
import servers
from servers import pgrig

from pgrig.workloads.chbench import QUERIES

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def lab() -> Iterator[str]:
    with servers.pg18_lab("pgrig-chbench-test-", "lab"):
        pgrig("db", "generate", "lab", "--scenario", "chbench", "--warehouses", "1",
              "--db", "ch", timeout=300)  # fmt: skip
        yield "lab"


def _conninfo(env: str, db: str) -> str:
    port = json.loads(pgrig("env", "show", env, "--json").stdout)["port"]
    return f"host=127.0.0.1 port={port} user=postgres dbname={db}"


def test_the_three_tables_and_their_keys(lab: str) -> None:
    with psycopg.connect(_conninfo(lab, "ch")) as conn:
        counts = {
            t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]  # type: ignore[index]
            for t in ("region", "nation", "supplier", "warehouse", "stock")
        }
        assert counts == {"region": 5, "nation": 62, "supplier": 10_000, "warehouse": 1,
                          "stock": 100_000}  # fmt: skip
        # every customer reaches a nation, every stock row a supplier, every nation a region
        lost = conn.execute(
            "SELECT (SELECT count(*) FROM customer LEFT JOIN nation"
            "        ON ascii(substr(c_state, 1, 1)) = n_nationkey WHERE n_nationkey IS NULL),"
            "       (SELECT count(*) FROM stock LEFT JOIN supplier"
            "        ON mod(s_w_id * s_i_id, 10000) = su_suppkey WHERE su_suppkey IS NULL),"
            "       (SELECT count(*) FROM nation LEFT JOIN region"
            "        ON n_regionkey = r_regionkey WHERE r_regionkey IS NULL)"
        ).fetchone()
        assert lost == (0, 0, 0)
        bad = conn.execute("SELECT count(*) FROM supplier WHERE su_comment LIKE '%bad%'")
        assert bad.fetchone() == (5,)


def test_every_analytic_query_answers(lab: str) -> None:
    rows = {}
    with psycopg.connect(_conninfo(lab, "ch")) as conn:
        conn.execute("SET statement_timeout = '120s'")
        for number, sql in QUERIES.items():
            rows[number] = len(conn.execute(sql.encode()).fetchall())
    assert sorted(rows) == list(range(1, 23))
    assert rows[1] >= 5  # ol_number 1..5 at least, one row each
    assert rows[6] == 1 and rows[14] == 1 and rows[17] == 1  # one aggregate row


def test_tpcc_runs_and_checks_on_the_same_data(lab: str) -> None:
    proc = pgrig("run", lab, "--db", "ch", "-w", "tpcc", "-c", "2", "-T", "3", "--warmup", "1",
                 "--json")  # fmt: skip
    rec = json.loads(proc.stdout)
    assert rec["status"] == "ok" and rec["nopm"] > 0
    results = json.loads(pgrig("db", "check", lab, "--db", "ch", "--json").stdout)
    assert results and all(r["passed"] in (True, None) for r in results)
    shown = json.loads(pgrig("env", "show", lab, "--json").stdout)
    dataset = shown["datasets"]["ch"]
    assert dataset["scenario"] == "chbench" and dataset["suppliers"] == 10_000
