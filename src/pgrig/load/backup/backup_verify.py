"""Is a restored server the data its backup holds? Row counts of the generated tables of the
datasets the backup recorded when it was taken (not the environment's current ones: the data
may have been regenerated since, or be another scenario), where the dataset fixes them
(pgbench: branches = scale, tellers = 10 x scale, accounts = 100,000 x scale; TPC-C:
warehouse = W, district = 10 W, customer = 30,000 W, stock = 100,000 W, item = 100,000), and
pg_amcheck over every database (B-tree indexes and heap of every relation)."""

from __future__ import annotations

import time

from pgrig.provision.server import backups
from pgrig.provision.state.environment import Environment
from pgrig.record.documents import DatasetDoc, RowCount, VerifyDoc

NOT_RECORDED = "row counts not checked: the backup recorded no data (taken by an older pgrig)"


def expected_counts(info: DatasetDoc) -> dict[str, int]:
    """Exact row counts a dataset fixes (tables a workload only appends to are left out)."""
    if info.get("scenario") == "pgbench" and info.get("scale"):
        s = int(info["scale"])
        return {"pgbench_branches": s, "pgbench_tellers": 10 * s, "pgbench_accounts": 100000 * s}
    if info.get("scenario") == "tpcc" and info.get("warehouses"):
        w = int(info["warehouses"])
        return {
            "warehouse": w,
            "district": 10 * w,
            "customer": 30000 * w,
            "stock": 100000 * w,
            "item": 100000,
        }
    return {}


def verify(datasets: dict[str, DatasetDoc] | None, scratch: Environment) -> VerifyDoc:
    """Row counts of every dataset the backup holds (`datasets`: its catalogue entry's; None
    for an entry that recorded none), then pg_amcheck; {"ok", "problem", ...}."""
    import psycopg
    from psycopg import sql

    t0 = time.monotonic()
    counts: dict[str, RowCount] = {}
    out: VerifyDoc = {"ok": True, "problem": None, "counts": counts}
    if datasets is None:
        out["counts_note"] = NOT_RECORDED
    for dbname, info in (datasets or {}).items():
        expected = expected_counts(info)
        if not expected:
            continue
        try:
            with psycopg.connect(scratch.conninfo(dbname)) as conn:
                for table, want in expected.items():
                    row = conn.execute(
                        sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))
                    ).fetchone()
                    got = int(row[0]) if row else 0
                    counts[f"{dbname}.{table}"] = {"expected": want, "found": got}
                    if got != want and out["ok"]:
                        out["ok"] = False
                        out["problem"] = (
                            f"{dbname}.{table} has {_rows(got)}, expected {want:,} (the data "
                            "the backup recorded)"
                        )
        except psycopg.Error as e:
            out["ok"] = False
            out["problem"] = f"cannot read {dbname} on the restored server: {str(e).strip()}"
    out["counts_s"] = round(time.monotonic() - t0, 3)
    out.update(_amcheck(scratch))
    if out["ok"] and out.get("amcheck") == "failed":
        out["ok"] = False
        out["problem"] = f"pg_amcheck: {out.get('amcheck_error')}"
    return out


def _rows(n: int) -> str:
    return f"{n:,} row" + ("" if n == 1 else "s")


def _amcheck(scratch: Environment) -> VerifyDoc:
    from pathlib import Path

    exe = scratch.binary("pg_amcheck")
    if not Path(exe).exists():
        return {"amcheck": "not available", "amcheck_error": f"{exe} is not installed"}
    argv = [
        exe, "-h", str(scratch.socket_dir), "-p", str(scratch.port), "-U", scratch.user,
        "--all", "--install-missing", "--heapallindexed", "--no-strict-names",
    ]  # fmt: skip
    result = backups.run_tool(argv, timeout=3600)
    doc: VerifyDoc = {"amcheck_s": round(result.seconds, 3)}
    if result.returncode == 0:
        doc["amcheck"] = "ok"
    else:
        doc["amcheck"] = "failed"
        doc["amcheck_error"] = result.last_error()
    return doc
