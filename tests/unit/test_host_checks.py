"""Host checks on fake machines: every check has a value, a recommendation, a status and why;
what a machine lacks is "unavailable" with the reason, never an error."""

from __future__ import annotations

import resource
from pathlib import Path

import pytest
from host_fakes import make_machine

from pgrig.machine import checks
from pgrig.machine.checks import Context, run_checks
from pgrig.machine.sysfs import REAL

NAMES = [
    "governor",
    "turbo",
    "cstates",
    "thp_enabled",
    "thp_defrag",
    "swappiness",
    "dirty_background_bytes",
    "dirty_bytes",
    "sched_autogroup",
    "sched_migration_cost",
    "clocksource",
    "cpu_dma_latency",
    "numa",
    "smt_siblings",
    "nofile",
    "cpu_steal",
    "cpu_busy",
    "disk_free",
    "tmpfs_free",
    "uptime",
]


def by_name(found: list[dict]) -> dict[str, dict]:
    return {c["name"]: c for c in found}


def fake_ctx(tmp_path: Path, files: dict | None = None, **kwargs) -> Context:
    fs = make_machine(tmp_path / "m", files)
    return Context(fs=fs, disks=[("home", tmp_path)], sample_s=0, **kwargs)


def test_an_untuned_machine_warns_with_values_and_recommendations(tmp_path: Path) -> None:
    found = run_checks(fake_ctx(tmp_path))
    assert [c["name"] for c in found] == NAMES
    for c in found:
        assert set(c) == {"name", "value", "recommended", "status", "why"}
        assert c["status"] in ("ok", "warn", "unavailable") and c["why"]
        assert c["recommended"] is not None
    c = by_name(found)
    expect = {
        "governor": ("powersave", "performance", "warn"),
        "turbo": ("off", "on", "warn"),
        "cstates": ("133 us", "<= 10 us", "warn"),
        "thp_enabled": ("always", "never", "warn"),
        "thp_defrag": ("always", "never (anything but always)", "warn"),
        "swappiness": (60, "3 (<= 10)", "warn"),
        "dirty_background_bytes": (0, "67108864 (64 MiB) or less", "warn"),
        "dirty_bytes": (0, "536870912 (512 MiB) or less", "warn"),
        "sched_autogroup": (1, 0, "warn"),
        "sched_migration_cost": (500000, 50000000, "warn"),
        "clocksource": ("hpet", "tsc", "warn"),
        "cpu_dma_latency": ("no request", c["cpu_dma_latency"]["recommended"], "warn"),
    }
    for name, (value, recommended, status) in expect.items():
        assert (c[name]["value"], c[name]["recommended"], c[name]["status"]) == (
            value,
            recommended,
            status,
        ), name
    assert c["numa"]["status"] == "warn" and c["numa"]["value"] == "node0: 0,2; node1: 1,3"
    assert c["smt_siblings"] == {**c["smt_siblings"], "value": "not pinned", "status": "warn"}
    assert c["uptime"]["value"] == "24 h 0 min" and c["uptime"]["status"] == "ok"


def test_a_tuned_machine_is_ok(tmp_path: Path) -> None:
    files: dict = {
        "proc/sys/vm/swappiness": "1",
        "proc/sys/vm/dirty_background_bytes": str(64 << 20),
        "proc/sys/vm/dirty_background_ratio": "0",
        "proc/sys/vm/dirty_bytes": str(256 << 20),
        "proc/sys/vm/dirty_ratio": "0",
        "proc/sys/kernel/sched_autogroup_enabled": "0",
        "proc/sys/kernel/sched_migration_cost_ns": "50000000",
        "sys/kernel/mm/transparent_hugepage/enabled": "always madvise [never]",
        "sys/kernel/mm/transparent_hugepage/defrag": "always defer defer+madvise [madvise] never",
        "sys/devices/system/clocksource/clocksource0/current_clocksource": "tsc",
        "sys/devices/system/cpu/intel_pstate/no_turbo": "0",
        "sys/devices/system/node/node1/cpulist": None,
        "dev/cpu_dma_latency": (0).to_bytes(4, "little"),
        "proc/stat": "cpu  1000 0 500 8400 100 0 0 0 0 0",
    }
    for cpu in range(4):
        files[f"sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"] = "performance"
        files[f"sys/devices/system/cpu/cpu{cpu}/cpuidle/state2/disable"] = "1"
    ctx = fake_ctx(tmp_path, files, pinned={"server": [0], "client": [1]}, clients=10)
    c = by_name(run_checks(ctx))
    not_ok = {n: v for n, v in c.items() if v["status"] != "ok"}
    assert not_ok == {}
    assert c["cstates"]["value"] == "2 us"
    assert c["smt_siblings"]["value"] == "server 0, client 1: no shared core"
    assert c["dirty_bytes"]["value"] == 256 << 20 and c["cpu_dma_latency"]["value"] == "0 us"


def test_a_vm_without_cpufreq_or_debugfs_says_unavailable(tmp_path: Path) -> None:
    files: dict = {
        "sys/devices/system/cpu/intel_pstate/no_turbo": None,
        "proc/sys/kernel/sched_migration_cost_ns": None,
        "sys/devices/system/clocksource/clocksource0/available_clocksource": "kvm-clock",
        "sys/devices/system/clocksource/clocksource0/current_clocksource": "kvm-clock",
        "dev/cpu_dma_latency": None,
    }
    for cpu in range(4):
        files[f"sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"] = None
    c = by_name(run_checks(fake_ctx(tmp_path, files)))
    for name, reason in (
        ("governor", "no cpufreq on this host"),
        ("turbo", "no intel_pstate/no_turbo nor cpufreq/boost"),
        ("sched_migration_cost", "debugfs is not mounted"),
        ("clocksource", "does not offer 'tsc'"),
        ("cpu_dma_latency", "No such file"),
    ):
        assert c[name]["status"] == "unavailable" and reason in c[name]["why"], c[name]
        assert c[name]["recommended"] is not None


