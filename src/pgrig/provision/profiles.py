"""Configuration profiles: named sets of settings, kept as data (TOML), resolved per server.

A profile is a TOML file, shipped in `provision/profiles/` or written by the user in
`paths.profiles_dir()` (a user file with the same name as a shipped one overrides it). Kinds:

- ``fixed``: the `[settings]` table as written (e.g. seed 000's unsafe set, seed 001's slowest).
- ``pgtune``: PGTune (le0pard) formulas for a workload (web, oltp, dw, desktop, mixed).
- ``pgconfig``: pgconfig.org formulas for a workload (seed 000 started from its OLTP profile).

Formula profiles may add a `[settings]` table applied on top. Every emitted setting carries a
rule (why it has this value), and every setting the server's major version lacks is skipped
with a note instead of silently dropped. Values are PostgreSQL strings ('4GB', '16MB', 'on').
The exact values are validated later against the real server (`postgres -C`); this module only
knows which settings exist in which major (SETTING_MAJORS), so a profile written for 18 can be
resolved for 15 with an honest report of what was left out.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from pgrig import paths
from pgrig.errors import NotFound, PgrigError
from pgrig.request.vocabulary import SETTING_RE, valid_name

KINDS = ("fixed", "pgtune", "pgconfig")
WORKLOADS = ("web", "oltp", "dw", "desktop", "mixed")
STORAGE_KINDS = ("ssd", "hdd", "san", "nvme")
_TOP_KEYS = {"description", "kind", "workload", "source", "warning", "notes", "settings", "rules"}

KB_PER_MB = 1024
KB_PER_GB = 1024 * 1024

# Settings that do not exist in every supported major: name -> (first major, last major or None),
# written as (first, last) -> the names sharing that span.
# The 15 vs 18 differences were verified against `postgres --describe-config` of Debian's 15 and
# the 18.6 build; the split between 16 and 17 comes from the release notes. Settings not listed
# here are assumed to exist everywhere (the server's own catalogue has the last word).
_SETTING_SPANS: dict[tuple[int, int | None], str] = {
    (11, None): "jit max_parallel_maintenance_workers",
    (13, None): (
        "autovacuum_vacuum_insert_threshold autovacuum_vacuum_insert_scale_factor "
        "hash_mem_multiplier logical_decoding_work_mem maintenance_io_concurrency wal_keep_size"
    ),
    (9, 12): "wal_keep_segments",
    (9, 13): "operator_precedence_warning",
    (11, 13): "vacuum_cleanup_index_scale_factor",
    (14, None): "track_wal_io_timing client_connection_check_interval idle_session_timeout",
    (16, None): (
        "createrole_self_grant debug_io_direct debug_parallel_query enable_presorted_aggregate "
        "gss_accept_delegation icu_validation_level max_parallel_apply_workers_per_subscription "
        "reserved_connections scram_iterations vacuum_buffer_usage_limit"
    ),
    # force_parallel_mode was renamed debug_parallel_query in 16
    (9, 15): "force_parallel_mode promote_trigger_file vacuum_defer_cleanup_age",
    (17, None): (
        "allow_alter_system commit_timestamp_buffers enable_group_by_reordering event_triggers "
        "io_combine_limit max_notify_queue_pages multixact_member_buffers "
        "multixact_offset_buffers notify_buffers serializable_buffers subtransaction_buffers "
        "summarize_wal sync_replication_slots synchronized_standby_slots transaction_buffers "
        "transaction_timeout wal_summary_keep_time"
    ),
    (9, 16): "db_user_namespace old_snapshot_threshold trace_recovery_messages",
    (18, None): (
        "autovacuum_vacuum_max_threshold autovacuum_worker_slots enable_distinct_reordering "
        "enable_self_join_elimination extension_control_path file_copy_method "
        "idle_replication_slot_timeout io_max_combine_limit io_max_concurrency io_method "
        "io_workers log_lock_failures max_active_replication_origins md5_password_warnings "
        "oauth_validator_libraries ssl_groups ssl_tls13_ciphers track_cost_delay_timing "
        "vacuum_max_eager_freeze_failure_rate vacuum_truncate"
    ),
}
SETTING_MAJORS: dict[str, tuple[int, int | None]] = {
    name: span for span, names in _SETTING_SPANS.items() for name in names.split()
}

# Values (or list items) that only some majors accept: (setting, value) -> first major.
VALUE_MAJORS: dict[tuple[str, str], int] = {
    ("log_destination", "jsonlog"): 15,
    ("wal_compression", "lz4"): 15,
    ("wal_compression", "zstd"): 15,
    ("io_method", "io_uring"): 18,
}

# Memory minimums that changed between majors: setting -> [(from major, minimum kB)], newest
# first. Verified with `postgres --describe-config` (15: 1024 kB, 18: 64 kB); lowered in 17.
# A value below the minimum is raised to it (with a note), keeping the profile's intent.
MIN_KB_BY_MAJOR: dict[str, list[tuple[int, int]]] = {
    "maintenance_work_mem": [(17, 64), (0, 1024)],
}
IO_WORKERS_MAX = 32  # io_workers range is 1..32 in 18 (describe-config)
_UNIT_KB = {"kb": 1, "mb": KB_PER_MB, "gb": KB_PER_GB, "tb": KB_PER_GB * 1024}


@dataclass(frozen=True)
class ProfileInfo:
    """What `pgrig profile list` shows about one profile."""

    name: str
    kind: str
    description: str
    source: str  # "shipped" or "user"
    path: str
    workload: str | None = None
    warning: str | None = None


@dataclass
class ResolvedProfile:
    """A profile computed for one server: settings, the rule behind each, and what was left out."""

    name: str
    kind: str
    major: int
    inputs: dict[str, Any]
    settings: dict[str, str] = field(default_factory=dict)
    rules: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # name -> value not applied
    notes: list[str] = field(default_factory=list)  # warnings, skipped settings, caveats
    warning: str | None = None

    def note_lines(self) -> list[str]:
        """Warnings and skips first, then one 'name = value: rule' line per setting."""
        lines = list(self.notes)
        lines += [
            f"{k} = {v}: {self.rules.get(k, '')}".rstrip(": ") for k, v in self.settings.items()
        ]
        return lines


@dataclass
class FormulaResult:
    """What a formula computes: (setting, value, rule) in output order, plus what it left out."""

    settings: list[tuple[str, str, str]] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, key: str, value: str, rule: str) -> None:
        self.settings.append((key, value, rule))


@dataclass
class _Profile:
    info: ProfileInfo
    settings: dict[str, str]
    rules: dict[str, str]
    notes: list[str]
    overrides_shipped: bool = False


# --- public API ------------------------------------------------------------------------------
def list_profiles() -> list[ProfileInfo]:
    """All profiles, shipped and user-defined (a user file shadows a shipped one), by name."""
    return [p.info for _, p in sorted(_all_profiles().items())]


def resolve_profile(
    name: str,
    major: int,
    ram_bytes: int | None = None,
    cpus: int | None = None,
    storage: str = "ssd",
    max_connections: int | None = None,
    io_uring: bool = False,
) -> tuple[dict[str, str], list[str]]:
    """Settings for `name` on a server of `major`, plus notes explaining rules and skips.

    RAM and CPUs default to this host's. `io_uring`: the caller has checked that the server
    build supports io_method=io_uring (liburing); without it the PGTune io_method line is skipped.
    """
    r = explain_profile(name, major, ram_bytes, cpus, storage, max_connections, io_uring)
    return dict(r.settings), r.note_lines()


def explain_profile(
    name: str,
    major: int,
    ram_bytes: int | None = None,
    cpus: int | None = None,
    storage: str = "ssd",
    max_connections: int | None = None,
    io_uring: bool = False,
) -> ResolvedProfile:
    """Like resolve_profile, but keeps the rule per setting apart (for tables and JSON)."""
    ram, ncpu = _validate_inputs(major, ram_bytes, cpus, storage, max_connections)
    prof = _find(name)
    info = prof.info
    res = ResolvedProfile(
        name=info.name,
        kind=info.kind,
        major=major,
        inputs={
            "ram_bytes": ram,
            "cpus": ncpu,
            "storage": storage,
            "max_connections": max_connections,
            "io_uring": io_uring,
        },
        warning=info.warning,
    )
    if info.warning:
        res.notes.append(f"WARNING: {info.warning}")
    if prof.overrides_shipped:
        res.notes.append(f"user profile {info.path} overrides the shipped profile {info.name}")
    res.notes += prof.notes

    computed = FormulaResult()
    if info.kind == "pgtune":
        computed = pgtune(info.workload or "", major, ram, ncpu, storage, max_connections, io_uring)
    elif info.kind == "pgconfig":
        computed = pgconfig(info.workload or "", major, ram, ncpu, storage, max_connections)
    res.notes += computed.notes
    res.skipped.update(computed.skipped)
    for key, value, rule in computed.settings:
        _add(res, key, value, rule)
    for key, value in prof.settings.items():
        rule = prof.rules.get(key, f"set by profile {info.name}")
        if key in res.settings or key in res.skipped:
            rule = f"{rule} (overrides the formula)"
            res.settings.pop(key, None)
            res.skipped.pop(key, None)
        _add(res, key, value, rule)
    if not res.settings and not res.skipped:
        res.notes.append("no settings: PostgreSQL defaults apply")
    return res


def setting_available(name: str, major: int) -> bool:
    """Whether a setting exists in `major` as far as SETTING_MAJORS knows."""
    first, last = SETTING_MAJORS.get(name, (0, None))
    return major >= first and (last is None or major <= last)


def parse_size(text: str) -> int:
    """'16GB', '512MB', '1.5TB', '8192kB' -> bytes (1024-based, like PostgreSQL). Unit required."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT])i?[bB]\s*", text)
    if not m:
        raise PgrigError(f"bad size {text!r}: use a number with a unit, e.g. 16GB, 512MB")
    factor = {"k": 1, "m": 2, "g": 3, "t": 4}[m.group(2).lower()]
    value = int(float(m.group(1)) * 1024**factor)
    if value <= 0:
        raise PgrigError(f"bad size {text!r}: must be positive")
    return value


