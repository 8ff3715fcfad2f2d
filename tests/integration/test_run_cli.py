"""End to end: `pgrig run` against a real PostgreSQL 15 environment with real pgbench."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import servers
from servers import pgrig

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def lab() -> Iterator[str]:
    """One PG15 environment with pgbench scale-1 data, shared by the tests of this module."""
    with servers.pgbench_lab("pgrig-run-test-") as lab:
        yield lab


def run_json(*args: str, check: bool = True) -> dict:
    proc = pgrig("run", *args, "--json", check=check)
    return json.loads(proc.stdout)


def test_run_reports_measured_window_and_series(lab: str) -> None:
    rec = run_json(
        lab,
        "--workload",
        "pgbench:select-only",
        "-c",
        "2",
        "-j",
        "2",
        "--duration",
        "3",
        "--warmup",
        "1",
        # the lead-in and window of ONE pgbench process, every transaction logged (auto would
        # sample a fast select-only run: test_txlog_modes_pg.py covers that mode)
        "--txlog",
        "full",
    )
    assert rec["status"] == "ok"
    assert rec["tps"] > 0
    assert rec["transactions"] > 0
    # every load parameter of the request is archived (here mostly their defaults)
    assert (rec["clients"], rec["threads"], rec["duration_s"], rec["warmup_s"]) == (2, 2, 3, 1)
    assert (rec["max_tries"], rec["connect"], rec["defines"], rec["keep_txlog"]) == (
        1,
        "tcp",
        {},
        False,
    )
    assert rec["latency_ms"]["p50"] <= rec["latency_ms"]["p95"] <= rec["latency_ms"]["max"]
    shown = json.loads(pgrig("runs", "show", str(rec["id"]), "--json").stdout)
    assert shown["id"] == rec["id"]
    exported = json.loads(pgrig("runs", "export", str(rec["id"]), "--format", "json").stdout)
    series = exported["series"]["pgbench"]
    assert min(series["t"]) < 0  # the warm-up is kept in the series, before the window
    assert "os" in exported["series"] and "pg" in exported["series"]
    assert exported["settings"]["shared_buffers"]
    assert exported["command"].startswith("/") and "pgbench" in exported["command"]


def test_multiple_scripts_get_per_script_figures(lab: str, tmp_path: Path) -> None:
    script = tmp_path / "read.sql"
    script.write_text(
        "\\set aid random(1, 100000)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n"
    )
    rec = run_json(
        lab,
        "--workload",
        f"{script}@3",
        "--workload",
        "pgbench:simple-update@1",
        "-c",
        "2",
        "--duration",
        "2",
    )
    assert rec["status"] == "ok"
    names = [s["name"] for s in rec["scripts"]]
    assert names == ["read.sql", "pgbench:simple-update"]
    assert all(s["transactions"] > 0 for s in rec["scripts"])


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (
            ["--workload", "pgbench:select-only", "--duration", "0"],
            "--duration must be at least 1 s (got 0 s)",
        ),
        (
            ["--workload", "pgbench:select-only", "--duration", "0.001"],
            "--duration must be at least 1 s (got 0.001 s)",
        ),
        (["--workload", "pgbench:select-only", "-T", "2", "-L", "5"], "--latency-limit needs"),
        (["--workload", "pgbench:select-only", "-T", "2", "--mix", "1,1,1,1,1"], "--mix applies"),
        (["--workload", "pgbench:select-only", "-T", "2", "-c", "1", "-j", "2"], "--threads"),
        (
            ["--workload", "pgbench:select-only", "-T", "2", "-D", "aid=5"],
            "--define aid: no script of workload 'pgbench:select-only' reads :aid",
        ),
        (["--workload", "/nonexistent/x.sql", "--duration", "1"], "script file not found"),
        (
            [
                "--workload",
                "pgbench:select-only",
                "--duration",
                "1",
                "--set",
                "shared_buffers=lots",
            ],
            "shared_buffers",
        ),
        (
            ["--workload", "pgbench:select-only", "--duration", "1", "--set", "no_such_thing=1"],
            "no_such_thing",
        ),
    ],
)
def test_bad_input_is_refused_before_anything_runs(lab: str, args: list[str], needle: str) -> None:
    before = json.loads(pgrig("runs", "list", "--json").stdout)
    proc = pgrig("run", lab, *args, check=False)
    assert proc.returncode != 0
    assert needle in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    after = json.loads(pgrig("runs", "list", "--json").stdout)
    assert len(after) == len(before)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--scale", "0"], "--scale must be >= 1 (got 0)"),
        (["--scenario", "tpcc", "--warehouses", "0"], "--warehouses must be >= 1 (got 0)"),
        (["--db", "template1"], "--db must not be template1"),
        (["--db", "postgres"], "--db must not be postgres"),
        (["--rows", "5"], "--rows applies only to --scenario tickets"),
    ],
)
def test_db_generate_refuses_nonsense(lab: str, args: list[str], needle: str) -> None:
    datasets = Path(os.environ["PGRIG_HOME"]) / "envs" / lab / "datasets.json"
    before = datasets.read_text()
    proc = pgrig("db", "generate", lab, *args, check=False)
    assert proc.returncode != 0
    assert needle in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert datasets.read_text() == before  # nothing generated, nothing recorded


def test_script_syntax_error_shows_pgbench_message(lab: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.sql"
    bad.write_text("SELEC 1;\n")
    proc = pgrig("run", lab, "--workload", str(bad), "--duration", "1", check=False)
    assert proc.returncode != 0
    assert "syntax error" in proc.stderr
    meta = tmp_path / "badmeta.sql"
    meta.write_text("\\set x random(1,\n")
    proc = pgrig("run", lab, "--workload", str(meta), "--duration", "1", check=False)
    assert proc.returncode != 0
    assert "badmeta.sql" in proc.stderr


def test_ctrl_c_archives_an_aborted_run_and_leaves_no_pgbench(lab: str) -> None:
    proc = servers.start_long_run(lab)
    servers.wait_for_running()
    servers.wait_for_measuring(proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    run = json.loads(out)  # one run asked: one object, interrupted or not
    assert run["status"] == "aborted"
    assert run["transactions"] and run["transactions"] > 0
    assert not _pgbench_running(run["command"])


def test_runs_list_works_during_a_run_and_postmaster_crash_fails_the_run(lab: str) -> None:
    proc = servers.start_long_run(lab)
    running = servers.wait_for_running()
    assert running["status"] == "running"
    time.sleep(2)
    home = Path(os.environ["PGRIG_HOME"])
    pid = int((home / "envs" / lab / "data" / "postmaster.pid").read_text().split()[0])
    os.kill(pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    rec = json.loads(out)
    assert rec["status"] == "failed"
    assert rec["error"]
    # with --json too, why the run failed is the last thing said on stderr
    assert err.rstrip().endswith(f"run {rec['id']} failed: {rec['error']}".rstrip()), err
    exported = json.loads(pgrig("runs", "export", str(rec["id"]), "--format", "json").stdout)
    assert len(exported["series"]["pgbench"]["t"]) >= 1  # the partial series is kept
    assert not _pgbench_running(rec["command"])
    pgrig("env", "start", lab)  # the environment is usable again


def _pgbench_running(command: str) -> bool:
    """Is this run's own pgbench (identified by its unique log prefix) still alive?"""
    prefix = next(a for a in command.split() if a.startswith("--log-prefix="))
    out = subprocess.run(["pgrep", "-f", prefix], capture_output=True, text=True)
    return bool(out.stdout.strip())


