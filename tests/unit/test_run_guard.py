"""The environment's run lock, the run journal and its undo, the live-state checks, and the
process rules (SIGTERM as Ctrl-C, pgbench dying with pgrig): provision/env_lock.py,
provision/run_journal.py, provision/live_state.py, load/core/guard.py, load/engines/process.py."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import cast

import psutil
import pytest

from pgrig.errors import PgrigError, Terminated
from pgrig.load.core import guard
from pgrig.provision import live_state, run_journal
from pgrig.provision.server import affinity
from pgrig.provision.state import env_lock
from pgrig.provision.state.env_lock import EnvBusy, EnvLock, LockHolder
from pgrig.provision.state.environment import Environment

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _env(home: Path, name: str = "lab") -> Environment:
    env = Environment(name=name, port=5999)
    env.dir.mkdir(parents=True)
    return env


def _python(code: str) -> subprocess.Popen[str]:
    """A child python running `code` (with this checkout's pgrig), prints "ready" when set."""
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
    )


def _hold_lock(env: Environment, run_id: int | None) -> subprocess.Popen[str]:
    child = _python(f"""
        import time
        from pathlib import Path
        from pgrig.provision.state.env_lock import EnvLock
        lock = EnvLock(Path({str(env.dir)!r}), {env.name!r}).acquire()
        lock.describe({run_id!r})
        print("ready", flush=True)
        time.sleep(60)
    """)
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    return child


# --- the run lock ------------------------------------------------------------------------------


def test_second_run_is_refused_naming_the_running_run(pgrig_home: Path) -> None:
    env = _env(pgrig_home)
    child = _hold_lock(env, 42)
    try:
        with pytest.raises(env_lock.EnvBusy) as busy:
            env_lock.EnvLock(env.dir, env.name).acquire()
        message = str(busy.value)
        assert "run 42 is in progress" in message and f"pid {child.pid}" in message
        assert "\n" not in message
        assert env_lock.holder(env.dir) == {"pid": child.pid, "run_id": 42, "what": "run"}
        with pytest.raises(env_lock.EnvBusy, match=r"env set refused .*--force"):
            env_lock.refuse_if_busy(env.dir, env.name, "env set")
        env_lock.refuse_if_busy(env.dir, env.name, "env set", force=True)  # --force: allowed
    finally:
        child.kill()
        child.wait()


def test_the_lock_dies_with_its_holder_even_on_kill_9(pgrig_home: Path) -> None:
    env = _env(pgrig_home)
    child = _hold_lock(env, 7)
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert env_lock.holder(env.dir) is None
    with env_lock.EnvLock(env.dir, env.name) as lock:
        lock.describe(8)  # a new open file: even the holder's own process sees it busy
        assert env_lock.holder(env.dir) == {"pid": os.getpid(), "run_id": 8, "what": "run"}
    assert env_lock.holder(env.dir) is None


def test_holder_creates_no_file(pgrig_home: Path) -> None:
    env = _env(pgrig_home)
    assert env_lock.holder(env.dir) is None
    assert list(env.dir.iterdir()) == []


def test_a_command_holding_the_lock_is_named(pgrig_home: Path) -> None:
    env = _env(pgrig_home)
    child = _python(f"""
        import time
        from pathlib import Path
        from pgrig.provision.state.env_lock import EnvLock
        EnvLock(Path({str(env.dir)!r}), "lab").acquire("db generate")
        print("ready", flush=True)
        time.sleep(60)
    """)
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    try:
        with pytest.raises(env_lock.EnvBusy, match="`pgrig db generate` is in progress"):
            env_lock.EnvLock(env.dir, env.name).acquire()
    finally:
        child.kill()
        child.wait()


# --- the journal ---------------------------------------------------------------------------------


