"""OsSampler rates and levels from fake /proc and /sys trees with known deltas."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from pgrig.metrics import os_metrics
from pgrig.metrics.os_metrics import OsSampler, fixed_pids, physical_disks, pids_from_file

TICK = os_metrics.CLK_TCK


class Clock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def write(path: Path, text: str) -> None:
    """Rewrite in place (same inode): the sampler keeps /proc files open and re-reads them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def proc_stat(cpu: list[int], ctxt: int) -> str:
    return (
        "cpu  " + " ".join(map(str, cpu)) + "\n"
        "cpu0 " + " ".join(map(str, cpu)) + "\n"
        "intr 12345 1 2 3\n"
        f"ctxt {ctxt}\nbtime 1700000000\nprocesses 500\nprocs_running 3\nprocs_blocked 1\n"
    )


def meminfo(total_kb: int, avail_kb: int, cached_kb: int = 300, buffers_kb: int = 20) -> str:
    return (
        f"MemTotal:       {total_kb} kB\nMemFree:        100 kB\n"
        f"MemAvailable:   {avail_kb} kB\nBuffers:        {buffers_kb} kB\n"
        f"Cached:         {cached_kb} kB\nSwapCached:     0 kB\nShmem:          128 kB\n"
        "SwapTotal:      2048 kB\nSwapFree:       1024 kB\nHugePages_Total:       0\n"
    )


def diskline(name: str, r_ios: int, r_sec: int, w_ios: int, w_sec: int, busy_ms: int) -> str:
    return f"   8       0 {name} {r_ios} 0 {r_sec} 0 {w_ios} 0 {w_sec} 0 0 {busy_ms} 0 0 0 0 0 0\n"


def diskstats(scale: int) -> str:
    # vda is the one physical disk; its partition, a loop device and dm-0 (on top of vda)
    # carry the same I/O again and must not be added.
    return (
        diskline("vda", 10 * scale, 2048 * scale, 20 * scale, 4096 * scale, 500 * scale)
        + diskline("vda1", 10 * scale, 2048 * scale, 20 * scale, 4096 * scale, 500 * scale)
        + diskline("loop0", 99 * scale, 999 * scale, 99 * scale, 999 * scale, 9 * scale)
        + diskline("dm-0", 10 * scale, 2048 * scale, 20 * scale, 4096 * scale, 500 * scale)
    )


@pytest.fixture
def fake(tmp_path: Path) -> tuple[Path, Path]:
    proc, sys = tmp_path / "proc", tmp_path / "sys"
    write(proc / "stat", proc_stat([100, 0, 50, 800, 10, 0, 0, 0, 0, 0], 1000))
    write(proc / "meminfo", meminfo(1000, 400))
    write(proc / "diskstats", diskstats(1))
    (sys / "devices/pci0000:00/virtio1/block/vda").mkdir(parents=True)
    (sys / "devices/virtual/block/loop0").mkdir(parents=True)
    (sys / "devices/virtual/block/dm-0").mkdir(parents=True)
    (sys / "block").mkdir()
    (sys / "block/vda").symlink_to("../devices/pci0000:00/virtio1/block/vda")
    (sys / "block/loop0").symlink_to("../devices/virtual/block/loop0")
    (sys / "block/dm-0").symlink_to("../devices/virtual/block/dm-0")
    return proc, sys


def test_physical_disks_exclude_partitions_loop_and_device_mapper(fake):
    _, sys = fake
    assert physical_disks(str(sys)) == {"vda"}


def test_physical_disks_fallback_by_name_without_sys(tmp_path):
    names = ["sda", "sda1", "nvme0n1", "nvme0n1p2", "loop3", "dm-1", "md0", "zram0", "vdb"]
    assert physical_disks(str(tmp_path / "nosys"), names) == {"sda", "nvme0n1", "vdb"}


