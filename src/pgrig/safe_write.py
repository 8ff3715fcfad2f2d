"""Every atomic write of pgrig: a file (or a directory) appears at its name whole or not at
all, and stays there after a crash.

A file: written under a temporary name beside it, fsynced, renamed over the old one, and the
directory fsynced (the rename itself is durable only then). `replacing` is the general form
(the caller writes the temporary file: a tar, a gzip stream, a JSON dump); `write_text` the
common one. `mode` gives the new file exactly those permission bits before a byte is written
(a 0600 file is never readable by others, not even for a moment).

A directory: staged beside its final name, then `publish_dir` renames it into place (refused
when a directory is there already: another process got there first).

`set_aside` renames what is there (a damaged file, an old data directory) to a name beside it,
and `move_file` puts a finished file into place from elsewhere (across file systems: copied
under a temporary name first): both durable once they return.

`replace_text` is for the files that must change even on a full disk (pgrig.conf, the run
journal): on ENOSPC no new file can be written, yet undoing a run's settings must still happen
in the same process: the text that puts them back is shorter than the one that holds them, so
it is written over the file's own blocks (no new block is needed) and the file truncated. Not
atomic, but the only way left.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = ["move_file", "publish_dir", "replace_text", "replacing", "set_aside", "write_text"]

Prepare = Callable[[Path], None]


@contextlib.contextmanager
def replacing(
    path: Path, *, mode: int | None = None, prepare: Prepare | None = None, suffix: str = ".tmp"
) -> Iterator[Path]:
    """Yield an empty temporary file beside `path` to write; when the block ends it becomes
    `path` (fsync, rename, fsync of the directory). On an exception (the caller's or the
    disk's) the temporary file is removed and `path` is left as it was. `prepare(tmp)` runs
    on the written file before the rename (ownership); `suffix` ends the temporary name (an
    artifact in the making is a .part)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_native_id()}{suffix}")
    try:
        tmp.unlink(missing_ok=True)  # a dead process's of the same pid
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if mode is None else mode)
        try:
            if mode is not None:
                os.fchmod(fd, mode)  # exactly these bits, whatever the umask
        finally:
            os.close(fd)
        yield tmp
        _fsync(tmp)
        if prepare is not None:
            prepare(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def write_text(
    path: Path, text: str, *, mode: int | None = None, prepare: Prepare | None = None
) -> None:
    """Replace `path`'s content with `text` atomically (see `replacing`)."""
    with replacing(path, mode=mode, prepare=prepare) as tmp:
        tmp.write_bytes(text.encode())


def replace_text(path: Path, text: str, *, prepare: Prepare | None = None) -> None:
    """Replace `path`'s content with `text`: atomically, or on a full disk over the file's own
    blocks when the text fits in them. Raises OSError when neither way worked."""
    try:
        write_text(path, text, prepare=prepare)
    except OSError as e:
        if e.errno != errno.ENOSPC or not _overwrite(path, text.encode()):
            raise


def publish_dir(staging: Path, target: Path) -> None:
    """Put the complete directory `staging` at `target` in one rename (readers see the whole
    of it or nothing). FileExistsError when `target` is there already (never replaced:
    another process got there first; a directory is never empty here, it holds what was
    staged or a mark)."""
    try:
        os.rename(staging, target)
    except OSError as e:
        if e.errno in (errno.EEXIST, errno.ENOTEMPTY):
            raise FileExistsError(e.errno, f"{target} exists already", str(target)) from None
        raise
    _fsync_dir(target.parent)


def set_aside(path: Path, aside: Path) -> None:
    """Rename `path` (a file or a directory) to `aside` in the same directory, replacing a
    file there: nothing is written, only the rename made durable."""
    os.replace(path, aside)
    _fsync_dir(aside.parent)


def move_file(src: Path, dst: Path) -> None:
    """Move the file `src` to `dst`: one rename on the same file system, else a copy that
    appears at `dst` whole (see `replacing`) before `src` is removed."""
    try:
        os.replace(src, dst)
    except OSError as e:
        if e.errno != errno.EXDEV:
            raise
        with replacing(dst) as tmp, open(src, "rb") as fin, open(tmp, "wb") as fout:
            shutil.copyfileobj(fin, fout, 1 << 20)
        src.unlink()
    _fsync_dir(dst.parent)


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


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(d: Path) -> None:
    """Best effort: the rename is done; a file system that cannot fsync a directory still
    has it."""
    with contextlib.suppress(OSError):
        _fsync(d)
