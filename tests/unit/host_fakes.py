"""A fake machine for the host unit tests: /proc, /sys and /dev trees in a temporary directory,
and a fake kernel for writes (choice files keep their brackets, setting vm.dirty_*bytes zeroes
the ratio and back, read-only files refuse), as the real kernel does.

The default machine: 4 CPUs on 2 physical cores (SMT siblings 0+2 and 1+3), 2 NUMA nodes,
cpufreq with powersave, turbo off, a deep C-state (C6, 133 us), THP always, swappiness 60,
dirty ratios in force, autogroup on, sched_migration_cost_ns 500000, clocksource hpet.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from pgrig.machine.sysfs import HostFs

CPU_LINE = "cpu  1000 10 500 8000 100 5 5 380 0 0"  # user nice system idle iowait irq softirq steal


def make_machine(root: Path, files: dict[str, str | bytes | None] | None = None) -> HostFs:
    """Write the default machine under `root`; `files` overrides (None removes a file)."""
    tree: dict[str, str | bytes | None] = {
        "proc/sys/vm/swappiness": "60",
        "proc/sys/vm/dirty_background_bytes": "0",
        "proc/sys/vm/dirty_background_ratio": "10",
        "proc/sys/vm/dirty_bytes": "0",
        "proc/sys/vm/dirty_ratio": "20",
        "proc/sys/kernel/sched_autogroup_enabled": "1",
        "proc/sys/kernel/sched_migration_cost_ns": "500000",
        "proc/sys/kernel/numa_balancing": "1",
        "proc/sys/kernel/random/boot_id": "boot-1",
        "proc/stat": CPU_LINE + "\ncpu0 1 2 3 4 5 6 7 8 0 0\n",
        "proc/loadavg": "0.10 0.20 0.30 1/100 4242",
        "proc/uptime": "86400.5 1000.0",
        "sys/kernel/mm/transparent_hugepage/enabled": "[always] madvise never",
        "sys/kernel/mm/transparent_hugepage/defrag": "[always] defer defer+madvise madvise never",
        "sys/devices/system/clocksource/clocksource0/current_clocksource": "hpet",
        "sys/devices/system/clocksource/clocksource0/available_clocksource": "tsc hpet acpi_pm",
        "sys/devices/system/cpu/intel_pstate/no_turbo": "1",
        "sys/devices/system/node/node0/cpulist": "0,2",
        "sys/devices/system/node/node1/cpulist": "1,3",
        "dev/cpu_dma_latency": (2_000_000_000).to_bytes(4, "little", signed=True),
    }
    for cpu in range(4):
        d = f"sys/devices/system/cpu/cpu{cpu}"
        tree[f"{d}/topology/thread_siblings_list"] = f"{cpu % 2},{cpu % 2 + 2}"
        tree[f"{d}/cpufreq/scaling_governor"] = "powersave"
        tree[f"{d}/cpufreq/scaling_available_governors"] = "performance powersave"
        for i, (name, latency) in enumerate((("POLL", 0), ("C1", 2), ("C6", 133))):
            tree[f"{d}/cpuidle/state{i}/name"] = name
            tree[f"{d}/cpuidle/state{i}/latency"] = str(latency)
            tree[f"{d}/cpuidle/state{i}/disable"] = "0"
    tree.update(files or {})
    for rel, content in tree.items():
        path = root / rel
        if content is None:
            path.unlink(missing_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content + "\n")
    (root / "dev/shm").mkdir(parents=True, exist_ok=True)
    return HostFs.under(root)


class FakeKernel:
    """Replaces host.knobs.write_value: applies a write the way the kernel would."""

    TWINS: ClassVar[dict[str, str]] = {
        "dirty_background_bytes": "dirty_background_ratio",
        "dirty_bytes": "dirty_ratio",
    }

    def __init__(self, readonly: set[str] = frozenset()) -> None:
        self.readonly = set(readonly)  # names or paths that refuse writes (EACCES, as on a VM)
        self.writes: list[tuple[str, str]] = []
        self.before_write: Callable[[], None] | None = None  # a spy, or a crash to simulate

    def __call__(self, path: Path, value: str) -> None:
        if self.before_write is not None:
            self.before_write()
        if {path.name, str(path)} & self.readonly or not path.exists():
            raise PermissionError(errno.EACCES, "Permission denied")
        self.writes.append((str(path), value))
        text = path.read_text().strip()
        if "[" in text:
            words = [w.strip("[]") for w in text.split()]
            if value not in words:
                raise OSError(errno.EINVAL, "Invalid argument")
            path.write_text(" ".join(f"[{w}]" if w == value else w for w in words) + "\n")
            return
        if path.name in ("dirty_bytes", "dirty_background_bytes") and int(value) < 2 * 4096:
            raise OSError(errno.EINVAL, "Invalid argument")  # the kernel's minimum
        path.write_text(value + "\n")
        twins = {**self.TWINS, **{v: k for k, v in self.TWINS.items()}}
        if path.name in twins:  # setting one form of a dirty limit zeroes the other
            (path.parent / twins[path.name]).write_text("0\n")


def snapshot_tree(root: Path) -> dict[str, str]:
    """Every file of the fake /proc/sys and /sys with its content (before/after comparisons)."""
    return {
        str(p.relative_to(root)): p.read_text()
        for top in ("proc/sys", "sys")
        for p in sorted((root / top).rglob("*"))
        if p.is_file()
    }