def test_cpu_memory_disk_rates_from_deltas(fake):
    proc, sys = fake
    clock = Clock()
    s = OsSampler(proc=str(proc), sys=str(sys), clock=clock)
    assert s.disks == {"vda"}
    # 2 seconds later: user+60 nice+20 system+20 idle+100 iowait+20 irq+5 softirq+5 steal+10
    write(proc / "stat", proc_stat([160, 20, 70, 900, 30, 5, 5, 10, 3, 0], 3000))
    write(proc / "meminfo", meminfo(1000, 400))
    write(proc / "diskstats", diskstats(3))
    clock.t += 2.0
    row = s.sample()
    total = 240
    assert row["cpu_user"] == pytest.approx(100 * 80 / total)
    assert row["cpu_system"] == pytest.approx(100 * 30 / total)
    assert row["cpu_iowait"] == pytest.approx(100 * 20 / total)
    assert row["cpu_idle"] == pytest.approx(100 * 100 / total)
    assert row["cpu_steal"] == pytest.approx(100 * 10 / total)
    assert sum(
        row[k] for k in ("cpu_user", "cpu_system", "cpu_iowait", "cpu_idle", "cpu_steal")
    ) == (pytest.approx(100.0))
    assert row["ctx_switches"] == pytest.approx(1000.0)
    assert row["procs_running"] == 3 and row["procs_blocked"] == 1
    assert row["mem_used_bytes"] == 600 * 1024
    assert row["mem_available_bytes"] == 400 * 1024
    assert row["mem_cached_bytes"] == 320 * 1024
    assert row["mem_shmem_bytes"] == 128 * 1024
    assert row["swap_used_bytes"] == 1024 * 1024
    # vda only: +20 reads, +4096 sectors, +40 writes, +8192 sectors, +1000 ms busy in 2 s
    assert row["disk_read_iops"] == pytest.approx(10.0)
    assert row["disk_read_bytes"] == pytest.approx(4096 * 512 / 2)
    assert row["disk_write_iops"] == pytest.approx(20.0)
    assert row["disk_write_bytes"] == pytest.approx(8192 * 512 / 2)
    assert row["disk_busy_pct"] == pytest.approx(50.0)
    # nothing moved: rates are zero, levels stay
    clock.t += 1.0
    row = s.sample()
    assert row["cpu_user"] is None  # no CPU time passed at all: undefined, not 0
    assert row["ctx_switches"] == 0 and row["disk_read_bytes"] == 0
    assert row["mem_used_bytes"] == 600 * 1024
    s.close()


def test_counters_going_backwards_never_give_negative_rates(fake):
    proc, sys = fake
    clock = Clock()
    s = OsSampler(proc=str(proc), sys=str(sys), clock=clock)
    write(proc / "diskstats", diskstats(0))
    clock.t += 1.0
    row = s.sample()
    assert row["disk_read_bytes"] == 0 and row["disk_write_iops"] == 0


def test_missing_proc_files_give_none_not_errors(tmp_path):
    s = OsSampler(proc=str(tmp_path / "none"), sys=str(tmp_path / "none"))
    row = s.sample()
    for key in os_metrics.OS_COLUMNS:
        assert row[key] is None, key
    s.close()


def test_long_proc_stat_is_read_whole(fake):
    proc, sys = fake
    clock = Clock()
    s = OsSampler(proc=str(proc), sys=str(sys), clock=clock)
    big_intr = "intr " + " ".join(["7"] * 20000) + "\n"
    write(proc / "stat", proc_stat([110, 0, 50, 890, 10, 0, 0, 0, 0, 0], 1500) + big_intr)
    text = (proc / "stat").read_text()
    write(
        proc / "stat", text.replace("ctxt 1500\n", "").replace(big_intr, big_intr + "ctxt 1500\n")
    )
    clock.t += 1.0
    assert s.sample()["ctx_switches"] == pytest.approx(500.0)


# --- per-process CPU ---------------------------------------------------------------------------
def stat_line(pid: int, utime: int, stime: int, cutime: int, cstime: int, start: int) -> str:
    # field 2 may hold spaces and parentheses; fields 3.. follow the last ')'
    fields = ["S", "1", str(pid), str(pid), "0", "-1", "4194560", "0", "0", "0", "0"]
    fields += [str(utime), str(stime), str(cutime), str(cstime), "20", "0", "1", "0", str(start)]
    return f"{pid} (post gres: (x)) " + " ".join(fields + ["0"] * 30) + "\n"


