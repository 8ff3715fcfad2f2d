"""The host doctor on the real machine: `pgrig host check`, `tune --apply` and `restore` leave
every kernel value as it was, runs record the host checks, `runs compare` names a host
difference, and pinning picks whole cores and covers pgbouncer.

The machine is shared with other benchmarks: every applied change is restored in a finally
block, and if `pgrig host restore` ever failed the test writes the values back itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import servers
from servers import pgrig

pytestmark = pytest.mark.integration

# Every file a host knob may change, found independently of pgrig's own knob definitions.
WATCHED = [
    "/proc/sys/vm/*",
    "/proc/sys/kernel/sched_*",
    "/proc/sys/kernel/numa_balancing",
    "/sys/kernel/mm/transparent_hugepage/enabled",
    "/sys/kernel/mm/transparent_hugepage/defrag",
    "/sys/devices/system/cpu/cpu*/cpuidle/state*/disable",
    "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor",
    "/sys/devices/system/cpu/intel_pstate/no_turbo",
    "/sys/devices/system/cpu/cpufreq/boost",
    "/sys/devices/system/clocksource/clocksource0/current_clocksource",
    "/sys/kernel/debug/sched/migration_cost_ns",
]


def kernel_values() -> dict[str, str]:
    import glob

    out = {}
    for pattern in WATCHED:
        for path in sorted(glob.glob(pattern)):
            with contextlib.suppress(OSError):  # write-only files (drop_caches, ...)
                out[path] = Path(path).read_text()
    return out


@contextlib.contextmanager
def restored_afterwards(before: dict[str, str]) -> Iterator[None]:
    """Run `pgrig host restore` whatever happens; put back by hand anything it missed."""
    try:
        yield
    finally:
        pgrig("host", "restore", check=False)
        missed = {p: v for p, v in before.items() if kernel_values().get(p) != v}
        for path, value in missed.items():
            with contextlib.suppress(OSError):
                Path(path).write_text(_choice(value))
        assert missed == {}, f"pgrig host restore left changed values: {missed}"


def _choice(text: str) -> str:
    """'always [madvise] never' -> 'madvise' (what a choice file accepts); others as read."""
    words = [w for w in text.split() if w.startswith("[")]
    return words[0].strip("[]") if words else text.strip()


@pytest.fixture(scope="module")
def home() -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("host tune and restore need root")
    with servers.scratch_home("pgrig-host-test-") as home:
        yield home


def test_host_check_reports_every_check(home: Path) -> None:
    doc = json.loads(pgrig("host", "check", "--json", "--clients", "50").stdout)
    checks = doc["checks"]
    assert len(checks) >= 12
    for c in checks:
        assert set(c) == {"name", "value", "recommended", "status", "why"}
        assert c["status"] in ("ok", "warn", "unavailable") and c["why"], c
        assert c["recommended"] is not None, c
        if c["status"] != "unavailable":
            assert c["value"] is not None, c
    by = {c["name"]: c for c in checks}
    swappiness = int(Path("/proc/sys/vm/swappiness").read_text())
    assert by["swappiness"]["value"] == swappiness
    assert by["nofile"]["recommended"] == ">= 114 for 50 clients"
    if not list(Path("/sys/devices/system/cpu").glob("cpu0/cpufreq/scaling_governor")):
        assert by["governor"]["status"] == "unavailable"
        assert "no cpufreq" in by["governor"]["why"]
    human = pgrig("host", "check")
    assert "swappiness" in human.stdout and "ok" in human.stdout


def test_dry_run_changes_nothing_and_restore_undoes_apply(home: Path) -> None:
    before = kernel_values()
    assert "/proc/sys/vm/swappiness" in before
    plans = {}
    for profile in ("pgrig", "tuned-like"):
        plans[profile] = json.loads(pgrig("host", "tune", "--profile", profile, "--json").stdout)
        assert plans[profile]["applied"] is False
        assert all(c["status"] == "planned" for c in plans[profile]["changes"])
    assert kernel_values() == before
    assert not (home / "host-tune.json").exists()

    with restored_afterwards(before):
        applied = json.loads(pgrig("host", "tune", "--apply", "--json").stdout)
        changed = [c for c in applied["changes"] if c["status"] == "changed"]
        during = kernel_values()
        again = json.loads(pgrig("host", "tune", "--apply", "--json").stdout)
        saved = json.loads((home / "host-tune.json").read_text()) if changed else None
        restore = pgrig("host", "restore", "--json")
    after = kernel_values()
    assert after == before
    planned = [(c["name"], c["old"]) for c in plans["pgrig"]["changes"]]
    assert [(c["name"], c["old"]) for c in applied["changes"]] == planned
    assert all(c["status"] == "changed" or c["error"] for c in applied["changes"])
    assert not (home / "host-tune.json").exists()
    for c in changed:  # each change was real, and saved with the value read before
        assert any(during[f] != before[f] for f in c["files"] if f in before), c
        assert saved is not None and set(saved["knobs"][c["name"]]) == set(c["files"])
    assert [c for c in again["changes"] if c["status"] == "changed"] == []  # idempotent
    assert json.loads(restore.stdout)["ok"] is True


@pytest.fixture(scope="module")
def lab(home: Path) -> str:
    return servers.pgbench_env("lab")


def run_json(*args: str) -> dict:
    return json.loads(pgrig("run", *args, "--json").stdout)


def test_compare_names_the_host_difference(lab: str, home: Path) -> None:
    before = kernel_values()
    swappiness = int(before["/proc/sys/vm/swappiness"])
    if swappiness <= 10:
        pytest.skip("vm.swappiness is already what host tune sets")
    load = ["-w", "pgbench:select-only", "-c", "2", "-j", "1", "-T", "3"]
    a = run_json(lab, *load)
    with restored_afterwards(before):
        pgrig("host", "tune", "--apply", "--only", "swappiness")
        b = run_json(lab, *load, "--server-cpus", "1cores", "--client-cpus", "1cores")
        pgrig("host", "restore")
    assert a["status"] == b["status"] == "ok"
    shown = json.loads(pgrig("runs", "show", str(b["id"]), "--json").stdout)
    checks = {c["name"]: c for c in shown["host"]["checks"]}
    assert checks["swappiness"]["value"] == 3 and checks["swappiness"]["status"] == "ok"
    assert checks["nofile"]["recommended"] == ">= 66 for 2 clients"
    assert checks["smt_siblings"]["value"].startswith("server 0, client 1")

    out = pgrig("runs", "compare", str(a["id"]), str(b["id"])).stdout
    assert "host differences" in out and f"swappiness: A {swappiness}, B 3" in out
    doc = json.loads(pgrig("runs", "compare", str(a["id"]), str(b["id"]), "--json").stdout)
    assert f"swappiness: A {swappiness}, B 3" in doc["host_differences"]
    assert "CPU pinning: A not pinned, B server 0, client 1" in doc["host_differences"]


def test_a_cpu_count_pins_server_and_pgbouncer(lab: str) -> None:
    from pgrig.provision import pooler
    from pgrig.provision.state.environment import Environment

    pgrig("env", "pooler", lab, "add", "pgbouncer", "--pool-size", "4")
    env = Environment.load(lab)
    bouncer = pooler.pids(env)[0]
    everywhere = os.sched_getaffinity(bouncer)
    proc = subprocess.Popen(
        ["pgrig", "run", lab, "-w", "pgbench:select-only", "-c", "4", "-j", "1", "-T", "3",
         "--via", "pooler", "--server-cpus", "1cores", "--client-cpus", "1cores", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    seen: set[frozenset[int]] = set()
    while proc.poll() is None:
        with contextlib.suppress(OSError):
            seen.add(frozenset(os.sched_getaffinity(bouncer)))
        time.sleep(0.05)
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    rec = json.loads(out)
    assert frozenset({0}) in seen  # pgbouncer ran on the server's CPU during the run
    assert os.sched_getaffinity(bouncer) == everywhere  # and was unpinned afterwards
    from pgrig.archive.store import Archive

    with Archive(None) as archive:
        extra = archive.get_run(rec["id"]).extra
    assert extra["cpus"] == {"server": "0", "client": "1", "pooler": "0"}
    pgrig("env", "pooler", lab, "remove")
