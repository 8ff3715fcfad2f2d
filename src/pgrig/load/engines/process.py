"""The load's child process (pgbench, sysbench): started in its own session, its progress
stream read off the hot path.

pgbench writes `-P` progress lines to stderr, sysbench its per-second reports to stdout
(`progress_on`); a daemon thread collects them so the main thread only renders. With stdout as
the progress stream, stderr joins it and every line is also written to stdout_path.
The process group is killed on every exit path, so no pgbench outlives pgrig;
when pgrig itself is killed (-9), the kernel sends pgbench SIGKILL (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from pgrig.provision.system.child_process import PR_SET_PDEATHSIG, die_with_parent

__all__ = ["PR_SET_PDEATHSIG", "PgbenchProcess", "die_with_parent", "failure_reason", "killed_by"]


class PgbenchProcess:
    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: Path,
        stdout_path: Path,
        on_stderr_line: Callable[[str], None] | None = None,
        progress_on: str = "stderr",
    ) -> None:
        self.argv = argv
        self.stderr_lines: list[str] = []
        self._on_line = on_stderr_line
        self._stdout_file = open(stdout_path, "wb")  # noqa: SIM115 - closed in wait()
        self._tee = progress_on == "stdout"  # lines read from stdout are also written to the file
        self.proc = subprocess.Popen(
            argv,
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if self._tee else self._stdout_file,
            stderr=subprocess.STDOUT if self._tee else subprocess.PIPE,
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
        stream = self.proc.stdout if self._tee else self.proc.stderr
        assert stream is not None
        for raw in stream:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if self._tee:
                with contextlib.suppress(ValueError):  # closed by wait() after its join timeout
                    self._stdout_file.write(raw)
            else:
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
        stream = self.proc.stdout if self._tee else self.proc.stderr
        if stream is not None and not self._reader.is_alive():
            stream.close()  # read to its end by the reader thread

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


def killed_by(rc: int | None, program: str) -> str | None:
    """ "pgbench was killed by signal 9 (SIGKILL)" for an exit status that says a signal
    ended the program (negative from Popen, or 128 + N through a shell or ssh); else None."""
    import signal

    if rc is None:
        return None
    signum = -rc if rc < 0 else rc - 128 if 128 < rc < 160 else None
    if signum is None:
        return None
    try:
        name = signal.Signals(signum).name
    except ValueError:
        return None
    return f"{program} was killed by signal {signum} ({name})"


def failure_reason(rc: int, errors: list[str], output: str, program: str) -> str:
    """Why a load program failed, in one line: the signal that killed it first, then its own
    error lines; without them the last lines of its output that are not progress reports."""
    killed = killed_by(rc, program)
    if killed:
        return "; ".join([killed, *errors])[:2000]
    if not errors:
        lines = [x for x in output.strip().splitlines() if not x.startswith("progress: ")]
        errors = lines[-3:]
    return "; ".join(errors)[:2000] or f"{program} exited with code {rc}"
