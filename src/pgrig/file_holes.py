"""Freeing the pages of a file already read, keeping its size: the one punch_hole.

A per-transaction log is read while pgbench still writes it; the pages behind the reader are
given back (fallocate PUNCH_HOLE | KEEP_SIZE) so a long run's log does not fill tmpfs. Used by
the follower here (load/engines/txlog_follower.py) and by the load agent on other hosts
(load/remote/remote_agent.py), which receives this module's source with its own
(load/remote/agent_program.py): standard library only, nothing else of pgrig imported.
"""

from __future__ import annotations

import ctypes
from typing import Any

PUNCH_STEP = 1 << 20  # free the pages behind a reader once it is this far past the last hole

_FALLOC_FL_KEEP_SIZE = 0x01
_FALLOC_FL_PUNCH_HOLE = 0x02

_libc: Any = None


def punch_hole(fd: int, offset: int, length: int) -> bool:
    """Free the pages of [offset, offset + length) keeping the file size; False if that failed
    (a file system without PUNCH_HOLE: the file then simply keeps its pages)."""
    global _libc
    if length <= 0:
        return True
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    mode = _FALLOC_FL_PUNCH_HOLE | _FALLOC_FL_KEEP_SIZE
    return bool(_libc.fallocate(fd, mode, offset, length) == 0)
