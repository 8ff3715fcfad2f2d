"""The kernel settings pgrig checks and can change, and what each profile recommends.

A knob reads its current value, snapshots the exact files it would write (so the change can be
undone), writes a target and restores a snapshot. The recommendations come from
measurement.md: seed 004's talk (governor performance, turbo on, C-states limited,
sched_migration_cost_ns 50 ms, sched_autogroup off) and tuned's postgresql profile (THP never,
swappiness 3, dirty bytes 64 MiB / 512 MiB, force_latency=1).

Profiles:
  pgrig       what `host check` recommends: seed 004 plus tuned, accepting equivalent values
              (swappiness <= 10, any THP defrag but "always", C-states up to 10 us).
  tuned-like  exactly tuned's postgresql profile (which includes throughput-performance).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pgrig.machine.sysfs import HostFs, choices, read_choice, read_int, read_text, write_value

Value = int | str
MiB = 1024 * 1024


@dataclass(frozen=True)
class Reading:
    """A knob's current value (raw: what targets compare) or why it cannot be read here."""

    raw: Value | None
    reason: str = ""


class Knob(ABC):
    name: str  # the check's name
    label: str  # what people know it as (sysctl name or /sys file)
    why: str

    @abstractmethod
    def read(self, fs: HostFs) -> Reading: ...

    @abstractmethod
    def snapshot(self, fs: HostFs) -> dict[str, str]:
        """Every file a write may change, with its current content as it must be written back."""

    @abstractmethod
    def write(self, fs: HostFs, target: Value) -> None: ...

    def restore(self, fs: HostFs, saved: dict[str, str]) -> None:
        for path, value in saved.items():
            write_value(Path(path), value)

    def offered(self, fs: HostFs) -> list[str] | None:
        """Values the kernel accepts (None: any)."""
        return None

    def show(self, raw: Value) -> Value:
        return raw

    def show_target(self, target: Value) -> Value:
        return target


class FileKnob(Knob):
    """One file: the first of `candidates` that exists (a sysctl or a /sys value)."""

    def __init__(
        self,
        name: str,
        label: str,
        candidates: list[Callable[[HostFs], Path]],
        why: str,
        missing: str,
        kind: str = "int",  # int | choice ("a [b] c") | text
        offered_in: Callable[[HostFs], Path] | None = None,
    ) -> None:
        self.name, self.label, self.why, self.missing, self.kind = name, label, why, missing, kind
        self.candidates, self.offered_in = candidates, offered_in

    def path(self, fs: HostFs) -> Path | None:
        return next((p for c in self.candidates if (p := c(fs)).exists()), None)

    def read(self, fs: HostFs) -> Reading:
        path = self.path(fs)
        if path is None:
            return Reading(None, self.missing)
        reader = {"int": read_int, "choice": read_choice, "text": read_text}[self.kind]
        raw = reader(path)
        return Reading(raw, "" if raw is not None else f"{path} cannot be read")

    def snapshot(self, fs: HostFs) -> dict[str, str]:
        path, raw = self.path(fs), self.read(fs).raw
        return {} if path is None or raw is None else {str(path): str(raw)}

    def write(self, fs: HostFs, target: Value) -> None:
        path = self.path(fs)
        if path is None:
            raise OSError(self.missing)
        write_value(path, str(target))

    def offered(self, fs: HostFs) -> list[str] | None:
        if self.offered_in is not None:
            return (read_text(self.offered_in(fs)) or "").split()
        path = self.path(fs)
        return choices(path) if self.kind == "choice" and path is not None else None


class GovernorKnob(Knob):
    name, label = "governor", "cpu*/cpufreq/scaling_governor"
    why = (
        "a power-saving governor changes the clock under the load: seed 004 sets 'performance' "
        "so every run runs at the same frequency"
    )

    def _files(self, fs: HostFs) -> list[Path]:
        return sorted(fs.cpu_dir.glob("cpu[0-9]*/cpufreq/scaling_governor"))

    def read(self, fs: HostFs) -> Reading:
        found = sorted({g for p in self._files(fs) if (g := read_text(p))})
        if not found:
            return Reading(None, "no cpufreq on this host (common in VMs: the hypervisor sets it)")
        return Reading(",".join(found))

    def snapshot(self, fs: HostFs) -> dict[str, str]:
        return {str(p): v for p in self._files(fs) if (v := read_text(p))}

    def write(self, fs: HostFs, target: Value) -> None:
        for p in self._files(fs):
            write_value(p, str(target))

    def offered(self, fs: HostFs) -> list[str] | None:
        sets = [
            set((read_text(p.with_name("scaling_available_governors")) or "").split())
            for p in self._files(fs)
        ]
        return sorted(set.intersection(*sets)) if sets else []


