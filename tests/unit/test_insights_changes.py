"""what_changed: statement deltas, plan changes, log and wait differences, host differences,
from hand-made insights whose expected figures are worked out by hand below."""

from __future__ import annotations

from typing import Any

import pytest

from pgrig.archive.records import RunRecord
from pgrig.insights.changes import tables, what_changed
from pgrig.table import Table

SELECT = "SELECT abalance FROM pgbench_accounts WHERE aid = $1"
UPDATE = "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2"


def st(text: str, calls: int, total_ms: float, read: int = 0, temp: int = 0, top=True) -> dict:
    return {
        "text": text,
        "toplevel": top,
        "calls": calls,
        "total_ms": total_ms,
        "mean_ms": total_ms / calls,
        "shared_blks_read": read,
        "temp_blks_written": temp,
    }


def digest(ck_warn=0, requested=0, timed=0, vacuum=0, analyze=0, errors=0, temp=0) -> dict:
    return {
        "collected": True,
        "checkpoint_warnings": {"count": ck_warn},
        "checkpoints": {"requested": requested, "timed": timed},
        "autovacuum": {"vacuum": vacuum, "analyze": analyze},
        "errors": {"count": errors},
        "deadlocks": {"count": 0},
        "lock_waits": {"count": 0},
        "temp_files": {"count": temp, "bytes": temp * 2**20},
    }


def waits(active: int, **seen: int) -> dict:
    return {
        "collected": True,
        "active_seen": active,
        "events": [{"event": k.replace("_", ":"), "seen": v} for k, v in seen.items()],
    }


def plans(outline: list[str], h: str) -> dict:
    plan = {"hash": h, "samples": 5, "mean_ms": 0.1, "outline": outline, "misestimates": []}
    statement = {
        "fingerprint": "f1",
        "text": "SELECT abalance FROM pgbench_accounts WHERE aid = ?",
        "function": None,
        "plans": [plan],
    }
    return {"collected": True, "statements": [statement]}


def run(statements: list[dict], log: dict, w: dict, p: dict | None = None, **host) -> RunRecord:
    total = sum(s["total_ms"] for s in statements)
    insights = {
        "statements": {
            "collected": True,
            "top": statements,
            "total_ms": total,
            "calls": sum(s["calls"] for s in statements),
        },
        "log_digest": log,
        "waits": w,
        "plans": p or {"collected": False, "reason": "off"},
    }
    checks = [{"name": k, "value": v, "status": "ok"} for k, v in host.items()]
    return RunRecord(
        env_name="e",
        workload="w",
        clients=1,
        threads=1,
        status="ok",
        insights=insights,
        host={"checks": checks},
    )


INDEX = ["Index Scan using pgbench_accounts_pkey on pgbench_accounts"]
SEQ = ["Seq Scan on pgbench_accounts"]


def test_single_runs() -> None:
    a = run(
        [st(SELECT, 1000, 50.0, read=10), st(UPDATE, 1000, 200.0)],
        digest(timed=1),
        waits(100, CPU=80, IO_DataFileRead=20),
        plans(INDEX, "aaa"),
        governor="performance",
    )
    b = run(
        [st(SELECT, 400, 4000.0, read=9000, temp=3), st(UPDATE, 400, 120.0)],
        digest(ck_warn=2, requested=3, timed=1, vacuum=1),
        waits(200, CPU=50, IO_DataFileRead=150),
        plans(SEQ, "bbb"),
        governor="powersave",
    )
    doc = what_changed([a], [b])
    sel, upd = doc["statements"]["top"]  # ordered by |change in total time|: 3950 > 80
    assert sel["text"] == SELECT and sel["total_ms_change"] == pytest.approx(3950.0)
    assert sel["a"]["mean_ms"] == pytest.approx(0.05) and sel["b"]["mean_ms"] == pytest.approx(10.0)
    assert sel["mean_ratio"] == pytest.approx(200.0)  # 10 ms / 0.05 ms
    assert (sel["a"]["shared_blks_read"], sel["b"]["shared_blks_read"]) == (10, 9000)
    assert sel["b"]["temp_blks_written"] == 3
    assert upd["total_ms_change"] == pytest.approx(-80.0)
    assert upd["mean_ratio"] == pytest.approx((120 / 400) / (200 / 1000))  # 0.3 / 0.2
    assert doc["statements"]["total_ms"] == {"a": 250.0, "b": 4120.0}

    (change,) = doc["plan_changes"]
    assert change["a"]["outline"] == INDEX and change["b"]["outline"] == SEQ

    differing = {c["key"]: (c["a"], c["b"]) for c in doc["log"]["counts"] if c["differs"]}
    assert differing == {
        "checkpoint_warnings": (0, 2),
        "checkpoints_requested": (0, 3),
        "autovacuum": (0, 1),
    }

    by_event = {e["event"]: e for e in doc["waits"]["events"]}
    assert by_event["IO:DataFileRead"]["a_pct"] == pytest.approx(20.0)  # 20 of 100
    assert by_event["IO:DataFileRead"]["b_pct"] == pytest.approx(75.0)  # 150 of 200
    assert by_event["CPU"]["change_pp"] == pytest.approx(25.0 - 80.0)
    assert doc["host"] == ["governor: A performance, B powersave"]

    title_rows = {t.title: _cells(t) for t in tables(doc)}
    assert title_rows["Statements (pg_stat_statements, per run)"][0][:7] == [
        SELECT,
        "50.0",
        "4,000.0",
        "+3,950.0",
        "0.050",
        "10.000",
        "x200.000",
    ]
    assert title_rows["Plan changes"][0][1][1:] == INDEX
    assert ["'checkpoints are occurring too frequently'", "0", "2"] in title_rows["Server log"]
    assert title_rows["Wait profile (share of active time)"] == [  # equal changes: by name
        ["CPU", "80%", "25%", "-55.0"],  # documents without effective sizes: no bounds
        ["IO:DataFileRead", "20%", "75%", "+55.0"],
    ]


def _cells(t: Table) -> list[list[Any]]:
    """A table's rows as text, a "code" cell (a plan's outline) as its lines."""
    return [[c.lines if c.style == "code" else c.text for c in row] for row in t.rows]


def test_groups_are_per_run_means_and_missing_statements_are_not_zero() -> None:
    a1 = run([st(SELECT, 100, 10.0), st(UPDATE, 100, 30.0)], digest(requested=1), waits(10, CPU=10))
    a2 = run([st(SELECT, 300, 20.0)], digest(requested=2), waits(30, CPU=15, LWLock_WALWrite=15))
    b = run([st(SELECT, 200, 15.0)], digest(requested=1), waits(10, CPU=10))
    doc = what_changed([a1, a2], [b])
    by_text = {r["text"]: r for r in doc["statements"]["top"]}
    sel = by_text[SELECT]
    assert sel["a"]["calls"] == 200 and sel["a"]["total_ms"] == 15.0  # (100 + 300) / 2, (10+20)/2
    assert sel["a"]["mean_ms"] == pytest.approx(15.0 / 200)
    assert sel["total_ms_change"] == 0.0 and sel["mean_ratio"] == pytest.approx(1.0)
    upd = by_text[UPDATE]  # in one of A's two runs' top lists, not in B's
    assert upd["b"] is None and upd["total_ms_change"] is None and upd["a"]["total_ms"] == 15.0
    assert doc["statements"]["top"][0]["text"] == UPDATE  # 15 ms seen on one side > 0 change
    requested = next(c for c in doc["log"]["counts"] if c["key"] == "checkpoints_requested")
    assert (requested["a"], requested["b"]) == (1.5, 1)
    cpu = next(e for e in doc["waits"]["events"] if e["event"] == "CPU")
    assert cpu["a_pct"] == pytest.approx(100 * 25 / 40)  # (10 + 15) of (10 + 30) seen
    row = next(r for r in _cells(tables(doc)[0]) if r[0] == UPDATE)
    assert row[2] == "-" and row[3] == "-"


def test_parts_not_collected_say_why() -> None:
    a = RunRecord(env_name="e", workload="w", clients=1, threads=1, insights={})
    b = run([st(SELECT, 1, 1.0)], digest(), waits(0))
    doc = what_changed([a], [b])
    for part in ("statements", "log", "waits"):
        assert not doc[part]["collected"]
        assert doc[part]["reason"].startswith("A: not collected: the run has no insights")
    assert doc["plan_changes"] == [] and doc["host"] == []
    notes = {t.title: t.note for t in tables(doc)}
    assert notes["Server log"] == doc["log"]["reason"]
    assert notes["Host differences"] == "None recorded: the same host state in A and B."


def test_evidence_of_a_group_is_per_run() -> None:
    from pgrig.insights.changes import evidence

    seq = plans(SEQ, "bbb")  # 5 samples of one seq scan
    idx = plans(
        ["Nested Loop", "  Seq Scan on a", "  SubPlan 1: Index Only Scan using i on b"], "c"
    )
    r1 = run([], digest(ck_warn=1, requested=3, vacuum=1), waits(10, CPU=2, IO_DataFileRead=8), seq)
    r2 = run([], digest(requested=1, analyze=2), waits(30, CPU=20, IO_DataFileRead=10), idx)
    assert evidence([r1, r2]) == [
        "checkpoints requested 2 (0.5 'too frequently')",  # (3 + 1) / 2, (1 + 0) / 2
        "autovacuum 1.5",  # (1 + 0 + 0 + 2) / 2
        "plan scans seq 5 / index 2.5",  # (5 + 5) / 2 seq, (0 + 5) / 2 index
        "top wait CPU 55% of 40 samples",  # (2 + 20) of (10 + 30)
    ]
    assert evidence([RunRecord(env_name="e", workload="w", clients=1, threads=1)]) == []
