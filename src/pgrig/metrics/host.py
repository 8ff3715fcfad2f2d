"""Facts about the machine a run happened on, and the host checks of measurement.md.

Every fact is read defensively: a missing file, an unreadable sysctl or a failing call gives
None for that fact and never an exception, because a run must not fail over its description.
host_warnings() turns the facts into plain-language notes (governor not "performance",
transparent huge pages "always", ...) for reports.
"""

from __future__ import annotations

import os
import platform
import resource
import shutil
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import psutil

T = TypeVar("T")

_SYSCTLS = {
    "vm_swappiness": "vm/swappiness",
    "vm_dirty_background_bytes": "vm/dirty_background_bytes",
    "vm_dirty_bytes": "vm/dirty_bytes",
    "vm_dirty_background_ratio": "vm/dirty_background_ratio",
    "vm_dirty_ratio": "vm/dirty_ratio",
    "vm_overcommit_memory": "vm/overcommit_memory",
    "kernel_sched_autogroup_enabled": "kernel/sched_autogroup_enabled",
    "kernel_sched_migration_cost_ns": "kernel/sched_migration_cost_ns",
}


def _safe(fn: Callable[[], T]) -> T | None:
    try:
        return fn()
    except Exception:
        return None


def _text(path: str | Path) -> str | None:
    try:
        return Path(path).read_text(errors="replace").strip()
    except OSError:
        return None


def _int(path: str | Path) -> int | None:
    text = _text(path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _bracketed(path: str | Path) -> str | None:
    """'always [madvise] never' -> 'madvise' (the chosen one of a /sys choice file)."""
    text = _text(path)
    if text is None:
        return None
    for word in text.split():
        if word.startswith("[") and word.endswith("]"):
            return word[1:-1]
    return text


def cpu_model(proc: str = "/proc") -> str | None:
    text = _text(f"{proc}/cpuinfo") or ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "Hardware", "cpu model"):
            return value.strip()
    return platform.processor() or None


def os_release(etc: str = "/etc") -> str | None:
    text = _text(f"{etc}/os-release") or _text("/usr/lib/os-release")
    if not text:
        return None
    for line in text.splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"')
    return None


def scaling_governor(sys_root: str = "/sys") -> str | None:
    """The CPU frequency governor(s), e.g. 'performance' or 'powersave,performance'; None
    when the machine exposes no cpufreq (common in VMs)."""
    found = sorted(
        {
            g
            for p in Path(sys_root, "devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_governor")
            if (g := _text(p))
        }
    )
    return ",".join(found) or None


def turbo_enabled(sys_root: str = "/sys") -> bool | None:
    no_turbo = _int(Path(sys_root, "devices/system/cpu/intel_pstate/no_turbo"))
    if no_turbo is not None:
        return no_turbo == 0
    boost = _int(Path(sys_root, "devices/system/cpu/cpufreq/boost"))
    return None if boost is None else boost == 1


def cpu_steal_pct(proc: str = "/proc") -> float | None:
    """Share of CPU time stolen by the hypervisor since boot (8th field of /proc/stat's cpu)."""
    text = _text(f"{proc}/stat")
    if not text or not text.startswith("cpu "):
        return None
    fields = [int(x) for x in text.splitlines()[0].split()[1:9]]
    total = sum(fields)
    return 100.0 * fields[7] / total if total and len(fields) >= 8 else None


def mount_of(path: Path) -> dict[str, Any]:
    """The filesystem holding `path`: the partition with the longest matching mount point."""
    target = _existing(path)
    best = None
    for part in _safe(lambda: psutil.disk_partitions(all=True)) or []:
        mp = part.mountpoint.rstrip("/") or "/"
        if (str(target) == mp or str(target).startswith(mp.rstrip("/") + "/")) and (
            best is None or len(mp) > len(best.mountpoint.rstrip("/") or "/")
        ):
            best = part
    usage = _safe(lambda: shutil.disk_usage(target))
    return {
        "path": str(path),
        "fs_type": best.fstype if best else None,
        "mount_point": best.mountpoint if best else None,
        "device": best.device if best else None,
        "mount_options": best.opts if best else None,
        "disk_total_bytes": usage.total if usage else None,
        "disk_free_bytes": usage.free if usage else None,
    }


