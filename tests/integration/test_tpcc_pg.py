"""TPC-C against real servers: load, initial state, a 20 s run, consistency, fidelity.

Servers run as OS user postgres under /tmp on ports 26500-26599, listen on 127.0.0.1 only,
run with fsync=off (correctness tests, not performance) and are always removed.
The 20 s run (W=2, 16 clients) is the slow part of this module; everything else is seconds.
"""

from __future__ import annotations

import math
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
import servers
from servers import PG15

from pgrig.archive.records import LatencyStats, ScriptResult
from pgrig.errors import PgrigError
from pgrig.workloads import tpcc
from pgrig.workloads.tpcc import loader, scripts, sql

pytestmark = pytest.mark.integration

PORTS = range(26500, 26600)


def _pg18() -> Path | None:
    cache = Path(os.environ.get("PGRIG_PG_DIR", "/var/lib/pgrig/pg"))
    candidates = sorted(cache.glob("18*/bin"), reverse=True)
    candidates += sorted(Path("/tmp/pgb/x").glob("postgresql-18*/bin"), reverse=True)
    for c in candidates:
        if (c / "postgres").exists() and (c / "pgbench").exists():
            return c
    return None


class Server(servers.Server):
    """A throwaway cluster owned by OS user postgres, sized for W=2 and 16 clients."""

    def __init__(self, bindir: Path) -> None:
        super().__init__(
            bindir, PORTS, "pgrig-tpcc-",
            initdb_args=("-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C"),
            settings={"shared_buffers": "256MB", "max_wal_size": "2GB", "max_connections": 60},
        )  # fmt: skip

    def conninfo(self, db: str) -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={db}"

    def create_db(self, db: str) -> str:
        with psycopg.connect(self.conninfo("postgres"), autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {db}")
            conn.execute(f"CREATE DATABASE {db}")
        return self.conninfo(db)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with servers.throwaway(PG15, Server) as srv:
        yield srv


@pytest.fixture(scope="module")
def loaded(server: Server) -> dict:
    """W=2 loaded by 2 jobs into database tpcc, with the progress reports seen."""
    conninfo = server.create_db("tpcc")
    seen: list[tuple[int, int, str]] = []
    info = tpcc.generate(
        conninfo, 2, jobs=2, progress=lambda d, t, label: seen.append((d, t, label))
    )
    return {"info": info, "progress": seen, "conninfo": conninfo}


# --- pgbench ---------------------------------------------------------------------------------


@dataclass
class PgbenchRun:
    returncode: int
    stdout: str
    stderr: str
    results: list[ScriptResult]
    specs: list


def _parse_logs(log_dir: Path, specs: list) -> list[ScriptResult]:
    """Per-script counts and latencies from pgbench's per-transaction logs."""
    lat: dict[int, list[float]] = {i: [] for i in range(len(specs))}
    failed = dict.fromkeys(lat, 0)
    retried = dict.fromkeys(lat, 0)
    for f in log_dir.glob("tx.*"):
        for line in f.read_text().splitlines():
            parts = line.split()
            script_no = int(parts[3])
            if parts[2].isdigit():
                lat[script_no].append(int(parts[2]) / 1000)
            elif parts[2] != "skipped":
                failed[script_no] += 1
            if len(parts) > 6 and int(parts[-1]) > 0:
                retried[script_no] += 1
    out = []
    for i, spec in enumerate(specs):
        xs = sorted(lat[i])
        stats = LatencyStats(
            avg=sum(xs) / len(xs) if xs else None,
            p95=xs[int(0.95 * (len(xs) - 1))] if xs else None,
        )
        out.append(
            ScriptResult(i, spec.name, spec.weight, transactions=len(xs), failed=failed[i],
                         retried=retried[i], latency=stats)
        )  # fmt: skip
    return out


def _pgbench(
    server: Server, db: str, tmp: Path, *, clients: int, seconds: int, protocol: str = "simple",
    warehouses: int | None = None, all_warehouses: bool = False, portable: bool = False,
) -> PgbenchRun:  # fmt: skip
    """portable: scripts written without knowing the protocol (valid in every -M mode)."""
    specs, defines, max_tries = tpcc.pgbench_scripts(
        tmp / "scripts", warehouses=warehouses, conninfo=server.conninfo(db),
        protocol=None if portable else protocol, all_warehouses=all_warehouses,
    )  # fmt: skip
    logs = tmp / "logs"
    logs.mkdir()
    cmd = [
        str(server.bindir / "pgbench"), "-h", "127.0.0.1", "-p", str(server.port), "-U", "postgres",
        "-n", "-c", str(clients), "-j", "2", "-T", str(seconds), "-M", protocol,
        f"--max-tries={max_tries}", "-l", f"--log-prefix={logs}/tx",
        *(f"-D{k}={v}" for k, v in defines.items()),
        *(f"-f{s.path}@{s.weight}" for s in specs), db,
    ]  # fmt: skip
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 120)
    return PgbenchRun(p.returncode, p.stdout, p.stderr, _parse_logs(logs, specs), specs)


