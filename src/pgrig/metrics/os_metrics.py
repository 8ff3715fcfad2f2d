"""Host CPU, memory, disk and per-process CPU, read straight from /proc once per sample.

Why /proc and not psutil: measured on the reference machine (bench/sampler_overhead.py), one
row costs about 0.1 ms of CPU reading the files through kept-open descriptors (pread at offset
0 regenerates a /proc file), against about 0.25 ms through psutil, and psutil's way of finding
a process's children scans every /proc/<pid>/stat (2 ms with 110 processes) where the kernel's
/proc/<pid>/task/<pid>/children lists them directly. Linux only, like the servers pgrig runs.

Every call returns one row of per-second rates over the time since the previous call, plus
levels (memory). The first call after construction gives rates since construction.
Conventions (they add up to 100 like top's us+ni / sy+hi+si / id / wa / st):
  cpu_user = user + nice, cpu_system = system + irq + softirq, cpu_iowait, cpu_idle, cpu_steal,
  all in % of all CPUs; mem_used_bytes = MemTotal - MemAvailable; mem_cached_bytes = Cached +
  Buffers (note: PostgreSQL's shared_buffers is shared memory, counted in Cached and in
  mem_shmem_bytes); disk_* summed over whole physical disks only (no partitions, loop, zram,
  device-mapper or md devices, which would count the same I/O twice).
Per-process CPU (track_processes) is in % of ONE core, like top, so client and server shares
can be compared directly: proc_<name>_cpu and proc_<name>_count (processes alive). With any
group tracked, proc_other_cpu is everything else: the CPU all processes used (user + nice +
system of /proc/stat, without irq and softirq time, which the kernel charges to no process)
minus the tracked groups, also in % of one core (a busy neighbour, see metrics/cpu_share.py).
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

SECTOR = 512  # /proc/diskstats counts 512-byte sectors whatever the device's block size
CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

# Units of the columns OsSampler.sample() returns (process columns: see module docstring).
OS_COLUMNS: dict[str, str] = {
    "cpu_user": "%",
    "cpu_system": "%",
    "cpu_iowait": "%",
    "cpu_idle": "%",
    "cpu_steal": "%",
    "mem_used_bytes": "B",
    "mem_available_bytes": "B",
    "mem_cached_bytes": "B",
    "mem_shmem_bytes": "B",
    "swap_used_bytes": "B",
    "disk_read_bytes": "B/s",
    "disk_write_bytes": "B/s",
    "disk_read_iops": "1/s",
    "disk_write_iops": "1/s",
    "disk_busy_pct": "%",
    "ctx_switches": "1/s",
    "procs_running": "count",
    "procs_blocked": "count",
}

# Names that are never whole physical disks, for machines without a readable /sys/block.
_NOT_A_DISK = re.compile(
    r"^(loop|ram|zram|dm-|md|sr|fd|nbd)\d*|"
    r"^(sd[a-z]+|vd[a-z]+|xvd[a-z]+|hd[a-z]+)\d+$|^(nvme\d+n\d+|mmcblk\d+)p\d+$"
)

OTHER = "other"  # proc_other_cpu: processes in no tracked group

_Row = dict[str, float | None]
_CpuRead = tuple[list[int], int, int, int]  # cpu line fields, ctxt, procs_running, blocked
_DiskRead = tuple[int, int, int, int, dict[str, int]]  # ios/sectors read/written, busy ms

_CPU_FIELDS = ("cpu_user", "cpu_system", "cpu_iowait", "cpu_idle", "cpu_steal")
_DISK_FIELDS = (
    "disk_read_bytes",
    "disk_write_bytes",
    "disk_read_iops",
    "disk_write_iops",
    "disk_busy_pct",
)


def physical_disks(sys_root: str = "/sys", names: Iterable[str] = ()) -> set[str]:
    """Whole physical disks: /sys/block entries not under /sys/devices/virtual.

    Partitions never appear in /sys/block; loop, zram, dm-* and md* are virtual. Without a
    readable /sys/block, fall back to a name pattern over `names` (from /proc/diskstats).
    """
    block = Path(sys_root) / "block"
    try:
        entries = list(block.iterdir())
    except OSError:
        return {n for n in names if not _NOT_A_DISK.match(n)}
    out = {e.name for e in entries if "/virtual/" not in os.path.realpath(e)}
    return out or {n for n in names if not _NOT_A_DISK.match(n)}


class _ProcFile:
    """A /proc file kept open and re-read with pread (cheaper than open/read/close)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.size = 16384
        self.fd: int | None = None

    def read(self) -> bytes | None:
        try:
            if self.fd is None:
                self.fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            while True:
                data = os.pread(self.fd, self.size, 0)
                if len(data) < self.size:
                    return data
                self.size *= 2  # /proc/stat's intr line can be long on big machines
        except OSError:
            self.close()
            return None

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None