def format_kb(kb: int) -> str:
    """PGTune's display rule: the largest unit (GB, MB, kB) that loses no resolution."""
    if kb % KB_PER_GB == 0:
        return f"{kb // KB_PER_GB}GB"
    if kb % KB_PER_MB == 0:
        return f"{kb // KB_PER_MB}MB"
    return f"{kb}kB"


def io_uring_supported(bindir: str | Path, major: int) -> bool:
    """Whether a PostgreSQL build can use io_method=io_uring: 18+ and linked with liburing.

    Looks for liburing among the `postgres` binary's library names instead of running it
    (the 18.6 build in use here has none: the server then only accepts sync and worker).
    """
    if major < 18:
        return False
    try:
        return b"liburing.so" in (Path(bindir) / "postgres").read_bytes()
    except OSError:
        return False


def host_ram_bytes() -> int:
    import psutil

    return int(psutil.virtual_memory().total)


def host_cpus() -> int:
    return os.cpu_count() or 1


# --- PGTune ----------------------------------------------------------------------------------
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


# --- pgconfig.org ----------------------------------------------------------------------------
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


# --- internals -------------------------------------------------------------------------------
def _add(res: ResolvedProfile, key: str, value: str, rule: str) -> None:
    """Add one setting, or record why it is skipped (absent in this major, unsupported value)."""
    first, last = SETTING_MAJORS.get(key, (0, None))
    if res.major < first or (last is not None and res.major > last):
        where = f"added in {first}" if res.major < first else f"removed after {last}"
        res.skipped[key] = value
        res.notes.append(f"skipped {key} = {value}: not in PostgreSQL {res.major} ({where})")
        return
    for item in (v.strip().lower() for v in value.split(",")):
        since = VALUE_MAJORS.get((key, item))
        if since is not None and res.major < since:
            res.skipped[key] = value
            res.notes.append(
                f"skipped {key} = {value}: {item!r} needs PostgreSQL {since}+ (have {res.major})"
            )
            return
    value, rule = _raise_to_minimum(res, key, value, rule)
    res.settings[key] = value
    res.rules[key] = rule


