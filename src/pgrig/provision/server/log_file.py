"""Keeping the server's log file (pg_ctl -l: the postmaster's stderr) from growing for ever.

pg_ctl starts the server with its stderr appended to the file (O_APPEND), and the server never
reopens it, so the file cannot be rotated by renaming, and truncating it (logrotate's
copytruncate) loses whatever the server writes between the copy and the cut. Instead, the part
already read is cut from the head with fallocate(FALLOC_FL_COLLAPSE_RANGE): the kernel removes
whole blocks from the start of the file under the inode's lock, and the server's appends go on
at the new end; nothing written is lost. Offsets into the file move down by the bytes removed
(the caller that cut knows how many). ext4 and XFS support it; where the file system does not
(tmpfs, NFS, ...) nothing is cut and the reason is returned.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
from dataclasses import dataclass
from pathlib import Path

FALLOC_FL_COLLAPSE_RANGE = 0x08
KEEP_BYTES = 1024 * 1024  # of what was read: the server's last words, for people
MIN_CUT_BYTES = 4 * 1024 * 1024  # cut in large steps: a collapse rewrites extent maps


@dataclass
class Cut:
    removed: int  # bytes removed from the head (0: nothing was cut)
    problem: str | None = None  # why nothing could be cut, when something should have been


def cut_head(
    path: Path, read_upto: int, keep: int | None = None, min_cut: int | None = None
) -> Cut:
    """Remove from the head of `path` what lies before `read_upto` (bytes already read), but
    the last `keep` of them (KEEP_BYTES), in whole blocks, when that is at least `min_cut`
    bytes (MIN_CUT_BYTES)."""
    keep = KEEP_BYTES if keep is None else keep
    min_cut = MIN_CUT_BYTES if min_cut is None else min_cut
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError as e:
        return Cut(0, f"cannot open {path}: {e.strerror or e}")
    try:
        st = os.fstat(fd)
        block = st.st_blksize or 4096
        n = (max(0, read_upto - keep) // block) * block
        if n < min_cut or n >= st.st_size:  # a collapse may not reach the end of the file
            return Cut(0)
        problem = _collapse(fd, n)
        return Cut(0, problem) if problem else Cut(n)
    finally:
        os.close(fd)


def _collapse(fd: int, n: int) -> str | None:
    libc = _libc()
    if libc is None:
        return "fallocate is not available"
    if libc.fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, 0, n) == 0:
        return None
    err = ctypes.get_errno()
    if err in (errno.EOPNOTSUPP, errno.ENOSYS):
        return "its file system cannot cut the head of a file (FALLOC_FL_COLLAPSE_RANGE)"
    return f"fallocate: {os.strerror(err)}"


_LIBC: ctypes.CDLL | None = None


def _libc() -> ctypes.CDLL | None:
    global _LIBC
    if _LIBC is None:
        name = ctypes.util.find_library("c")
        if name is None:
            return None
        lib = ctypes.CDLL(name, use_errno=True)
        lib.fallocate.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64)
        lib.fallocate.restype = ctypes.c_int
        _LIBC = lib
    return _LIBC