def set_proc(proc: Path, pid: int, *, stat: str, children: list[int] | None = None) -> None:
    write(proc / str(pid) / "stat", stat)
    if children is not None:
        write(proc / str(pid) / "task" / str(pid) / "children", " ".join(map(str, children)))


def set_kid(proc: Path, pid: int, ns: int) -> None:
    write(proc / str(pid) / "schedstat", f"{ns} 1000 7\n")


@pytest.fixture
def procs(fake):
    """A fake postmaster 100 (started at boot+1 s) with two backends 101 and 102."""
    proc, sys = fake
    write(proc / "self" / "schedstat", "1 1 1\n")  # this kernel has schedstat
    set_proc(proc, 100, stat=stat_line(100, 50, 50, 0, 0, TICK), children=[101, 102])
    set_kid(proc, 101, 1_000_000_000)
    set_kid(proc, 102, 200_000_000)
    return proc, sys


def test_group_cpu_counts_live_new_and_reaped_children_once(procs):
    proc, sys = procs
    clock, boot = Clock(), Clock(5000.0)
    s = OsSampler(proc=str(proc), sys=str(sys), clock=clock, boot_clock=boot)
    s.track_processes("server", fixed_pids(100))
    clock.t += 1.0
    boot.t += 1.0
    first = s.sample()
    # the postmaster is older than the interval: its CPU before it is unknown
    assert first["proc_server_cpu"] is None
    assert first["proc_server_count"] == 3
    # next second: the postmaster's own CPU +10 ticks (0.1 s); backend 101 +0.5 s; 102 exits
    # after 0.3 s in all (0.2 s of it already seen) and is reaped into cutime; 103 appears
    # with 0.05 s. Total 0.1 + 0.5 + (0.3 - 0.2) + 0.05 = 0.75 s in 1 s = 75% of a core.
    set_proc(proc, 100, stat=stat_line(100, 55, 55, int(0.3 * TICK), 0, TICK), children=[101, 103])
    set_kid(proc, 101, 1_500_000_000)
    set_kid(proc, 103, 50_000_000)
    (proc / "102" / "schedstat").unlink()
    clock.t += 1.0
    boot.t += 1.0
    row = s.sample()
    assert row["proc_server_cpu"] == pytest.approx(75.0)
    assert row["proc_server_count"] == 3
    # a short-lived backend that was never seen alive (pgbench -C) still counts via cutime
    set_proc(proc, 100, stat=stat_line(100, 55, 55, int(0.5 * TICK), 0, TICK), children=[101, 103])
    clock.t += 1.0
    row = s.sample()
    assert row["proc_server_cpu"] == pytest.approx(20.0)
    s.close()


