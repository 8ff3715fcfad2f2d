"""The TPC-C SQL shipped with the package: schema, loader and transaction functions.

The schema file marks the tables that `--partition` splits by warehouse; this module turns
it into plain or range-partitioned DDL and lists the indexes the loader builds afterwards.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

TABLES = (
    "warehouse",
    "district",
    "customer",
    "history",
    "orders",
    "new_order",
    "order_line",
    "item",
    "stock",
)
META_TABLE = "tpcc_meta"
# Every function name pgrig's TPC-C ever created (all overloads are dropped on reload).
FUNCTIONS = (
    "tpcc_rand",
    "tpcc_pool",
    "tpcc_astr",
    "tpcc_nstr",
    "tpcc_zip",
    "tpcc_data",
    "tpcc_original",
    "tpcc_nurand",
    "tpcc_load_item",
    "tpcc_load_stock",
    "tpcc_load_districts",
    "tpcc_last_name",
    "tpcc_customer_by_name",
    "tpcc_new_order",
    "tpcc_new_order_rollback",
    "tpcc_payment",
    "tpcc_order_status",
    "tpcc_delivery",
    "tpcc_stock_level",
    "tpcc_stock_level_hammerdb",
)
# --partition: at most this many range partitions per table (contiguous warehouse ranges).
MAX_PARTITIONS = 16

_MARKER = re.compile(r"/\*PARTITION (\w+)\*/")


def text(name: str) -> str:
    """One of the package's SQL files: schema.sql, load.sql, procedures.sql."""
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def partition_keys() -> dict[str, str]:
    """Partitionable table -> its warehouse column, as marked in schema.sql."""
    out: dict[str, str] = {}
    for stmt in _statements(text("schema.sql")):
        m = _MARKER.search(stmt)
        if m:
            out[_table_name(stmt)] = m.group(1)
    return out


def partition_count(warehouses: int, partition: bool) -> int:
    """0 when not partitioned, else one range per warehouse up to MAX_PARTITIONS."""
    return min(warehouses, MAX_PARTITIONS) if partition else 0


def partition_ranges(warehouses: int, partitions: int) -> list[tuple[int, int]]:
    """Contiguous, near-equal warehouse ranges [lo, hi] (inclusive), one per partition."""
    out = []
    for k in range(partitions):
        lo = k * warehouses // partitions + 1
        hi = (k + 1) * warehouses // partitions
        out.append((lo, hi))
    return out


def leaf_name(table: str, k: int) -> str:
    return f"{table}_p{k + 1}"


def schema_statements(warehouses: int, partitions: int) -> list[str]:
    """CREATE TABLE statements (meta table first), partitioned when partitions > 0."""
    out = []
    for stmt in _statements(text("schema.sql")):
        m = _MARKER.search(stmt)
        if not m:
            out.append(stmt)
            continue
        if partitions == 0:
            out.append(_MARKER.sub("", stmt).rstrip())
            continue
        table = _table_name(stmt)
        out.append(_MARKER.sub(f"PARTITION BY RANGE ({m.group(1)})", stmt))
        for k, (lo, hi) in enumerate(partition_ranges(warehouses, partitions)):
            out.append(
                f"CREATE TABLE {leaf_name(table, k)} PARTITION OF {table} "
                f"FOR VALUES FROM ({lo}) TO ({hi + 1})"
            )
    return out


@dataclass(frozen=True)
class IndexSpec:
    table: str
    name: str
    columns: str
    primary: bool


# Largest first: the loader hands them out in this order (longest jobs start first).
INDEXES = (
    IndexSpec("order_line", "order_line_pkey", "ol_w_id, ol_d_id, ol_o_id, ol_number", True),
    IndexSpec("stock", "stock_pkey", "s_w_id, s_i_id", True),
    IndexSpec("customer", "customer_pkey", "c_w_id, c_d_id, c_id", True),
    IndexSpec("customer", "customer_name_idx", "c_w_id, c_d_id, c_last, c_first", False),
    IndexSpec("orders", "orders_pkey", "o_w_id, o_d_id, o_id", True),
    IndexSpec("orders", "orders_customer_idx", "o_w_id, o_d_id, o_c_id, o_id", False),
    IndexSpec("new_order", "new_order_pkey", "no_w_id, no_d_id, no_o_id", True),
    IndexSpec("item", "item_pkey", "i_id", True),
    IndexSpec("district", "district_pkey", "d_w_id, d_id", True),
    IndexSpec("warehouse", "warehouse_pkey", "w_id", True),
)


def leaves(table: str, partitions: int) -> list[str]:
    """The tables that hold rows: the partitions of a partitioned table, else itself."""
    if partitions and table in partition_keys():
        return [leaf_name(table, k) for k in range(partitions)]
    return [table]


def index_build_statements(partitions: int) -> list[str]:
    """Index builds that may run in parallel (CREATE INDEX takes a SHARE lock only).

    Primary keys are built as unique indexes here and promoted by index_finish_statements,
    so two indexes of one table can be built at the same time.
    """
    out = []
    for ix in INDEXES:
        for leaf in leaves(ix.table, partitions):
            name = ix.name.replace(ix.table, leaf, 1)
            unique = "UNIQUE " if ix.primary else ""
            out.append(f"CREATE {unique}INDEX {name} ON {leaf} ({ix.columns})")
    return out


def index_finish_statements(partitions: int) -> list[str]:
    """Quick catalog steps after the builds: promote primary keys, attach partition indexes."""
    out = []
    for ix in INDEXES:
        partitioned = bool(partitions) and ix.table in partition_keys()
        if ix.primary:
            for leaf in leaves(ix.table, partitions):
                name = ix.name.replace(ix.table, leaf, 1)
                out.append(
                    f"ALTER TABLE {leaf} ADD CONSTRAINT {name} PRIMARY KEY USING INDEX {name}"
                )
            if partitioned:  # finds the partitions' keys and attaches them, no build
                out.append(f"ALTER TABLE {ix.table} ADD PRIMARY KEY ({ix.columns})")
        elif partitioned:
            out.append(f"CREATE INDEX {ix.name} ON {ix.table} ({ix.columns})")
    return out


def autovacuum_statements(partitions: int, enabled: bool) -> list[str]:
    """Autovacuum off on every leaf table during the load (the loader vacuums at the end
    itself; an autovacuum of half-loaded tables only takes CPU), back to default after."""
    option = "RESET (autovacuum_enabled)" if enabled else "SET (autovacuum_enabled = off)"
    return [f"ALTER TABLE {leaf} {option}" for t in TABLES for leaf in leaves(t, partitions)]


def drop_tables_statement() -> str:
    """Every table a previous TPC-C load created (tables cascade to their partitions)."""
    return f"DROP TABLE IF EXISTS {', '.join((*TABLES, META_TABLE))} CASCADE"


# The signatures of pgrig's TPC-C functions in the current schema, for DROP FUNCTION.
FUNCTION_SIGNATURES_SQL = """
SELECT format('%%I(%%s)', p.proname, pg_get_function_identity_arguments(p.oid))
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = current_schema() AND p.proname = ANY(%(names)s)
"""


def _statements(sql: str) -> list[str]:
    """Split a file of plain DDL (no function bodies) into statements, comments removed."""
    body = "\n".join(line.split("--", 1)[0] for line in sql.splitlines())
    return [s.strip() for s in body.split(";") if s.strip()]


def _table_name(stmt: str) -> str:
    m = re.match(r"CREATE TABLE (\w+)", stmt)
    if not m:
        raise ValueError(f"not a CREATE TABLE statement: {stmt[:40]}")
    return m.group(1)
