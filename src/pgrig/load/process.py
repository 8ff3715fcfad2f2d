"""The pgbench child process: started in its own session, stderr read off the hot path.

pgbench writes `-P` progress lines to stderr; a daemon thread collects them so the main thread
only renders. The process group is killed on every exit path, so no pgbench outlives pgrig;
when pgrig itself is killed (-9), the kernel sends pgbench SIGKILL (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


_PRCTL = ctypes.CDLL(None, use_errno=True).prctl  # looked up here: the child must not import


def die_with_parent() -> None:
    """In the child, before exec: SIGKILL when pgrig dies (survives taskset's exec)."""
    _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() == 1:  # pgrig already died between fork and prctl
        os._exit(1)


class PgbenchProcess:
    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: Path,
        stdout_path: Path,
        on_stderr_line: Callable[[str], None] | None = None,
    ) -> None:
        self.argv = argv
        self.stderr_lines: list[str] = []
        self._on_line = on_stderr_line
        self._stdout_file = open(stdout_path, "wb")  # noqa: SIM115 - closed in wait()
        self.proc = subprocess.Popen(
            argv,
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=self._stdout_file,
            stderr=subprocess.PIPE,
            start_new_session=True,  # Ctrl-C reaches pgrig, which then stops pgbench itself
            preexec_fn=die_with_parent,  # kill -9 of pgrig: the kernel stops pgbench too
        )
        self._pidfd: int | None = None
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.stderr_lines.append(line)
            if self._on_line:
                with contextlib.suppress(Exception):
                    self._on_line(line)

    def poll(self) -> int | None:
        return self.proc.poll()

    def running_after(self, seconds: float) -> bool:
        """Wait up to `seconds`; False as soon as pgbench has exited. A pidfd wakes pgrig once,
        at the exit (Popen.wait(timeout) would poll 20 times a second beside the load)."""
        if self.proc.poll() is not None:
            return False
        if self._pidfd is None:
            try:
                self._pidfd = os.pidfd_open(self.proc.pid)
            except OSError:  # a kernel without pidfds
                self._pidfd = -1
        if self._pidfd < 0:
            time.sleep(seconds)
        else:
            select.select([self._pidfd], [], [], seconds)
        return self.proc.poll() is None

    def wait(self, timeout: float | None = None) -> int:
        rc = self.proc.wait(timeout)
        self._reader.join(timeout=5)
        self._stdout_file.close()
        self._close_descriptors()
        return rc

    def _close_descriptors(self) -> None:
        if self._pidfd is not None and self._pidfd >= 0:
            os.close(self._pidfd)
        self._pidfd = -1
        if self.proc.stderr is not None and not self._reader.is_alive():
            self.proc.stderr.close()  # read to its end by the reader thread

    def interrupt(self, grace_s: float = 5.0) -> int:
        """Stop pgbench: SIGINT, then SIGKILL for the whole group if it lingers."""
        self._signal(signal.SIGINT)
        try:
            return self.wait(grace_s)
        except subprocess.TimeoutExpired:
            self.kill()
            return self.wait(5)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def _signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    def ensure_dead(self) -> None:
        if self.proc.poll() is None:
            self.kill()
            with contextlib.suppress(Exception):
                self.wait(5)
        if not self._stdout_file.closed:
            self._stdout_file.close()
        self._close_descriptors()