def _raise_to_minimum(res: ResolvedProfile, key: str, value: str, rule: str) -> tuple[str, str]:
    """Memory values below this major's minimum become the minimum, with a note saying so."""
    kb = _value_kb(value)
    if key not in MIN_KB_BY_MAJOR or kb is None:
        return value, rule
    minimum = next(m for first, m in MIN_KB_BY_MAJOR[key] if res.major >= first)
    if kb >= minimum:
        return value, rule
    lowest = format_kb(minimum)
    res.notes.append(
        f"raised {key} from {value} to {lowest}: the minimum PostgreSQL {res.major} accepts"
    )
    return lowest, f"{rule} (raised to the PostgreSQL {res.major} minimum)"


def _value_kb(value: str) -> int | None:
    """'128kB', '16MB', '2GB' -> kB; None for anything else (plain numbers have no unit)."""
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgGtT][bB])\s*", value)
    return int(m.group(1)) * _UNIT_KB[m.group(2).lower()] if m else None


def _validate_inputs(
    major: int,
    ram_bytes: int | None,
    cpus: int | None,
    storage: str,
    max_connections: int | None,
) -> tuple[int, int]:
    if not isinstance(major, int) or not 10 <= major <= 99:
        raise PgrigError(f"bad PostgreSQL major version {major!r}: expected e.g. 15, 16, 17, 18")
    if storage not in STORAGE_KINDS:
        raise PgrigError(f"unknown storage {storage!r}: use one of {', '.join(STORAGE_KINDS)}")
    ram = host_ram_bytes() if ram_bytes is None else ram_bytes
    if ram <= 0:
        raise PgrigError(f"bad RAM size {ram_bytes!r}: must be positive")
    ncpu = host_cpus() if cpus is None else cpus
    if ncpu < 1:
        raise PgrigError(f"bad CPU count {cpus!r}: must be at least 1")
    if max_connections is not None and max_connections < 1:
        raise PgrigError(f"bad max_connections {max_connections!r}: must be at least 1")
    return ram, ncpu