def test_tpcc_generate_run_and_check_through_the_cli(lab: str) -> None:
    pgrig(
        "db",
        "generate",
        lab,
        "--scenario",
        "tpcc",
        "--warehouses",
        "1",
        "--db",
        "tpcc",
        timeout=300,
    )
    rec = run_json(
        lab, "--db", "tpcc", "--workload", "tpcc", "-c", "2", "--duration", "4", "--warmup", "1"
    )
    assert rec["status"] == "ok"
    assert rec["nopm"] > 0 and rec["tpm"] >= rec["nopm"]
    # the record says what ran: TPC-C's retries and -D constants
    assert rec["max_tries"] == 10 and rec["defines"]["tpcc_w"] == "1"
    types = {s["name"] for s in rec["scripts"]}
    assert {"tpcc:new_order", "tpcc:payment", "tpcc:delivery"} <= types
    assert rec["tpcc"]["nopm"] == rec["nopm"]
    check = pgrig("db", "check", lab, "--db", "tpcc", "--json")
    results = json.loads(check.stdout)
    assert results and all(r["passed"] in (True, None) for r in results)
    exported = json.loads(pgrig("runs", "export", str(rec["id"]), "--format", "json").stdout)
    share = exported["extra"]["cpu_share"]
    assert 0 <= share["client_share_pct"] <= 100


def test_missing_data_and_unknown_load_hosts_are_refused_before_anything_is_archived(
    lab: str,
) -> None:
    before = json.loads(pgrig("runs", "list", "--json").stdout)
    servers.as_postgres(
        "psql", "-h", "127.0.0.1", "-p", str(_port(lab)), "-U", "postgres",
        "-c", "CREATE DATABASE nodata",
    )  # fmt: skip
    refused = {
        "pgbench": pgrig(
            "run", lab, "-w", "pgbench:tpcb", "-T", "2", "--db", "nodata", check=False
        ),
        "sysbench": pgrig(
            "run", lab, "-w", "sysbench:oltp_read_only", "-T", "2", "--db", "nodata", check=False
        ),
        # the database's dataset is pgbench's: not sysbench data (issue 30, class 6)
        "sysbench_on_pgbench": pgrig(
            "run", lab, "-w", "sysbench:oltp_read_only", "-T", "2", check=False
        ),
        "host": pgrig(
            "run", lab, "-w", "pgbench:select-only", "-T", "2", "--load-from", "nohost",
            check=False,
        ),
    }  # fmt: skip
    for proc in refused.values():
        assert proc.returncode == 2, proc.stderr
    assert "database 'nodata' of " in refused["pgbench"].stderr
    assert "has no pgbench_accounts, pgbench_branches, pgbench_tellers, pgbench_history" in (
        refused["pgbench"].stderr
    )
    assert f"pgrig db generate {lab} --db nodata --scenario pgbench" in refused["pgbench"].stderr
    assert "has no sbtest1: generate the sysbench data first" in refused["sysbench"].stderr
    on_pgbench = refused["sysbench_on_pgbench"].stderr
    assert f"database 'pgrig' of {lab} holds a pgbench dataset of scale" in on_pgbench
    assert "not sysbench data: sysbench:oltp_read_only would read" in on_pgbench
    assert f"pgrig db generate {lab} --db pgrig --scenario sysbench" in on_pgbench
    assert "no host 'nohost'" in refused["host"].stderr
    assert json.loads(pgrig("runs", "list", "--json").stdout) == before  # no row, not "failed"


def _port(env: str) -> int:
    return int(json.loads(pgrig("env", "show", env, "--json").stdout)["port"])