def test_journal_entries_come_and_go(pgrig_home: Path) -> None:
    env = _env(pgrig_home)
    run_journal.note_conf(env, ["work_mem"])
    run_journal.note_conf(env, ["a", "work_mem"])
    run_journal.note_conf(env, ["auto_explain.sample_rate"], run_journal.INSIGHTS)
    doc = run_journal.read(env)
    assert doc[run_journal.CONF] == {"names": ["a", "work_mem"]}
    run_journal.done(env, run_journal.CONF)
    assert list(run_journal.read(env)) == [run_journal.INSIGHTS]
    run_journal.done(env, run_journal.INSIGHTS)
    assert not (env.dir / run_journal.JOURNAL_FILE).exists()
    run_journal.done(env, run_journal.CONF)  # nothing noted: nothing created
    assert list(env.dir.iterdir()) == []


def test_recover_puts_a_killed_runs_pinning_back(pgrig_home: Path) -> None:
    env = _env(pgrig_home)
    cpus = sorted(os.sched_getaffinity(0))
    victim = subprocess.Popen(["sleep", "60"])
    try:
        run_journal.note_pinning(env, [victim.pid])
        os.sched_setaffinity(victim.pid, {cpus[0]})  # what the dead run did
        assert run_journal.recover(env) == [
            f"CPU affinity of pid {victim.pid} and its children put back"
        ]
        assert os.sched_getaffinity(victim.pid) == set(cpus)
        assert not (env.dir / run_journal.JOURNAL_FILE).exists()
        assert run_journal.recover(env) == []
    finally:
        victim.kill()
        victim.wait()


def test_recover_leaves_a_live_runs_changes_alone(pgrig_home: Path) -> None:
    env = _env(pgrig_home)
    victim = subprocess.Popen(["sleep", "60"])
    child = _hold_lock(env, 3)
    try:
        run_journal.note_pinning(env, [victim.pid])
        assert run_journal.recover(env) == []  # run 3 is alive: its pinning is its own
        assert run_journal.PINNING in run_journal.read(env)
    finally:
        child.kill()
        child.wait()
        victim.kill()
        victim.wait()


def test_recover_skips_a_reused_pid(pgrig_home: Path) -> None:
    env = _env(pgrig_home)
    victim = subprocess.Popen(["sleep", "60"])
    try:
        run_journal.note_pinning(env, [victim.pid])
        doc = run_journal.read(env)
        doc[run_journal.PINNING]["roots"][0]["create_time"] -= 100  # another process then
        (env.dir / run_journal.JOURNAL_FILE).write_text(__import__("json").dumps(doc))
        assert run_journal.recover(env) == []
        assert not (env.dir / run_journal.JOURNAL_FILE).exists()
    finally:
        victim.kill()
        victim.wait()


def test_affinity_drift_names_pinned_threads() -> None:
    cpus = set(os.sched_getaffinity(0))
    victim = subprocess.Popen(["sleep", "60"])
    try:
        assert live_state.affinity_drift([victim.pid], cpus, exact=False) == []
        if len(cpus) > 1:
            os.sched_setaffinity(victim.pid, {min(cpus)})
            assert live_state.affinity_drift([victim.pid], cpus, exact=False) == [victim.pid]
            assert live_state.affinity_drift([victim.pid], {min(cpus)}, exact=True) == []
            affinity.set_tree(victim.pid, cpus)
            assert affinity.tree_masks(victim.pid) == {victim.pid: cpus}
    finally:
        victim.kill()
        victim.wait()


# --- signals and children --------------------------------------------------------------------


def test_sigterm_is_archived_as_stopped_by_sigterm() -> None:
    assert guard.interruption(Terminated(signal.SIGTERM)) == "stopped by SIGTERM"
    assert guard.interruption(KeyboardInterrupt()) == "interrupted by the user (Ctrl-C)"
    assert isinstance(Terminated(signal.SIGHUP), KeyboardInterrupt)


def test_pgbench_child_dies_with_a_killed_pgrig(tmp_path: Path) -> None:
    """PgbenchProcess's child gets SIGKILL from the kernel when its parent is killed -9."""
    parent = _python(f"""
        import time
        from pathlib import Path
        from pgrig.load.engines.process import PgbenchProcess
        p = PgbenchProcess(["sleep", "60"], env={{}}, cwd=Path({str(tmp_path)!r}),
                           stdout_path=Path({str(tmp_path / "out")!r}))
        print(p.pid, flush=True)
        time.sleep(60)
    """)
    assert parent.stdout is not None
    child_pid = int(parent.stdout.readline())
    assert psutil.pid_exists(child_pid)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            if psutil.Process(child_pid).status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.05)
    else:
        os.kill(child_pid, signal.SIGKILL)
        pytest.fail("the child outlived its killed parent")