def _read(path: str) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, 65536)
    except OSError:
        return None
    finally:
        os.close(fd)


def pids_from_file(path: str | Path) -> Callable[[], list[int]]:
    """A pids callable for track_processes: the pid on the first line of a file.

    For a postmaster: pids_from_file(datadir / "postmaster.pid"). A missing or unreadable
    file gives no pid (the group reads 0 processes, not an error).
    """
    p = str(path)

    def pids() -> list[int]:
        data = _read(p)
        if not data:
            return []
        first = data.split(b"\n", 1)[0].strip()
        return [int(first)] if first.isdigit() else []

    return pids


def fixed_pids(*pids: int) -> Callable[[], list[int]]:
    """A pids callable for track_processes: always the same pids (e.g. a Popen's pid)."""
    frozen = list(pids)
    return lambda: frozen


@dataclass
class _Group:
    """One tracked set of processes: roots from a callable, optionally their direct children.

    Accounting over an interval, exact even for very short-lived children (pgbench -C opens
    one backend per transaction): the roots' own CPU (/proc/<pid>/stat utime+stime, all
    threads) + the CPU of children the roots reaped (cutime+cstime grow by a child's whole
    lifetime when it is reaped) + live children's CPU (/proc/<pid>/schedstat, ns) - the part
    of reaped children already counted while they were alive.
    """

    name: str
    pids: Callable[[], Iterable[int]]
    children: bool
    roots: dict[int, tuple[int, int]] = field(default_factory=dict)  # pid -> (own, reaped) ticks
    kids: dict[int, tuple[int, int]] = field(default_factory=dict)  # pid -> (parent, ns)


