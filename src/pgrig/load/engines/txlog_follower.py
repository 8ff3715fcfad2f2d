"""Follow pgbench's per-transaction log files while pgbench writes them, in a background thread.

pgbench writes its log (-l) into ordinary files in pgrig's scratch directory (tmpfs when there
is room): it never waits for pgrig, so a slow reader can never slow the load. A pipe would
block pgbench as soon as its buffer (64 KiB) filled, and at 370k transactions per second that is
a few milliseconds of reader delay.

The reader thread reads what was appended to each file since its last look, in big chunks,
hands the complete lines to a TxlogStream (analysis/txlog.py: polars parsing and fixed-size
histograms) and then punches a hole over what it has read (fallocate PUNCH_HOLE, supported by
tmpfs, ext4 and xfs): the file keeps its size for pgbench, but its pages are freed, so the
scratch space holds only what was written and not yet read, whatever the run's duration. With
keep_dir the lines also go, gzip-compressed as they are read, to <keep_dir>/txlog.<thread>.gz.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from pgrig import interrupts
from pgrig.analysis.txlog import TxlogStream
from pgrig.analysis.txlog_parse import complete_lines
from pgrig.archive.artifacts import GZIP_LEVEL
from pgrig.file_holes import PUNCH_STEP, punch_hole
from pgrig.record.documents import TxlogDoc

READ_CHUNK = 8 << 20  # bytes per read: big chunks keep the per-chunk cost (polars) negligible
POLL_S = 1.0  # pause between looks: each look has a fixed cost (bench/overhead.py), and the
# live p95 shows closed seconds, once a second


@dataclass
class FollowStats:
    """What the reader saw (kept with the run, extra["txlog"])."""

    files: int = 0
    bytes_read: int = 0
    max_backlog_bytes: int = 0  # most bytes written but not yet read, at any look
    hole_punching: bool = True  # False: the file system cannot free read pages
    kept: dict[str, str] = field(default_factory=dict)  # artifact key -> file name
    error: str | None = None  # the first error of the stream (the run keeps its other figures)

    def as_dict(self) -> TxlogDoc:
        return {
            "files": self.files,
            "bytes_read": self.bytes_read,
            "max_backlog_bytes": self.max_backlog_bytes,
            "hole_punching": self.hole_punching,
        }


@dataclass
class _File:
    path: Path
    fd: int
    thread: int
    offset: int = 0
    punched: int = 0
    rest: bytes = b""
    keep: gzip.GzipFile | None = None


class TxlogFollower:
    def __init__(
        self,
        prefix: Path,
        stream: TxlogStream,
        keep_dir: Path | None = None,
        poll_s: float = POLL_S,
    ) -> None:
        self.prefix = Path(prefix)
        self.stream = stream
        self.keep_dir = keep_dir
        self.poll_s = poll_s
        self.stats = FollowStats()
        self._files: dict[Path, _File] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> TxlogFollower:
        self._thread = threading.Thread(target=self._run, name="txlog-follower", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> FollowStats:
        """Read what is left (pgbench has exited) and close everything. Idempotent."""
        self._stop.set()
        if self._thread is not None:
            interrupts.join(self._thread)
        return self.stats

    # --- the thread ------------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            while not self._stop.wait(self.poll_s):  # a pause even when there was data:
                self.poll()  # bigger chunks, and the per-chunk cost stays negligible
            self.poll()  # the last lines, written before pgbench exited
        except Exception as e:  # never lose the run: the caller reports it
            self.stats.error = self.stats.error or f"{type(e).__name__}: {e}"
        finally:
            self._close()

    def poll(self) -> bool:
        """Read what every file grew by, fold it in one go; True when something was read."""
        chunks: list[tuple[str, bytes]] = []
        for f in self._discover():
            while True:
                try:
                    self.stats.max_backlog_bytes = max(
                        self.stats.max_backlog_bytes, os.fstat(f.fd).st_size - f.offset
                    )
                    data = os.read(f.fd, READ_CHUNK)
                except OSError:
                    break
                if not data:
                    break
                f.offset += len(data)
                self.stats.bytes_read += len(data)
                lines, f.rest = complete_lines(f.rest + data)
                if lines:
                    if f.keep is not None:
                        f.keep.write(lines)
                    chunks.append((f.path.name, lines))
                if len(data) < READ_CHUNK:
                    break
        self._consume(chunks)
        for f in self._files.values():
            self._punch(f)
        return bool(chunks)

    def _discover(self) -> list[_File]:
        parent = self.prefix.parent
        with contextlib.suppress(OSError):
            for path in parent.glob(self.prefix.name + ".*"):
                if path not in self._files and path.is_file():
                    self._open(path)
        return list(self._files.values())

    def _open(self, path: Path) -> None:
        try:
            fd = os.open(path, os.O_RDWR)  # fallocate needs a writable descriptor
        except OSError:
            return
        thread = _thread_number(self.prefix.name, path.name)
        f = _File(path=path, fd=fd, thread=thread)
        if self.keep_dir is not None:
            name = f"txlog.{thread}.gz"
            # closed in _close(), when the reader stops
            f.keep = gzip.open(self.keep_dir / name, "wb", compresslevel=GZIP_LEVEL)  # noqa: SIM115
            self.stats.kept[f"txlog.{thread}"] = name
        self._files[path] = f
        self.stats.files = len(self._files)

    def _consume(self, chunks: list[tuple[str, bytes]]) -> None:
        if not chunks or self.stats.error is not None:
            return  # the stream broke once: keep draining (and freeing) the files only
        try:
            self.stream.feed_many(chunks)
        except Exception as e:
            self.stats.error = f"{type(e).__name__}: {e}"

    def _punch(self, f: _File) -> None:
        if not self.stats.hole_punching or f.offset - f.punched < PUNCH_STEP:
            return
        end = f.offset - f.offset % 4096
        if punch_hole(f.fd, f.punched, end - f.punched):
            f.punched = end
        else:
            self.stats.hole_punching = False

    def _close(self) -> None:
        for f in self._files.values():
            with contextlib.suppress(OSError):
                os.close(f.fd)
            if f.keep is not None:
                with contextlib.suppress(OSError):
                    f.keep.close()


def _thread_number(prefix_name: str, file_name: str) -> int:
    """<prefix>.<pid> -> 0, <prefix>.<pid>.<n> -> n (pgbench's naming of its threads' logs)."""
    parts = file_name[len(prefix_name) + 1 :].split(".")
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
