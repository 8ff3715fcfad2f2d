"""A run's work directory (pgbench's per-transaction logs), and removing those of dead runs.

`work_dir()` makes it in memory when possible, with an OWNER file naming the process
(archive/lease.py's Owner); every pgrig command first removes the work directories whose owner
is gone (`remove_orphan_work_dirs`), so this module is imported at every start: it stays light.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from pgrig.archive import lease
from pgrig.errors import PgrigError

WORK_PREFIX = "pgrig-run-"
OWNER_FILE = "OWNER"


def _work_bases() -> list[str]:
    """Where work directories may be: PGRIG_WORK_DIR, else /dev/shm or the temp dir."""
    base = os.environ.get("PGRIG_WORK_DIR")
    return [base] if base else ["/dev/shm", tempfile.gettempdir()]


def work_dir() -> Path:
    """Scratch space for pgbench's per-transaction logs, in memory (tmpfs) when possible.

    Measured here: pgbench -S at ~21k tps lost 7-13% of its throughput writing its log to an
    ext4 disk, and nothing measurable writing it to tmpfs. The log reader frees what it has read
    (load/engines/txlog_follower.py), so the space used stays small whatever the duration.
    PGRIG_WORK_DIR overrides the place.
    """
    from pgrig.machine.checks import MIN_TMPFS

    base = os.environ.get("PGRIG_WORK_DIR")
    if base is None and _tmpfs_ok("/dev/shm", MIN_TMPFS):
        base = "/dev/shm"
    try:
        path = Path(tempfile.mkdtemp(prefix=WORK_PREFIX, dir=base))
    except OSError as e:
        raise PgrigError(f"cannot create a work directory in {base or '/tmp'}: {e}") from e
    try:  # the OWNER file lets a later command clean up after a kill -9
        (path / OWNER_FILE).write_text(json.dumps(lease.Owner.me().as_columns()))
    except OSError as e:
        shutil.rmtree(path, ignore_errors=True)
        raise PgrigError(f"cannot write to the work directory {path}: {e}") from e
    return path


def _tmpfs_ok(path: str, min_free: int) -> bool:
    try:
        st = os.statvfs(path)
    except OSError:
        return False
    return os.access(path, os.W_OK) and st.f_bavail * st.f_frsize >= min_free


def _owner_of(path: Path) -> lease.Owner | None:
    try:
        return lease.Owner.from_columns(json.loads((path / OWNER_FILE).read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def remove_orphan_work_dirs() -> list[Path]:
    """Remove the work directories of dead pgrig processes on this host; returns them.

    A directory without a readable OWNER file is left alone (another pgrig version's, or one
    being created this instant)."""
    removed = []
    for base in dict.fromkeys(_work_bases()):
        with contextlib.suppress(OSError):
            for path in Path(base).glob(f"{WORK_PREFIX}*"):
                owner = _owner_of(path)
                if owner is not None and lease.is_gone(owner):
                    shutil.rmtree(path, ignore_errors=True)
                    removed.append(path)
    return removed
