"""Configuration profiles resolved for one server: a profile's settings, the rule behind each,
and what the server's major version lacks (skipped with a note, never silently dropped).

The collaborators, one concern each: the files (provision/profile_files.py), the formulas
(provision/pgtune.py, provision/pgconfig.py, sharing provision/formula.py). This module keeps
the names callers import from it.

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

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pgrig import units
from pgrig.errors import PgrigError
from pgrig.provision.settings import profile_files
from pgrig.provision.settings.formula import (
    IO_WORKERS_MAX,
    KB_PER_GB,
    KB_PER_MB,
    STORAGE_KINDS,
    WORKLOADS,
    FormulaResult,
    format_kb,
)
from pgrig.provision.settings.pgconfig import format_bytes_rounded, pgconfig
from pgrig.provision.settings.pgtune import pgtune
from pgrig.provision.settings.profile_files import (
    ProfileInfo,
    damaged_profiles,
    list_profiles,
    save_profile,
)
from pgrig.provision.settings.profile_model import KINDS

__all__ = [
    "IO_WORKERS_MAX",
    "KB_PER_GB",
    "KB_PER_MB",
    "KINDS",
    "MIN_KB_BY_MAJOR",
    "SETTING_MAJORS",
    "STORAGE_KINDS",
    "VALUE_MAJORS",
    "WORKLOADS",
    "FormulaResult",
    "ProfileInfo",
    "ResolvedProfile",
    "damaged_profiles",
    "explain_profile",
    "format_bytes_rounded",
    "format_kb",
    "host_cpus",
    "host_ram_bytes",
    "io_uring_supported",
    "list_profiles",
    "parse_size",
    "pgconfig",
    "pgtune",
    "resolve_profile",
    "save_profile",
    "setting_available",
]


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
_UNIT_KB = {u.lower(): f // 1024 for u, f in units.MEMORY_UNITS.items() if f > 1}


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
    prof = profile_files.find(name)
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


_RAM_UNITS = {u.lower(): f for u, f in units.MEMORY_UNITS.items() if f > 1}


def parse_size(text: str) -> int:
    """'16GB', '512MB', '1.5TB', '8192kB' -> bytes (1024-based, like PostgreSQL). Unit required."""
    m = units.amount(text)
    # a machine's memory as people write it: PostgreSQL's units, also in lower case and as
    # KiB/MiB/GiB/TiB (the unit is required: a bare number says nothing of its size)
    unit = _RAM_UNITS.get((m.unit.lower().replace("ib", "b")) if m else "")
    if m is None or unit is None:
        raise PgrigError(f"bad size {text!r}: use a number with a unit, e.g. 16GB, 512MB")
    value = int(m.value * unit)
    if value <= 0:
        raise PgrigError(f"bad size {text!r}: must be positive")
    return value


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
    m = units.amount(value)
    if m is None or not m.whole or m.unit.lower() not in _UNIT_KB:
        return None
    return int(m.number) * _UNIT_KB[m.unit.lower()]


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
