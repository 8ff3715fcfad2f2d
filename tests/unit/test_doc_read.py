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