def test_migration_cost_from_debugfs_on_newer_kernels(tmp_path: Path) -> None:
    files = {
        "proc/sys/kernel/sched_migration_cost_ns": None,
        "sys/kernel/debug/sched/migration_cost_ns": "50000000",
    }
    c = by_name(run_checks(fake_ctx(tmp_path, files)))
    assert c["sched_migration_cost"]["value"] == 50000000
    assert c["sched_migration_cost"]["status"] == "ok"


def test_pinned_siblings_and_numa(tmp_path: Path) -> None:
    c = by_name(run_checks(fake_ctx(tmp_path, pinned={"server": [0, 2], "client": [1]})))
    assert c["smt_siblings"]["status"] == "warn"
    assert c["smt_siblings"]["value"] == "server 0,2, client 1: siblings 0+2"
    assert c["numa"]["status"] == "warn"  # CPUs on both nodes
    c = by_name(run_checks(fake_ctx(tmp_path, pinned={"server": [0], "client": [2]})))
    assert c["numa"]["status"] == "ok" and c["smt_siblings"]["status"] == "warn"


def test_cpu_steal_and_busy_since_boot_and_over_a_window(tmp_path: Path) -> None:
    c = by_name(run_checks(fake_ctx(tmp_path)))
    # since boot: total 10000 ticks, steal 380, busy = 1000+10+500+5+5+380
    assert c["cpu_steal"]["value"] == "3.8% since boot" and c["cpu_steal"]["status"] == "warn"
    assert c["cpu_busy"]["value"] == "19% busy since boot; load 0.10 0.20 0.30"
    assert c["cpu_busy"]["status"] == "ok"
    ctx = fake_ctx(tmp_path)
    ctx.sample_s = 0.01  # the fake counters do not move: since boot again, never a division by 0
    assert by_name(run_checks(ctx))["cpu_steal"]["value"] == "3.8% since boot"


def test_open_files_against_planned_clients(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(checks.resource, "getrlimit", lambda _: (1024, 4096))
    ctx = fake_ctx(tmp_path, clients=1000, is_root=False)
    c = by_name(run_checks(ctx))["nofile"]
    assert c["status"] == "ok" and c["recommended"] == ">= 1064 for 1000 clients"
    ctx = fake_ctx(tmp_path, clients=5000, is_root=False)
    c = by_name(run_checks(ctx))["nofile"]
    assert c["status"] == "warn" and c["value"] == "soft 1024, hard 4096"
    ctx = fake_ctx(tmp_path, clients=5000, is_root=True)  # root raises the hard limit itself
    assert by_name(run_checks(ctx))["nofile"]["status"] == "ok"
    assert checks.nofile_for_clients(1000) == 1064
    assert resource.RLIMIT_NOFILE is not None


def test_disk_and_tmpfs_space(tmp_path: Path, monkeypatch) -> None:
    c = by_name(run_checks(fake_ctx(tmp_path)))
    assert c["disk_free"]["value"].startswith(f"home ({tmp_path}): ")
    assert c["tmpfs_free"]["status"] in ("ok", "warn") and "GiB free" in c["tmpfs_free"]["value"]
    usage = type("U", (), {"total": 100 * 2**30, "free": 1 * 2**30, "used": 99 * 2**30})
    monkeypatch.setattr(checks.shutil, "disk_usage", lambda _: usage)
    c = by_name(run_checks(fake_ctx(tmp_path)))
    assert c["disk_free"]["status"] == "warn" and "1.0 GiB free (1%)" in c["disk_free"]["value"]
    # one line per filesystem, not per path; a path not created yet counts as its parent's
    ctx = fake_ctx(tmp_path)
    ctx.disks.append(("data", tmp_path / "not" / "yet"))
    assert by_name(run_checks(ctx))["disk_free"]["value"].startswith("home, data (")


def test_a_check_that_breaks_is_unavailable_not_an_error(tmp_path: Path, monkeypatch) -> None:
    def boom(*a, **k):
        raise RuntimeError("broken")

    monkeypatch.setattr(checks, "_uptime", boom)
    c = by_name(run_checks(fake_ctx(tmp_path)))["uptime"]
    assert c["status"] == "unavailable" and "RuntimeError: broken" in c["why"]


def test_just_booted(tmp_path: Path) -> None:
    c = by_name(run_checks(fake_ctx(tmp_path, {"proc/uptime": "120.0 10.0"})))["uptime"]
    assert c["status"] == "warn" and c["value"] == "0 h 2 min"


@pytest.mark.parametrize("name", NAMES)
def test_this_machine_answers_every_check(name: str) -> None:
    found = by_name(run_checks(Context(fs=REAL, disks=[("home", Path("/"))], sample_s=0.05)))
    assert found[name]["status"] in ("ok", "warn", "unavailable")
    if found[name]["status"] != "unavailable":
        assert found[name]["value"] is not None


def test_the_sibling_check_names_a_cpu_given_to_both_sides(tmp_path: Path) -> None:
    from host_fakes import make_machine

    from pgrig.machine.checks import Context, run_checks

    fs = make_machine(tmp_path / "m", None)
    ctx = Context(
        fs=fs, disks=[("home", tmp_path)], sample_s=0, pinned={"server": [0, 1], "client": [1]}
    )
    c = {found["name"]: found for found in run_checks(ctx)}
    assert c["smt_siblings"]["status"] == "warn"
    assert c["smt_siblings"]["value"] == "server 0-1, client 1: CPU 1 on both sides"
