"""A database's dataset record (<env dir>/datasets.json, a backup's catalogue entry) is read
as its declared document (record/dataset_docs.DatasetDoc) once, where it is read: a value of
another type than declared (a damaged or hand-edited file) reads as missing, as for every run
document (record/doc_read.py), and what each generator writes fits its declaration."""

from __future__ import annotations

import json
from pathlib import Path

from pgrig.provision.server import backups
from pgrig.provision.state.environment import Environment
from pgrig.record.doc_read import read_document
from pgrig.record.documents import DatasetDoc
from pgrig.workloads import datasets


def _env() -> Environment:
    return Environment(name="lab", kind="external", host="10.0.0.1", port=5432)


def test_a_records_keys_of_another_type_read_as_missing(pgrig_home: Path) -> None:
    env = _env()
    env.dir.mkdir(parents=True, exist_ok=True)
    (env.dir / "datasets.json").write_text(json.dumps({
        "a": {"scenario": "pgbench", "scale": "ten", "partitions": None, "complete": True},
        "b": "not a record",
    }))  # fmt: skip
    assert datasets.load_all(env) == {
        "a": {"scenario": "pgbench", "partitions": None, "complete": True}
    }


def test_what_the_generators_write_fits_the_declaration() -> None:
    """Records as pgbench, TPC-C (with CH-benCHmark's keys), TPC-H, sysbench (built-in and a
    script), tickets and custom SQL write them: every key kept."""
    written: list[dict[str, object]] = [
        {"scenario": "pgbench", "scale": 2, "partitions": None, "seconds": 1.5,
         "size_bytes": 30_000_000, "complete": True, "pid": 12,
         "generated_at": "2026-01-01T00:00:00+00:00"},
        {"scenario": "chbench", "warehouses": 1, "jobs": 2, "partition": False,
         "partitions": 0, "load_seconds": 3.2, "warehouses_per_minute": 18.75,
         "size_bytes": 1, "database_size_bytes": 2, "phases": {"data_s": 1.0},
         "rows_estimate": {"item": 100000}, "c_last_load": 1, "c_id_load": 2,
         "ol_i_id_load": 3, "suppliers": 10000, "nations": 62,
         "nation_of_customer": "x", "supplier_of_stock": "y"},
        {"scenario": "tpch", "scale_factor": 0.01, "generator": "tpchgen-cli 2.0.1",
         "jobs": 2, "seconds": 1.0, "phases": {"copy_s": 0.5},
         "tables": {"nation": {"rows": 25, "csv_bytes": 2000, "copy_s": 0.01}},
         "indexes": {"lineitem_pkey": 0.2}, "size_bytes": 5},
        {"scenario": "sysbench", "tables": 2, "table_size": 1000, "jobs": 1,
         "sysbench_version": None, "seconds": 0.4, "size_bytes": 9},
        {"scenario": "sysbench", "script": "/s/t.lua", "script_name": "t.lua",
         "script_sha256": "ab", "defines": {"scale": "1"}, "commands": ["prepare", "run"]},
        {"scenario": "tickets", "rows": 1000, "names": 110},
        {"scenario": "custom", "sql": "/s/x.sql", "seconds": 0.1, "size_bytes": 3},
    ]  # fmt: skip
    for doc in written:
        assert read_document(DatasetDoc, doc) == doc


def test_a_backups_datasets_are_read_as_documents(pgrig_home: Path) -> None:
    env = _env()
    env.dir.mkdir(parents=True, exist_ok=True)
    entry = {"name": "b1", "tool": "basebackup", "kind": "full", "path": "/x",
             "datasets": {"pgrig": {"scenario": "tpcc", "warehouses": "2"}}}  # fmt: skip
    (env.dir / backups.CATALOG).write_text(json.dumps([entry]))
    (found,) = backups.catalog(env)
    assert found.datasets == {"pgrig": {"scenario": "tpcc"}}