def _scalar(conninfo: str, query: str):
    with psycopg.connect(conninfo, autocommit=True) as conn:
        row = conn.execute(query).fetchone()
        return row[0] if row else None


def _within(observed: int, n: int, p: float, sigmas: float = 4.0) -> bool:
    """observed/n is within `sigmas` binomial standard deviations of p."""
    if n == 0:
        return False
    return abs(observed / n - p) <= sigmas * math.sqrt(p * (1 - p) / n) + 1e-9


# --- the loaded database ---------------------------------------------------------------------


def test_generate_reports_the_load(loaded: dict) -> None:
    info = loaded["info"]
    assert info["warehouses"] == 2 and info["jobs"] == 2 and info["partitions"] == 0
    assert info["load_seconds"] > 0 and info["size_bytes"] > 150_000_000
    assert 0 <= info["c_last_load"] <= 255
    # statistics-based (exact counts are asserted in test_initial_state_is_the_spec)
    assert info["rows_estimate"]["stock"] == pytest.approx(200_000, rel=0.05)
    assert info["rows_estimate"]["item"] == pytest.approx(100_000, rel=0.05)
    done = [d for d, _t, _label in loaded["progress"]]
    total = loaded["progress"][-1][1]
    assert done == sorted(done) and done[-1] == total
    labels = [label for _d, _t, label in loaded["progress"]]
    assert "warehouse 2 stock" in labels and "index order_line_pkey" in labels
    meta = _scalar(loaded["conninfo"], "SELECT row_to_json(m) FROM tpcc_meta m")
    assert meta["warehouses"] == 2 and meta["c_last_load"] == info["c_last_load"]
    assert meta["finished_at"] is not None and meta["size_bytes"] == info["size_bytes"]