def _descriptors() -> dict[int, str]:
    """This process's open descriptors and what each refers to ('pipe:[123]', a path...)."""
    out = {}
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own descriptor, closed already
            out[int(name)] = os.readlink(f"/proc/self/fd/{name}")
    return out


def test_the_run_loop_sees_pgbench_exit_and_leaves_no_descriptor(tmp_path: Path) -> None:
    """Deterministic on a busy machine: the child exits when the test says so (not after a
    sleep that may end before the first check), and the descriptors checked are the ones this
    process object opened, identified by what they refer to (a count of the whole process's
    descriptors also moves when another test's object is collected meanwhile)."""
    from pgrig.load.engines.process import PgbenchProcess

    go = tmp_path / "go"
    child = ["sh", "-c", f"while [ ! -e {go} ]; do sleep 0.02; done"]
    before = _descriptors()
    p = PgbenchProcess(child, env={}, cwd=tmp_path, stdout_path=tmp_path / "out")
    assert p.running_after(0.01)  # still waiting: the pidfd is open now
    opened = {fd: what for fd, what in _descriptors().items() if before.get(fd) != what}
    ours = {
        "stdout file": p._stdout_file.fileno(),
        "stderr pipe": p.proc.stderr.fileno() if p.proc.stderr else -1,
        "pidfd": p._pidfd if p._pidfd is not None else -1,
    }
    assert opened.get(ours["stdout file"]) == str(tmp_path / "out")
    assert opened.get(ours["stderr pipe"], "").startswith("pipe:")
    assert "pidfd" in opened.get(ours["pidfd"], "")
    go.touch()
    while p.running_after(1.0):  # the runner's loop: ends once the child has exited
        pass
    assert p.poll() == 0 and not p.running_after(1.0)
    assert p.wait() == 0
    after = _descriptors()
    left = {fd: what for fd, what in opened.items() if after.get(fd) == what}
    assert left == {}, f"still open after wait(): {left} (ours: {ours})"


def test_sigterm_of_the_cli_raises_terminated_once() -> None:
    """The CLI's handler: the first SIGTERM interrupts, a second one during cleanup does not."""
    child = _python("""
        import os, signal, time
        from pgrig import interrupts
        from pgrig.errors import Terminated
        interrupts.install()
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        except Terminated as e:
            os.kill(os.getpid(), signal.SIGTERM)  # ignored: the cleanup goes on
            print("terminated", e.signal_name, flush=True)
    """)
    out, _ = child.communicate(timeout=30)
    assert out.strip() == "terminated SIGTERM"


def test_check_intact_names_the_repair(pgrig_home: Path) -> None:
    env = _env(pgrig_home)
    with pytest.raises(PgrigError, match=r"pgrig env repair lab"):
        env.check_intact()


def test_a_lock_held_by_this_process_nests_and_others_are_refused(tmp_path: Path) -> None:
    outer = EnvLock(tmp_path, "lab").acquire("study run s1")
    try:
        inner = EnvLock(tmp_path, "lab").acquire()  # a run of the study
        inner.describe(7)
        info = env_lock.holder(tmp_path)
        assert info is not None and info["run_id"] == 7 and info["within"] == "study run s1"
        assert "run 7 of `pgrig study run s1`" in env_lock.busy_message("lab", info, "run")
        inner.release()
        assert env_lock.holder(tmp_path) is not None  # the study still holds it
        env_lock.refuse_if_busy(tmp_path, "lab", "db generate")  # its own dataset step
    finally:
        outer.release()
    assert env_lock.holder(tmp_path) is None


