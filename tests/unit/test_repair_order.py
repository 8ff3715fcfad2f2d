"""env repair rebuilds a damaged disk-limit record before anything that may start the server:
every start refuses a damaged record (and says to run `env repair`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pgrig.provision import repair, run_journal
from pgrig.provision.server import disk_throttle
from pgrig.provision.state.environment import Environment
from pgrig.request.disk_limit import parse


def test_the_record_is_rebuilt_before_a_killed_runs_settings_are_put_back(
    pgrig_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = Environment(name="lab", disk_limit={"wiops": 0})  # damaged: 0 is no limit
    env.dir.mkdir(parents=True)
    env.datadir.mkdir(parents=True)
    (env.datadir / "PG_VERSION").write_text("18\n")
    env.save()
    held = parse("wiops=300")
    monkeypatch.setattr(repair, "_disk_limit_remedy", lambda e: ("damaged: rebuilt", True))
    monkeypatch.setattr(disk_throttle, "limit_of_or_none", lambda e: None)
    monkeypatch.setattr(disk_throttle, "held", lambda e: held)
    monkeypatch.setattr(repair, "_repair_replicas", lambda *a: [])
    monkeypatch.setattr(repair, "_repair_disk_limit", lambda e, remedy: remedy)
    seen: list[Any] = []
    monkeypatch.setattr(
        run_journal, "recover", lambda e: seen.append(Environment.load(e.name).disk_limit) or []
    )
    repair.repair("lab", say=lambda _: None)
    assert held is not None and seen == [held.as_dict()]
