"""host_facts never fails and reads what it can; host_warnings applies measurement.md's checks."""

from __future__ import annotations

from collections import namedtuple
from pathlib import Path

from pgrig.metrics import host
from pgrig.metrics.host import host_facts, host_warnings, mount_of

Part = namedtuple("Part", "device mountpoint fstype opts")


def test_host_facts_on_this_machine(tmp_path):
    facts = host_facts(tmp_path / "not" / "created" / "yet")
    for key in (
        "hostname",
        "cpu_model",
        "cpu_logical",
        "cpu_physical",
        "ram_bytes",
        "kernel",
        "os_release",
        "python",
        "pgrig",
        "cpu_governor",
        "thp_enabled",
        "vm_swappiness",
        "vm_dirty_background_bytes",
        "vm_dirty_bytes",
        "vm_dirty_ratio",
        "vm_dirty_background_ratio",
        "kernel_sched_autogroup_enabled",
        "ulimit_nofile",
        "load_avg",
        "cpu_steal_pct_since_boot",
        "data",
    ):
        assert key in facts, key
    assert facts["cpu_logical"] >= 1 and facts["ram_bytes"] > 0
    assert facts["data"]["fs_type"] and facts["data"]["disk_free_bytes"] > 0
    assert host_facts(None)["data"]["mount_point"] == "/"


def test_longest_mount_prefix_wins(monkeypatch, tmp_path):
    parts = [
        Part("/dev/vda", "/", "ext4", "rw"),
        Part("tmpfs", str(tmp_path), "tmpfs", "rw"),
        Part("/dev/x", str(tmp_path) + "-other", "xfs", "rw"),  # a prefix, not a parent
        Part("/dev/y", str(tmp_path / "data"), "xfs", "rw"),
    ]
    monkeypatch.setattr(host.psutil, "disk_partitions", lambda all=False: parts)
    (tmp_path / "data" / "pg").mkdir(parents=True)
    assert mount_of(tmp_path / "data" / "pg")["fs_type"] == "xfs"
    assert mount_of(tmp_path / "elsewhere")["fs_type"] == "tmpfs"
    assert mount_of(Path("/usr"))["fs_type"] == "ext4"


def test_unreadable_facts_are_none(monkeypatch, tmp_path):
    def boom(*a, **k):
        raise OSError("nope")

    monkeypatch.setattr(host.psutil, "disk_partitions", boom)
    monkeypatch.setattr(host.psutil, "virtual_memory", boom)
    facts = host_facts(tmp_path)
    assert facts["ram_bytes"] is None
    assert facts["data"]["fs_type"] is None
    assert host.cpu_steal_pct(str(tmp_path)) is None
    assert host.scaling_governor(str(tmp_path)) is None
    assert host.turbo_enabled(str(tmp_path)) is None


def test_choice_files_and_governors(tmp_path):
    f = tmp_path / "enabled"
    f.write_text("always [madvise] never\n")
    assert host._bracketed(f) == "madvise"
    for cpu, gov in (("cpu0", "performance"), ("cpu1", "powersave")):
        d = tmp_path / "devices/system/cpu" / cpu / "cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_governor").write_text(gov + "\n")
    assert host.scaling_governor(str(tmp_path)) == "performance,powersave"


def test_warnings():
    facts = {
        "cpu_governor": "powersave",
        "thp_enabled": "always",
        "vm_swappiness": 60,
        "kernel_sched_autogroup_enabled": 1,
        "ulimit_nofile": 1024,
        "cpu_steal_pct_since_boot": 3.0,
        "load_avg": [3.5, 1.0, 0.5],
        "cpus_allowed": 2,
        "data": {"disk_free_bytes": 1024**3},
    }
    text = " | ".join(host_warnings(facts, clients=1000))
    for part in ("powersave", "transparent huge pages", "swappiness", "autogroup", "ulimit -n"):
        assert part in text
    assert "steal" in text and "load average" in text and "GiB free" in text
    assert host_warnings({}) == []
