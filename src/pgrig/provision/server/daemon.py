"""Server processes pgrig starts (the postmaster, pgbouncer), known by the pid in a file.

One rule for "is it running", used for every pid or lock file pgrig reads: the pid names a
live process that is not a zombie and runs the expected program. A process killed with -9
stays a zombie until its parent reaps it, and when PID 1 does not reap (containers), that
lasts for ever: kill(pid, 0) still succeeds, yet nothing runs. A pid reused by another program
means the file is stale. psutil reads /proc for us (status and name from /proc/<pid>/stat,
readable for processes of any user).
"""

from __future__ import annotations

import contextlib
import signal
import time
from pathlib import Path

import psutil

POSTGRES = ("postgres", "postmaster")
PGBOUNCER = ("pgbouncer",)


def pid_in_file(path: Path) -> int | None:
    """The pid on the first line of a pid or lock file (None: missing, unreadable, garbage)."""
    try:
        first = path.read_text(errors="replace").split("\n", 1)[0].strip()
    except OSError:
        return None
    return int(first) if first.isdigit() and int(first) > 0 else None


class Daemon:
    """A running process of one of `programs`, found by pid (see the module docstring)."""

    def __init__(self, process: psutil.Process, programs: tuple[str, ...]) -> None:
        self._process = process  # remembers its start time: a reused pid is not this process
        self.programs = programs

    @classmethod
    def find(cls, pid: int | None, programs: tuple[str, ...]) -> Daemon | None:
        """The daemon with this pid if it runs one of `programs`, else None."""
        if pid is None:
            return None
        try:
            daemon = cls(psutil.Process(pid), programs)
        except (psutil.Error, ValueError):
            return None
        return daemon if daemon.running() else None

    @classmethod
    def from_file(cls, path: Path, programs: tuple[str, ...]) -> Daemon | None:
        """The running daemon a pid or lock file names, None when the file is stale."""
        return cls.find(pid_in_file(path), programs)

    @property
    def pid(self) -> int:
        return self._process.pid

    def running(self) -> bool:
        try:
            return (
                self._process.is_running()
                and self._process.status() != psutil.STATUS_ZOMBIE
                and self._process.name() in self.programs
            )
        except psutil.Error:
            return False

    def signal(self, sig: int) -> None:
        """Send `sig`; a process that is already gone is not an error."""
        with contextlib.suppress(psutil.NoSuchProcess):
            self._process.send_signal(sig)

    def wait_gone(self, timeout: float) -> bool:
        """Until the process no longer runs (exited or zombie); False on timeout."""
        deadline = time.monotonic() + timeout
        while self.running():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    def stop(self, timeout: float) -> None:
        """SIGTERM, then SIGKILL if it still runs after `timeout` seconds; returns once gone."""
        self.signal(signal.SIGTERM)
        if not self.wait_gone(timeout):
            self.signal(signal.SIGKILL)
            self.wait_gone(5.0)
