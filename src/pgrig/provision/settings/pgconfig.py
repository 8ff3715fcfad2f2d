"""pgconfig.org: the settings it computes for a workload, RAM, CPUs and storage, each with its
rule, sizes rounded as pgconfig.org shows them (reference/tuning.md)."""

from __future__ import annotations

import math

from pgrig.errors import PgrigError
from pgrig.provision.settings.formula import IO_WORKERS_MAX, WORKLOADS, FormulaResult

_PGCONFIG_SHARE = {"web": 1.0, "oltp": 1.0, "dw": 1.0, "mixed": 0.5, "desktop": 0.2}
_PGCONFIG_WORK_MEM = {"web": 0.25, "oltp": 0.35, "dw": 0.5, "mixed": 0.2, "desktop": 0.1}
_PGCONFIG_IO_FACTOR = {"desktop": 0.1, "web": 0.2, "mixed": 0.25, "oltp": 0.3, "dw": 0.4}
_PGCONFIG_EIO = {"ssd": 200, "san": 300, "hdd": 2, "nvme": 200}


def format_bytes_rounded(n: float) -> str:
    """pgconfig.org's display rule: round to the nearest whole unit below 1024 of it."""
    for unit, size in (("TB", 1024**4), ("GB", 1024**3), ("MB", 1024**2)):
        if n >= size:
            return f"{round(n / size)}{unit}"
    return f"{max(1, round(n / 1024))}kB"


def pgconfig(
    workload: str,
    major: int,
    ram_bytes: int,
    cpus: int,
    storage: str = "ssd",
    max_connections: int | None = None,
) -> FormulaResult:
    """pgconfig.org formulas (reference/tuning.md), sizes rounded as pgconfig.org shows them."""
    if workload not in WORKLOADS:
        raise PgrigError(
            f"unknown pgconfig workload {workload!r}: use one of {', '.join(WORKLOADS)}"
        )
    out = FormulaResult()
    share = _PGCONFIG_SHARE[workload]
    r = ram_bytes * share
    r_name = "RAM" if share == 1 else f"R (= {share:g} x RAM for {workload})"
    conns = max_connections or 100
    rounded = ", rounded to the nearest unit"
    out.add("max_connections", str(conns), "as given" if max_connections else "pgconfig default")
    if workload == "desktop":
        out.add("shared_buffers", format_bytes_rounded(ram_bytes / 16), "RAM/16" + rounded)
    else:
        out.add("shared_buffers", format_bytes_rounded(0.25 * r), f"0.25 x {r_name}" + rounded)
    out.add("effective_cache_size", format_bytes_rounded(0.75 * r), f"0.75 x {r_name}" + rounded)
    f = _PGCONFIG_WORK_MEM[workload]
    out.add(
        "work_mem",
        format_bytes_rounded(r * f / conns),
        f"{r_name} x {f:g} / max_connections" + rounded,
    )
    out.add("maintenance_work_mem", format_bytes_rounded(0.05 * r), f"0.05 x {r_name}" + rounded)
    out.add("min_wal_size", "2GB", "pgconfig constant")
    out.add("max_wal_size", "3GB", "pgconfig constant")
    out.add("checkpoint_completion_target", "0.9", "pgconfig constant")
    out.add("random_page_cost", "4" if storage == "hdd" else "1.1", storage)
    eio_rule = storage if storage != "nvme" else "nvme has no class of its own: as ssd"
    out.add("effective_io_concurrency", str(_PGCONFIG_EIO[storage]), eio_rule)
    if major >= 18:
        factor = _PGCONFIG_IO_FACTOR[workload] + (0.1 if storage == "hdd" else 0.0)
        # round() first: 10 x 0.3 is 3.0000000000000004 in floating point, and ceil must say 3
        workers = min(max(math.ceil(round(cpus * factor, 9)), 2), cpus)
        rule = f"ceil(CPUs x {factor:g}) clamped to 2..CPUs (PostgreSQL 18)"
        if workers > IO_WORKERS_MAX:
            workers, rule = IO_WORKERS_MAX, rule + f", and to the server maximum {IO_WORKERS_MAX}"
        out.add("io_workers", str(workers), rule)
    return out
