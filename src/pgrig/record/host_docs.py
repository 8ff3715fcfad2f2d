"""RunRecord.host and RunRecord.disk_limit: the machine the server ran on and its disk limit."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from typing_extensions import TypedDict

__all__ = [
    "CheckStatus",
    "DataMount",
    "DiskDeviceDoc",
    "DiskLimitDoc",
    "HostCheck",
    "HostDoc",
    "host_cpus",
]


CheckStatus = Literal["ok", "warn", "unavailable"]


class HostCheck(TypedDict, total=False):
    """One host check at the start of a run (machine/checks.py)."""

    name: str
    value: Any  # what was found (a number, a word, a list of CPUs)
    recommended: Any
    status: CheckStatus
    why: str


class DataMount(TypedDict, total=False):
    """The filesystem of the data directory (machine/facts.mount_of); unknown facts are None."""

    path: str
    fs_type: str | None
    mount_point: str | None
    device: str | None
    mount_options: str | None
    disk_total_bytes: int | None
    disk_free_bytes: int | None


class DiskDeviceDoc(TypedDict, total=False):
    """One disk under a disk limit: what it holds and what its throttle files held."""

    device: str  # "254:0"
    name: str  # "vda"
    holds: list[str]  # "data directory", "WAL"
    in_force: dict[str, int]  # the limits read back (keys as in `limit`)


class DiskLimitDoc(TypedDict, total=False):
    """RunRecord.disk_limit: the environment's disk limit at the start of the run and what
    the kernel held of it (provision/server/disk_throttle.in_force). None on the record: not
    recorded (runs before schema revision 0005, or servers pgrig does not run here)."""

    limit: dict[str, int]  # riops, wiops, rbps, wbps; {}: no limit
    text: str  # "wiops=300,wbps=50MB" or "none"
    in_force: bool | None  # all of it held by the kernel (None: no limit)
    mechanism: str  # "cgroup v1 blkio throttle" | "cgroup v2 io.max"
    cgroup: str
    devices: list[DiskDeviceDoc]
    server_in_cgroup: bool
    processes_outside: int
    problems: list[str]  # why it is not in force
    reapplied_because: list[str]  # found not in force at the run's start, so put back first
    not_throttled: str  # what this mechanism does not limit
    damaged: bool  # env show: the environment's record of its limit cannot be read


class HostDoc(TypedDict, total=False):
    """RunRecord.host: the machine the server ran on (machine/facts.py); unknown facts are None.

    A record read from a list (not the whole run) holds only hostname and cpus.
    """

    hostname: str | None
    cpu_model: str | None
    cpu_logical: int | None
    cpu_physical: int | None
    cpus_allowed: int | None
    cpus: int | None  # what a listed record keeps of the CPU facts
    ram_bytes: int | None
    swap_bytes: int | None
    vm_overcommit_memory: int | None
    kernel: str | None
    os_release: str | None
    arch: str | None
    python: str
    pgrig: str | None
    boot_time: float | None
    data: DataMount  # the data directory's mount
    checks: list[HostCheck]


# Light records carry "cpus"; full host facts "cpu_logical", else the CPUs pgrig may use.
CPU_KEYS = ("cpus", "cpu_logical", "cpus_allowed", "cpu_count")


def host_cpus(host: Mapping[str, Any] | None) -> int | None:
    """Logical CPUs of a run's host (the comparison, the runs page and the CSV say the same)."""
    for key in CPU_KEYS:
        v = (host or {}).get(key)
        if isinstance(v, int | float) and not isinstance(v, bool):
            return int(v)
    return None