def _existing(path: Path) -> Path:
    """The path resolved, or its nearest existing parent (a datadir not created yet)."""
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return _safe(p.resolve) or p


def _pgrig_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("pgrig")
    except Exception:
        from pgrig import __version__

        return __version__


def host_facts(datadir: Path | None = None) -> dict[str, Any]:
    """Everything RunRecord.host holds. Never raises; unknown facts are None."""
    facts: dict[str, Any] = {
        "hostname": _safe(socket.gethostname),
        "cpu_model": _safe(cpu_model),
        "cpu_logical": _safe(lambda: psutil.cpu_count(logical=True)),
        "cpu_physical": _safe(lambda: psutil.cpu_count(logical=False)),
        "cpus_allowed": _safe(lambda: len(os.sched_getaffinity(0))),
        "smt_active": _safe(lambda: _int("/sys/devices/system/cpu/smt/active")),
        "numa_nodes": _safe(
            lambda: len(list(Path("/sys/devices/system/node").glob("node[0-9]*"))) or None
        ),
        "ram_bytes": _safe(lambda: psutil.virtual_memory().total),
        "swap_bytes": _safe(lambda: psutil.swap_memory().total),
        "kernel": _safe(platform.release),
        "os_release": _safe(os_release),
        "arch": _safe(platform.machine),
        "python": sys.version.split()[0],
        "pgrig": _safe(_pgrig_version),
        "cpu_governor": _safe(scaling_governor),
        "cpu_turbo": _safe(turbo_enabled),
        "thp_enabled": _safe(lambda: _bracketed("/sys/kernel/mm/transparent_hugepage/enabled")),
        "thp_defrag": _safe(lambda: _bracketed("/sys/kernel/mm/transparent_hugepage/defrag")),
        "ulimit_nofile": _safe(lambda: resource.getrlimit(resource.RLIMIT_NOFILE)[0]),
        "ulimit_nofile_hard": _safe(lambda: resource.getrlimit(resource.RLIMIT_NOFILE)[1]),
        "load_avg": _safe(lambda: [round(x, 2) for x in os.getloadavg()]),
        "cpu_steal_pct_since_boot": _safe(cpu_steal_pct),
        "boot_time": _safe(psutil.boot_time),
    }
    for key, rel in _SYSCTLS.items():
        facts[key] = _safe(lambda rel=rel: _int(Path("/proc/sys", rel)))
    where = datadir if datadir is not None else Path("/")
    mount = _safe(lambda: mount_of(Path(where))) or {}
    facts["data"] = mount
    return facts


def host_warnings(facts: dict[str, Any], clients: int | None = None) -> list[str]:
    """Host settings that make results noisier or slower, per measurement.md (tuned's
    postgresql profile: governor performance, THP never, swappiness low, autogroup off)."""
    out: list[str] = []
    gov = facts.get("cpu_governor")
    if gov and gov != "performance":
        out.append(f"CPU scaling governor is {gov!r}, not 'performance'")
    if facts.get("thp_enabled") == "always":
        out.append("transparent huge pages are 'always' (PostgreSQL prefers 'never' or madvise)")
    swappiness = facts.get("vm_swappiness")
    if swappiness is not None and swappiness > 10:
        out.append(f"vm.swappiness is {swappiness} (tuned's postgresql profile uses 3)")
    if facts.get("kernel_sched_autogroup_enabled") == 1:
        out.append("kernel.sched_autogroup_enabled is 1 (0 recommended for servers)")
    nofile = facts.get("ulimit_nofile")
    if clients is not None and nofile is not None and nofile < clients + 64:
        out.append(f"ulimit -n is {nofile}, too low for {clients} clients")
    steal = facts.get("cpu_steal_pct_since_boot")
    if steal is not None and steal >= 1.0:
        out.append(f"CPU steal is {steal:.1f}% since boot (noisy neighbours)")
    load = facts.get("load_avg")
    cpus = facts.get("cpus_allowed") or facts.get("cpu_logical")
    if load and cpus and load[0] > 0.5 * cpus:
        out.append(f"load average {load[0]} before the run on {cpus} CPUs: the host is busy")
    free = (facts.get("data") or {}).get("disk_free_bytes")
    if free is not None and free < 2 * 1024**3:
        out.append(f"only {free / 1024**3:.1f} GiB free on the data directory's filesystem")
    return out
