"""CH-benCHmark data: pgrig's TPC-C load, then REGION, NATION and SUPPLIER beside it."""

from __future__ import annotations

import time
from importlib import resources

from pgrig.record.documents import DatasetDoc
from pgrig.workloads.chbench.nations import REGIONS, nations
from pgrig.workloads.tpcc import loader as tpcc_loader
from pgrig.workloads.tpcc.loader import Progress
from pgrig.workloads.tpcc.meta import connect

SUPPLIERS = 10_000  # fixed by the paper, whatever the number of warehouses
TABLES = ("region", "nation", "supplier")

# A supplier's row; 5 of the 10,000 have "bad" in their comment (Q16 leaves them out, as
# TPC-H's complaints are left out of its Q16). Other comments are md5 digests whose hex letters
# are moved to g..l, so that none spells "bad" by chance (a hex digest did, 146 times).
_NO_BAD = "translate(md5({}), 'abcdef', 'ghijkl')"
_SUPPLIERS_SQL = f"""
INSERT INTO supplier
SELECT k, 'Supplier#' || lpad(k::text, 9, '0'),
       substr(md5(k::text || 'a') || md5(k::text || 'b'), 1, 10 + mod(k, 31)),
       (%(keys)s::int[])[1 + floor(random() * cardinality(%(keys)s::int[]))::int],
       lpad((10 + mod(k, 25))::text, 2, '0') || '-' || lpad(mod(k * 7, 1000)::text, 3, '0')
           || '-' || lpad(mod(k * 13, 1000)::text, 3, '0') || '-'
           || lpad(mod(k * 17, 10000)::text, 4, '0'),
       round((random() * 10998.99 - 999.99)::numeric, 2),
       CASE WHEN mod(k, 2000) = 0
            THEN 'Customer ' || {_NO_BAD.format("k::text")} || ' bad Complaints'
            ELSE {_NO_BAD.format("k::text || 'c'")} || {_NO_BAD.format("k::text || 'd'")} END
FROM generate_series(0, {SUPPLIERS - 1}) k
"""


def generate(
    conninfo: str,
    warehouses: int,
    jobs: int = 2,
    partition: bool = False,
    progress: Progress | None = None,
) -> DatasetDoc:
    """TPC-C's nine tables with `warehouses` warehouses, then the three CH-benCHmark tables,
    their keys and statistics. Replaces an earlier CH-benCHmark or TPC-C load."""
    with connect(conninfo) as conn:  # the tpcc loader refuses tables it did not make
        conn.execute("DROP TABLE IF EXISTS " + ", ".join(TABLES))
    info = tpcc_loader.generate(conninfo, warehouses, jobs, partition, progress)
    started = time.monotonic()
    with connect(conninfo) as conn, conn.transaction():
        conn.execute(resources.files(__package__).joinpath("schema.sql").read_text())
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO region VALUES (%s, %s, %s)",
                [(i, name, f"region {name.lower()}") for i, name in enumerate(REGIONS)],
            )
            cur.executemany(
                "INSERT INTO nation VALUES (%s, %s, %s, %s)",
                [(k, name, r, f"nation {name.lower()}") for k, name, r in nations()],
            )
        conn.execute(_SUPPLIERS_SQL, {"keys": [k for k, _, _ in nations()]})
        conn.execute("ALTER TABLE region ADD PRIMARY KEY (r_regionkey)")
        conn.execute("ALTER TABLE nation ADD PRIMARY KEY (n_nationkey)")
        conn.execute("ALTER TABLE supplier ADD PRIMARY KEY (su_suppkey)")
    with connect(conninfo) as conn:
        for table in TABLES:
            conn.execute(f"VACUUM (ANALYZE) {table}")
    ch_s = time.monotonic() - started
    phases = {**info.get("phases", {}), "chbench_tables_s": round(ch_s, 3)}
    return {
        **info,
        "load_seconds": round(info.get("load_seconds", 0.0) + ch_s, 3),
        "phases": phases,
        "suppliers": SUPPLIERS,
        "nations": len(nations()),
        "nation_of_customer": "ascii(substr(c_state, 1, 1)) = n_nationkey",
        "supplier_of_stock": "mod(s_w_id * s_i_id, 10000) = su_suppkey",
    }
