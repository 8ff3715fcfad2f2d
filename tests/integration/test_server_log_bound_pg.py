"""The server log of a run against a real PostgreSQL 15: read whole, kept bounded, cut from the
server's file while the server goes on writing to it.

- a real `pgrig run`: extra.server_log says what the server wrote and what is kept, the kept
  file and the insights account for every plan record, `runs show` says it;
- the run's reader against a real server writing thousands of auto_explain plans, errors and
  a checkpoint, with small limits: the server's file is cut during the "load" (the postmaster's
  O_APPEND writes go on at the new end, nothing lost), the insights count every plan and every
  error, the kept file is bounded and keeps every error.
Ports 21900-21949 (PGRIG_PORT_RANGE).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import servers
from servers import pgrig

pytestmark = pytest.mark.integration
PORTS = "21900-21949"


@pytest.fixture(scope="module")
def lab() -> Iterator[tuple[str, Path]]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PGRIG_PORT_RANGE", PORTS)
        with servers.pgbench_lab("pgrig-server-log-test-") as name:
            yield name, Path(os.environ["PGRIG_HOME"])


def test_a_run_says_what_the_server_wrote_and_what_it_keeps(lab: tuple[str, Path]) -> None:
    name, home = lab
    doc = json.loads(
        pgrig("run", name, "-w", "pgbench:select-only", "-c", "2", "-T", "4", "--json").stdout
    )
    assert doc["status"] == "ok", doc
    log = doc["server_log"]
    assert 0 < log["kept_bytes"] <= log["written_bytes"]
    plans_logged = log["records"]["plan"]
    assert plans_logged > 0
    kept = (home / "artifacts" / doc["artifacts"]["server.log"]).read_text()
    kept_plans = len(re.findall(r"LOG:  duration: [\d.]+ ms  plan:", kept))
    assert kept_plans + log["dropped"].get("plan", 0) == plans_logged
    plans = doc["plans"]
    assert plans["samples"] + sum(plans["skipped"].values()) == plans_logged
    shown = " ".join(pgrig("runs", "show", str(doc["id"])).stdout.split())
    assert "server log" in shown and " written, " in shown and " kept" in shown


def test_the_servers_file_is_cut_while_the_server_writes(
    lab: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    from pgrig.archive.records import RunRecord
    from pgrig.insights import log_excerpt
    from pgrig.insights.log_feed import LogFeed
    from pgrig.load.core import run_files, server_log_follow
    from pgrig.load.core.server_log_follow import RunServerLog
    from pgrig.provision.server import log_file
    from pgrig.provision.state.environment import DEFAULT_DATABASE, Environment

    monkeypatch.setattr(server_log_follow, "FOLLOW_BYTES", 256 * 1024)
    monkeypatch.setattr(server_log_follow, "POLL_S", 0.05)
    monkeypatch.setattr(log_file, "KEEP_BYTES", 64 * 1024)
    monkeypatch.setattr(log_file, "MIN_CUT_BYTES", 64 * 1024)
    monkeypatch.setattr(log_excerpt, "HEAD_BYTES", 32 * 1024)
    monkeypatch.setattr(log_excerpt, "TAIL_BYTES", 32 * 1024)
    monkeypatch.setattr(log_excerpt, "MIDDLE_BYTES", {"errors": 512 * 1024, "other": 64 * 1024})
    env = Environment.load(lab[0])
    feed = LogFeed(lambda: None, None, plans=True)
    log = RunServerLog.open(env, tmp_path, feed)
    assert log is not None
    log.follow()
    largest = 0
    with psycopg.connect(env.conninfo(DEFAULT_DATABASE), autocommit=True) as conn:
        conn.execute("SET auto_explain.log_min_duration = 0")
        conn.execute("SET auto_explain.sample_rate = 1")
        for i in range(3000):
            conn.execute("SELECT abalance FROM pgbench_accounts WHERE aid = %s", (i % 100000 + 1,))
            if i % 6 == 0:
                with pytest.raises(psycopg.errors.DivisionByZero):
                    conn.execute("SELECT 1/0")
            if i % 100 == 0:
                largest = max(largest, env.logfile.stat().st_size)
                # A reader starved of CPU (a busy CI host) may fall behind this tight loop: wait
                # until it has read nearly all (reading only; the cuts are what is tested).
                deadline = time.monotonic() + 10
                while env.logfile.stat().st_size - log.pos > 2 * server_log_follow.FOLLOW_BYTES:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.01)
        conn.execute("CHECKPOINT")
    rec = RunRecord(env_name=lab[0], workload="x", clients=1, threads=1)
    files = run_files.RunFiles(rec, tmp_path)
    log.finish(files, rec)
    assert files.problems == []
    doc = rec.extra["server_log"]
    got = feed.results()
    # every record reached the insights, though the file was cut under the reader
    assert got["plans"]["samples"] == doc["records"]["plan"] == 3000
    assert got["log_digest"]["errors"]["count"] == doc["records"]["error"] == 500
    assert got["log_digest"]["checkpoints"]["count"] >= 1
    assert doc["server_file_cut_bytes"] > 0 and "problems" not in doc, doc
    assert largest < doc["written_bytes"] / 2
    # the kept file: bounded, every error, the plans in between counted as left out
    kept = (tmp_path / "server.log").read_text()
    assert doc["kept_bytes"] == len(kept.encode()) < 700 * 1024 < doc["written_bytes"]
    assert kept.count("ERROR:  division by zero") == 500
    assert "checkpoint starting: immediate force wait" in kept
    kept_plans = len(re.findall(r"LOG:  duration: [\d.]+ ms  plan:", kept))
    assert kept_plans + doc["dropped"]["plan"] == 3000 and kept_plans < 300
    # the server goes on writing at the (new) end of its file
    with (
        psycopg.connect(env.conninfo(DEFAULT_DATABASE), autocommit=True) as conn,
        pytest.raises(psycopg.errors.DivisionByZero),
    ):
        conn.execute("SELECT 1/0 AS after_the_cut")
    tail = env.logfile.read_bytes()[-4096:].decode(errors="replace")
    assert "SELECT 1/0 AS after_the_cut" in tail
