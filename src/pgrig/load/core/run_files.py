"""A run's own files in its artifacts directory, written so that a full disk never loses the
figures the run measured.

The figures (TPS, latency, series) live in memory until the archive stores them; the files
(pgbench's output, the server log excerpt) only back them up. A file that cannot be written
(ENOSPC, EIO, ...) is removed rather than left half-written, the problem is remembered, and the
run ends "failed" naming it (`failure()`), with its figures archived and printed as usual.
"""

from __future__ import annotations

import contextlib
import errno
from pathlib import Path

from pgrig.archive.records import RunRecord

__all__ = ["RunFiles", "describe_os_error"]


def describe_os_error(e: OSError) -> str:
    """'No space left on device (ENOSPC)'-style text of an OSError."""
    name = errno.errorcode.get(e.errno or 0)
    text = e.strerror or str(e)
    return f"{text} ({name})" if name else text


class RunFiles:
    def __init__(self, rec: RunRecord, art_dir: Path) -> None:
        self.rec = rec
        self.dir = art_dir
        self.problems: list[str] = []

    def write(self, name: str, data: str | bytes) -> bool:
        """Write one artifact and record it in rec.artifacts; False (and remembered) if the
        disk refused it."""
        path = self.dir / name
        try:
            if isinstance(data, bytes):
                path.write_bytes(data)
            else:
                path.write_text(data)
        except OSError as e:
            self.failed(path, e)
            return False
        self.rec.artifacts[name] = name
        return True

    def failed(self, path: Path, e: OSError) -> None:
        """Remember a write that failed (and remove what it left)."""
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
        self.problems.append(f"cannot write {path}: {describe_os_error(e)}")

    def failure(self) -> str | None:
        """The run's error when a file could not be written, else None."""
        if not self.problems:
            return None
        return (
            "; ".join(self.problems)
            + " (the figures were measured and are kept; the run's files are incomplete)"
        )
