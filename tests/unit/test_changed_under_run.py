"""Issue 43, class 1: a run whose environment was changed under it (`env set --force` while it
ran: its extra["changed_under_run"] events) gets no verdict in any comparison, and its disk
limit says it held at the start only. The recording itself: tests/unit/test_run_guard.py."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from study_fakes import make_record

from pgrig.analysis.compare import compare_runs
from pgrig.load.core import run_steps
from pgrig.provision.state import env_lock
from pgrig.record.documents import forced_after_s
from pgrig.views import disk_limit


def _changed(rec, change: str = "disk limit set to riops=500,wbps=10MB") -> None:  # type: ignore[no-untyped-def]
    rec.extra["changed_under_run"] = [
        {"after_s": 5.2, "command": "env set --force", "change": change}
    ]


def test_comparisons_involving_a_changed_run_give_no_verdict_and_say_why() -> None:
    base = [make_record(tps=1000, seconds=60, seed=i) for i in range(3)]
    cand = [make_record(tps=1500, seconds=60, seed=10 + i) for i in range(3)]
    for i, r in enumerate((*base, *cand)):
        r.id = i + 1
    assert compare_runs(base, cand).verdict == "faster"  # a firm verdict, before the change
    _changed(cand[1])
    c = compare_runs(base, cand)
    assert c.verdict is None and c.lower is None
    assert c.reason == (
        "run 5 (disk limit set to riops=500,wbps=10MB at 5.2 s) was changed while running: "
        "not comparable as is"
    )
    assert c.verdict_text().startswith("no verdict: run 5 (disk limit")
    single = compare_runs([base[0]], [cand[1]])  # single runs: no indicative verdict either
    assert single.verdict is None and "was changed while running" in (single.reason or "")


def test_the_disk_limit_of_a_changed_run_says_it_held_at_the_start_only() -> None:
    rec = make_record(tps=1000)
    rec.disk_limit = {"limit": {"wiops": 300}, "text": "wiops=300", "in_force": True}
    assert disk_limit.of(rec) == "wiops=300 (in force)"
    _changed(rec)
    assert disk_limit.of(rec) == (
        "wiops=300 (in force at the start only; then disk limit set to riops=500,wbps=10MB at "
        "5.2 s (`pgrig env set --force`))"
    )
    _changed(rec, "settings work_mem=8MB")  # not the disk limit: its line unchanged
    assert disk_limit.of(rec) == "wiops=300 (in force)"


def test_a_change_forced_just_before_the_start_is_said_as_during_set_up(
    pgrig_home: Path,
) -> None:
    """Issue 43, pass 3 case 1: `env set --disk-limit ... --force` while the run waited for the
    checkpoint before its load came 4 ms before its start: stored -0.0 s, said '-0 s after it
    started', 'at -0 s' by runs show and compare, and 'its figures mix the configurations'
    although its whole load ran under the new limit."""
    now = datetime.now(UTC)
    env_dir = pgrig_home / "envs" / "lab"
    env_dir.mkdir(parents=True)
    note = {"at": now.timestamp() - 0.004, "command": "env set --force",
            "change": "disk limit set to riops=500,wbps=10MB", "holder": {"pid": 1}}  # fmt: skip
    (env_dir / env_lock.FORCED_FILE).write_text(json.dumps(note) + "\n")
    rec = make_record(tps=1000)
    rec.env_name, rec.started_at = "lab", now
    rec.ended_at = now + timedelta(seconds=5)
    rec.disk_limit = {"limit": {"wiops": 300}, "text": "wiops=300", "in_force": True}
    run_steps.forced_changes(rec, since=now.timestamp() - 10)  # the runner took lab then
    [event] = rec.extra["changed_under_run"]
    assert event["after_s"] == -0.1  # below zero, never -0.0
    [warning] = [w for w in rec.warnings() if w["code"] == "changed_under_run"]
    assert warning["message"].startswith(
        "the environment was changed while this run ran (during its set-up, `pgrig env set "
        "--force`: disk limit set to riops=500,wbps=10MB): its figures are of the "
        "configuration after the change, and its recorded settings"
    )
    said = (
        "wiops=300 (in force when the run read it only; then disk limit set to "
        "riops=500,wbps=10MB during its set-up, under which its load ran (`pgrig env set "
        "--force`))"
    )
    assert disk_limit.of(rec) == said
    rec.id = 1
    other = make_record(tps=1000)
    other.id = 2
    assert compare_runs([rec], [other]).reason == (
        "run 1 (disk limit set to riops=500,wbps=10MB during its set-up) was changed while "
        "running: not comparable as is"
    )
    # records stored -0.0 before: read as set-up too
    rec.extra["changed_under_run"] = [{**event, "after_s": -0.0}]
    assert disk_limit.of(rec) == said
    assert "-0 s" not in (compare_runs([rec], [other]).reason or "")
    # a change during the load is said at its second
    assert forced_after_s(now.timestamp() + 2.04, now.timestamp()) == 2.0


def test_a_run_whose_session_broke_says_what_was_forced_and_what_was_archived(
    pgrig_home: Path,
) -> None:
    """Issue 43, pass 3: `env destroy e3 --yes --force` under a run's set-up ended it with
    'the run's session on e3 failed (...): a run already begun is archived as failed, else
    nothing was archived': neither the cause nor which of the two happened."""
    import psycopg

    from pgrig.load.core import runner
    from pgrig.provision.state.environment import Environment

    env = Environment(name="e3", port=5999)
    env.save()
    lock = env_lock.EnvLock(env.dir, env.name)
    broken = psycopg.OperationalError("server closed the connection unexpectedly")
    since = datetime.now(UTC).timestamp() - 5
    note = {"at": since + 1, "command": "env restart --force", "change": "server restarted",
            "holder": {"pid": 1}}  # fmt: skip
    (env.dir / env_lock.FORCED_FILE).write_text(json.dumps(note) + "\n")
    assert runner._session_failed(env, lock, since, broken) == (
        "the run's session on e3 failed after `pgrig env restart --force` (server restarted) "
        "under it (OperationalError: server closed the connection unexpectedly): nothing was "
        "archived"
    )
    lock.run_id = 7  # begun: the lock names it
    (env.dir / env_lock.FORCED_FILE).unlink()
    (env.dir / "env.json").unlink()  # destroyed, its notes with it
    assert runner._session_failed(env, lock, since, broken) == (
        "the run's session on e3 failed after e3 was destroyed under it (OperationalError: "
        "server closed the connection unexpectedly): run 7 is archived as failed"
    )