class TurboKnob(Knob):
    name, label = "turbo", "intel_pstate/no_turbo or cpufreq/boost"
    why = (
        "turbo raises the clock while thermal and power room lasts: seed 004 runs with it on; "
        "whichever way, compared runs need the same setting"
    )

    def _file(self, fs: HostFs) -> tuple[Path, bool] | None:
        """(the file, True when it says 'no turbo' rather than 'boost')."""
        for rel, inverted in (("intel_pstate/no_turbo", True), ("cpufreq/boost", False)):
            if (fs.cpu_dir / rel).exists():
                return fs.cpu_dir / rel, inverted
        return None

    def read(self, fs: HostFs) -> Reading:
        found = self._file(fs)
        if found is None:
            return Reading(None, "no intel_pstate/no_turbo nor cpufreq/boost (a VM, fixed clocks)")
        value = read_int(found[0])
        if value is None:
            return Reading(None, f"{found[0]} cannot be read")
        return Reading("on" if (value == 0) == found[1] else "off")

    def snapshot(self, fs: HostFs) -> dict[str, str]:
        found = self._file(fs)
        value = read_text(found[0]) if found else None
        return {str(found[0]): value} if found and value is not None else {}

    def write(self, fs: HostFs, target: Value) -> None:
        found = self._file(fs)
        if found is None:
            raise OSError("no turbo control on this host")
        on = target == "on"
        write_value(found[0], "0" if on == found[1] else "1")


class DirtyKnob(Knob):
    """vm.dirty_(background_)bytes, whose twin _ratio the kernel zeroes when bytes is set.

    Restoring writes whichever of the two was in force: writing bytes back to 0 is refused by
    the kernel (dirty_bytes has a minimum), writing the ratio zeroes bytes again.
    """

    def __init__(self, name: str, ratio: str, why: str) -> None:
        self.name, self.label, self.ratio, self.why = name, f"vm.{name}", f"vm.{ratio}", why

    def read(self, fs: HostFs) -> Reading:
        value = read_int(fs.sysctl(self.label))
        return Reading(value, "" if value is not None else f"{self.label} cannot be read")

    def snapshot(self, fs: HostFs) -> dict[str, str]:
        out = {}
        for name in (self.label, self.ratio):
            value = read_text(fs.sysctl(name))
            if value is None:
                return {}
            out[str(fs.sysctl(name))] = value
        return out

    def write(self, fs: HostFs, target: Value) -> None:
        write_value(fs.sysctl(self.label), str(target))

    def restore(self, fs: HostFs, saved: dict[str, str]) -> None:
        bytes_path, ratio_path = str(fs.sysctl(self.label)), str(fs.sysctl(self.ratio))
        if saved.get(bytes_path, "0") != "0":
            write_value(Path(bytes_path), saved[bytes_path])
        elif ratio_path in saved:
            write_value(Path(ratio_path), saved[ratio_path])


class IdleStatesKnob(Knob):
    """C-states: the exit latency of the deepest idle state still enabled, in microseconds.

    Limiting them means disabling the deeper states (cpu*/cpuidle/state*/disable = 1), a
    change that can be undone. tuned's force_latency holds /dev/cpu_dma_latency open instead,
    which only lasts while its daemon runs.
    """

    name, label = "cstates", "cpu*/cpuidle/state*/disable"
    why = (
        "waking from a deep C-state takes up to hundreds of microseconds: a lightly loaded "
        "benchmark pays it on every transaction (seed 004 limits C-states; tuned: force_latency)"
    )

    def _states(self, fs: HostFs) -> list[tuple[Path, int]]:
        out = []
        for d in sorted(fs.cpu_dir.glob("cpu[0-9]*/cpuidle/state[0-9]*")):
            latency = read_int(d / "latency")
            if latency is not None and (d / "disable").exists():
                out.append((d / "disable", latency))
        return out

    def read(self, fs: HostFs) -> Reading:
        states = self._states(fs)
        if not states:
            return Reading(None, "no cpuidle states exposed (the hypervisor or firmware decides)")
        enabled = [lat for path, lat in states if read_int(path) == 0]
        return Reading(max(enabled, default=0))

    def snapshot(self, fs: HostFs) -> dict[str, str]:
        return {str(p): v for p, _ in self._states(fs) if (v := read_text(p)) is not None}

    def write(self, fs: HostFs, target: Value) -> None:
        for path, latency in self._states(fs):
            if latency > int(target) and read_int(path) == 0:
                write_value(path, "1")

    def show(self, raw: Value) -> Value:
        return f"{raw} us"

    def show_target(self, target: Value) -> Value:
        return f"<= {target} us"


def _migration_cost_missing() -> str:
    return (
        "not in /proc/sys (kernels >= 5.13 moved it to debugfs) and debugfs is not mounted "
        "(mount -t debugfs none /sys/kernel/debug)"
    )


