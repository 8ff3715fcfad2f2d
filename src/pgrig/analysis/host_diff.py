"""Did two runs run on the same, equally prepared host? The differences, in plain words.

Seed 004: an unprepared host (governor, C-states, scheduler, pinning, noisy neighbours) makes
runs disagree, and HammerDB users report 20-60% run-to-run differences from it. A comparison
of two runs must say when their hosts differed. One pure function over the run record's
documents (RunRecord.host and RunRecord.extra, pgrig.record.documents), so the CLI, the web
and reports give the same answer.

Compared:
- the machine: hostname, CPU model and count, RAM, kernel;
- the host's settings (host checks whose value is a setting): governor, turbo, C-states,
  THP, swappiness, dirty bytes, scheduler sysctls, clocksource, NUMA layout;
- the moment (host checks whose value changes by itself: steal, busy CPU, free space,
  uptime, open files, SMT siblings): only a different status (ok against warn) counts;
- where processes ran: the pinned CPUs (extra["cpus"]);
- a busy host during the run (extra["warnings"] code "busy_host");
- the network path (extra["network"]): which hosts drove the load and over what (unix socket,
  loopback or network, and to which server address): a run over the network and one over
  loopback are different experiments; and a saturated load host (warning
  "load_host_saturated").
Runs recorded before host checks existed carry flat facts (cpu_governor, vm_swappiness, ...):
those are mapped to the same names. Unknown on either side means no comparison, not a
difference.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pgrig.record.documents import HostCheck, HostDoc, NetworkDoc, RunExtra

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
    host_a: HostDoc | None,
    host_b: HostDoc | None,
    extra_a: RunExtra | None = None,
    extra_b: RunExtra | None = None,
) -> list[str]:
    """One line per difference, "name: A <value>, B <value>"; empty when nothing differs."""
    # the facts by name: the declared ones, and the flat facts of runs archived before checks
    ha: Mapping[str, Any] = host_a or {}
    hb: Mapping[str, Any] = host_b or {}
    ea, eb = extra_a or RunExtra(), extra_b or RunExtra()
    out = [
        _line(label, ha.get(key), hb.get(key))
        for key, label in MACHINE
        if _differ(ha.get(key), hb.get(key))
    ]
    ca, cb = _checks(host_a or HostDoc()), _checks(host_b or HostDoc())
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
    na, nb = _network_path(ea), _network_path(eb)
    if _differ(na, nb):
        out.append(_line("network path", na, nb))
    sa, sb = _saturated(ea), _saturated(eb)
    if sa != sb:
        out.append(_line("load host saturated", _yes(sa), _yes(sb)))
    return out


def _network_path(extra: RunExtra) -> str | None:
    """ "c1, c2 over network to 10.0.0.2" or "localhost over loopback" (None: not recorded).
    Ports are left out: two environments on one host differ by port, not by path."""
    paths: Any = (extra.get("network") or NetworkDoc()).get("paths")
    if not isinstance(paths, list) or not paths:
        return None
    groups: dict[str, list[str]] = {}
    for p in paths:
        if not isinstance(p, dict):
            continue
        kind = p.get("kind") or ("loopback" if p.get("loopback") else "network")
        where = f"{kind} to {p.get('address')}" if kind == "network" else str(kind)
        groups.setdefault(where, []).append(str(p.get("from")))
    return "; ".join(f"{', '.join(sorted(h))} over {w}" for w, h in sorted(groups.items()))


def _saturated(extra: RunExtra) -> bool:
    return _warned(extra, "load_host_saturated")


def _warned(extra: RunExtra, code: str) -> bool:
    warnings: Any = extra.get("warnings")  # JSON from the archive: checked here
    return isinstance(warnings, list) and any(
        isinstance(w, dict) and w.get("code") == code for w in warnings
    )


def _checks(host: HostDoc) -> dict[str, HostCheck]:
    # validated when read (record/doc_read.py): a list of HostCheck
    return {c["name"]: c for c in host.get("checks") or [] if "name" in c}


def _setting(checks: dict[str, HostCheck], host: Mapping[str, object], name: str) -> object:
    if name in checks:
        return checks[name].get("value")
    legacy = host.get(LEGACY.get(name, ""))
    if name == "turbo" and isinstance(legacy, bool):
        return "on" if legacy else "off"
    return legacy


def _differ(a: object, b: object) -> bool:
    return a is not None and b is not None and str(a) != str(b)


def _line(name: str, a: object, b: object) -> str:
    return f"{name}: A {a}, B {b}"


def _with_status(check: HostCheck) -> str:
    return f"{check.get('status')} ({check.get('value')})"


def _pinning(extra: RunExtra) -> str:
    cpus: Any = extra.get("cpus")
    if not isinstance(cpus, dict):
        return ""
    order = ["server", "pooler", "client"]
    sides = sorted(cpus, key=lambda s: (order.index(s) if s in order else len(order), s))
    return ", ".join(f"{side} {cpus[side]}" for side in sides if cpus[side])


def _busy(extra: RunExtra) -> bool:
    return _warned(extra, "busy_host")


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"
