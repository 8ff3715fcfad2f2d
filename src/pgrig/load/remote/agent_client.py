"""The control machine's side of one load agent (remote/remote_agent.py): frames in, commands out.

A transport is anything that runs the agent's argv and gives its stdin and stdout as byte
streams: a local process (LocalTransport, for localhost and tests) or a process on a host over
SSH (load/remote/ssh_transport.py). One reader thread per agent turns frames into callbacks; a
keepalive is sent every second so that the agent notices a control machine that went away.
"""

from __future__ import annotations

import base64
import contextlib
import json
import queue
import subprocess
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from pgrig.analysis.txlog_merge import ClockOffset, clock_offset
from pgrig.errors import PgrigError
from pgrig.load.engines.process import die_with_parent
from pgrig.load.remote.agent_program import agent_argv
from pgrig.record.doc_read import read_document
from pgrig.record.documents import RttDoc

PINGS = 12  # round trips for the clock offset: the shortest one bounds its error
KEEPALIVE_S = 1.0
REPLY_TIMEOUT_S = 10.0
LOST_CLOSE_S = 0.5  # what a lost agent's transport gets to close


class AgentLost(PgrigError):
    """The agent's session ended or stopped answering."""


class Transport(Protocol):
    """A running agent process: lines to its stdin, lines from its stdout, a way to end it."""

    name: str

    def write(self, data: str) -> None:
        """Send text (whole lines); raises OSError when the session is gone."""
        ...

    def lines(self) -> Iterator[str | bytes]:
        """The agent's stdout, line by line, until it ends (raises OSError on a lost session)."""
        ...

    def close(self, timeout: float) -> int | None:
        """Wait up to timeout for the process to end after its stdin closed, then end it."""
        ...

    def describe_failure(self) -> str:
        """What went wrong, when the process ended before its time (e.g. its stderr)."""
        ...


class LocalTransport:
    """The agent as a child process of pgrig on this machine (dies with pgrig)."""

    def __init__(self, name: str = "localhost", python: str = "python3") -> None:
        self.name = name
        self.proc = subprocess.Popen(
            agent_argv(python),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )

    def write(self, data: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data.encode())
        self.proc.stdin.flush()

    def lines(self) -> Iterator[str | bytes]:
        assert self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, b""):
            if not line.endswith(b"\n"):  # the agent died inside a frame: not a bad frame
                raise OSError(f"the agent's output ended inside a line, {len(line)} bytes into it")
            yield line

    def close(self, timeout: float) -> int | None:
        with contextlib.suppress(OSError):
            self.proc.stdin.close()  # type: ignore[union-attr]
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(5)

    def describe_failure(self) -> str:
        if self.proc.poll() is None or self.proc.stderr is None:
            return ""
        return self.proc.stderr.read().decode("utf-8", "replace").strip()[-500:]


@dataclass
class AgentState:
    """What one agent said during the run."""

    hello: dict[str, Any] | None = None
    launched_us: int | None = None  # on the host's clock
    pid: int | None = None
    exit_rc: int | None = None
    stdout: str = ""
    stderr_lines: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    lost: str | None = None  # why the session ended before the agent said goodbye
    log_bytes: int = 0  # compressed bytes received
    ncpu: int | None = None
    cpu_s: float | None = None  # the agent's own CPU over the load (its exit frame)


LogSink = Callable[[str, list[tuple[str, bytes]]], None]
OsSink = Callable[[str, float, dict[str, Any]], None]
LineSink = Callable[[str, str], None]


