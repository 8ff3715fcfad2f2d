"""Insights in `pgrig runs show` (why section, JSON keys) and `pgrig runs compare` (plan changes),
over an SQLite archive holding insights built from captured PostgreSQL 15 logs."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pgrig.archive.records import RunRecord
from pgrig.archive.store import Archive
from pgrig.cli.runs import app
from pgrig.insights import log_digest, plans, server_log, waits

LOGS = Path(__file__).parents[1] / "fixtures" / "insights"
runner = CliRunner()


def _insights() -> dict:
    start = datetime(2026, 11, 23, 3, 59, 50, tzinfo=UTC).timestamp()
    book, digest = plans.PlanBook(start), log_digest.LogDigest(start)
    for name in ("pg15_tpcc_hammerdb.log", "pg15_max_wal_size_32mb.log"):
        for rec in server_log.records(LOGS / name, "UTC"):
            if not book.add(rec):
                digest.add(rec)
    top = {
        "queryid": "42",
        "toplevel": True,
        "text": "SELECT [red]boom[/red] FROM t",  # markup in user text is printed as is
        "calls": 10,
        "total_ms": 20.0,
        "mean_ms": 2.0,
        "share_pct": 100.0,
    }
    return {
        "statements": {
            "collected": True,
            "statements": 1,
            "calls": 10,
            "total_ms": 20.0,
            "window_s": 5.0,
            "top": [top],
        },
        "plans": book.result(),
        "log_digest": digest.result(),
        "waits": waits.profile({"t": [1.0], "wait.CPU": [2], "wait.IO:WALSync": [2]}, 0, 2),
        "notes": [],
    }


@pytest.fixture
def url(pgrig_home: Path) -> str:
    url = f"sqlite:///{pgrig_home / 'insights.sqlite'}"
    a_doc = _insights()
    b_doc = copy.deepcopy(a_doc)
    (st,) = [s for s in b_doc["plans"]["statements"] if s["text"].startswith("UPDATE district")]
    st["plans"][1]["samples"] = 10  # B: the index scan dominates
    with Archive(url) as arch:
        for doc in (a_doc, b_doc, {}):
            arch.finish_run(
                RunRecord(
                    env_name="e", workload="tpcc", clients=1, threads=1, status="ok", insights=doc
                )
            )
    return url


def _run(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_show_json_has_the_four_parts(url: str) -> None:
    doc = json.loads(_run("show", "1", "--archive", url, "--json"))
    stored = _insights()
    for part in ("statements", "plans", "log_digest", "waits"):
        assert doc[part] == json.loads(json.dumps(stored[part]))
    assert doc["log_digest"]["checkpoint_warnings"]["count"] == 3
    old = json.loads(_run("show", "3", "--archive", url, "--json"))
    assert old["plans"] == {
        "collected": False,
        "reason": "not collected: the run has no insights (archived before pgrig collected them)",
    }


def test_show_prints_why(url: str) -> None:
    out = " ".join(_run("show", "1", "--archive", url).split())
    assert "why" in out and "SELECT [red]boom[/red] FROM t" in out
    assert "Index Scan using order_line_pkey on order_line: estimated" in out
    assert "'checkpoints are occurring too frequently' 3 times" in out
    assert "plan switched UPDATE district" in out
    # one second of 4 states: Wilson bounds of 2 in 4
    assert "CPU 50% [15, 85], IO:WALSync 50% [15, 85] (of 4 samples" in out


def test_compare_shows_plan_changes(url: str) -> None:
    doc = json.loads(_run("compare", "1", "2", "--archive", url, "--json"))
    (change,) = doc["plan_changes"]
    assert change["a"]["outline"] == ["Update on district", "  Seq Scan on district"]
    assert change["b"]["outline"][1] == "  Index Scan using district_pkey on district"
    out = _run("compare", "1", "2", "--archive", url)
    assert "plan changes (1 statements)" in out and "Seq Scan on district" in out
    assert json.loads(_run("compare", "1", "3", "--archive", url, "--json"))["plan_changes"] == []
