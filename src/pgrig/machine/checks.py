"""The host checks of measurement.md: each with its value, the recommendation, a status and why.

A check is a plain dict (the shared contract recorded in RunRecord.host["checks"]):
  {"name", "value", "recommended", "status": "ok" | "warn" | "unavailable", "why"}
"unavailable" says why it cannot be checked here (no cpufreq on a VM, debugfs not mounted,
/dev/cpu_dma_latency needs root): a check never fails, whatever the machine.

The kernel settings come from host.knobs (the same definitions `host tune` changes); the rest
describe the moment and the place: NUMA, SMT siblings of the pinned CPUs, open files against
the planned clients, CPU steal and busy CPU just before the run, free disk, tmpfs, uptime.
"""

from __future__ import annotations

import contextlib
import functools
import os
import resource
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pgrig.machine import cpus as cpu_topology
from pgrig.machine.knobs import BY_NAME, CSTATE_LATENCY_US, KNOBS, PROFILES, Knob, recommended
from pgrig.machine.sysfs import REAL, HostFs, read_int, read_text
from pgrig.provision.system import osuser

STATUSES = ("ok", "warn", "unavailable")
GiB = 1024**3
FD_MARGIN = 64  # descriptors beyond one per client: logs, the script files, stdio, libpq
MIN_FREE_DISK = 2 * GiB
MIN_FREE_DISK_PCT = 5.0
MIN_TMPFS = 2 * GiB  # below this, the runner writes pgbench's logs to disk, not /dev/shm
MAX_STEAL_PCT = 2.0
MAX_BUSY_PCT = 25.0
MIN_UPTIME_S = 600
NO_LATENCY_REQUEST = 2_000_000_000  # PM QoS default: nobody asked for a CPU latency limit

Check = dict[str, Any]


def check(name: str, value: Any, recommended: Any, status: str, why: str) -> Check:
    assert status in STATUSES, status
    return {"name": name, "value": value, "recommended": recommended, "status": status, "why": why}


def nofile_for_clients(clients: int) -> int:
    """Open files pgbench needs for `clients` connections (one each, plus a margin)."""
    return clients + FD_MARGIN


@dataclass
class Context:
    """What the checks look at: the machine, and the run being prepared (if any)."""

    fs: HostFs = REAL
    clients: int | None = None
    pinned: dict[str, list[int]] = field(default_factory=dict)  # side -> CPUs
    disks: list[tuple[str, Path]] = field(default_factory=list)  # (what, path)
    sample_s: float = 0.5  # CPU steal and busy share are measured over this window
    # (CPU times, monotonic s) read earlier (cpu_mark): the share is measured since then,
    # with no sleep, so a run's preparation is the window instead of a 0.5 s pause
    cpu_since: tuple[list[int], float] | None = None
    is_root: bool = field(default_factory=osuser.is_root)


def run_checks(ctx: Context) -> list[Check]:
    """Every check, in a stable order. Never raises: a broken check reports 'unavailable'."""
    out = [_safe(knob.name, functools.partial(knob_check, knob, ctx.fs)) for knob in KNOBS]
    cpu = _cpu_sample(ctx)
    more: list[tuple[str, Callable[[], Check]]] = [
        ("cpu_dma_latency", lambda: _dma_latency(ctx)),
        ("numa", lambda: _numa(ctx)),
        ("smt_siblings", lambda: _smt(ctx)),
        ("nofile", lambda: _nofile(ctx)),
        ("cpu_steal", lambda: _steal(cpu)),
        ("cpu_busy", lambda: _busy(ctx, cpu)),
        ("disk_free", lambda: _disk_free(ctx)),
        ("tmpfs_free", lambda: _tmpfs(ctx)),
        ("uptime", lambda: _uptime(ctx)),
    ]
    out += [_safe(name, fn) for name, fn in more]
    return out


def _safe(name: str, fn: Callable[[], Check]) -> Check:
    try:
        return fn()
    except Exception as e:  # a run must never fail over describing its host
        return check(name, None, None, "unavailable", f"check failed: {type(e).__name__}: {e}")


