"""The files an environment keeps of what runs did to it are read as their declared documents
(record/doc_read.py), once, where they are read: the run journal (provision/run_journal.py)
and the changes forced under a run (provision/state/env_lock.py forced.jsonl). An entry of
another shape than pgrig writes (a damaged or hand-edited file) reads as missing."""

from __future__ import annotations

import json
from pathlib import Path

from pgrig.provision import run_journal
from pgrig.provision.state import env_lock
from pgrig.provision.state.environment import Environment


def _env(name: str = "lab") -> Environment:
    env = Environment(name=name, port=5999)
    env.dir.mkdir(parents=True)
    return env


def test_a_journal_entry_of_another_shape_reads_as_missing(pgrig_home: Path) -> None:
    env = _env()
    (env.dir / run_journal.JOURNAL_FILE).write_text(json.dumps({
        "conf": {"names": ["work_mem"]},
        "insights": {"names": "auto_explain.sample_rate"},  # not a list
        "pinning": {"roots": [{"pid": "12", "create_time": 1.0, "mask": [0]}]},
    }))  # fmt: skip
    assert run_journal.read(env) == {"conf": {"names": ["work_mem"]}}


def test_forced_notes_of_another_shape_are_left_out(pgrig_home: Path) -> None:
    env = _env()
    lines = [
        {"at": 20.0, "command": "env set --force", "change": "settings work_mem=8MB"},
        {"at": "15", "command": "env restart --force", "change": "server restarted"},
        {"at": 10, "command": 7, "change": "disk limit set to riops=500"},
        ["not", "a", "note"],
    ]
    (env.dir / env_lock.FORCED_FILE).write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert env_lock.forced_between(env.dir, 0, 100) == [
        {"at": 10, "change": "disk limit set to riops=500"},
        {"at": 20.0, "command": "env set --force", "change": "settings work_mem=8MB"},
    ]
