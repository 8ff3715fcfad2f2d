"""host tune / restore on a fake machine with a fake kernel: exact plans, nothing changed without
apply, originals saved before the first write, restore back to every byte, failures reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from host_fakes import FakeKernel, make_machine, snapshot_tree

from pgrig.errors import PgrigError
from pgrig.machine import knobs, state, tune
from pgrig.machine.checks import Context, run_checks
from pgrig.provision.system import osuser


@pytest.fixture
def machine(tmp_path: Path):
    return make_machine(tmp_path / "m")


@pytest.fixture
def kernel(monkeypatch: pytest.MonkeyPatch) -> FakeKernel:
    fake = FakeKernel()
    monkeypatch.setattr(knobs, "write_value", fake)
    monkeypatch.setattr(osuser, "is_root", lambda: True)
    return fake


def changes_of(result) -> dict[str, tuple]:
    return {c.name: (c.old, c.new, c.status) for c in result[0]}


def test_plan_is_exact_and_changes_nothing(machine, tmp_path: Path, kernel) -> None:
    before = snapshot_tree(tmp_path / "m")
    changes, skipped = tune.plan("pgrig", machine)
    assert changes_of((changes, skipped)) == {
        "governor": ("powersave", "performance", "planned"),
        "turbo": ("off", "on", "planned"),
        "cstates": ("133 us", "<= 10 us", "planned"),
        "thp_enabled": ("always", "never", "planned"),
        "thp_defrag": ("always", "never", "planned"),
        "swappiness": (60, 3, "planned"),
        "dirty_background_bytes": (0, 64 << 20, "planned"),
        "dirty_bytes": (0, 512 << 20, "planned"),
        "sched_autogroup": (1, 0, "planned"),
        "sched_migration_cost": (500000, 50000000, "planned"),
        "clocksource": ("hpet", "tsc", "planned"),
    }
    root = str(tmp_path / "m")
    swap = next(c for c in changes if c.name == "swappiness")
    assert swap.setting == "vm.swappiness" and swap.files == [f"{root}/proc/sys/vm/swappiness"]
    dirty = next(c for c in changes if c.name == "dirty_bytes")
    assert dirty.files == [f"{root}/proc/sys/vm/dirty_bytes", f"{root}/proc/sys/vm/dirty_ratio"]
    assert skipped == []
    assert kernel.writes == [] and snapshot_tree(tmp_path / "m") == before


def test_apply_then_restore_gives_back_every_value(machine, tmp_path: Path, kernel) -> None:
    before = snapshot_tree(tmp_path / "m")
    saved = tmp_path / "home" / "host-tune.json"
    first_write_saw_state: list[bool] = []
    kernel.before_write = lambda: first_write_saw_state.append(saved.exists())
    result = tune.apply("pgrig", machine, path=saved)
    assert all(first_write_saw_state) and first_write_saw_state  # saved before any write
    assert {c.status for c in result[0]} == {"changed"}
    ctx = Context(fs=machine, disks=[("home", tmp_path)], sample_s=0)
    statuses = {c["name"]: c["status"] for c in run_checks(ctx)}
    assert {n for n in knobs.PGRIG if statuses[n] != "ok"} == set()  # the checks now agree
    data = json.loads(saved.read_text())
    assert data["knobs"]["swappiness"] == {f"{tmp_path}/m/proc/sys/vm/swappiness": "60"}
    assert data["boot_id"] == "boot-1" and data["profile"] == "pgrig"

    done, note = tune.restore(machine, path=saved)
    assert note is None and all(r.ok for r in done) and len(done) == 11
    assert snapshot_tree(tmp_path / "m") == before
    assert not saved.exists()


def test_applying_twice_keeps_the_original_values(machine, tmp_path: Path, kernel) -> None:
    before = snapshot_tree(tmp_path / "m")
    saved = tmp_path / "state.json"
    tune.apply("pgrig", machine, only=["swappiness"], path=saved)
    assert (tmp_path / "m/proc/sys/vm/swappiness").read_text() == "3\n"
    again = tune.apply("pgrig", machine, path=saved)  # swappiness already fine: not re-saved
    assert "swappiness" not in changes_of(again)
    second = tune.apply("tuned-like", machine, path=saved)  # stricter on C-states only
    assert changes_of(second) == {"cstates": ("2 us", "0 us", "changed")}
    assert state.load(saved).knobs["swappiness"] == {f"{tmp_path}/m/proc/sys/vm/swappiness": "60"}
    tune.restore(machine, path=saved)
    assert snapshot_tree(tmp_path / "m") == before


def test_refused_values_are_reported_and_not_recorded(machine, tmp_path: Path, kernel) -> None:
    before = snapshot_tree(tmp_path / "m")
    cpu3 = tmp_path / "m/sys/devices/system/cpu/cpu3/cpufreq/scaling_governor"
    kernel.readonly = {"swappiness", str(cpu3)}
    saved = tmp_path / "state.json"
    changes, _ = tune.apply("pgrig", machine, path=saved)
    by = {c.name: c for c in changes}
    assert by["swappiness"].status == "failed" and by["swappiness"].error == "Permission denied"
    assert by["governor"].status == "failed"  # cpu0-2 were written, then put back
    for cpu in range(4):
        gov = tmp_path / f"m/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"
        assert gov.read_text() == "powersave\n"
    kept = state.load(saved).knobs
    assert "swappiness" not in kept and "governor" not in kept and "thp_enabled" in kept
    tune.restore(machine, path=saved)
    assert snapshot_tree(tmp_path / "m") == before


def test_a_value_the_kernel_ignores_is_not_a_change(machine, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(osuser, "is_root", lambda: True)
    monkeypatch.setattr(knobs, "write_value", lambda path, value: None)  # accepted, ignored
    changes, _ = tune.apply("pgrig", machine, only=["sched_autogroup"], path=tmp_path / "s.json")
    assert changes[0].status == "failed" and changes[0].error == "written, but the kernel kept 1"
    assert not (tmp_path / "s.json").exists()


def test_killed_half_way_restore_still_puts_everything_back(machine, tmp_path, kernel) -> None:
    before = snapshot_tree(tmp_path / "m")
    saved = tmp_path / "state.json"

    def die_on_third_write() -> None:
        if len(kernel.writes) == 2:
            raise KeyboardInterrupt

    kernel.before_write = die_on_third_write
    with pytest.raises(KeyboardInterrupt):
        tune.apply("pgrig", machine, path=saved)
    kernel.before_write = None
    assert snapshot_tree(tmp_path / "m") != before
    assert len(state.load(saved).knobs) == 11  # every planned knob was saved before writing
    done, _ = tune.restore(machine, path=saved)
    assert all(r.ok for r in done) and snapshot_tree(tmp_path / "m") == before


def test_without_root_nothing_happens(machine, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(osuser, "is_root", lambda: False)
    before = snapshot_tree(tmp_path / "m")
    with pytest.raises(PgrigError, match="needs root: run it as root"):
        tune.apply("pgrig", machine, path=tmp_path / "s.json")
    with pytest.raises(PgrigError, match="`pgrig host restore` changes kernel settings"):
        tune.restore(machine, path=tmp_path / "s.json")
    assert snapshot_tree(tmp_path / "m") == before and not (tmp_path / "s.json").exists()
    assert tune.plan("pgrig", machine)[0]  # a dry run needs no root


def test_bad_profile_and_only(machine) -> None:
    with pytest.raises(PgrigError, match="--profile must be one of pgrig, tuned-like"):
        tune.plan("fast", machine)
    with pytest.raises(PgrigError, match="--only 'turbo' is not a setting of profile tuned-like"):
        tune.plan("tuned-like", machine, only=["turbo"])


def test_tuned_like_is_exactly_tuned(machine, tmp_path) -> None:
    (tmp_path / "m/proc/sys/vm/swappiness").write_text("1\n")
    changes = changes_of(tune.plan("tuned-like", machine))
    assert changes["swappiness"] == (1, 3, "planned")  # pgrig would accept 1
    assert changes["cstates"] == ("133 us", "<= 1 us", "planned")  # force_latency=1
    assert "turbo" not in changes and "clocksource" not in changes
    assert "swappiness" not in changes_of(tune.plan("pgrig", machine))


def test_cstates_disable_only_deep_states(machine, tmp_path, kernel) -> None:
    tune.apply("pgrig", machine, only=["cstates"], path=tmp_path / "s.json")
    cpu0 = tmp_path / "m/sys/devices/system/cpu/cpu0/cpuidle"
    assert [(cpu0 / f"state{i}/disable").read_text() for i in range(3)] == ["0\n", "0\n", "1\n"]
    tune.restore(machine, path=tmp_path / "s.json")
    assert (cpu0 / "state2/disable").read_text() == "0\n"


def test_restore_after_reboot_or_with_nothing_saved(machine, tmp_path, kernel) -> None:
    saved = tmp_path / "state.json"
    done, note = tune.restore(machine, path=saved)
    assert done == [] and note.startswith("nothing to restore")
    tune.apply("pgrig", machine, only=["swappiness"], path=saved)
    (tmp_path / "m/proc/sys/kernel/random/boot_id").write_text("boot-2\n")
    kernel.writes.clear()
    done, note = tune.restore(machine, path=saved)
    assert done == [] and "before a reboot" in note and kernel.writes == []
    assert not saved.exists()


def test_restore_writes_only_kernel_settings(machine, tmp_path, kernel) -> None:
    saved = tmp_path / "state.json"
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    state.save(
        state.SavedState("pgrig", "boot-1", knobs={"swappiness": {str(victim): "60"}}), saved
    )
    done, _ = tune.restore(machine, path=saved)
    assert not done[0].ok and "outside /proc/sys, /sys" in done[0].error
    assert victim.read_text() == "keep\n" and saved.exists()


def test_an_unreadable_state_is_a_clear_error(tmp_path) -> None:
    saved = tmp_path / "state.json"
    saved.write_text("{not json")
    with pytest.raises(PgrigError, match="unreadable"):
        state.load(saved)


def test_one_tune_or_restore_at_a_time(tmp_path) -> None:
    import threading
    import time

    order: list[str] = []
    holding = threading.Event()

    def first() -> None:
        with state.locked(tmp_path / "s.json"):
            order.append("first in")
            holding.set()
            time.sleep(0.2)
            order.append("first out")

    t = threading.Thread(target=first)
    t.start()
    assert holding.wait(30)  # the first holds the lock (a started thread may not, yet)
    with state.locked(tmp_path / "s.json"):
        order.append("second in")
    t.join()
    assert order == ["first in", "first out", "second in"]
    assert list(tmp_path.iterdir()) == []  # no lock file left behind