def test_other_cpu_is_all_process_cpu_minus_the_tracked_groups(procs):
    proc, sys = procs
    clock, boot = Clock(), Clock(5000.0)
    s = OsSampler(proc=str(proc), sys=str(sys), clock=clock, boot_clock=boot)
    assert "proc_other_cpu" not in s.sample()  # nothing tracked: no "other" to speak of
    s.track_processes("server", fixed_pids(100))
    clock.t += 1.0
    boot.t += 1.0
    assert s.sample()["proc_other_cpu"] is None  # the server's share is unknown in this row
    # 2 s later: user +1.2 s, nice +0.1 s, system +0.5 s, irq +0.2 s, softirq +0.3 s (charged
    # to no process: left out), idle +1 s. The server used 0.2 + 0.6 = 0.8 s. Other processes:
    # (1.2 + 0.1 + 0.5 - 0.8) s over 2 s = 50% of one core.
    t = TICK
    cpu = [100 + int(1.2 * t), int(0.1 * t), 50 + t // 2, 800 + t, 10, int(0.2 * t), int(0.3 * t)]
    write(proc / "stat", proc_stat([*cpu, 0, 0, 0], 1000))
    set_proc(proc, 100, stat=stat_line(100, 60, 60, 0, 0, TICK), children=[101, 102])
    set_kid(proc, 101, 1_600_000_000)
    set_kid(proc, 102, 200_000_000)
    clock.t += 2.0
    boot.t += 2.0
    row = s.sample()
    assert row["proc_server_cpu"] == pytest.approx(40.0)
    assert row["proc_other_cpu"] == pytest.approx(50.0)
    # the groups can never make "other" negative (tick rounding between the two sources)
    set_kid(proc, 101, 9_000_000_000)
    clock.t += 1.0
    boot.t += 1.0
    assert s.sample()["proc_other_cpu"] == 0.0
    with pytest.raises(ValueError):
        s.track_processes("other", fixed_pids(1))
    s.close()


def test_process_started_during_the_interval_counts_from_its_start(procs):
    proc, sys = procs
    clock, boot = Clock(), Clock(5000.0)
    s = OsSampler(proc=str(proc), sys=str(sys), clock=clock, boot_clock=boot)
    # pgbench (pid 200, two threads summed in its stat) started after the previous sample
    set_proc(proc, 200, stat=stat_line(200, 30, 10, 0, 0, int(5000.5 * TICK)))
    s.track_processes("pgbench", fixed_pids(200), children=False)
    clock.t += 1.0
    boot.t += 1.0
    row = s.sample()
    assert row["proc_pgbench_cpu"] == pytest.approx(40.0)
    assert row["proc_pgbench_count"] == 1
    # it exits: no process, no CPU
    (proc / "200" / "stat").unlink()
    clock.t += 1.0
    boot.t += 1.0
    row = s.sample()
    assert row["proc_pgbench_cpu"] == 0.0 and row["proc_pgbench_count"] == 0


def test_pid_callable_that_fails_gives_none(procs):
    proc, sys = procs

    def broken() -> list[int]:
        raise RuntimeError("no pid file")

    s = OsSampler(proc=str(proc), sys=str(sys))
    s.track_processes("x", broken)
    row = s.sample()
    assert row["proc_x_cpu"] is None and row["proc_x_count"] is None
    s.untrack("x")
    assert "proc_x_cpu" not in s.sample()


def test_children_cpu_from_stat_without_schedstat(fake):
    proc, sys = fake  # no proc/self/schedstat: children read from their stat
    set_proc(proc, 100, stat=stat_line(100, 0, 0, 0, 0, TICK), children=[101])
    set_proc(proc, 101, stat=stat_line(101, 10, 0, 0, 0, 2 * TICK))
    clock, boot = Clock(), Clock(5000.0)
    s = OsSampler(proc=str(proc), sys=str(sys), clock=clock, boot_clock=boot)
    s.track_processes("server", fixed_pids(100))
    clock.t += 1.0
    s.sample()
    set_proc(proc, 101, stat=stat_line(101, 35, 0, 0, 0, 2 * TICK))
    clock.t += 1.0
    assert s.sample()["proc_server_cpu"] == pytest.approx(25.0)


def test_track_processes_rejects_bad_names(fake):
    proc, sys = fake
    s = OsSampler(proc=str(proc), sys=str(sys))
    with pytest.raises(ValueError):
        s.track_processes("bad name", fixed_pids(1))


def test_pids_from_file(tmp_path):
    f = tmp_path / "postmaster.pid"
    assert pids_from_file(f)() == []
    f.write_text("4242\n/data\n1700000000\n5432\n")
    assert pids_from_file(f)() == [4242]
    f.write_text("garbage\n")
    assert pids_from_file(f)() == []


def test_on_this_host_rows_are_sane():
    """Smoke test on the real /proc of the machine running the tests."""
    s = OsSampler()
    s.track_processes("me", fixed_pids(os.getpid()), children=False)
    time.sleep(0.1)  # let some clock ticks pass: with none, CPU shares are undefined (None)
    row = s.sample()
    s.close()
    for key in ("cpu_user", "cpu_idle", "mem_used_bytes", "mem_available_bytes", "ctx_switches"):
        assert row[key] is not None and row[key] >= 0, key
    assert 0 <= row["cpu_idle"] <= 100
    assert row["proc_me_count"] == 1
