"""What a run records about its host: who the machine is, and the host checks at that moment.

RunRecord.host = identity facts (hostname, CPU model and counts, RAM, kernel, OS, versions),
"data" (the filesystem of the data directory) and "checks" (host.checks: governor, THP,
sysctls, pinning, open files, steal, busy CPU, free space... each with its status).

Every fact is read defensively: a missing file, an unreadable value or a failing call gives
None for that fact and never an exception, because a run must not fail over its description.
"""

from __future__ import annotations

import os
import platform
import shutil
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import psutil

from pgrig import paths
from pgrig.machine.checks import Context, existing_parent, run_checks
from pgrig.machine.sysfs import read_int, read_text
from pgrig.record.documents import DataMount, HostDoc

T = TypeVar("T")


def _safe(fn: Callable[[], T]) -> T | None:
    try:
        return fn()
    except Exception:
        return None


def cpu_model(proc: str = "/proc") -> str | None:
    text = read_text(Path(proc, "cpuinfo")) or ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "Hardware", "cpu model"):
            return value.strip()
    return platform.processor() or None


def os_release(etc: str = "/etc") -> str | None:
    text = read_text(Path(etc, "os-release")) or read_text(Path("/usr/lib/os-release"))
    if not text:
        return None
    for line in text.splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"')
    return None


def mount_of(path: Path) -> DataMount:
    """The filesystem holding `path`: the partition with the longest matching mount point."""
    target = existing_parent(path)
    target = _safe(target.resolve) or target
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


def _pgrig_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("pgrig")
    except Exception:
        from pgrig import __version__

        return __version__


def host_facts(
    datadir: Path | None = None,
    *,
    clients: int | None = None,
    cpus: dict[str, list[int]] | None = None,
    sample_s: float = 0.5,
    cpu_since: tuple[list[int], float] | None = None,
) -> HostDoc:
    """Everything RunRecord.host holds (record.documents.HostDoc). Never raises; unknown facts
    are None.

    `clients` and `cpus` (pinned CPUs per side: server, client, pooler) describe the run the
    checks are for; the CPU steal and busy share are measured over `sample_s` seconds, or
    since `cpu_since` (host.checks.cpu_mark: a run marks its start, so no pause is added).
    """
    facts: dict[str, Any] = {
        "hostname": _safe(socket.gethostname),
        "cpu_model": _safe(cpu_model),
        "cpu_logical": _safe(lambda: psutil.cpu_count(logical=True)),
        "cpu_physical": _safe(lambda: psutil.cpu_count(logical=False)),
        "cpus_allowed": _safe(lambda: len(os.sched_getaffinity(0))),
        "ram_bytes": _safe(lambda: psutil.virtual_memory().total),
        "swap_bytes": _safe(lambda: psutil.swap_memory().total),
        "vm_overcommit_memory": _safe(lambda: read_int(Path("/proc/sys/vm/overcommit_memory"))),
        "kernel": _safe(platform.release),
        "os_release": _safe(os_release),
        "arch": _safe(platform.machine),
        "python": sys.version.split()[0],
        "pgrig": _safe(_pgrig_version),
        "boot_time": _safe(psutil.boot_time),
    }
    where = datadir if datadir is not None else Path("/")
    facts["data"] = _safe(lambda: mount_of(Path(where))) or {}
    disks = [("pgrig home", paths.home())] + ([("data", datadir)] if datadir else [])
    ctx = Context(
        clients=clients,
        pinned=dict(cpus or {}),
        disks=disks,
        sample_s=sample_s,
        cpu_since=cpu_since,
    )
    facts["checks"] = _safe(lambda: run_checks(ctx)) or []
    return cast(HostDoc, facts)  # probed values, each None when unknown
