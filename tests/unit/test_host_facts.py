"""host_facts never fails: identity facts, the data directory's filesystem and the host checks."""

from __future__ import annotations

from collections import namedtuple
from pathlib import Path

from pgrig.machine import facts
from pgrig.machine.facts import host_facts, mount_of

Part = namedtuple("Part", "device mountpoint fstype opts")


def test_host_facts_on_this_machine(tmp_path, pgrig_home):
    found = host_facts(tmp_path / "not" / "created" / "yet", clients=10, sample_s=0.05)
    for key in (
        "hostname",
        "cpu_model",
        "cpu_logical",
        "cpu_physical",
        "cpus_allowed",
        "ram_bytes",
        "kernel",
        "os_release",
        "python",
        "pgrig",
        "boot_time",
        "data",
        "checks",
    ):
        assert key in found, key
    assert found["cpu_logical"] >= 1 and found["ram_bytes"] > 0
    assert found["data"]["fs_type"] and found["data"]["disk_free_bytes"] > 0
    checks = {c["name"]: c for c in found["checks"]}
    assert len(checks) >= 12
    assert checks["nofile"]["recommended"] == ">= 74 for 10 clients"
    assert "pgrig home" in checks["disk_free"]["value"] and "data" in checks["disk_free"]["value"]
    assert host_facts(None, sample_s=0)["data"]["mount_point"] == "/"


def test_pinned_cpus_reach_the_checks(pgrig_home):
    found = host_facts(None, cpus={"server": [0]}, sample_s=0)
    smt = next(c for c in found["checks"] if c["name"] == "smt_siblings")
    assert smt["value"].startswith("server 0")


def test_longest_mount_prefix_wins(monkeypatch, tmp_path):
    parts = [
        Part("/dev/vda", "/", "ext4", "rw"),
        Part("tmpfs", str(tmp_path), "tmpfs", "rw"),
        Part("/dev/x", str(tmp_path) + "-other", "xfs", "rw"),  # a prefix, not a parent
        Part("/dev/y", str(tmp_path / "data"), "xfs", "rw"),
    ]
    monkeypatch.setattr(facts.psutil, "disk_partitions", lambda all=False: parts)
    (tmp_path / "data" / "pg").mkdir(parents=True)
    assert mount_of(tmp_path / "data" / "pg")["fs_type"] == "xfs"
    assert mount_of(tmp_path / "elsewhere")["fs_type"] == "tmpfs"
    assert mount_of(Path("/usr"))["fs_type"] == "ext4"


def test_unreadable_facts_are_none(monkeypatch, tmp_path, pgrig_home):
    def boom(*a, **k):
        raise OSError("nope")

    monkeypatch.setattr(facts.psutil, "disk_partitions", boom)
    monkeypatch.setattr(facts.psutil, "virtual_memory", boom)
    monkeypatch.setattr(facts, "run_checks", boom)
    found = host_facts(tmp_path, sample_s=0)
    assert found["ram_bytes"] is None
    assert found["data"]["fs_type"] is None
    assert found["checks"] == []