KNOBS: list[Knob] = [
    GovernorKnob(),
    TurboKnob(),
    IdleStatesKnob(),
    FileKnob(
        "thp_enabled",
        "transparent_hugepage/enabled",
        [lambda fs: fs.sys / "kernel/mm/transparent_hugepage/enabled"],
        "transparent huge pages: compaction and khugepaged stalls; tuned's postgresql profile "
        "and measurement.md say never for PostgreSQL",
        "no transparent_hugepage in /sys/kernel/mm",
        kind="choice",
    ),
    FileKnob(
        "thp_defrag",
        "transparent_hugepage/defrag",
        [lambda fs: fs.sys / "kernel/mm/transparent_hugepage/defrag"],
        "defrag 'always' makes page faults wait for memory compaction (latency spikes)",
        "no transparent_hugepage in /sys/kernel/mm",
        kind="choice",
    ),
    FileKnob(
        "swappiness",
        "vm.swappiness",
        [lambda fs: fs.sysctl("vm.swappiness")],
        "a high swappiness swaps out idle backends and shared memory to keep page cache; "
        "tuned's postgresql profile uses 3",
        "vm.swappiness does not exist here",
    ),
    DirtyKnob(
        "dirty_background_bytes",
        "dirty_background_ratio",
        "background writeback starts at this many dirty bytes (0: vm.dirty_background_ratio "
        "of RAM, gigabytes on a large machine, flushed as an I/O spike; tuned: 64 MiB)",
    ),
    DirtyKnob(
        "dirty_bytes",
        "dirty_ratio",
        "writers are throttled at this many dirty bytes (0: vm.dirty_ratio of RAM, with which "
        "a checkpoint can stall for seconds; tuned: 512 MiB)",
    ),
    FileKnob(
        "sched_autogroup",
        "kernel.sched_autogroup_enabled",
        [lambda fs: fs.sysctl("kernel.sched_autogroup_enabled")],
        "autogroup shares CPU per session rather than per process, so backends and pgbench "
        "get CPU by terminal session (seed 004 and tuned: 0)",
        "kernel.sched_autogroup_enabled does not exist (kernel built without autogroup)",
    ),
    FileKnob(
        "sched_migration_cost",
        "kernel.sched_migration_cost_ns",
        [
            lambda fs: fs.sysctl("kernel.sched_migration_cost_ns"),
            lambda fs: fs.sys / "kernel/debug/sched/migration_cost_ns",
        ],
        "how long a task stays cache-hot: 50 ms keeps backends from hopping between CPUs "
        "(seed 004 and tuned: 50000000 ns; the kernel default is 0.5 ms)",
        _migration_cost_missing(),
    ),
    FileKnob(
        "clocksource",
        "clocksource0/current_clocksource",
        [lambda fs: fs.sys / "devices/system/clocksource/clocksource0/current_clocksource"],
        "timing every transaction reads the clock: tsc is read in user space, hpet or acpi_pm "
        "need a system call each (slower pgbench and EXPLAIN ANALYZE)",
        "no clocksource in /sys/devices/system/clocksource",
        kind="text",
        offered_in=lambda fs: (
            fs.sys / "devices/system/clocksource/clocksource0/available_clocksource"
        ),
    ),
]
BY_NAME = {k.name: k for k in KNOBS}


@dataclass(frozen=True)
class Target:
    """What a profile wants of a knob; `accept` widens 'equal' to 'as good' where it is."""

    value: Value
    accept: Callable[[Value], bool] | None = None
    text: str | None = None

    def ok(self, raw: Value) -> bool:
        return self.accept(raw) if self.accept is not None else raw == self.value


def _at_most(limit: int) -> Callable[[Value], bool]:
    return lambda raw: 0 < int(raw) <= limit


CSTATE_LATENCY_US = 10  # pgrig's limit: C1/C1E stay, deeper states go
TUNED = {
    "governor": Target("performance"),
    "cstates": Target(1, lambda raw: int(raw) <= 1),  # force_latency=1
    "thp_enabled": Target("never"),
    "swappiness": Target(3),
    "dirty_background_bytes": Target(64 * MiB),
    "dirty_bytes": Target(512 * MiB),
    "sched_autogroup": Target(0),
    "sched_migration_cost": Target(50_000_000),
}
PGRIG = {
    **TUNED,
    "turbo": Target("on"),
    "cstates": Target(CSTATE_LATENCY_US, lambda raw: int(raw) <= CSTATE_LATENCY_US),
    "thp_defrag": Target("never", lambda raw: raw != "always", "never (anything but always)"),
    "swappiness": Target(3, lambda raw: int(raw) <= 10, "3 (<= 10)"),
    "dirty_background_bytes": Target(64 * MiB, _at_most(64 * MiB), "67108864 (64 MiB) or less"),
    "dirty_bytes": Target(512 * MiB, _at_most(512 * MiB), "536870912 (512 MiB) or less"),
    "clocksource": Target("tsc", lambda raw: raw == "tsc"),
}
PROFILES: dict[str, dict[str, Target]] = {"pgrig": PGRIG, "tuned-like": TUNED}


def recommended(knob: Knob, target: Target) -> Value:
    return target.text or knob.show_target(target.value)
