"""Leases of running runs: who runs a run, and whether it is still alive.

Modelled on optuna's heartbeat (storages/_heartbeat.py): while a run runs, a daemon thread
stamps its row every HEARTBEAT_S seconds with a short transaction of its own, off pgbench's hot
path. The row also names its owner: host, pid and the process's start time (a pid reused by
another process is not the owner). Any later pgrig command opening the archive marks runs
whose owner is gone as "lost":
- on this host, as soon as the owner process no longer exists (certain, no waiting);
- on another host, when its heartbeat is older than GRACE_S (we cannot see its processes).
A run whose owner is alive stays "running", however old its heartbeat (a frozen archive).
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psutil

from pgrig import interrupts

__all__ = ["GRACE_S", "HEARTBEAT_S", "Heartbeat", "Owner", "expired", "is_gone"]

HEARTBEAT_S = 5.0
GRACE_S = 60.0  # another host's run is lost after a minute without a heartbeat
_START_TOLERANCE_S = 1.0  # psutil's start times are computed from ticks since boot


@dataclass(frozen=True)
class Owner:
    """A process, identified so that a reused pid does not pass for it."""

    host: str
    pid: int
    started: float  # psutil create_time(): seconds since the epoch

    @classmethod
    def me(cls) -> Owner:
        return cls(socket.gethostname(), os.getpid(), psutil.Process().create_time())

    @classmethod
    def from_columns(cls, row: Mapping[Any, Any]) -> Owner:
        """From as_columns() (a runs row, or a work directory's OWNER file)."""
        return cls(
            str(row["lease_host"] or ""), int(row["lease_pid"]), float(row["lease_pid_started"])
        )

    def as_columns(self) -> dict[str, object]:
        return {"lease_host": self.host, "lease_pid": self.pid, "lease_pid_started": self.started}


def is_gone(owner: Owner) -> bool | None:
    """True: the owner process no longer exists on this host. False: it runs. None: it runs on
    another host, or its identity was not recorded (this host cannot tell)."""
    if owner.host != socket.gethostname() or not owner.pid:
        return None
    try:
        proc = psutil.Process(owner.pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return True
        return abs(proc.create_time() - owner.started) > _START_TOLERANCE_S
    except psutil.NoSuchProcess:
        return True
    except psutil.Error:  # e.g. access denied: it exists
        return False


def expired(heartbeat_at: datetime | None, now: datetime) -> bool:
    """Whether a heartbeat is older than GRACE_S on the archive's clock (or missing)."""
    return heartbeat_at is None or (now - heartbeat_at).total_seconds() > GRACE_S


class Heartbeat:
    """A daemon thread calling `beat()` every `interval` seconds until stop().

    `beat` stamps the run's row (and may write its partial series); an error (a locked or
    unreachable archive) is kept in `last_error` and the next beat tries again: the run itself
    is never blocked or failed by its heartbeat.
    """

    def __init__(self, beat: Callable[[], object], interval: float = HEARTBEAT_S) -> None:
        self._beat = beat
        self.interval = interval
        self.last_error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pgrig-heartbeat", daemon=True)

    def start(self) -> Heartbeat:
        self._thread.start()
        return self

    def stop(self, timeout: float = 2.0) -> None:
        """Stop beating. A beat stuck on a locked archive is left to finish on its own (the
        thread is a daemon): the run's end must not wait for it."""
        self._stop.set()
        interrupts.join(self._thread, timeout)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self._beat()
                self.last_error = None
            except Exception as e:
                self.last_error = f"{type(e).__name__}: {e}"
