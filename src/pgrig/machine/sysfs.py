"""Reading and writing the kernel's files: /proc, /sys and /dev under replaceable roots.

Unit tests build fake trees in a temporary directory and pass `HostFs.under(tmp)`; everything
else uses the real roots. Readers never raise (None: missing or unreadable); the one writer
raises OSError, because a value that could not be written must be reported, never assumed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class HostFs:
    proc: Path = Path("/proc")
    sys: Path = Path("/sys")
    dev: Path = Path("/dev")

    @classmethod
    def under(cls, root: Path | str) -> HostFs:
        """A fake machine: <root>/proc, <root>/sys and <root>/dev."""
        root = Path(root)
        return cls(root / "proc", root / "sys", root / "dev")

    def sysctl(self, name: str) -> Path:
        """vm.swappiness -> /proc/sys/vm/swappiness"""
        return self.proc / "sys" / name.replace(".", "/")

    @property
    def cpu_dir(self) -> Path:
        return self.sys / "devices/system/cpu"


REAL = HostFs()


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return None


def read_int(path: Path) -> int | None:
    text = read_text(path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def read_choice(path: Path) -> str | None:
    """'always [madvise] never' -> 'madvise': the chosen word of a /sys choice file."""
    text = read_text(path)
    if text is None:
        return None
    for word in text.split():
        if word.startswith("[") and word.endswith("]"):
            return word[1:-1]
    return text


def choices(path: Path) -> list[str]:
    """Every word a choice file offers ('always [madvise] never' -> all three)."""
    return [w.strip("[]") for w in (read_text(path) or "").split()]


def write_value(path: Path, value: str) -> None:
    """One write(2) of `value`, as sysctl(8) does; never creates a file that is not there."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)