INITIAL_STATE = {
    # cardinalities (clause 4.3.3.1)
    "SELECT count(*) FROM warehouse": 2,
    "SELECT count(*) FROM district": 20,
    "SELECT count(*) FROM customer": 60_000,
    "SELECT count(*) FROM history": 60_000,
    "SELECT count(*) FROM orders": 60_000,
    "SELECT count(*) FROM new_order": 18_000,
    "SELECT count(*) FROM item": 100_000,
    "SELECT count(*) FROM stock": 200_000,
    "SELECT count(*) - (SELECT sum(o_ol_cnt) FROM orders) FROM order_line": 0,
    # initial values
    "SELECT count(*) FROM warehouse WHERE w_ytd <> 300000.00 OR w_tax NOT BETWEEN 0 AND 0.2": 0,
    "SELECT count(*) FROM district WHERE d_ytd <> 30000.00 OR d_next_o_id <> 3001": 0,
    "SELECT count(*) FROM customer WHERE c_balance <> -10 OR c_ytd_payment <> 10"
    " OR c_payment_cnt <> 1 OR c_delivery_cnt <> 0 OR c_credit_lim <> 50000"
    " OR c_middle <> 'OE' OR c_discount NOT BETWEEN 0 AND 0.5": 0,
    "SELECT count(*) FROM customer WHERE length(c_data) NOT BETWEEN 300 AND 500"
    " OR length(c_first) NOT BETWEEN 8 AND 16 OR c_zip NOT LIKE '____11111'"
    " OR c_phone !~ '^[0-9]{16}$'": 0,
    "SELECT count(*) FROM history WHERE h_amount <> 10.00 OR h_c_id IS NULL": 0,
    # exactly 10% 'BC' in every district, 10% ORIGINAL in item and in each warehouse's stock
    "SELECT count(*) FROM (SELECT 1 FROM customer GROUP BY c_w_id, c_d_id"
    " HAVING count(*) FILTER (WHERE c_credit = 'BC') <> 300) x": 0,
    "SELECT count(*) FROM item WHERE i_data LIKE '%ORIGINAL%'": 10_000,
    "SELECT count(*) FROM (SELECT 1 FROM stock GROUP BY s_w_id"
    " HAVING count(*) FILTER (WHERE s_data LIKE '%ORIGINAL%') <> 10000) x": 0,
    "SELECT count(*) FROM stock WHERE length(s_data) NOT BETWEEN 26 AND 50"
    " OR s_quantity NOT BETWEEN 10 AND 100 OR s_ytd <> 0 OR length(s_dist_05) <> 24": 0,
    "SELECT count(*) FROM item WHERE i_price NOT BETWEEN 1 AND 100"
    " OR i_im_id NOT BETWEEN 1 AND 10000 OR length(i_name) NOT BETWEEN 14 AND 24": 0,
    # last names: first 1,000 of a district are the syllables of 0..999, all names valid
    "SELECT count(*) FROM customer WHERE c_id <= 1000 AND c_last <> tpcc_last_name(c_id - 1)": 0,
    "SELECT count(*) FROM customer WHERE c_last NOT IN"
    " (SELECT tpcc_last_name(n) FROM generate_series(0, 999) n)": 0,
    # o_c_id is a permutation of 1..3000 in every district
    "SELECT count(*) FROM (SELECT 1 FROM orders GROUP BY o_w_id, o_d_id"
    " HAVING count(DISTINCT o_c_id) <> 3000 OR min(o_c_id) <> 1 OR max(o_c_id) <> 3000) x": 0,
    # delivered (o_id < 2101) and undelivered orders
    "SELECT count(*) FROM orders WHERE (o_id < 2101) <> (o_carrier_id IS NOT NULL)"
    " OR o_carrier_id NOT BETWEEN 1 AND 10 OR o_ol_cnt NOT BETWEEN 5 AND 15"
    " OR o_all_local <> 1": 0,
    "SELECT count(*) FROM new_order WHERE no_o_id NOT BETWEEN 2101 AND 3000": 0,
    "SELECT count(*) FROM order_line WHERE (ol_o_id < 2101) <> (ol_delivery_d IS NOT NULL)"
    " OR (ol_o_id < 2101 AND ol_amount <> 0)"
    " OR (ol_o_id >= 2101 AND ol_amount NOT BETWEEN 0.01 AND 9999.99)"
    " OR ol_quantity <> 5 OR ol_supply_w_id <> ol_w_id OR ol_i_id NOT BETWEEN 1 AND 100000": 0,
}


def test_initial_state_is_the_spec(loaded: dict) -> None:
    wrong = {}
    with psycopg.connect(loaded["conninfo"], autocommit=True) as conn:
        for query, expected in INITIAL_STATE.items():
            got = conn.execute(query).fetchone()[0]  # type: ignore[index]
            if got != expected:
                wrong[query] = got
    assert wrong == {}


def test_c_last_of_later_customers_follows_nurand_with_the_load_c(loaded: dict) -> None:
    """Customers 1001..3000 take NURand(255, 0, 999) names: non-uniform, all 1000 names."""
    with psycopg.connect(loaded["conninfo"], autocommit=True) as conn:
        counts = [
            r[0]
            for r in conn.execute(
                "SELECT count(*) FROM customer WHERE c_id > 1000 GROUP BY c_last"
            ).fetchall()
        ]
    assert sum(counts) == 40_000
    # uniform would give about 40 per name; NURand's OR skews it strongly
    assert max(counts) > 3 * (sum(counts) / 1000)