def test_a_lock_of_another_process_is_refused(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys,time,pathlib;from pgrig.provision.state.env_lock import EnvLock;"
        f"EnvLock(pathlib.Path({str(tmp_path)!r}),'lab').acquire('tune t1');"
        "print('held',flush=True);time.sleep(30)"
    )
    other = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout is not None and other.stdout.readline().strip() == "held"
        with pytest.raises(EnvBusy, match="`pgrig tune t1` is in progress"):
            EnvLock(tmp_path, "lab").acquire()
        with pytest.raises(EnvBusy):
            env_lock.refuse_if_busy(tmp_path, "lab", "db generate")
    finally:
        other.kill()
        other.wait()


# --- changes forced under a run (issue 43, class 1) ---------------------------------------------


def _force_from_another_process(env: Environment) -> LockHolder | None:
    """`env set --force` as another process makes its note: the holder it found, or None."""
    child = _python(f"""
        import json
        from pathlib import Path
        from pgrig.provision.state import env_lock
        print(json.dumps(env_lock.note_forced(Path({str(env.dir)!r}), "env set --force", "x")))
    """)
    out, _ = child.communicate(timeout=60)
    found = json.loads(out)
    return cast(LockHolder, found) if isinstance(found, dict) else None


def test_a_run_s_last_read_of_its_notes_seals_them_so_none_is_promised_and_lost(
    pgrig_home: Path,
) -> None:
    """Issue 43: a note is read by the run it names, or its command is told the run is ending;
    never told "recorded as an event of run N" after run N read its notes for the last time."""
    from datetime import UTC, datetime, timedelta

    from pgrig.archive.records import RunRecord
    from pgrig.load.core import run_steps

    env = _env(pgrig_home)
    env.save()
    tune = EnvLock(env.dir, env.name).acquire("tune t1")
    try:
        run = EnvLock(env.dir, env.name).acquire()  # a tune's run, nested in its hold
        run.describe(7)
        held = _force_from_another_process(env)
        assert held is not None and held["run_id"] == 7
        rec = RunRecord(env_name="lab", workload="w", clients=1, threads=1, status="ok", id=7)
        rec.started_at = rec.ended_at = datetime.now(UTC) - timedelta(seconds=5)
        run_steps.forced_changes(rec, last=True)  # its last write's read
        assert [e["change"] for e in rec.extra["changed_under_run"]] == ["x"]
        # after it, the tune holds the environment between its runs, and says so
        held = _force_from_another_process(env)
        assert held is not None and held.get("run_id") is None and held["what"] == "tune t1"
        assert "no run records this change" in guard.forced_note("lab", held)
        run.release()
        # a run of its own: after its last read, a forced command is told it is ending
        alone = EnvLock(env.dir, env.name)
        tune.release()
        alone.acquire()
        alone.describe(8)
        rec8 = RunRecord(env_name="lab", workload="w", clients=1, threads=1, status="ok", id=8)
        rec8.started_at = rec8.ended_at = datetime.now(UTC)
        run_steps.forced_changes(rec8, last=True)
        assert "changed_under_run" not in rec8.extra
        held = _force_from_another_process(env)
        assert held is not None and held["run_id"] == 8 and held.get("ending") is True
        assert guard.forced_note("lab", held) == (
            "run 8 on lab is ending: its figures are taken and being recorded, so this change "
            "is no event of it"
        )
        assert env_lock.forced_between(env.dir, 0, time.time() + 1) == []  # nothing promised
        alone.release()
    finally:
        tune.release()


