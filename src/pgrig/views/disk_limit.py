"""A run's disk limit for people: what was asked, whether the kernel held it, on which disks,
and what the mechanism does not limit (RunRecord.disk_limit, written by load/runner.py from
provision/server/disk_throttle.in_force). One text for every surface: the run summary (`runs
show`, the run page, `report run`) and the comparison's context (a difference in limits is a
difference between the sides, like a setting's)."""

from __future__ import annotations

from pgrig import format as fmt
from pgrig.record.documents import forced_during_setup, forced_when
from pgrig.record.run import RunRecord
from pgrig.views import run_environment

NOT_RECORDED = "not recorded"


def of(rec: RunRecord) -> str:
    """ "wiops=300, wbps=50MB (in force)", "none", "wiops=300 (NOT in force: ...)" or "not
    recorded" (runs before the archive kept it, servers pgrig does not run here)."""
    doc = rec.disk_limit
    if not doc:
        return NOT_RECORDED
    text = str(doc.get("text") or "?").replace(",", ", ")
    if not doc.get("limit") and doc.get("in_force") is not False:
        return "none"
    if doc.get("in_force"):
        return f"{text} (in force{_changed_since(rec)})"
    problems = "; ".join(doc.get("problems") or []) or "not verified"
    return f"{text} (NOT in force: {problems})"


def _changed_since(rec: RunRecord) -> str:
    """'; at the start: disk limit set to ... at 5.2 s (env set --force)' when a forced
    change of the disk limit came while the run ran (its `changed_under_run` events)."""
    events = [
        e
        for e in rec.extra.get("changed_under_run") or []
        if isinstance(e, dict) and str(e.get("change", "")).startswith("disk limit")
    ]
    if not events:
        return ""
    said = ", ".join(f"{e.get('change')} {forced_when(e.get('after_s', 0))}" for e in events)
    command = f"(`pgrig {events[0].get('command')}`)"
    if all(forced_during_setup(e.get("after_s", 0)) for e in events):  # before its load
        return f" when the run read it only; then {said}, under which its load ran {command}"
    return f" at the start only; then {said} {command}"


def items(rec: RunRecord) -> list[tuple[str, str]]:
    """The run summary's lines: the limit, where it was in force, what it does not limit."""
    doc = rec.disk_limit
    if not doc:
        here = run_environment.of(rec).here  # a server elsewhere: its disk is not read here
        return [("disk limit", NOT_RECORDED)] if here and rec.id is not None else []
    out = [("disk limit", of(rec))]
    devices = doc.get("devices") or []
    if doc.get("limit") and devices:
        disks = ", ".join(
            f"{d.get('device')} {d.get('name')} ({' and '.join(d.get('holds') or [])})"
            for d in devices
        )
        out.append(("disk limit on", f"{disks}: {doc.get('mechanism') or fmt.MISSING}"))
    if doc.get("reapplied_because"):  # a stray limit under "none" is taken off, said too
        out.append(("disk limit put back", "; ".join(doc.get("reapplied_because") or [])))
    if doc.get("limit") and doc.get("not_throttled"):
        out.append(("not limited", str(doc.get("not_throttled"))))
    return out
