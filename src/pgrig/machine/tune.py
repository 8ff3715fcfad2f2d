"""Prepare the host for benchmarking (`host tune`) and undo it exactly (`host restore`).

plan()    the changes a profile asks for: knob, files, old -> new. Changes nothing.
apply()   saves the original values (host.state, before the first write), then writes each
          change and reads it back. A value the kernel refuses (a VM, a read-only /sys) is
          reported and not recorded as changed; nothing that cannot be snapshotted is touched.
restore() writes every saved value back, checks it, and removes the saved state.

Applying twice keeps the values saved the first time: restore always returns to the host as
it was before pgrig touched it.
"""

from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pgrig.errors import PgrigError
from pgrig.format import pgrig_command
from pgrig.machine import state as saved_state
from pgrig.machine.knobs import BY_NAME, KNOBS, PROFILES, Knob, Value
from pgrig.machine.sysfs import REAL, HostFs
from pgrig.provision.system import osuser


@dataclass
class Change:
    name: str  # the knob (as `host check` names it)
    setting: str  # sysctl name or /sys file, as people know it
    old: Value
    new: Value
    files: list[str]
    status: str = "planned"  # planned | changed | failed
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Skipped:
    name: str
    reason: str


@dataclass
class Restored:
    name: str
    files: dict[str, str]  # file -> value written back
    ok: bool
    error: str | None = None


def check_profile(profile: str) -> None:
    if profile not in PROFILES:
        raise PgrigError(f"--profile must be one of {', '.join(PROFILES)} (got {profile!r})")


def check_only(only: list[str] | None, profile: str) -> None:
    unknown = sorted(set(only or []) - set(PROFILES[profile]))
    if unknown:
        raise PgrigError(
            f"--only {unknown[0]!r} is not a setting of profile {profile} "
            f"(known: {', '.join(sorted(PROFILES[profile]))})"
        )


def plan(
    profile: str = "pgrig", fs: HostFs = REAL, only: list[str] | None = None
) -> tuple[list[Change], list[Skipped]]:
    check_profile(profile)
    check_only(only, profile)
    changes: list[Change] = []
    skipped: list[Skipped] = []
    for knob in KNOBS:
        target = PROFILES[profile].get(knob.name)
        if target is None or (only and knob.name not in only):
            continue
        reading = knob.read(fs)
        if reading.raw is None:
            skipped.append(Skipped(knob.name, reading.reason))
            continue
        if target.ok(reading.raw):
            continue
        offered = knob.offered(fs)
        if offered is not None and str(target.value) not in offered:
            skipped.append(Skipped(knob.name, f"the kernel does not offer {target.value!r}"))
            continue
        files = knob.snapshot(fs)
        if not files:  # what cannot be read back cannot be restored: leave it alone
            skipped.append(Skipped(knob.name, "its current value cannot be saved"))
            continue
        old, new = knob.show(reading.raw), knob.show_target(target.value)
        changes.append(Change(knob.name, knob.label, old, new, sorted(files)))
    return changes, skipped


def _require_root(what: str) -> None:
    if not osuser.is_root():
        raise PgrigError(
            f"`{pgrig_command('host', what)}` changes kernel settings and needs root: run it as "
            "root (sudo); nothing was changed"
        )


def apply(
    profile: str = "pgrig",
    fs: HostFs = REAL,
    only: list[str] | None = None,
    path: Path | None = None,
) -> tuple[list[Change], list[Skipped]]:
    """Apply the plan; every change is saved before it is made. Returns it with outcomes."""
    check_profile(profile)
    check_only(only, profile)
    _require_root("tune --apply")
    with saved_state.locked(path):
        state = _current_state(fs, path) or saved_state.SavedState(
            profile=profile, boot_id=saved_state.boot_id(fs)
        )
        changes, skipped = plan(profile, fs, only)
        fresh = {c.name for c in changes if c.name not in state.knobs}
        for c in changes:
            if c.name in fresh:
                state.knobs[c.name] = BY_NAME[c.name].snapshot(fs)
        if fresh:
            saved_state.save(state, path)  # before the first write
        for c in changes:
            _apply_one(BY_NAME[c.name], c, PROFILES[profile][c.name].value, fs)
        for name in fresh:
            if name in state.knobs and BY_NAME[name].snapshot(fs) == state.knobs[name]:
                del state.knobs[name]  # refused, and nothing moved: not a change to undo
        _store(state, path)
    return changes, skipped


def _apply_one(knob: Knob, change: Change, target: Value, fs: HostFs) -> None:
    before = knob.snapshot(fs)
    try:
        knob.write(fs, target)
    except OSError as e:
        change.status, change.error = "failed", e.strerror or str(e)
        with contextlib.suppress(OSError):  # a knob of several files may be half written
            knob.restore(fs, before)
        return
    now = knob.read(fs).raw
    if now is None or knob.show(now) == change.old:
        change.status = "failed"
        change.error = f"written, but the kernel kept {change.old}"
        return
    change.status = "changed"
    change.new = knob.show(now)


def _current_state(fs: HostFs, path: Path | None) -> saved_state.SavedState | None:
    """The saved state, unless it is from an earlier boot (the kernel reset everything)."""
    state = saved_state.load(path)
    if state is not None and state.boot_id != saved_state.boot_id(fs):
        saved_state.remove(path)
        return None
    return state


def _store(state: saved_state.SavedState, path: Path | None) -> None:
    if state.knobs:
        saved_state.save(state, path)
    else:
        saved_state.remove(path)


def _allowed(fs: HostFs, file: str) -> bool:
    """Restore writes only kernel settings: files under /proc/sys and /sys."""
    p = Path(file)
    return ".." not in p.parts and any(p.is_relative_to(root) for root in (fs.proc / "sys", fs.sys))


def restore(fs: HostFs = REAL, path: Path | None = None) -> tuple[list[Restored], str | None]:
    """Put every saved value back. Returns what was restored and a note (nothing saved, or
    saved before a reboot). Values that could not be restored stay in the saved state."""
    _require_root("restore")
    with saved_state.locked(path):
        state = saved_state.load(path)
        if state is None:
            return (
                [],
                f"nothing to restore: no saved host state ({path or saved_state.state_path()})",
            )
        if state.boot_id != saved_state.boot_id(fs):
            saved_state.remove(path)
            return [], "the saved values date from before a reboot: the kernel reset them; cleared"
        done = [_restore_one(fs, name, files) for name, files in state.knobs.items()]
        state.knobs = {r.name: state.knobs[r.name] for r in done if not r.ok}
        _store(state, path)
    return done, None


def _restore_one(fs: HostFs, name: str, files: dict[str, str]) -> Restored:
    knob = BY_NAME.get(name)
    if knob is None:
        return Restored(name, files, False, "unknown setting in the saved state")
    if not all(_allowed(fs, f) for f in files):
        return Restored(name, files, False, "the saved state names a file outside /proc/sys, /sys")
    try:
        knob.restore(fs, files)
    except OSError as e:
        return Restored(name, files, False, e.strerror or str(e))
    if knob.snapshot(fs) != files:
        return Restored(name, files, False, "written back, but reads differently")
    return Restored(name, files, True)