def test_a_change_forced_under_a_run_is_noted_for_that_run_and_read_back(
    pgrig_home: Path,
) -> None:
    from datetime import UTC, datetime, timedelta

    from pgrig.archive.records import RunRecord
    from pgrig.load.core import run_steps

    env = _env(pgrig_home)
    env.save()
    assert env_lock.note_forced(env.dir, "env set --force", "x") is None  # nobody holds it
    assert not (env.dir / env_lock.FORCED_FILE).exists()
    child = _hold_lock(env, 42)
    try:
        said: list[str] = []
        with guard.exclusive(
            env.name, "env set", True, note=said.append, change="disk limit set to riops=500"
        ):
            pass
        assert said == [
            "run 42 on lab is in progress: this change is recorded as an event of the run it "
            "comes under, and that run's figures as not comparable as they are"
        ]
        env_lock.refuse_if_busy(env.dir, env.name, "env destroy", force=True)
        # under a tune, a settings change lasts until it puts the environment's own back
        held = {"pid": 1, "run_id": 42, "what": "run", "within": "tune t1"}
        assert guard.forced_note("lab", held, "settings work_mem=8MB").endswith(
            "; `pgrig tune t1` changes lab's settings for its runs and puts its own back at its "
            "end, undoing this change"
        )
        assert "undoing" not in guard.forced_note("lab", held, "server restarted")
        # between two runs of a tune: no run's span holds the change, and it is not said to
        between = {"pid": 1, "run_id": None, "what": "tune t1"}
        assert guard.forced_note("lab", between, "settings work_mem=8MB") == (
            "`pgrig tune t1` holds lab between two of its runs: no run records this change; "
            "`pgrig tune t1` changes lab's settings for its runs and puts its own back at its "
            "end, undoing this change"
        )
        assert guard.forced_note("lab", between, "server restarted") == (
            "`pgrig tune t1` holds lab between two of its runs: no run records this change"
        )
    finally:
        child.kill()
        child.wait()
    now = datetime.now(UTC)
    rec = RunRecord(env_name="lab", workload="w", clients=1, threads=1, status="ok")
    rec.started_at, rec.ended_at = now - timedelta(seconds=30), now + timedelta(seconds=1)
    run_steps.forced_changes(rec)
    events = rec.extra["changed_under_run"]
    assert [(e["command"], e["change"]) for e in events] == [
        ("env set --force", "disk limit set to riops=500"),
        ("env destroy --force", "env destroy"),
    ]
    assert all(29 <= e["after_s"] <= 31 for e in events)
    [warning] = [w for w in rec.warnings() if w["code"] == "changed_under_run"]
    assert "`pgrig env set --force`: disk limit set to riops=500" in warning["message"]
    # a change after the run's load, while it is being recorded, is said as such
    late = RunRecord(env_name="lab", workload="w", clients=1, threads=1, status="ok")
    late.started_at, late.ended_at = now - timedelta(seconds=30), now - timedelta(seconds=25)
    run_steps.forced_changes(late)
    assert (
        "after its load, while it was being recorded, `pgrig env set --force`"
        in (late.warnings()[0]["message"])
    )
    # a run that failed after a change forced during its load failed of it: its reason
    # leads with the change, the symptom after (issue 43, F4); asked again, said once
    symptom = "pgbench: FATAL:  terminating connection due to administrator command"
    failed = RunRecord(env_name="lab", workload="w", clients=1, threads=1, status="failed")
    failed.started_at, failed.ended_at = now - timedelta(seconds=30), now + timedelta(seconds=1)
    failed.error = symptom
    run_steps.forced_changes(failed)
    run_steps.forced_changes(failed)
    assert failed.error.startswith(
        "changed under it with --force: `pgrig env set --force` (disk limit set to riops=500) "
    )
    assert failed.error.endswith(f"; then {symptom}") and failed.error.count("then") == 1
    # ... but not one whose load had ended before the change came
    late_fail = RunRecord(env_name="lab", workload="w", clients=1, threads=1, status="failed")
    late_fail.started_at = now - timedelta(seconds=30)
    late_fail.ended_at = now - timedelta(seconds=25)
    late_fail.error = symptom
    run_steps.forced_changes(late_fail)
    assert late_fail.error == symptom
    # a run that began after the change has no such event
    after = RunRecord(env_name="lab", workload="w", clients=1, threads=1, status="ok")
    after.started_at = now + timedelta(seconds=5)
    run_steps.forced_changes(after, since=after.started_at.timestamp())
    assert "changed_under_run" not in after.extra and not after.warnings()
    # the next hold of the environment starts with no notes of an earlier one
    env_lock.EnvLock(env.dir, env.name).acquire().release()
    assert (env.dir / env_lock.FORCED_FILE).read_text() == ""  # kept (it is locked), emptied