def knob_check(knob: Knob, fs: HostFs) -> Check:
    """A kernel setting against what `host tune` (profile pgrig) would make it."""
    target = PROFILES["pgrig"][knob.name]
    reading = knob.read(fs)
    rec = recommended(knob, target)
    if reading.raw is None:
        return check(knob.name, None, rec, "unavailable", f"{knob.label}: {reading.reason}")
    value = knob.show(reading.raw)
    if target.ok(reading.raw):
        return check(knob.name, value, rec, "ok", knob.why)
    offered = knob.offered(fs)
    if offered is not None and str(target.value) not in offered:
        why = f"this kernel does not offer {target.value!r} (offered: {', '.join(offered)})"
        return check(knob.name, value, rec, "unavailable", why)
    return check(knob.name, value, rec, "warn", f"{knob.why} (change: pgrig host tune)")


# --- CPU: idle latency requests, NUMA, SMT ------------------------------------------------------


def _dma_latency(ctx: Context) -> Check:
    rec = f"<= {CSTATE_LATENCY_US} us while measuring, or only shallow C-states enabled"
    why = (
        "a process holding /dev/cpu_dma_latency keeps CPUs out of deep C-states (tuned's "
        "force_latency) only while it keeps the file open; `host tune` disables deep states "
        "instead"
    )
    try:
        with open(ctx.fs.dev / "cpu_dma_latency", "rb") as f:  # reading asks for nothing
            raw = f.read(4)
    except OSError as e:
        need = " (needs root)" if isinstance(e, PermissionError) else ""
        return check("cpu_dma_latency", None, rec, "unavailable", f"{e.strerror}{need}")
    if len(raw) != 4:
        return check("cpu_dma_latency", None, rec, "unavailable", "unexpected content")
    limit = int.from_bytes(raw, "little", signed=True)
    value = "no request" if limit >= NO_LATENCY_REQUEST else f"{limit} us"
    deepest = BY_NAME["cstates"].read(ctx.fs).raw
    shallow = deepest is not None and int(deepest) <= CSTATE_LATENCY_US
    if limit <= CSTATE_LATENCY_US or shallow:
        detail = "" if limit <= CSTATE_LATENCY_US else f"; deepest idle state {deepest} us"
        return check("cpu_dma_latency", value, rec, "ok", why + detail)
    return check("cpu_dma_latency", value, rec, "warn", why)


def _pinned(ctx: Context) -> list[int]:
    return sorted({c for cpus in ctx.pinned.values() for c in cpus})


def _describe_pinning(ctx: Context) -> str:
    return ", ".join(f"{side} {cpu_topology.format_cpus(c)}" for side, c in ctx.pinned.items())


def _numa(ctx: Context) -> Check:
    rec = "one node, or every pinned CPU on one node"
    why = "memory on another node is slower: a run that spans nodes measures the interconnect"
    nodes = cpu_topology.numa_nodes(ctx.fs)
    if not nodes:
        return check("numa", None, rec, "unavailable", "no /sys/devices/system/node")
    value = "; ".join(f"node{n}: {cpu_topology.format_cpus(c) or '-'}" for n, c in nodes.items())
    if len(nodes) == 1:
        return check("numa", value, rec, "ok", why)
    balancing = read_int(ctx.fs.sysctl("kernel.numa_balancing"))
    why += f" (kernel.numa_balancing={balancing})"
    pinned = set(_pinned(ctx))
    if pinned and any(pinned <= set(c) for c in nodes.values()):
        return check("numa", value, rec, "ok", why)
    return check("numa", value, rec, "warn", why + ": pin with --server-cpus/--client-cpus")