def test_indexes_and_statistics(loaded: dict) -> None:
    with psycopg.connect(loaded["conninfo"], autocommit=True) as conn:
        pkeys = {
            r[0]
            for r in conn.execute(
                "SELECT conrelid::regclass::text FROM pg_constraint WHERE contype = 'p'"
            )
        }
        idx = {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes")}
        analyzed = conn.execute(
            "SELECT count(*) FROM pg_stat_user_tables WHERE last_vacuum IS NOT NULL"
            " AND last_analyze IS NOT NULL AND relname = ANY(%s)",
            (list(sql.TABLES),),
        ).fetchone()[0]  # type: ignore[index]
        reloptions = conn.execute(
            "SELECT count(*) FROM pg_class WHERE relname = ANY(%s) AND reloptions IS NOT NULL",
            (list(sql.TABLES),),
        ).fetchone()[0]  # type: ignore[index]
    assert reloptions == 0  # autovacuum is back to the server's setting
    assert set(sql.TABLES) - {"history"} <= pkeys
    assert {"customer_name_idx", "orders_customer_idx"} <= idx
    assert analyzed == 9


def test_check_passes_on_the_initial_database(loaded: dict) -> None:
    results = tpcc.check(loaded["conninfo"])
    assert [r.number for r in results] == list(range(1, 13))
    assert all(r.passed for r in results), tpcc.format_check(results)  # 11 included


def test_pgbench_scripts_refuse_more_warehouses_than_loaded(loaded: dict, tmp_path: Path) -> None:
    with pytest.raises(PgrigError, match="loaded with 2 warehouse"):
        tpcc.pgbench_scripts(tmp_path, warehouses=3, conninfo=loaded["conninfo"])
    specs, defines, max_tries = tpcc.pgbench_scripts(
        tmp_path, warehouses=2, conninfo=loaded["conninfo"]
    )
    c_load = loaded["info"]["c_last_load"]
    assert abs(int(defines["tpcc_c_last"]) - c_load) in scripts.C_LAST_DELTAS
    assert defines["tpcc_w"] == "2" and max_tries > 1 and len(specs) == 6


# --- a 20 s run: correctness and fidelity ----------------------------------------------------


@pytest.fixture(scope="module")
def run20(server: Server, loaded: dict, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """W=2, 16 clients, 20 s; function call counts on to measure the by-name share. Each
    realised share is checked within 4 binomial sigmas, which a right mix passes at any count:
    20 s gives thousands of transactions, enough to see a share off by a point."""
    conninfo = loaded["conninfo"]
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("ALTER DATABASE tpcc SET track_functions = 'pl'")
        conn.execute("SELECT pg_stat_reset()")
    rollbacks_before = _scalar(
        conninfo, "SELECT xact_rollback FROM pg_stat_database WHERE datname = 'tpcc'"
    )
    run = _pgbench(server, "tpcc", tmp_path_factory.mktemp("run20"), clients=16, seconds=20)
    calls: dict[str, int] = {}
    for _ in range(50):  # backends flush their function counters as they exit
        with psycopg.connect(conninfo, autocommit=True) as conn:
            calls = dict(
                conn.execute("SELECT funcname, calls FROM pg_stat_user_functions").fetchall()
            )
        done = sum(r.transactions + r.failed for r in run.results if "payment" in r.name)
        if calls.get("tpcc_payment", 0) >= done:
            break
        time.sleep(0.2)
    rollbacks_after = _scalar(
        conninfo, "SELECT xact_rollback FROM pg_stat_database WHERE datname = 'tpcc'"
    )
    return {
        "run": run,
        "summary": tpcc.summarize(run.results, 20.0),
        "fidelity": tpcc.fidelity(conninfo),
        "calls": calls,
        "server_rollbacks": rollbacks_after - rollbacks_before,
        "conninfo": conninfo,
    }


def test_run_completes_without_failures(run20: dict) -> None:
    run, s = run20["run"], run20["summary"]
    assert run.returncode == 0, run.stderr[-2000:]
    assert "aborted" not in run.stderr
    assert s["failures"] == 0
    assert s["nopm"] > 0 and s["tpm"] > s["nopm"]
    print("TPC-C W=2 16 clients 20 s:", {k: s[k] for k in ("nopm", "tpm", "rollbacks", "retried")})


def test_checker_passes_after_the_run(run20: dict) -> None:
    results = tpcc.check(run20["conninfo"])
    failed = [r for r in results if r.passed is False]
    assert failed == [], tpcc.format_check(results)
    eleven = next(r for r in results if r.number == 11)
    assert eleven.passed is None and "Delivery has run" in (eleven.skipped or "")


def test_log_and_data_agree_exactly(run20: dict) -> None:
    """Committed New-Orders in the log = orders in the data; rollbacks left no trace."""
    s, f = run20["summary"], run20["fidelity"]
    types = s["types"]
    assert f["new_orders"] == types["new_order"]["transactions"]
    assert f["orders"] == types["new_order"]["transactions"]
    assert f["payments"] == types["payment"]["transactions"] == f["payments_by_customer"]
    assert run20["calls"]["tpcc_payment"] == types["payment"]["transactions"]
    assert run20["calls"]["tpcc_order_status"] == types["order_status"]["transactions"]
    # every rollback-script transaction ended as a real rollback on the server
    if s["retried"] == 0:
        assert run20["server_rollbacks"] == s["rollbacks"]
    else:
        assert run20["server_rollbacks"] >= s["rollbacks"]


def test_realised_inputs_match_the_spec(run20: dict) -> None:
    """Mix, rollback rate, remote shares and by-name share within 4 binomial sigmas."""
    s, f, calls = run20["summary"], run20["fidelity"], run20["calls"]
    total = s["transactions"]
    types = s["types"]
    report = {
        "mix_pct": s["mix_pct"],
        "rollback_pct": s["rollback_pct"],
        "remote_line_pct": f["remote_line_pct"],
        "remote_payment_pct": f["remote_payment_pct"],
        "by_name_pct": f["by_name_pct"],
        "transactions": total,
    }
    print("TPC-C realised inputs:", report)
    expected_mix = {"new_order": 0.45, "payment": 0.43, "order_status": 0.04, "delivery": 0.04,
                    "stock_level": 0.04}  # fmt: skip
    for kind, p in expected_mix.items():
        n = types[kind]["transactions"] + (
            types["new_order_rollback"]["transactions"] if kind == "new_order" else 0
        )
        assert _within(n, total, p), (kind, n, total)
    no_all = types["new_order"]["transactions"] + s["rollbacks"]
    assert s["rollbacks"] > 0 and _within(s["rollbacks"], no_all, 0.01)
    remote_lines = round(f["remote_line_pct"] * f["order_lines"] / 100)
    assert _within(remote_lines, f["order_lines"], 0.01)
    remote_payments = round(f["remote_payment_pct"] * f["payments"] / 100)
    assert _within(remote_payments, f["payments"], 0.15)
    lookups = calls["tpcc_payment"] + calls["tpcc_order_status"]
    assert f["by_name_lookups"] == calls["tpcc_customer_by_name"]
    assert _within(calls["tpcc_customer_by_name"], lookups, 0.60)


def test_corrupted_database_fails_with_a_clear_report(run20: dict) -> None:
    conninfo = run20["conninfo"]
    one_customer = "(c_w_id, c_d_id, c_id) = (2, 3, 4)"
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("UPDATE warehouse SET w_ytd = w_ytd + 1 WHERE w_id = 1")
        conn.execute(f"UPDATE customer SET c_balance = c_balance + 5 WHERE {one_customer}")
    try:
        results = tpcc.check(conninfo)
        text = tpcc.format_check(results)
    finally:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute("UPDATE warehouse SET w_ytd = w_ytd - 1 WHERE w_id = 1")
            conn.execute(f"UPDATE customer SET c_balance = c_balance - 5 WHERE {one_customer}")
    failed = {r.number: r.offending for r in results if r.passed is False}
    assert failed == {1: 1, 8: 1, 10: 1, 12: 1}
    assert " 1  FAIL  w_ytd = sum(d_ytd) per warehouse: 1 warehouses offending" in text
    assert (
        "12  FAIL  c_balance + c_ytd_payment = sum(delivered ol_amount) per customer: 1 cu" in text
    )
    assert text.splitlines()[-1].startswith("TPC-C consistency: INCONSISTENT (7 passed, 4 failed")
    assert not tpcc.all_passed(results)
    assert tpcc.all_passed(tpcc.check(conninfo))


# --- partitioned load, other protocols, replacing a load, refusals ---------------------------


def test_partitioned_load_runs_prepared_and_stays_consistent(
    server: Server, tmp_path: Path
) -> None:
    conninfo = server.create_db("tpcc_part")
    info = tpcc.generate(conninfo, 2, jobs=2, partition=True)
    assert info["partitions"] == 2
    with psycopg.connect(conninfo, autocommit=True) as conn:
        parts = conn.execute(
            "SELECT count(*) FROM pg_inherits WHERE inhparent = 'order_line'::regclass"
        ).fetchone()[0]  # type: ignore[index]
        leaf_rows = conn.execute("SELECT count(*) FROM ONLY order_line_p2").fetchone()[0]  # type: ignore[index]
        w2_rows = conn.execute("SELECT count(*) FROM order_line WHERE ol_w_id = 2").fetchone()[0]  # type: ignore[index]
    assert parts == 2 and leaf_rows == w2_rows > 0
    assert tpcc.all_passed(tpcc.check(conninfo))
    run = _pgbench(server, "tpcc_part", tmp_path, clients=4, seconds=5, protocol="prepared",
                   all_warehouses=True)  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    s = tpcc.summarize(run.results, 5.0)
    assert s["failures"] == 0 and s["nopm"] > 0
    results = tpcc.check(conninfo)
    assert tpcc.all_passed(results), tpcc.format_check(results)

    # an unfinished load is refused by the run and the check
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("UPDATE tpcc_meta SET finished_at = NULL")
    with pytest.raises(PgrigError, match="did not finish"):
        tpcc.check(conninfo)
    with pytest.raises(PgrigError, match="did not finish"):
        tpcc.pgbench_scripts(tmp_path / "x", warehouses=2, conninfo=conninfo)

    # generating again replaces the earlier load (here: unpartitioned, one warehouse),
    # functions of older pgrig versions included
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(
            "CREATE FUNCTION tpcc_data(bytea, boolean) RETURNS int LANGUAGE sql AS 'SELECT 1'"
        )
    info = tpcc.generate(conninfo, 1, jobs=1)
    assert _scalar(conninfo, "SELECT count(*) FROM pg_proc WHERE proname = 'tpcc_data'") == 0
    assert info["partitions"] == 0
    with psycopg.connect(conninfo, autocommit=True) as conn:
        assert conn.execute("SELECT to_regclass('order_line_p1')").fetchone()[0] is None  # type: ignore[index]
        assert conn.execute("SELECT warehouses FROM tpcc_meta").fetchone()[0] == 1  # type: ignore[index]
    results = tpcc.check(conninfo)
    assert all(r.passed for r in results), tpcc.format_check(results)


def test_generate_refuses_tables_it_did_not_make(server: Server, tmp_path: Path) -> None:
    conninfo = server.create_db("foreign_db")
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("CREATE TABLE orders (x int)")
        conn.execute("INSERT INTO orders VALUES (1)")
    with pytest.raises(PgrigError, match="tables named orders that pgrig"):
        tpcc.generate(conninfo, 1)
    assert _scalar(conninfo, "SELECT count(*) FROM orders") == 1
    assert _scalar(conninfo, "SELECT to_regclass('tpcc_meta')") is None
    with pytest.raises(PgrigError, match="holds no TPC-C data"):
        tpcc.pgbench_scripts(tmp_path, warehouses=1, conninfo=conninfo)
    with pytest.raises(PgrigError, match="holds no TPC-C data") as refused:
        tpcc.check(conninfo)
    # no command with placeholders to paste: this reader knows neither environment nor size
    assert " ENV " not in str(refused.value) and "--warehouses W" not in str(refused.value)


def test_a_failing_task_cancels_the_others(server: Server) -> None:
    conninfo = server.create_db("cancel_db")
    slow = "DO $$ BEGIN PERFORM pg_sleep(30); CREATE TABLE not_cancelled (); END $$"
    tasks = [loader.Task("slow", slow), loader.Task("broken", "SELECT 1 / 0")]
    with pytest.raises(PgrigError, match=r"TPC-C load failed \(broken\): division by zero"):
        loader.run_parallel(conninfo, tasks, 2, lambda label: None)
    # the slow task was cancelled, not waited for: it never reached its second statement
    assert _scalar(conninfo, "SELECT to_regclass('not_cancelled')") is None


def test_unreachable_server_is_a_clean_error(tmp_path: Path) -> None:
    port = servers.free_port(PORTS)
    with pytest.raises(PgrigError, match=f"cannot connect to 127.0.0.1:{port}/nowhere"):
        tpcc.generate(f"host=127.0.0.1 port={port} dbname=nowhere connect_timeout=2", 1)


# --- PostgreSQL 18 ---------------------------------------------------------------------------


def test_postgresql_18_load_run_check(tmp_path: Path) -> None:
    with servers.throwaway(_pg18(), Server) as srv:
        conninfo = srv.create_db("tpcc")
        info = tpcc.generate(conninfo, 1, jobs=2)
        assert info["rows_estimate"]["customer"] == pytest.approx(30_000, rel=0.05)
        run = _pgbench(srv, "tpcc", tmp_path, clients=4, seconds=5, protocol="extended",
                       portable=True)  # fmt: skip
        assert run.returncode == 0, run.stderr[-2000:]
        rollback_script = Path(run.specs[1].path).read_text()
        assert "BEGIN;\nSELECT tpcc_new_order_rollback(" in rollback_script
        s = tpcc.summarize(run.results, 5.0)
        assert s["failures"] == 0 and s["nopm"] > 0
        results = tpcc.check(conninfo)
        assert tpcc.all_passed(results), tpcc.format_check(results)
