"""Rewriting a small file that must change even on a full disk (pgrig.conf, the run journal).

Normally: a temp file, fsync, rename (atomic). On a full disk (ENOSPC) no new file can be
written, yet undoing a run's settings must still happen in the same process: the text that
puts them back is shorter than the one that holds them, so it is written over the file's own
blocks (no new block is needed) and the file truncated. Not atomic, but the only way left.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable
from pathlib import Path

__all__ = ["replace_text"]


def replace_text(path: Path, text: str, *, prepare: Callable[[Path], None] | None = None) -> None:
    """Replace `path`'s content with `text`. `prepare(tmp)` runs on the temp file before the
    rename (ownership, mode). Raises OSError when neither way worked."""
    data = text.encode()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if prepare is not None:
            prepare(tmp)
        os.replace(tmp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        if e.errno != errno.ENOSPC or not _overwrite(path, data):
            raise


def _overwrite(path: Path, data: bytes) -> bool:
    """Write `data` over the existing file's blocks when it is no longer than the file."""
    try:
        if path.stat().st_size < len(data):
            return False
        with open(path, "r+b") as f:
            f.write(data)
            f.truncate()
            f.flush()
            os.fsync(f.fileno())
    except OSError:
        return False
    return True