def _smt(ctx: Context) -> Check:
    rec = "pinned CPUs on separate physical cores"
    why = (
        "SMT siblings share one core: two of them give far less than two cores, and the "
        "server and pgbench on siblings slow each other (seed 004: avoid sibling cores)"
    )
    usable = sorted(os.sched_getaffinity(0)) if ctx.fs == REAL else []
    cpus_seen = usable or [
        int(p.name[3:]) for p in ctx.fs.cpu_dir.glob("cpu[0-9]*") if p.name[3:].isdigit()
    ]
    smt = any(len(cpu_topology.siblings(c, ctx.fs)) > 1 for c in cpus_seen)
    pinned = _pinned(ctx)
    if not pinned:
        if not smt:
            return check("smt_siblings", "no SMT", rec, "ok", why)
        why += ": --server-cpus N picks one CPU per physical core"
        return check("smt_siblings", "not pinned", rec, "warn", why)
    value = _describe_pinning(ctx)
    both = _on_both_sides(ctx)
    if both:  # one CPU given to two sides shares more than a core
        return check("smt_siblings", f"{value}: CPU {both} on both sides", rec, "warn", why)
    pairs = cpu_topology.sibling_pairs(pinned, ctx.fs)
    if not pairs:
        return check("smt_siblings", f"{value}: no shared core", rec, "ok", why)
    shared = ", ".join(f"{a}+{b}" for a, b in pairs)
    return check("smt_siblings", f"{value}: siblings {shared}", rec, "warn", why)


def _on_both_sides(ctx: Context) -> str:
    """CPUs pinned for two sides at once (server and client), as a CPU list ('' if none)."""
    seen: set[int] = set()
    both: set[int] = set()
    for cpus in ctx.pinned.values():
        both |= seen & set(cpus)
        seen |= set(cpus)
    return cpu_topology.format_cpus(sorted(both))


# --- limits, load, space, uptime --------------------------------------------------------------


def _nofile(ctx: Context) -> Check:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    inf = resource.RLIM_INFINITY

    def show(n: int) -> str:
        return "unlimited" if n == inf else str(n)

    value = f"soft {show(soft)}, hard {show(hard)}"
    why = (
        "pgbench needs one descriptor per client (seed 003 failed above 900 clients with "
        "1,024); pgrig raises its soft limit up to the hard one itself, and as root the hard "
        "one too"
    )
    if ctx.clients is None:
        return check("nofile", value, f"clients + {FD_MARGIN}", "ok", why + " (no --clients)")
    needed = nofile_for_clients(ctx.clients)
    rec = f">= {needed} for {ctx.clients} clients"
    reachable = ctx.is_root or hard == inf or hard >= needed or soft == inf
    if reachable:
        return check("nofile", value, rec, "ok", why)
    return check("nofile", value, rec, "warn", why + ": raise the hard limit (ulimit -Hn)")


@dataclass(frozen=True)
class CpuShare:
    steal_pct: float
    busy_pct: float
    window: str  # "over 0.5 s" or "since boot"


def _cpu_times(fs: HostFs) -> list[int] | None:
    first = (read_text(fs.proc / "stat") or "").splitlines()[:1]
    if not first or not first[0].startswith("cpu "):
        return None
    fields = [int(x) for x in first[0].split()[1:9]]
    return fields if len(fields) == 8 else None


def cpu_mark(fs: HostFs = REAL) -> tuple[list[int], float] | None:
    """The CPU times now, for a later Context(cpu_since=...) (None: no cpu line)."""
    times = _cpu_times(fs)
    return (times, time.monotonic()) if times is not None else None


MIN_MARKED_S = 0.2  # a mark younger than this is topped up by sleeping to sample_s


def _cpu_sample(ctx: Context) -> CpuShare | None:
    """Steal and busy share over `sample_s`, or since ctx.cpu_since (the run's preparation,
    no sleep); since boot when no window or no ticks."""
    if ctx.cpu_since is not None and time.monotonic() - ctx.cpu_since[1] >= MIN_MARKED_S:
        before: list[int] | None = ctx.cpu_since[0]
        elapsed = time.monotonic() - ctx.cpu_since[1]
        after = _cpu_times(ctx.fs)
        window = f"over the {elapsed:.1f} s before the run"
    else:
        before = _cpu_times(ctx.fs)
        if before is None:
            return None
        after = None
        if ctx.sample_s > 0:
            time.sleep(ctx.sample_s)
            after = _cpu_times(ctx.fs)
        window = f"over {ctx.sample_s:g} s"
    if before is None:
        return None
    d = [b - a for a, b in zip(before, after, strict=True)] if after else []
    if not d or sum(d) <= 0:
        d, window = before, "since boot"
    total = sum(d)
    if total <= 0:
        return None
    # user nice system idle iowait irq softirq steal
    busy = d[0] + d[1] + d[2] + d[5] + d[6] + d[7]
    return CpuShare(100.0 * d[7] / total, 100.0 * busy / total, window)


