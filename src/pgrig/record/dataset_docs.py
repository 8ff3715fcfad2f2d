"""What `db generate` recorded for a database (<env dir>/datasets.json, workloads/datasets.py),
and what a run keeps of it (RunExtra.dataset).

One document for every scenario: each generator writes its own keys (total=False), a reader
tells them apart by `scenario`. Records written by older versions may lack any key.
"""

from __future__ import annotations

from typing_extensions import TypedDict

__all__ = ["DatasetDoc", "TpchTableLoad"]


class TpchTableLoad(TypedDict):
    """One TPC-H table's load (workloads/tpch/loader.load)."""

    rows: int
    csv_bytes: int
    copy_s: float


class DatasetDoc(TypedDict, total=False):
    """A database's dataset, by the generator that writes each key."""

    # every scenario (workloads/datasets.py): pgbench, tpcc, chbench, tpch, tickets, sysbench,
    # custom; incomplete while loading (then the pid of the pgrig loading it), complete after
    scenario: str
    complete: bool
    pid: int
    command: str  # while incomplete: the `pgrig db generate` asked, to run again as it is
    generated_at: str  # ISO UTC
    seconds: float
    size_bytes: int
    jobs: int
    # pgbench (workloads/pgbench_data.py); TPC-C's partitions too
    scale: int
    partitions: int | None
    # TPC-C and CH-benCHmark (workloads/tpcc/loader.py, workloads/chbench/loader.py)
    warehouses: int
    partition: bool
    load_seconds: float
    warehouses_per_minute: float | None
    database_size_bytes: int
    phases: dict[str, float]  # phase -> seconds
    rows_estimate: dict[str, int]  # table -> rows (reltuples)
    c_last_load: int  # the NURand constants the data was loaded with
    c_id_load: int
    ol_i_id_load: int
    suppliers: int
    nations: int
    nation_of_customer: str
    supplier_of_stock: str
    # TPC-H (workloads/tpch/loader.py)
    scale_factor: float
    generator: str
    indexes: dict[str, float]  # index -> seconds to build
    # sysbench (workloads/sysbench.py: built-in tables; workloads/sysbench_dataset.py: a script)
    tables: int | dict[str, TpchTableLoad]  # sysbench's table count; TPC-H's per table
    table_size: int
    sysbench_version: str | None
    script: str
    script_name: str
    script_sha256: str
    modules_sha256: dict[str, str]  # the Lua files beside the script, name -> SHA-256
    defines: dict[str, str]
    commands: list[str]
    # tickets (workloads/tickets/generate.py)
    rows: int
    names: int
    # custom SQL (workloads/custom_sql.py)
    sql: str