def _shipped_dir() -> Path:
    return Path(str(resources.files("pgrig.provision") / "profiles"))


def _all_profiles() -> dict[str, _Profile]:
    found: dict[str, _Profile] = {}
    for f in sorted(_shipped_dir().glob("*.toml")):
        found[f.stem] = _load(f, "shipped")
    user_dir = paths.profiles_dir()
    if user_dir.is_dir():
        for f in sorted(user_dir.glob("*.toml")):
            prof = _load(f, "user")
            prof.overrides_shipped = f.stem in found
            found[f.stem] = prof
    return found


def _find(name: str) -> _Profile:
    profiles = _all_profiles()
    if name not in profiles:
        known = ", ".join(sorted(profiles))
        raise NotFound(f"unknown profile {name!r}: known profiles are {known}")
    return profiles[name]


def _pg_value(key: str, value: Any, where: str) -> str:
    """TOML scalar -> PostgreSQL setting string (booleans as on/off)."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, (int, float, str)):
        return str(value)
    raise PgrigError(f"profile {where}: setting {key} must be a string, number or boolean")


def _load(path: Path, source: str) -> _Profile:
    """Parse and check one profile file; any problem is one clear error naming the file."""
    where = str(path)
    if not valid_name(path.stem):
        raise PgrigError(f"profile {where}: bad name {path.stem!r} (letters, digits, _ . -)")
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise PgrigError(f"profile {where}: cannot read: {e}") from e
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise PgrigError(
            f"profile {where}: unknown key(s) {', '.join(unknown)} "
            f"(allowed: {', '.join(sorted(_TOP_KEYS))})"
        )
    kind = data.get("kind", "fixed")
    if kind not in KINDS:
        raise PgrigError(f"profile {where}: kind {kind!r} is not one of {', '.join(KINDS)}")
    workload = data.get("workload")
    if kind != "fixed" and workload not in WORKLOADS:
        raise PgrigError(
            f"profile {where}: kind {kind} needs workload = one of {', '.join(WORKLOADS)}"
        )
    if kind == "fixed" and workload is not None:
        raise PgrigError(f"profile {where}: workload only applies to pgtune/pgconfig profiles")
    settings_raw = data.get("settings", {})
    rules_raw = data.get("rules", {})
    notes = data.get("notes", [])
    if not isinstance(settings_raw, dict) or not isinstance(rules_raw, dict):
        raise PgrigError(f"profile {where}: [settings] and [rules] must be tables")
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        raise PgrigError(f"profile {where}: notes must be a list of strings")
    settings: dict[str, str] = {}
    for key, value in settings_raw.items():
        if not SETTING_RE.match(key):
            raise PgrigError(f"profile {where}: {key!r} is not a valid setting name")
        settings[key] = _pg_value(key, value, where)
    stray = sorted(set(rules_raw) - set(settings))
    if stray:
        raise PgrigError(f"profile {where}: [rules] for settings not in [settings]: {stray}")
    for key in ("description", "warning", "source"):
        if key in data and not isinstance(data[key], str):
            raise PgrigError(f"profile {where}: {key} must be a string")
    info = ProfileInfo(
        name=path.stem,
        kind=kind,
        description=data.get("description", ""),
        source=source,
        path=where,
        workload=workload,
        warning=data.get("warning"),
    )
    rules = {k: str(v) for k, v in rules_raw.items()}
    return _Profile(info=info, settings=settings, rules=rules, notes=list(notes))


def save_profile(
    name: str, settings: dict[str, str], description: str, notes: list[str], force: bool = False
) -> Path:
    """Write a user profile (kind fixed) and load it back through the same checks as any
    profile file; an existing user profile is only replaced with `force`."""
    import json

    if not valid_name(name):
        raise PgrigError(f"bad profile name {name!r}: use letters, digits, '_', '.', '-'")
    if not settings:
        raise PgrigError(f"profile {name}: no settings to save")
    path = paths.profiles_dir() / f"{name}.toml"
    if path.exists() and not force:
        raise PgrigError(f"profile {name} exists ({path}): add --force to replace it")
    # TOML basic strings accept JSON's escapes (\" \\ \uXXXX), so json.dumps quotes safely
    lines = [f"description = {json.dumps(description)}", 'kind = "fixed"']
    lines.append("notes = [" + ", ".join(json.dumps(n) for n in notes) + "]")
    lines += ["", "[settings]"] + [f"{k} = {json.dumps(v)}" for k, v in settings.items()]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".toml.tmp")
    tmp.write_text("\n".join(lines) + "\n")
    try:
        _load(tmp, "user")
    except PgrigError:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)
    return path