def _steal(cpu: CpuShare | None) -> Check:
    rec = f"< {MAX_STEAL_PCT:g}%"
    why = "CPU time the hypervisor gave to other guests (noisy neighbours): 8th field of cpu"
    if cpu is None:
        return check("cpu_steal", None, rec, "unavailable", "no cpu line in /proc/stat")
    value = f"{cpu.steal_pct:.1f}% {cpu.window}"
    status = "ok" if cpu.steal_pct < MAX_STEAL_PCT else "warn"
    return check("cpu_steal", value, rec, status, why)


def _busy(ctx: Context, cpu: CpuShare | None) -> Check:
    rec = f"< {MAX_BUSY_PCT:g}% busy before the run"
    why = (
        "other work on the host takes CPU from the benchmark; the load average is shown but "
        "lags by minutes (a previous run keeps it high), so the status uses the CPU share"
    )
    load = (read_text(ctx.fs.proc / "loadavg") or "").split()[:3]
    load_text = f"load {' '.join(load)}" if load else "no load average"
    if cpu is None:
        return check("cpu_busy", load_text, rec, "unavailable", "no cpu line in /proc/stat")
    value = f"{cpu.busy_pct:.0f}% busy {cpu.window}; {load_text}"
    status = "ok" if cpu.busy_pct < MAX_BUSY_PCT else "warn"
    return check("cpu_busy", value, rec, status, why)


def _disk_free(ctx: Context) -> Check:
    rec = f">= {MIN_FREE_DISK // GiB} GiB and {MIN_FREE_DISK_PCT:g}% free"
    why = "a full disk stops the server mid-run; nearly full filesystems also write slower"
    by_device: dict[int, tuple[list[str], Path]] = {}
    for what, path in ctx.disks:
        where = existing_parent(path)
        with contextlib.suppress(OSError):
            by_device.setdefault(where.stat().st_dev, ([], where))[0].append(what)
    if not by_device:
        return check("disk_free", None, rec, "unavailable", "no path to check")
    parts, status = [], "ok"
    for whats, where in by_device.values():
        usage = shutil.disk_usage(where)
        pct = 100.0 * usage.free / usage.total if usage.total else 0.0
        parts.append(f"{', '.join(whats)} ({where}): {usage.free / GiB:.1f} GiB free ({pct:.0f}%)")
        if usage.free < MIN_FREE_DISK or pct < MIN_FREE_DISK_PCT:
            status = "warn"
    return check("disk_free", "; ".join(parts), rec, status, why)


def existing_parent(path: Path) -> Path:
    """The path, or its nearest existing parent (a data directory not created yet)."""
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def _tmpfs(ctx: Context) -> Check:
    shm = ctx.fs.dev / "shm"
    rec = f">= {MIN_TMPFS // GiB} GiB free"
    why = (
        "pgbench's per-transaction logs go to /dev/shm; without room they go to disk, which "
        "cost pgbench 7-13% of its throughput here"
    )
    try:
        st = os.statvfs(shm)
    except OSError as e:
        return check("tmpfs_free", None, rec, "unavailable", f"{shm}: {e.strerror}")
    free = st.f_bavail * st.f_frsize
    value = f"{free / GiB:.1f} GiB free of {st.f_blocks * st.f_frsize / GiB:.1f} GiB"
    return check("tmpfs_free", value, rec, "ok" if free >= MIN_TMPFS else "warn", why)


def _uptime(ctx: Context) -> Check:
    rec = f">= {MIN_UPTIME_S // 60} min"
    why = "just after boot, start-up jobs (updates, indexing, timers) run and caches are cold"
    text = (read_text(ctx.fs.proc / "uptime") or "").split()
    if not text:
        return check("uptime", None, rec, "unavailable", "no /proc/uptime")
    seconds = int(float(text[0]))
    hours, rest = divmod(seconds, 3600)
    value = f"{hours} h {rest // 60} min"
    return check("uptime", value, rec, "ok" if seconds >= MIN_UPTIME_S else "warn", why)
