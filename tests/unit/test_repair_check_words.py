"""`env repair --check` changes nothing and says so: "would ..." (issue 30, class 2c), and
what it found that a repair leaves alone (stopped replicas) or undoes (a killed run's
settings and CPU pinning, class 2b)."""

from __future__ import annotations

from pgrig.provision.remote.repair import needs_text
from pgrig.provision.repair import Diagnosis


def test_check_says_what_a_repair_would_do() -> None:
    doc = Diagnosis("lab", env_json="unreadable", replicas=("r2",)).as_dict()
    text = needs_text(doc)
    assert text == "would rebuild env.json (unreadable); would clone replicas again: r2"
    assert "rebuilt" not in text and "cloned again:" not in text
    assert needs_text(doc, done=True) == "env.json rebuilt (unreadable); replicas cloned again: r2"


def test_a_killed_runs_leftovers_are_a_repair_and_stopped_replicas_are_said() -> None:
    dead = ("would undo the settings of an interrupted run (work_mem)",)
    doc = Diagnosis("lab", dead_run=dead, stopped=("r1",)).as_dict()
    assert doc["needed"] is True and doc["dead_run"] == list(dead)
    assert doc["stopped"] == ["r1"]
    text = needs_text(doc)
    assert dead[0] in text
    assert "replica r1 is stopped: `pgrig env start lab` starts it" in text
    quiet = Diagnosis("lab", stopped=("r1",)).as_dict()
    assert quiet["needed"] is False  # a stopped replica is started, not repaired
    assert needs_text(quiet) != "nothing to repair"