class OsSampler:
    """One row of host rates/levels per call to sample(); see the module docstring."""

    name = "os"
    sparse_prefixes: tuple[str, ...] = ()
    # Children whose schedstat file stays open between samples; more are opened per sample.
    max_open_files = 512

    def __init__(
        self,
        *,
        proc: str = "/proc",
        sys: str = "/sys",
        disks: Iterable[str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        boot_clock: Callable[[], float] | None = None,
    ) -> None:
        """proc/sys: where /proc and /sys are (tests point them at fake trees); disks: the
        devices to sum (default: whole physical disks); clock: for rates; boot_clock:
        seconds since boot, for telling processes started during an interval."""
        self._clock = clock
        self._boot_clock = boot_clock or _boottime
        self._proc = proc
        self._stat = _ProcFile(f"{proc}/stat")
        self._meminfo = _ProcFile(f"{proc}/meminfo")
        self._diskstats = _ProcFile(f"{proc}/diskstats")
        if disks is None:
            names = self._disk_names()
            self._disks = physical_disks(sys, names)
        else:
            self._disks = set(disks)
        self._groups: dict[str, _Group] = {}
        self._kid_files: dict[int, _ProcFile] = {}
        self._schedstat = os.path.exists(f"{proc}/self/schedstat")
        self._prev_t = clock()
        self._prev_cpu = self._read_cpu()
        self._prev_disk = self._read_disks()
        self._prev_boot = self._boot_clock()

    # --- configuration -----------------------------------------------------------------------
    @property
    def disks(self) -> set[str]:
        return set(self._disks)

    def track_processes(
        self, name: str, pids: Callable[[], Iterable[int]], *, children: bool = True
    ) -> None:
        """Report CPU of the processes `pids()` returns (re-evaluated each sample).

        children=True adds their direct children (a postmaster's backends and workers).
        Columns: proc_<name>_cpu (% of one core) and proc_<name>_count. Safe to call while a
        Sampler thread is running. CPU is None for a row in which a process older than the
        previous sample is first seen (its earlier CPU is unknown): so the first row after
        tracking an old process, not one just started (pgbench tracked right after Popen).
        """
        if not re.fullmatch(r"[A-Za-z0-9_]+", name) or name == OTHER:
            raise ValueError(
                f"process group name must be letters, digits or _, not {OTHER!r}: {name!r}"
            )
        self._groups = {**self._groups, name: _Group(name, pids, children)}

    def untrack(self, name: str) -> None:
        self._groups = {k: g for k, g in self._groups.items() if k != name}

    def close(self) -> None:
        for f in (self._stat, self._meminfo, self._diskstats, *self._kid_files.values()):
            f.close()
        self._kid_files = {}

    # --- sampling ------------------------------------------------------------------------------
    def sample(self) -> dict[str, float | None]:
        now = self._clock()
        dt = now - self._prev_t
        row: dict[str, float | None] = {}
        cpu = self._read_cpu()
        self._cpu_row(row, self._prev_cpu, cpu, dt)
        self._mem_row(row)
        disk = self._read_disks()
        self._disk_row(row, self._prev_disk, disk, dt)
        boot = self._boot_clock()
        tracked: list[float | None] = []
        for g in self._groups.values():
            cpu_pct, count = self._group_cpu(g, dt, self._prev_boot)
            row[f"proc_{g.name}_cpu"] = cpu_pct
            row[f"proc_{g.name}_count"] = count
            tracked.append(cpu_pct)
        if tracked:
            busy = _process_cpu_pct(self._prev_cpu, cpu, dt)
            known = [v for v in tracked if v is not None]
            other = None  # unknown while any part is
            if busy is not None and len(known) == len(tracked):
                other = max(0.0, busy - sum(known))
            row[f"proc_{OTHER}_cpu"] = other
        self._prev_t, self._prev_cpu, self._prev_disk, self._prev_boot = now, cpu, disk, boot
        return row

    # --- /proc/stat ----------------------------------------------------------------------------
    def _read_cpu(self) -> _CpuRead | None:
        """(cpu line fields, ctxt, procs_running, procs_blocked) or None."""
        data = self._stat.read()
        if not data:
            return None
        fields: list[int] = []
        ctxt = running = blocked = -1
        for line in data.split(b"\n"):
            if line.startswith(b"cpu "):
                fields = [int(x) for x in line.split()[1:]]
            elif line.startswith(b"ctxt "):
                ctxt = int(line[5:])
            elif line.startswith(b"procs_running "):
                running = int(line[14:])
            elif line.startswith(b"procs_blocked "):
                blocked = int(line[14:])
        if len(fields) < 4:
            return None
        fields += [0] * (8 - len(fields))
        return fields, ctxt, running, blocked

    @staticmethod
    def _cpu_row(row: _Row, prev: _CpuRead | None, cur: _CpuRead | None, dt: float) -> None:
        if cur is None:
            for k in (*_CPU_FIELDS, "ctx_switches", "procs_running", "procs_blocked"):
                row[k] = None
            return
        f, ctxt, running, blocked = cur
        row["procs_running"] = running if running >= 0 else None
        row["procs_blocked"] = blocked if blocked >= 0 else None
        if prev is None:
            for k in (*_CPU_FIELDS, "ctx_switches"):
                row[k] = None
            return
        p = prev[0]
        # user nice system idle iowait irq softirq steal (guest is already inside user/nice)
        d = [max(0, f[i] - p[i]) for i in range(8)]
        total = sum(d)
        if total <= 0:
            for k in _CPU_FIELDS:
                row[k] = None
        else:
            scale = 100.0 / total
            row["cpu_user"] = (d[0] + d[1]) * scale
            row["cpu_system"] = (d[2] + d[5] + d[6]) * scale
            row["cpu_iowait"] = d[4] * scale
            row["cpu_idle"] = d[3] * scale
            row["cpu_steal"] = d[7] * scale
        row["ctx_switches"] = (
            (ctxt - prev[1]) / dt if dt > 0 and ctxt >= 0 and prev[1] >= 0 else None
        )

    # --- /proc/meminfo -------------------------------------------------------------------------
    def _mem_row(self, row: dict) -> None:
        data = self._meminfo.read()
        m: dict[bytes, int] = {}
        if data:
            for line in data.split(b"\n"):
                key, _, rest = line.partition(b":")
                if key in _MEMINFO_KEYS:
                    m[key] = int(rest.split()[0]) * 1024
        total, avail = m.get(b"MemTotal"), m.get(b"MemAvailable")
        row["mem_used_bytes"] = total - avail if total is not None and avail is not None else None
        row["mem_available_bytes"] = avail
        cached, buffers = m.get(b"Cached"), m.get(b"Buffers")
        row["mem_cached_bytes"] = cached + (buffers or 0) if cached is not None else None
        row["mem_shmem_bytes"] = m.get(b"Shmem")
        st, sf = m.get(b"SwapTotal"), m.get(b"SwapFree")
        row["swap_used_bytes"] = st - sf if st is not None and sf is not None else None

    # --- /proc/diskstats -----------------------------------------------------------------------
    def _disk_names(self) -> list[str]:
        data = self._diskstats.read() or b""
        return [ln.split()[2].decode() for ln in data.split(b"\n") if len(ln.split()) > 2]

    def _read_disks(self) -> _DiskRead | None:
        """Sums over physical disks (read ios, read sectors, write ios, write sectors) and
        each disk's io_ticks (ms spent busy) for the busiest-disk %."""
        data = self._diskstats.read()
        if data is None:
            return None
        r_ios = r_sec = w_ios = w_sec = 0
        busy: dict[str, int] = {}
        disks = self._disks
        for line in data.split(b"\n"):
            parts = line.split()
            if len(parts) < 13:
                continue
            name = parts[2].decode()
            if name not in disks:
                continue
            r_ios += int(parts[3])
            r_sec += int(parts[5])
            w_ios += int(parts[7])
            w_sec += int(parts[9])
            busy[name] = int(parts[12])
        return r_ios, r_sec, w_ios, w_sec, busy

    @staticmethod
    def _disk_row(row: _Row, prev: _DiskRead | None, cur: _DiskRead | None, dt: float) -> None:
        if prev is None or cur is None or dt <= 0:
            for k in _DISK_FIELDS:
                row[k] = None
            return
        row["disk_read_iops"] = max(0, cur[0] - prev[0]) / dt
        row["disk_read_bytes"] = max(0, cur[1] - prev[1]) * SECTOR / dt
        row["disk_write_iops"] = max(0, cur[2] - prev[2]) / dt
        row["disk_write_bytes"] = max(0, cur[3] - prev[3]) * SECTOR / dt
        pb, cb = prev[4], cur[4]
        busy = [cb[n] - pb[n] for n in cb if n in pb]
        row["disk_busy_pct"] = min(100.0, max(busy) / (dt * 10.0)) if busy else None

    # --- processes -----------------------------------------------------------------------------
    def _group_cpu(self, g: _Group, dt: float, prev_boot: float) -> tuple[float | None, int | None]:
        try:
            roots = {int(p) for p in g.pids()}
        except Exception:  # a user callable: never let it break the row
            return None, None
        # Children lists before the roots' stat: a child reaped in between is then both
        # in the parent's cutime and absent below, so it is counted exactly once.
        listed = {pid: _children(self._proc, pid) for pid in roots} if g.children else {}
        ticks = 0  # CPU since the previous sample, clock ticks
        ns = 0  # same, nanoseconds
        new_roots: dict[int, tuple[int, int]] = {}
        known = True  # False when a process older than the interval is seen for the first time
        for pid in roots:
            st = _proc_stat_times(self._proc, pid)
            if st is None:
                continue
            own, reaped, start = st
            new_roots[pid] = (own, reaped)
            old = g.roots.get(pid)
            if old is not None:
                ticks += max(0, own - old[0]) + max(0, reaped - old[1])
            elif start / CLK_TCK >= prev_boot:
                ticks += own + reaped  # started during the interval: all of it is new
            else:
                known = False  # its CPU before this interval is unknown: a baseline only
        new_kids: dict[int, tuple[int, int]] = {}
        if g.children:
            for parent in new_roots:
                for kid in listed.get(parent, ()):
                    val = self._kid_ns(kid)
                    if val is None:
                        continue
                    new_kids[kid] = (parent, val)
                    old_kid = g.kids.get(kid)
                    if old_kid is not None:
                        ns += max(0, val - old_kid[1])
                    else:
                        ns += val  # appeared since the previous listing (or row unknown)
            for kid, (parent, val) in g.kids.items():
                if kid not in new_kids and parent in new_roots and parent in g.roots:
                    ns -= val  # reaped: its whole life is in the parent's cutime now
            self._forget_kids(g, new_kids)
        g.roots, g.kids = new_roots, new_kids
        count = len(new_roots) + len(new_kids)
        if not known or dt <= 0:
            return None, count
        seconds = ticks / CLK_TCK + ns / 1e9
        return max(0.0, seconds / dt * 100.0), count

    def _forget_kids(self, g: _Group, alive: dict[int, tuple[int, int]]) -> None:
        """Close the kept-open files of this group's children that are gone."""
        for kid in g.kids:
            if kid not in alive:
                f = self._kid_files.pop(kid, None)
                if f is not None:
                    f.close()

    def _kid_ns(self, pid: int) -> int | None:
        """A child's CPU time in ns: /proc/<pid>/schedstat through a kept-open file (up to
        max_open_files of them), or /proc/<pid>/stat on kernels without schedstat."""
        if not self._schedstat:
            st = _proc_stat_times(self._proc, pid)
            return st[0] * 1_000_000_000 // CLK_TCK if st else None
        f = self._kid_files.get(pid)
        if f is None:
            f = _ProcFile(f"{self._proc}/{pid}/schedstat")
            data = f.read()
            if len(self._kid_files) < self.max_open_files and data:
                self._kid_files[pid] = f
            else:
                f.close()
        else:
            data = f.read()
            if not data:
                del self._kid_files[pid]
        try:
            return int(data.split(None, 1)[0]) if data else None
        except (ValueError, IndexError):
            return None


def _process_cpu_pct(prev: _CpuRead | None, cur: _CpuRead | None, dt: float) -> float | None:
    """CPU time all processes used over the interval (user + nice + system ticks of the cpu
    line), in % of one core; None when either read failed."""
    if prev is None or cur is None or dt <= 0:
        return None
    busy = sum(max(0, cur[0][i] - prev[0][i]) for i in (0, 1, 2))
    return busy / CLK_TCK / dt * 100.0


_MEMINFO_KEYS = {
    b"MemTotal",
    b"MemAvailable",
    b"Cached",
    b"Buffers",
    b"Shmem",
    b"SwapTotal",
    b"SwapFree",
}


def _boottime() -> float:
    """Seconds since boot, the clock /proc/<pid>/stat's starttime is measured on."""
    try:
        return time.clock_gettime(time.CLOCK_BOOTTIME)
    except (AttributeError, OSError):
        return time.monotonic()


def _proc_stat_times(proc: str, pid: int) -> tuple[int, int, int] | None:
    """(utime+stime, cutime+cstime, starttime) in clock ticks, from /proc/<pid>/stat."""
    data = _read(f"{proc}/{pid}/stat")
    if not data:
        return None
    # the command name (field 2) may contain spaces and parentheses: split after the last ')'
    rest = data[data.rfind(b")") + 2 :].split()
    try:
        # rest[0] is field 3 (state): utime is field 14 -> rest[11]; starttime field 22
        return int(rest[11]) + int(rest[12]), int(rest[13]) + int(rest[14]), int(rest[19])
    except (IndexError, ValueError):
        return None


def _children(proc: str, pid: int) -> list[int]:
    """Direct children of a single-threaded process (its main thread's children list)."""
    data = _read(f"{proc}/{pid}/task/{pid}/children")
    if not data:
        return []
    return [int(x) for x in data.split()]
