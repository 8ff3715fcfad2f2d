"""Did two runs run on the same, equally prepared host? The differences, in plain words.

Seed 004: an unprepared host (governor, C-states, scheduler, pinning, noisy neighbours) makes
runs disagree, and HammerDB users report 20-60% run-to-run differences from it. A comparison
of two runs must say when their hosts differed. One pure function over plain dicts (the
archive's RunRecord.host and RunRecord.extra), so the CLI, the web and reports give the
same answer.

Compared:
- the machine: hostname, CPU model and count, RAM, kernel;
- the host's settings (host checks whose value is a setting): governor, turbo, C-states,
  THP, swappiness, dirty bytes, scheduler sysctls, clocksource, NUMA layout;
- the moment (host checks whose value changes by itself: steal, busy CPU, free space,
  uptime, open files, SMT siblings): only a different status (ok against warn) counts;
- where processes ran: the pinned CPUs (extra["cpus"]);
- a busy host during the run (extra["warnings"] code "busy_host").
Runs recorded before host checks existed carry flat facts (cpu_governor, vm_swappiness, ...):
those are mapped to the same names. Unknown on either side means no comparison, not a
difference.
"""

from __future__ import annotations

from typing import Any

MACHINE = (
    ("hostname", "host"),
    ("cpu_model", "CPU model"),
    ("cpu_logical", "logical CPUs"),
    ("cpus_allowed", "CPUs allowed"),
    ("ram_bytes", "RAM bytes"),
    ("kernel", "kernel"),
)
SETTINGS = (
    "governor",
    "turbo",
    "cstates",
    "cpu_dma_latency",
    "thp_enabled",
    "thp_defrag",
    "swappiness",
    "dirty_background_bytes",
    "dirty_bytes",
    "sched_autogroup",
    "sched_migration_cost",
    "clocksource",
    "numa",
)
MOMENT = ("cpu_steal", "cpu_busy", "smt_siblings", "nofile", "disk_free", "tmpfs_free", "uptime")
# check name -> the flat fact of runs archived before host checks
LEGACY = {
    "governor": "cpu_governor",
    "turbo": "cpu_turbo",
    "thp_enabled": "thp_enabled",
    "thp_defrag": "thp_defrag",
    "swappiness": "vm_swappiness",
    "dirty_background_bytes": "vm_dirty_background_bytes",
    "dirty_bytes": "vm_dirty_bytes",
    "sched_autogroup": "kernel_sched_autogroup_enabled",
    "sched_migration_cost": "kernel_sched_migration_cost_ns",
}


def host_differences(
    host_a: dict[str, Any] | None,
    host_b: dict[str, Any] | None,
    extra_a: dict[str, Any] | None = None,
    extra_b: dict[str, Any] | None = None,
) -> list[str]:
    """One line per difference, "name: A <value>, B <value>"; empty when nothing differs."""
    ha, hb = host_a or {}, host_b or {}
    ea, eb = extra_a or {}, extra_b or {}
    out = [
        _line(label, ha.get(key), hb.get(key))
        for key, label in MACHINE
        if _differ(ha.get(key), hb.get(key))
    ]
    ca, cb = _checks(ha), _checks(hb)
    for name in SETTINGS:
        va, vb = _setting(ca, ha, name), _setting(cb, hb, name)
        if _differ(va, vb):
            out.append(_line(name, va, vb))
    for name in MOMENT:
        a, b = ca.get(name), cb.get(name)
        if (
            a
            and b
            and a.get("status") != b.get("status")
            and "unavailable"
            not in (
                a.get("status"),
                b.get("status"),
            )
        ):
            out.append(_line(name, _with_status(a), _with_status(b)))
    pa, pb = _pinning(ea), _pinning(eb)
    if pa != pb:
        out.append(_line("CPU pinning", pa or "not pinned", pb or "not pinned"))
    busy_a, busy_b = _busy(ea), _busy(eb)
    if busy_a != busy_b:
        out.append(_line("busy host", _yes(busy_a), _yes(busy_b)))
    return out


def _checks(host: dict[str, Any]) -> dict[str, dict[str, Any]]:
    checks = host.get("checks")
    if not isinstance(checks, list):
        return {}
    return {c["name"]: c for c in checks if isinstance(c, dict) and "name" in c}


def _setting(checks: dict[str, dict[str, Any]], host: dict[str, Any], name: str) -> Any:
    if name in checks:
        return checks[name].get("value")
    legacy = host.get(LEGACY.get(name, ""))
    if name == "turbo" and isinstance(legacy, bool):
        return "on" if legacy else "off"
    return legacy


def _differ(a: Any, b: Any) -> bool:
    return a is not None and b is not None and str(a) != str(b)


def _line(name: str, a: Any, b: Any) -> str:
    return f"{name}: A {a}, B {b}"


def _with_status(check: dict[str, Any]) -> str:
    return f"{check.get('status')} ({check.get('value')})"


def _pinning(extra: dict[str, Any]) -> str:
    cpus = extra.get("cpus")
    if not isinstance(cpus, dict):
        return ""
    order = ["server", "pooler", "client"]
    sides = sorted(cpus, key=lambda s: (order.index(s) if s in order else len(order), s))
    return ", ".join(f"{side} {cpus[side]}" for side in sides if cpus[side])


def _busy(extra: dict[str, Any]) -> bool:
    warnings = extra.get("warnings")
    return isinstance(warnings, list) and any(
        isinstance(w, dict) and w.get("code") == "busy_host" for w in warnings
    )


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"
