"""TPC-H on a real PostgreSQL 18 at scale factor 0.01: generate, answers checked, a power run."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from pgrig.provision.state.environment import Environment
from pgrig.request import DatasetRequest
from pgrig.workloads import datasets

pytestmark = pytest.mark.integration

SF = 0.01


@pytest.fixture
def tpch_env(make_env, pg18: tuple[Path, str]) -> Environment:  # type: ignore[no-untyped-def]
    env = make_env("tpch18", pg="18")
    datasets.generate(env, DatasetRequest(scenario="tpch", scale_factor=SF))
    return env


def test_generate_loads_dbgen_rows_keys_and_statistics(tpch_env: Environment) -> None:
    info = datasets.get(tpch_env, "pgrig")
    assert info is not None and info["scenario"] == "tpch" and info["complete"] is True
    assert info["scale_factor"] == SF and info["generator"].startswith("tpchgen-cli ")
    rows = {t: v["rows"] for t, v in info["tables"].items()}
    # dbgen's counts at SF 0.01 (lineitem: 1..7 lines per order, dbgen's own draw)
    assert rows == {
        "region": 5, "nation": 25, "supplier": 100, "part": 2000, "partsupp": 8000,
        "customer": 1500, "orders": 15000, "lineitem": 60175,
    }  # fmt: skip
    with psycopg.connect(tpch_env.conninfo("pgrig")) as conn:
        first = conn.execute(
            "SELECT l_partkey, l_suppkey, l_quantity, l_extendedprice, l_shipdate::text"
            " FROM lineitem WHERE l_orderkey = 1 AND l_linenumber = 1"
        ).fetchone()
        assert first is not None and first[:2] == (1552, 93)  # dbgen's first lineitem row
        keys = {
            r[0]
            for r in conn.execute(
                "SELECT conrelid::regclass::text FROM pg_constraint WHERE contype = 'p'"
            ).fetchall()
        }
        assert {"lineitem", "orders", "partsupp", "part", "customer", "supplier"} <= keys
        assert conn.execute(
            "SELECT 1 FROM pg_indexes WHERE indexname = 'lineitem_part_supp'"
        ).fetchone()
        analyzed = conn.execute(
            "SELECT count(*) FROM pg_stat_user_tables WHERE relname = 'lineitem'"
            " AND last_analyze IS NOT NULL"
        ).fetchone()
        assert analyzed == (1,)
        # COPY FREEZE: the rows are frozen and all-visible, no VACUUM needed before a run
        frozen = conn.execute(
            "SELECT relallvisible > 0 FROM pg_class WHERE relname = 'lineitem'"
        ).fetchone()
        assert frozen == (True,)
