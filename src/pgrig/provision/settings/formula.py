"""What a tuning formula computes (FormulaResult) and the inputs and units the formulas share:
the workloads and storage kinds they know, kB arithmetic and PGTune's way of writing sizes.

The formulas themselves are provision/pgtune.py and provision/pgconfig.py; provision/profiles.py
resolves a profile through them for one server.
"""

from __future__ import annotations

from dataclasses import dataclass, field

WORKLOADS = ("web", "oltp", "dw", "desktop", "mixed")
STORAGE_KINDS = ("ssd", "hdd", "san", "nvme")

KB_PER_MB = 1024
KB_PER_GB = 1024 * 1024
IO_WORKERS_MAX = 32  # io_workers range is 1..32 in 18 (describe-config)


@dataclass
class FormulaResult:
    """What a formula computes: (setting, value, rule) in output order, plus what it left out."""

    settings: list[tuple[str, str, str]] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, key: str, value: str, rule: str) -> None:
        self.settings.append((key, value, rule))


def format_kb(kb: int) -> str:
    """PGTune's display rule: the largest unit (GB, MB, kB) that loses no resolution."""
    if kb % KB_PER_GB == 0:
        return f"{kb // KB_PER_GB}GB"
    if kb % KB_PER_MB == 0:
        return f"{kb // KB_PER_MB}MB"
    return f"{kb}kB"