class AgentClient:
    def __init__(
        self,
        transport: Transport,
        *,
        on_log: LogSink | None = None,
        on_os: OsSink | None = None,
        on_stderr: LineSink | None = None,
        on_stdout: LineSink | None = None,
    ) -> None:
        self.transport = transport
        self.name = transport.name
        self.state = AgentState()
        self.on_log = on_log
        self.on_os = on_os
        self.on_stderr = on_stderr
        self.on_stdout = on_stdout  # lines of a program started with stdout_lines (sysbench)
        self.exited = threading.Event()  # pgbench ended (or the agent was lost)
        self._hello = threading.Event()
        self._pongs: queue.Queue[tuple[int, int]] = queue.Queue()
        self._rtts: queue.Queue[RttDoc] = queue.Queue()
        self._send_lock = threading.Lock()
        self._closing = False
        self._closed = threading.Event()
        self.last_frame = time.monotonic()  # when the agent last said anything
        self._reader = threading.Thread(target=self._read, name=f"agent-{self.name}", daemon=True)
        self._reader.start()
        self._keepalive = threading.Thread(target=self._alive, daemon=True)
        self._keepalive.start()

    # --- commands -------------------------------------------------------------------------------
    def send(self, msg: dict[str, Any]) -> None:
        data = json.dumps(msg, separators=(",", ":")) + "\n"
        with self._send_lock:
            try:
                self.transport.write(data)
            except (OSError, ValueError) as e:
                self._lose(f"cannot write to the agent: {e}")
                raise AgentLost(f"{self.name}: the session to the agent is gone") from None

    def wait_ready(self, timeout: float = REPLY_TIMEOUT_S) -> None:
        if not self._hello.wait(timeout) or self.state.hello is None:
            why = self.state.lost or self.transport.describe_failure() or "no answer"
            raise AgentLost(f"{self.name}: the load agent did not start ({why})")

    def measure_clock(self, pings: int = PINGS) -> ClockOffset:
        """The host's clock offset from round trips (analysis/txlog_merge.clock_offset)."""
        samples = []
        for i in range(pings):
            sent = time.time_ns() // 1000
            self.send({"op": "ping", "id": i})
            try:
                _id, remote = self._pongs.get(timeout=REPLY_TIMEOUT_S)
            except queue.Empty:
                raise AgentLost(f"{self.name}: no answer to a clock ping") from None
            samples.append((sent, remote, time.time_ns() // 1000))
        return clock_offset(samples)

    def measure_rtt(self, host: str, port: int, n: int) -> RttDoc:
        """n timed TCP connects from the host to host:port (remote_agent.measure_rtt)."""
        self.send({"op": "rtt", "host": host, "port": port, "n": n})
        try:
            return self._rtts.get(timeout=REPLY_TIMEOUT_S + 2.0 * n)
        except queue.Empty:
            raise AgentLost(f"{self.name}: no answer to the round-trip measurement") from None

    def put_file(self, name: str, text: str) -> None:
        self.send({"op": "file", "name": name, "data": text})

    def sample(self, interval: float = 1.0, pid_files: dict[str, str] | None = None) -> None:
        self.send({"op": "sample", "interval": interval, "pids": pid_files or {}})

    def start(
        self,
        at_us: int,
        argv: list[str],
        env: dict[str, str],
        deadline_s: float,
        passfile: str | None = None,
        stdout_lines: bool = False,
    ) -> None:
        self.send(
            {
                "op": "start",
                "at_us": at_us,
                "argv": argv,
                "env": env,
                "deadline_s": deadline_s,
                **({"passfile": passfile} if passfile else {}),
                **({"stdout_lines": True} if stdout_lines else {}),
            }
        )

    def stop(self, grace_s: float = 5.0) -> None:
        with contextlib.suppress(AgentLost):
            self.send({"op": "stop", "grace_s": grace_s})

    def close(self, timeout: float = 15.0) -> None:
        """Say goodbye and end the session (the agent stops pgbench and removes its files)."""
        if self._closing:
            return
        self._closing = True
        lost = self.state.lost is not None
        if not lost:
            with contextlib.suppress(AgentLost):
                self.send({"op": "bye"})
        with contextlib.suppress(Exception):
            # a lost agent is not waited for: it ends pgbench by itself (silence watchdog)
            self.transport.close(LOST_CLOSE_S if lost else timeout)
        self._reader.join(timeout=5)
        self._closed.set()

    # --- frames ---------------------------------------------------------------------------------
    def _read(self) -> None:
        try:
            for line in self.transport.lines():
                self.last_frame = time.monotonic()
                self._dispatch(json.loads(line))
        except Exception as e:  # a torn line, a lost session
            self._lose(str(e) if isinstance(e, OSError) else f"{type(e).__name__}: {e}")
        if not self._closing:
            self._lose(self.transport.describe_failure() or "the session ended")
        self._hello.set()
        self.exited.set()

    def _dispatch(self, frame: dict[str, Any]) -> None:
        kind = frame.get("k")
        st = self.state
        if kind == "log":
            packed = base64.b64decode(frame["z"])
            st.log_bytes += len(packed)
            data = zlib.decompress(packed)
            if self.on_log is not None:
                self.on_log(self.name, [(str(frame["src"]), data)])
        elif kind == "os":
            if self.on_os is not None:
                self.on_os(self.name, float(frame["ts"]), dict(frame["row"]))
        elif kind in ("stderr", "stdout"):
            self._line(kind, str(frame["line"]))
        elif kind == "pong":
            self._pongs.put((int(frame["id"]), int(frame["t"])))
        elif kind == "rtt":
            self._rtts.put(read_document(RttDoc, frame))  # the agent's answer, checked once
        elif kind == "launched":
            st.launched_us, st.pid = int(frame["t"]), int(frame["pid"])
        elif kind == "exit":
            st.exit_rc, st.stdout = int(frame["rc"]), str(frame.get("stdout", ""))
            cpu = frame.get("cpu_s")
            st.cpu_s = float(cpu) if isinstance(cpu, int | float) else None
            self.exited.set()
        elif kind == "hello":
            st.hello = frame
            self._hello.set()
        elif kind == "sampling":
            st.ncpu = frame.get("ncpu")
        elif kind == "error":
            st.errors.append(str(frame.get("message")))

    def _line(self, stream: str, line: str) -> None:
        """A line the load generator wrote (stdout: only when started with stdout_lines; its
        whole stdout comes with the exit frame)."""
        if stream == "stderr":
            self.state.stderr_lines.append(line)
        sink = self.on_stderr if stream == "stderr" else self.on_stdout
        if sink is not None:
            sink(self.name, line)

    def silent_for(self) -> float:
        """Seconds since the agent's last line (its OS rows come every second)."""
        return time.monotonic() - self.last_frame

    def lose(self, why: str) -> None:
        """Give the agent up (e.g. silent too long: a host cut off keeps its session open)."""
        self._lose(why)

    def _lose(self, why: str) -> None:
        if self.state.lost is None and not self._closing:
            self.state.lost = why
        self.exited.set()

    def _alive(self) -> None:
        while not self._closed.wait(KEEPALIVE_S):
            if self._closing or self.state.lost:
                return
            with contextlib.suppress(AgentLost):
                self.send({"op": "alive"})
