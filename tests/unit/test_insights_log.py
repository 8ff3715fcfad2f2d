"""The server log as records, and its digest, on logs captured from PostgreSQL 15 and 18.

Fixtures (tests/fixtures/insights/) are real server logs of pgrig runs (plan records of
auto_explain partly left out to keep them small): a pgbench run with max_wal_size = 32MB on 15
and on 18, a TPC-C run with autovacuum, and a session provoking a deadlock, a lock wait, temp
files and an error. Expected figures are counted from the raw lines in the tests themselves.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pgrig.insights import server_log
from pgrig.insights.log_digest import LogDigest, mask_message

LOGS = Path(__file__).parents[1] / "fixtures" / "insights"
MAIN = re.compile(r"^\S+ \S+ \S+ \[\d+\] (LOG|WARNING|ERROR|FATAL|PANIC):  ")


def _lines(name: str) -> list[str]:
    return (LOGS / name).read_text().splitlines()


def _digest(name: str, window_start: float | None = None) -> dict:
    digest = LogDigest(window_start)
    for rec in server_log.records(LOGS / name, "UTC"):
        digest.add(rec)
    return digest.result()


@pytest.mark.parametrize("name", sorted(p.name for p in LOGS.glob("*.log")))
def test_one_record_per_main_line(name: str) -> None:
    recs = list(server_log.records(LOGS / name, "UTC"))
    assert len(recs) == sum(1 for line in _lines(name) if MAIN.match(line))
    assert all(r.pid is not None and r.ts is not None for r in recs)


def test_time_pid_parts_and_continuation_lines() -> None:
    recs = list(server_log.records(LOGS / "pg15_locks_temp_errors.log", "UTC"))
    deadlock = next(r for r in recs if r.message == "deadlock detected")
    assert deadlock.severity == "ERROR" and deadlock.pid == 16085
    assert deadlock.ts == datetime(2026, 11, 23, 4, 3, 2, 974000, tzinfo=UTC).timestamp()
    # DETAIL spans three continuation lines (tab-indented in the file)
    assert deadlock.parts["DETAIL"].count("\n") == 3
    assert deadlock.parts["HINT"] == "See server log for query details."
    plan = next(
        r
        for r in server_log.records(LOGS / "pg15_tpcc_standard_stock_level.log", "UTC")
        if r.message.startswith("duration:")
    )
    assert plan.message.splitlines()[1] == "{" and plan.message.endswith("}")
    assert "tpcc_stock_level" in plan.parts["CONTEXT"]


def test_other_lines_and_oversized_records(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(
        "waiting for server to start.... done\n"
        "2025-01-02 03:04:05 CET [7] LOG:  checkpoint starting: time\n"
        "\tcontinued\n"
        "pg_ctl: another line\n"
        "\torphan continuation\n"
        "2025-01-02 03:04:06.5 +02 [8] LOG:  " + "x" * 50 + "\n"
        "\t" + "y" * 100 + "\n"
    )
    recs = list(server_log.records(log, "Europe/Paris", max_record_bytes=80))
    assert [r.pid for r in recs] == [7, 8]
    assert recs[0].message == "checkpoint starting: time\ncontinued"
    assert recs[0].ts == datetime(2025, 1, 2, 2, 4, 5, tzinfo=UTC).timestamp()  # CET = +01
    assert recs[1].ts == datetime(2025, 1, 2, 1, 4, 6, 500000, tzinfo=UTC).timestamp()
    assert recs[1].truncated and "y" not in recs[1].message


def test_any_prefix_still_parses(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text('app=psql,db=x LOG:  temporary file: path "t", size 10\n')
    (rec,) = server_log.records(log)
    assert rec.severity == "LOG" and rec.ts is None and rec.pid is None
    assert _digest_of(log)["temp_files"]["bytes"] == 10


def _digest_of(path: Path) -> dict:
    digest = LogDigest(None)
    for rec in server_log.records(path):
        digest.add(rec)
    return digest.result()


@pytest.mark.parametrize("name", ["pg15_max_wal_size_32mb.log", "pg18_tpcb_max_wal_size_32mb.log"])
def test_checkpoint_storm(name: str) -> None:
    lines = _lines(name)
    warnings = sum("checkpoints are occurring too frequently" in line for line in lines)
    by_wal = sum(line.endswith("checkpoint starting: wal") for line in lines)
    completed = [re.search(r"wrote (\d+) buffers", line) for line in lines]
    buffers = sum(int(m.group(1)) for m in completed if m)
    d = _digest(name)
    assert warnings > 0 and d["checkpoint_warnings"]["count"] == warnings
    assert d["checkpoints"]["count"] == by_wal == d["checkpoints"]["requested"]
    assert d["checkpoints"]["by_reason"] == {"wal": by_wal}
    assert d["checkpoints"]["timed"] == 0
    assert d["checkpoints"]["buffers_written"] == buffers
    assert d["checkpoint_warnings"]["examples"][0]["text"].startswith("checkpoints are occurring")
    assert d["errors"]["count"] == 0


def test_reasons_of_checkpoints(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(
        "2025-01-01 00:00:00 UTC [1] LOG:  checkpoint starting: time\n"
        "2025-01-01 00:00:01 UTC [1] LOG:  checkpoint starting: immediate force wait\n"
        "2025-01-01 00:00:02 UTC [1] LOG:  checkpoint starting: fast force wait\n"  # 19+
        "2025-01-01 00:00:03 UTC [1] LOG:  checkpoint starting: shutdown immediate\n"
        "2025-01-01 00:00:04 UTC [1] LOG:  checkpoint starting: wal time\n"
    )
    ck = _digest_of(log)["checkpoints"]
    assert (ck["count"], ck["requested"], ck["timed"]) == (5, 3, 1)
    assert ck["by_reason"]["force"] == 2 and ck["by_reason"]["time"] == 2


def test_autovacuum_per_table() -> None:
    name = "pg15_tpcc_hammerdb.log"
    pairs = [
        m.groups()
        for line in _lines(name)
        if (m := re.search(r'automatic (vacuum|analyze) of table "[^.]+\.([^"]+)"', line))
    ]
    d = _digest(name)["autovacuum"]
    assert d["vacuum"] == sum(k == "vacuum" for k, _ in pairs) > 0
    assert d["analyze"] == sum(k == "analyze" for k, _ in pairs) > 0
    assert d["tables"]["public.district"] == {
        k: sum(1 for kind, t in pairs if t == "public.district" and kind == k)
        for k in ("vacuum", "analyze")
    }


def test_locks_deadlocks_temp_files_errors() -> None:
    start = datetime(2026, 11, 23, 4, 3, 0, tzinfo=UTC).timestamp()
    d = _digest("pg15_locks_temp_errors.log", window_start=start)
    assert d["deadlocks"]["count"] == 1
    assert "Process 16085 waits for ShareLock" in d["deadlocks"]["examples"][0]["text"]
    assert d["lock_waits"]["count"] == 1 and d["lock_waits"]["acquired"] == 1
    assert d["lock_waits"]["by_lock"] == {"ShareLock on transaction": 1}
    assert d["lock_waits"]["examples"][0]["t"] == pytest.approx(6.300)
    assert d["temp_files"]["count"] == 2
    assert d["temp_files"]["bytes"] == 2457600 + 2800000
    assert d["temp_files"]["max_bytes"] == 2800000
    assert d["errors"]["count"] == 2 and d["errors"]["by_severity"] == {"ERROR": 2}
    assert {m["message"] for m in d["errors"]["messages"]} == {
        "deadlock detected",
        "division by zero",
    }
    assert d["interval"]["first_t"] == pytest.approx(2.974)


def test_mask_message() -> None:
    assert mask_message('relation "t1" does not exist at 12 and -3.5') == (
        'relation "t1" does not exist at N and N'
    )
    assert mask_message("value 'abc''d' too long\nDETAIL") == "value '?' too long"


def test_logging_collector_files_grown_since(tmp_path: Path) -> None:
    (tmp_path / "postgresql-1.log").write_text("old\n")
    (tmp_path / "postgresql-1.json").write_text("{}\n")  # jsonlog: not the text log
    before = server_log.text_log_sizes(tmp_path)
    assert before == {"postgresql-1.log": 4}
    with open(tmp_path / "postgresql-1.log", "a") as f:
        f.write("2025-01-01 00:00:00 UTC [1] LOG:  checkpoint starting: wal\n")
    (tmp_path / "postgresql-2.log").write_text("2025-01-01 00:00:09 UTC [1] LOG:  rotated\n")
    grown = server_log.grown_since(tmp_path, before)
    assert [(p.name, off) for p, off in grown] == [("postgresql-1.log", 4), ("postgresql-2.log", 0)]
    recs = [r for p, off in grown for r in server_log.records(p, offset=off)]
    assert [r.message for r in recs] == ["checkpoint starting: wal", "rotated"]
    assert server_log.text_log_sizes(tmp_path / "missing") == {}
