"""PGTune (le0pard) for Linux: the settings it computes for a workload, RAM, CPUs and storage,
each with its rule, in PGTune's output order (reference/tuning.md)."""

from __future__ import annotations

import math

from pgrig.errors import PgrigError
from pgrig.provision.settings.formula import (
    KB_PER_GB,
    KB_PER_MB,
    WORKLOADS,
    FormulaResult,
    format_kb,
)

_PGTUNE_CONNECTIONS = {"web": 200, "oltp": 300, "dw": 40, "desktop": 20, "mixed": 100}
_PGTUNE_WAL = {  # (min_wal_size, max_wal_size) in kB
    "web": (1024 * KB_PER_MB, 4096 * KB_PER_MB),
    "oltp": (2048 * KB_PER_MB, 8192 * KB_PER_MB),
    "dw": (4096 * KB_PER_MB, 16384 * KB_PER_MB),
    "desktop": (100 * KB_PER_MB, 2048 * KB_PER_MB),
    "mixed": (1024 * KB_PER_MB, 4096 * KB_PER_MB),
}
_PGTUNE_EIO = {"hdd": 2, "ssd": 200, "san": 300, "nvme": 1000}
_PGTUNE_WORK_MEM_DIVISOR = {"web": 1, "oltp": 1, "dw": 2, "mixed": 2, "desktop": 6}


def pgtune(
    workload: str,
    major: int,
    ram_bytes: int,
    cpus: int,
    storage: str = "ssd",
    max_connections: int | None = None,
    io_uring: bool = False,
) -> FormulaResult:
    """PGTune (le0pard, 2026) for Linux, in its output order.

    Integer kB arithmetic with floors, exactly as PGTune does it; see reference/tuning.md.
    """
    if workload not in WORKLOADS:
        raise PgrigError(f"unknown PGTune workload {workload!r}: use one of {', '.join(WORKLOADS)}")
    out = FormulaResult(notes=_pgtune_warnings(ram_bytes))
    ram_kb = ram_bytes // 1024
    conns = max_connections or _PGTUNE_CONNECTIONS[workload]
    out.add("max_connections", str(conns), "as given" if max_connections else f"{workload} default")
    desktop = workload == "desktop"
    sb = ram_kb // 16 if desktop else ram_kb // 4
    out.add("shared_buffers", format_kb(sb), "RAM/16 (desktop)" if desktop else "RAM/4")
    ecs = ram_kb // 4 if desktop else ram_kb * 3 // 4
    out.add("effective_cache_size", format_kb(ecs), "RAM/4 (desktop)" if desktop else "3/4 RAM")
    mwm = ram_kb // 8 if workload == "dw" else ram_kb // 16
    mwm_rule = "RAM/8 (dw)" if workload == "dw" else "RAM/16"
    if mwm >= 8 * KB_PER_GB:
        mwm, mwm_rule = 8 * KB_PER_GB, mwm_rule + ", capped at 8GB"
    out.add("maintenance_work_mem", format_kb(mwm), mwm_rule)
    out.add("checkpoint_completion_target", "0.9", "PGTune constant")
    out.add("wal_buffers", *_pgtune_wal_buffers(sb))
    dst = 500 if workload == "dw" else 100
    out.add("default_statistics_target", str(dst), f"{dst} for {workload}")
    if storage == "hdd" or workload == "dw":
        out.add("random_page_cost", "4", "4 for hdd storage or dw")
    else:
        out.add("random_page_cost", "1.1", f"1.1 for {storage}")
    eio = _PGTUNE_EIO[storage]
    out.add("effective_io_concurrency", str(eio), f"{eio} for {storage} (Linux)")

    parallel: list[tuple[str, str, str]] = []
    workers, workers_rule = 8, "8, the default max_worker_processes"
    if cpus >= 4:
        half = math.ceil(cpus / 2)
        per_gather = half if workload == "dw" else min(half, 4)
        gather_rule = "ceil(CPUs/2)" + (" (dw: no cap)" if workload == "dw" else ", capped at 4")
        parallel = [
            ("max_worker_processes", str(cpus), "CPUs (4 or more)"),
            ("max_parallel_workers_per_gather", str(per_gather), gather_rule),
            ("max_parallel_workers", str(cpus), "CPUs"),
            ("max_parallel_maintenance_workers", str(min(half, 4)), "ceil(CPUs/2), capped at 4"),
        ]
        workers, workers_rule = cpus, "max_worker_processes"
    else:
        out.notes.append(f"no parallel settings: PGTune sets them only with 4+ CPUs (have {cpus})")

    divisor = _PGTUNE_WORK_MEM_DIVISOR[workload]
    work_mem = math.floor((ram_kb - sb) / ((conns + workers) * 3) / divisor)
    wm_rule = f"(RAM - shared_buffers) / ((max_connections + {workers_rule}) * 3)"
    if divisor != 1:
        wm_rule += f" / {divisor} ({workload})"
    if work_mem < 4 * KB_PER_MB:
        work_mem, wm_rule = 4 * KB_PER_MB, wm_rule + ": below the 4MB floor"
    out.add("work_mem", format_kb(work_mem), wm_rule)
    if sb >= 2 * KB_PER_GB:
        out.add("huge_pages", "try", "shared_buffers >= 2GB")
    else:
        out.add("huge_pages", "off", "shared_buffers < 2GB")
    if workload in ("web", "oltp", "mixed"):
        out.add("jit", "off", f"JIT slows short queries ({workload})")
    if major >= 15:
        out.add("wal_compression", "lz4", "lz4 on PostgreSQL 15+")
    else:
        out.add("wal_compression", "on", "pglz: lz4 needs PostgreSQL 15+")
    if major >= 18:
        if io_uring:
            out.add("io_method", "io_uring", "Linux with PostgreSQL 18, build has liburing")
        else:
            out.skipped["io_method"] = "io_uring"
            out.notes.append(
                "skipped io_method = io_uring: this build's io_uring (liburing) support is not "
                "confirmed; the default io_method = worker stays"
            )
    minw, maxw = _PGTUNE_WAL[workload]
    out.add("min_wal_size", format_kb(minw), f"{workload}")
    out.add("max_wal_size", format_kb(maxw), f"{workload}")
    for entry in parallel:
        out.add(*entry)
    return out


def _pgtune_wal_buffers(sb_kb: int) -> tuple[str, str]:
    """3% of shared_buffers; max 16MB, values in (14MB, 16MB) round up to 16MB; min 32kB."""
    wb = 3 * sb_kb // 100
    rule = "3% of shared_buffers"
    if wb > 16 * KB_PER_MB:
        wb, rule = 16 * KB_PER_MB, rule + ", capped at 16MB"
    elif 14 * KB_PER_MB < wb < 16 * KB_PER_MB:
        wb, rule = 16 * KB_PER_MB, rule + ", between 14MB and 16MB: rounded up to 16MB"
    if wb < 32:
        wb, rule = 32, rule + ", raised to the 32kB minimum"
    return format_kb(wb), rule


def _pgtune_warnings(ram_bytes: int) -> list[str]:
    if ram_bytes < 256 * 1024**2:
        return ["PGTune is not meant for systems with less than 256MB of RAM"]
    if ram_bytes > 100 * 1024**3:
        return ["PGTune is not meant for systems with more than 100GB of RAM"]
    return []
