"""TPC-C DDL rendering: plain and partitioned schema, index plan, loader tasks, validation."""

from __future__ import annotations

import re

import pytest

from pgrig.errors import PgrigError
from pgrig.workloads.tpcc import loader as gen
from pgrig.workloads.tpcc import sql


def test_schema_has_the_nine_tables_and_the_meta_table() -> None:
    stmts = sql.schema_statements(3, 0)
    names = [s.split()[2] for s in stmts]
    assert names == ["tpcc_meta", *[t for t in names if t != "tpcc_meta"]]
    assert sorted(names[1:]) == sorted(sql.TABLES)
    assert not any("PARTITION" in s for s in stmts)
    history = next(s for s in stmts if s.startswith("CREATE TABLE history"))
    assert "PRIMARY KEY" not in history  # the spec gives history no key


def test_partitioned_schema_splits_the_big_tables_by_warehouse() -> None:
    keys = sql.partition_keys()
    assert keys == {
        "customer": "c_w_id",
        "history": "h_w_id",
        "orders": "o_w_id",
        "new_order": "no_w_id",
        "order_line": "ol_w_id",
        "stock": "s_w_id",
    }
    stmts = sql.schema_statements(5, 2)
    assert any(s.endswith("PARTITION BY RANGE (ol_w_id)") for s in stmts)
    assert "CREATE TABLE order_line_p1 PARTITION OF order_line FOR VALUES FROM (1) TO (3)" in stmts
    assert "CREATE TABLE order_line_p2 PARTITION OF order_line FOR VALUES FROM (3) TO (6)" in stmts
    assert not any(s.startswith("CREATE TABLE item_p") for s in stmts)


@pytest.mark.parametrize(("w", "p"), [(1, 1), (2, 2), (10, 10), (17, 16), (128, 16), (5, 3)])
def test_partition_ranges_cover_all_warehouses_once(w: int, p: int) -> None:
    ranges = sql.partition_ranges(w, p)
    assert len(ranges) == p
    covered = [x for lo, hi in ranges for x in range(lo, hi + 1)]
    assert covered == list(range(1, w + 1))
    sizes = [hi - lo + 1 for lo, hi in ranges]
    assert max(sizes) - min(sizes) <= 1


def test_partition_count() -> None:
    assert sql.partition_count(10, False) == 0
    assert sql.partition_count(10, True) == 10
    assert sql.partition_count(500, True) == sql.MAX_PARTITIONS


def test_indexes_plain() -> None:
    builds = sql.index_build_statements(0)
    assert builds[0] == (
        "CREATE UNIQUE INDEX order_line_pkey ON order_line (ol_w_id, ol_d_id, ol_o_id, ol_number)"
    )
    assert "CREATE INDEX customer_name_idx ON customer (c_w_id, c_d_id, c_last, c_first)" in builds
    assert "CREATE INDEX orders_customer_idx ON orders (o_w_id, o_d_id, o_c_id, o_id)" in builds
    assert len(builds) == 10
    finish = sql.index_finish_statements(0)
    assert len(finish) == 8  # every table but history has a primary key
    assert (
        "ALTER TABLE stock ADD CONSTRAINT stock_pkey PRIMARY KEY USING INDEX stock_pkey" in finish
    )


def test_indexes_partitioned_are_built_per_partition_and_attached() -> None:
    builds = sql.index_build_statements(2)
    assert "CREATE UNIQUE INDEX stock_p2_pkey ON stock_p2 (s_w_id, s_i_id)" in builds
    assert (
        "CREATE INDEX orders_p1_customer_idx ON orders_p1 (o_w_id, o_d_id, o_c_id, o_id)" in builds
    )
    assert "CREATE UNIQUE INDEX item_pkey ON item (i_id)" in builds
    finish = sql.index_finish_statements(2)
    assert "ALTER TABLE stock ADD PRIMARY KEY (s_w_id, s_i_id)" in finish
    assert finish.index("ALTER TABLE stock ADD PRIMARY KEY (s_w_id, s_i_id)") > finish.index(
        "ALTER TABLE stock_p2 ADD CONSTRAINT stock_p2_pkey PRIMARY KEY USING INDEX stock_p2_pkey"
    )
    assert "CREATE INDEX customer_name_idx ON customer (c_w_id, c_d_id, c_last, c_first)" in finish


def test_sql_files_are_shipped() -> None:
    assert "CREATE OR REPLACE FUNCTION tpcc_load_districts" in sql.text("load.sql")
    procs = sql.text("procedures.sql")
    for fn in (
        "new_order",
        "new_order_rollback",
        "payment",
        "order_status",
        "delivery",
        "stock_level",
    ):
        assert f"FUNCTION tpcc_{fn}(" in procs
    drop = sql.drop_tables_statement()
    assert drop.startswith("DROP TABLE IF EXISTS warehouse,") and drop.endswith("tpcc_meta CASCADE")
    created = set(re.findall(r"CREATE OR REPLACE FUNCTION (\w+)\(", procs + sql.text("load.sql")))
    assert created <= set(sql.FUNCTIONS)  # a reload drops every one of them


def test_load_tasks_items_first_then_three_per_warehouse() -> None:
    tasks = gen.load_tasks(2, 77)
    assert [t.label for t in tasks] == [
        "item",
        "warehouse 1 stock",
        "warehouse 1 districts 1-5",
        "warehouse 1 districts 6-10",
        "warehouse 2 stock",
        "warehouse 2 districts 1-5",
        "warehouse 2 districts 6-10",
    ]
    assert tasks[3].statement == "SELECT tpcc_load_districts(1, 6, 10, 77)"


def test_vacuum_tasks_cover_every_leaf() -> None:
    plain = gen.vacuum_tasks(0)
    assert sorted(t.label for t in plain) == sorted(f"vacuum {t}" for t in sql.TABLES)
    assert plain[0].statement == "VACUUM (ANALYZE) order_line"
    part = gen.vacuum_tasks(3)
    assert "VACUUM (ANALYZE) order_line_p3" in [t.statement for t in part]
    assert "ANALYZE order_line" in [t.statement for t in part]
    assert "ANALYZE item" not in [t.statement for t in part]


@pytest.mark.parametrize(
    ("warehouses", "jobs", "message"),
    [
        (0, 2, "at least 1 warehouse"),
        (-3, 2, "at least 1 warehouse"),
        (True, 2, "at least 1 warehouse"),
        (2.5, 2, "at least 1 warehouse"),
        (2, 0, "--jobs must be at least 1"),
        (2, 1000, "--jobs must be at most"),
    ],
)
def test_generate_refuses_bad_input_before_connecting(warehouses, jobs, message) -> None:
    # the conninfo points nowhere: validation must fail first
    with pytest.raises(PgrigError, match=message):
        gen.generate("host=127.0.0.1 port=1 dbname=x connect_timeout=1", warehouses, jobs)


def test_autovacuum_is_off_during_the_load_on_every_leaf() -> None:
    off = sql.autovacuum_statements(2, enabled=False)
    assert "ALTER TABLE order_line_p2 SET (autovacuum_enabled = off)" in off
    assert "ALTER TABLE item SET (autovacuum_enabled = off)" in off
    assert not any(s.startswith("ALTER TABLE order_line SET") for s in off)
    on = sql.autovacuum_statements(0, enabled=True)
    assert len(on) == 9 and "ALTER TABLE stock RESET (autovacuum_enabled)" in on
