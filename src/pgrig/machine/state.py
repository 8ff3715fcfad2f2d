"""The host values saved by `host tune --apply`, so `host restore` can put them back.

<home>/host-tune.json holds, per knob, the exact files it changes and their ORIGINAL contents.
It is written atomically (temporary file, fsync, rename) before the first change, so a run
killed half-way still leaves a complete record; applying again keeps the originals already
saved. The boot id dates it: after a reboot the kernel is back at its own values, and the
saved ones no longer describe anything to undo.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pgrig import paths, safe_write
from pgrig.errors import PgrigError
from pgrig.machine.sysfs import HostFs, read_text

FILE_NAME = "host-tune.json"


@dataclass
class SavedState:
    profile: str
    boot_id: str | None
    saved_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    knobs: dict[str, dict[str, str]] = field(default_factory=dict)  # knob -> {file: original}


def state_path() -> Path:
    return paths.home() / FILE_NAME


def boot_id(fs: HostFs) -> str | None:
    return read_text(fs.proc / "sys/kernel/random/boot_id")


def load(path: Path | None = None) -> SavedState | None:
    path = path or state_path()
    try:
        data = json.loads(path.read_text())
        return SavedState(
            profile=str(data["profile"]),
            boot_id=data.get("boot_id"),
            saved_at=str(data.get("saved_at", "")),
            knobs={
                str(k): {str(f): str(v) for f, v in d.items()} for k, d in data["knobs"].items()
            },
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise PgrigError(
            f"the saved host state {path} is unreadable ({e}): put the values back by hand "
            "from it, then delete it"
        ) from None


def save(state: SavedState, path: Path | None = None) -> None:
    """Write atomically: the file is either the old one or the new one, never half of one."""
    path = path or state_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(asdict(state), indent=2, sort_keys=True) + "\n"
    safe_write.write_text(path, text, mode=0o600)


def remove(path: Path | None = None) -> None:
    path = path or state_path()
    path.unlink(missing_ok=True)
    _fsync_dir(path.parent)


def _fsync_dir(d: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(d, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def locked(path: Path | None = None) -> Iterator[None]:
    """One `host tune`/`host restore` at a time (a second one waits for the first)."""
    path = path or state_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.parent, os.O_RDONLY)  # the directory: no lock file left behind
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock
