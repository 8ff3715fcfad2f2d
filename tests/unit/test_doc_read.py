"""A run's documents validated once where they are read back (record/doc_read.py): real runs
read unchanged, a key of the wrong type reads as missing, keys not declared are kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pgrig.record.doc_read import read_document
from pgrig.record.documents import DiskLimitDoc, HostDoc, InsightsDoc, RunExtra

RUNS = Path(__file__).parents[1] / "fixtures" / "runs"
FIXTURES = sorted(RUNS.glob("*.json"))


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_real_runs_read_unchanged(path: Path) -> None:
    doc = json.loads(path.read_text())
    for name, declared in (("extra", RunExtra), ("host", HostDoc), ("insights", InsightsDoc)):
        if name in doc:
            read = read_document(declared, doc[name])
            assert json.dumps(read) == json.dumps(doc[name]), name


def test_a_key_of_the_wrong_type_reads_as_missing() -> None:
    stored = {
        "warnings": [{"code": "busy_host", "message": "busy"}],
        "window": {"start_us": "soon"},  # an int declared: the whole key goes
        "txlog": {"lines": True},  # JSON's true is no count
        "pgrig_version": 3,
        "someday": {"any": ["thing"]},  # not declared (a newer pgrig's): kept
    }
    read = read_document(RunExtra, stored)
    assert read == {
        "warnings": [{"code": "busy_host", "message": "busy"}],
        "someday": {"any": ["thing"]},
    }


def test_values_are_kept_as_stored_not_converted() -> None:
    read = read_document(DiskLimitDoc, {"limit": {"riops": 500}, "in_force": None})
    stored = {"stability": {"cv": 1, "mean": 2}}
    assert json.dumps(read_document(RunExtra, stored)) == json.dumps(stored)  # 1 stays 1, not 1.0
    assert read == {"limit": {"riops": 500}, "in_force": None}


@pytest.mark.parametrize("raw", [None, [], "text", 3])
def test_what_is_no_object_reads_as_an_empty_document(raw: object) -> None:
    assert read_document(RunExtra, raw) == {}


# --- the insights parts: what the collectors write reads back whole ---------------------------

LOGS = Path(__file__).parents[1] / "fixtures" / "insights"


@pytest.mark.parametrize("name", sorted(p.name for p in LOGS.glob("*.log")))
def test_insights_of_real_server_logs_read_unchanged(name: str) -> None:
    """Plans and the log digest of real server logs (PostgreSQL 15 and 18) fit their declared
    documents at every depth: nothing is left out when the run is read back."""
    from pgrig.insights import server_log
    from pgrig.insights.log_digest import LogDigest
    from pgrig.insights.plans import PlanBook

    book, digest = PlanBook(window_start=None), LogDigest(None)
    for rec in server_log.records(LOGS / name, "UTC"):
        if not book.add(rec):
            digest.add(rec)
    doc = InsightsDoc(plans=book.result(), log_digest=digest.result())
    stored = json.loads(json.dumps(doc))  # as the archive gives it back
    assert read_document(InsightsDoc, stored) == stored
    assert stored["plans"]["samples"] + stored["log_digest"]["records"] > 0


def test_statements_and_waits_read_unchanged() -> None:
    from pgrig.insights import statements, waits

    ext = statements.Extension(
        "public", "1.11", {name: cands[0] for name, cands in statements.METRICS}, True, True
    )
    counters = {name: 3.0 for name, _ in statements.METRICS} | {"calls": 2.0, "total_ms": 5.0}
    doc = InsightsDoc(
        statements=statements.summarize(ext, {(1, True, 7): counters}, {7: "SELECT 1"}, 10.0),
        waits=waits.profile(
            {"t": [1.0, 2.0], "wait.CPU": [2.0, 1.0], "wait.IO:WALSync": [1.0, None]}, 0.0, 3.0
        ),
    )
    stored = json.loads(json.dumps(doc))
    assert read_document(InsightsDoc, stored) == stored
    assert stored["statements"]["top"][0]["wal_buffers_full"] == 3
    assert [e["event"] for e in stored["waits"]["events"]] == ["CPU", "IO:WALSync"]


def test_an_insights_part_of_the_wrong_shape_reads_as_missing() -> None:
    stored = {
        "statements": {"collected": True, "top": [{"calls": "many"}]},
        "waits": {"collected": False, "reason": "not collected: no samples"},
    }
    assert read_document(InsightsDoc, stored) == {"waits": stored["waits"]}


def test_a_study_extra_is_read_once_without_its_lease() -> None:
    from pgrig.archive.rows import study_from_row

    extra = {
        "lease": {"host": "h", "pid": 1},
        "objective": "tps",
        "trials": [{"number": 0, "state": "complete", "value": 812, "run_id": 3,
                    "settings": {"work_mem": "8MB"}, "reason": None}],
        "best": None,
        "threshold": "2%",  # a float declared: left out
        "versions": [{"label": "18.1", "ref": {"any": "json"}}],
    }  # fmt: skip
    row = {"id": 1, "name": "s", "kind": "tune", "spec": "", "status": "done",
           "created_at": None, "extra": json.dumps(extra)}  # fmt: skip
    read = study_from_row(row)  # type: ignore[arg-type]
    assert read.extra == {k: v for k, v in extra.items() if k not in ("lease", "threshold")}


def test_a_round_trip_measurement_reads_whole() -> None:
    """What the load agent measures (its own code, run here) fits RttDoc: nothing is lost."""
    import socket

    from pgrig.load.remote.remote_agent import measure_rtt
    from pgrig.record.documents import RttDoc

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)  # the kernel answers the connects: nothing to accept
        port = server.getsockname()[1]
        measured = json.loads(json.dumps(measure_rtt("127.0.0.1", port, 3, timeout=2.0)))
    assert len(measured["samples_us"]) == 3
    assert read_document(RttDoc, measured) == measured
    failed = json.loads(json.dumps(measure_rtt("/nonexistent-dir", 5432, 2, timeout=0.1)))
    assert failed.get("error") and read_document(RttDoc, failed) == failed


def test_every_declared_document_is_validated_when_read() -> None:
    """Each TypedDict of record/documents.py is checked by the readers (record/doc_read.py)
    as part of a document the archive, a spool file or the load agent's client reads, or is
    the base of one: none is declared for mypy alone."""
    import typing

    from typing_extensions import is_typeddict

    from pgrig.record import documents as d

    read_roots = [d.RunExtra, d.HostDoc, d.InsightsDoc, d.StudyExtra, d.SettingDoc,
                  d.DiskLimitDoc, d.RttDoc]  # fmt: skip
    seen: set[object] = set()

    def walk(t: object) -> None:
        if is_typeddict(t) and t not in seen:
            seen.add(t)
            for hint in typing.get_type_hints(t).values():
                walk(hint)
        for arg in typing.get_args(t):
            walk(arg)

    for root in read_roots:
        walk(root)
    declared = [getattr(d, n) for n in d.__all__ if is_typeddict(getattr(d, n))]
    bases = {b for t in seen for b in getattr(t, "__orig_bases__", ()) if is_typeddict(b)}
    assert [t.__name__ for t in declared if t not in seen and t not in bases] == []
