"""The load agent: one short-lived Python program on a load (or database) host, driven over the
SSH session's stdin/stdout for one run. Standard library only: a host needs python3 and nothing
else, and the agent is always the control machine's own version (load/remote/agent_program.py sends
its source with the command, together with metrics/os_metrics.py for the OS sampler).

Input, one JSON object a line (stdin):
  ping {id}                 -> pong {id, t}: the host's clock, for the clock offset
  file {name, data}         -> a script file written into the agent's private directory (name:
                               a file name, or DIR/NAME: a sub-directory of it, made)
  sample {interval, pids}   -> OS rows (metrics/os_metrics.py) once per interval, "os" frames;
                               pids: {group: pid-file path} of processes to account (postmaster)
  start {at_us, argv, env, deadline_s}
                            -> at the host's clock at_us, pgbench starts ("@WORK@" in argv is the
                               private directory; a bare program name is looked up on PATH);
                               launched {t, pid}; its per-transaction log lines follow as "log"
                               frames (zlib), its stderr as "stderr" frames (its stdout as
                               "stdout" frames too with stdout_lines: sysbench's reports), and
                               "exit" {rc, stdout} once it ended and every line was sent
  stop {grace_s}            -> SIGINT to pgbench's process group, SIGKILL after grace_s
  bye / end of input        -> pgbench (if any) stopped, the directory removed, exit
Anything read counts as a keepalive: with no input for `silence_s` seconds the control machine
is gone (a cut link does not close the session), so pgbench is stopped and the agent exits.
A hard deadline (deadline_s after the start) ends pgbench whatever happens; pgbench dies with
the agent (PR_SET_PDEATHSIG).

Output (stdout): one JSON object a line (a text stream, as SSH sessions give it); log lines
travel zlib-compressed and base64-encoded in "z".
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from typing import Any

POLL_S = 1.0
READ_CHUNK = 8 << 20
STOP_GRACE_S = 5.0
PR_SET_PDEATHSIG = 1


def own_cpu_s() -> float:
    """CPU seconds of this process (every thread), without its children."""
    t = os.times()
    return t.user + t.system


def now_us() -> int:
    return time.time_ns() // 1000


class Agent:
    def __init__(self, silence_s: float) -> None:
        self.silence_s = silence_s
        self.out = sys.stdout.buffer
        self.out_lock = threading.Lock()
        base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
        self.work = tempfile.mkdtemp(prefix="pgrig-agent-", dir=base)
        self.proc: subprocess.Popen[bytes] | None = None
        self.last_input = time.monotonic()
        self.done = threading.Event()
        self.files: dict[str, list[Any]] = {}  # name -> [fd, offset, punched, rest]
        self.sampler: Any = None
        self.deadline: float | None = None
        self.exit_sent = False
        self.cpu_at_start: float | None = None
        self.log_lock = threading.Lock()  # the main loop and pgbench's last drain

    # --- output ---------------------------------------------------------------------------------
    def send(self, frame: dict[str, Any]) -> None:
        data = json.dumps(frame, separators=(",", ":")).encode() + b"\n"
        with self.out_lock:
            try:
                self.out.write(data)
                self.out.flush()
            except (OSError, ValueError):
                self.done.set()  # nobody listens any more

    # --- input ----------------------------------------------------------------------------------
    def read_input(self) -> None:
        try:
            for raw in sys.stdin.buffer:
                self.last_input = time.monotonic()
                try:
                    msg = json.loads(raw)
                except ValueError:
                    self.send({"k": "error", "message": "unreadable input line"})
                    continue
                if not self.handle(msg):
                    break
        finally:
            self.done.set()

    def handle(self, msg: dict[str, Any]) -> bool:
        op = msg.get("op")
        if op == "ping":
            self.send({"k": "pong", "id": msg.get("id"), "t": now_us()})
        elif op == "alive":
            pass
        elif op == "file":
            name = _relative_name(str(msg["name"]))
            if name is None:
                self.send({"k": "error", "message": f"not a file name: {msg['name']!r}"})
                return True
            path = os.path.join(self.work, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(str(msg["data"]))
            self.send({"k": "file", "name": name})
        elif op == "sample":
            self.start_sampler(float(msg.get("interval", 1.0)), msg.get("pids") or {})
        elif op == "start":
            threading.Thread(target=self.start_pgbench, args=(msg,), daemon=True).start()
        elif op == "stop":
            self.stop_pgbench(float(msg.get("grace_s", STOP_GRACE_S)))
        elif op == "rtt":
            self.send(
                {"k": "rtt", **measure_rtt(str(msg["host"]), int(msg["port"]), int(msg["n"]))}
            )
        elif op == "bye":
            return False
        else:
            self.send({"k": "error", "message": f"unknown op {op!r}"})
        return True

    # --- pgbench --------------------------------------------------------------------------------
    def start_pgbench(self, msg: dict[str, Any]) -> None:
        self.cpu_at_start = own_cpu_s()  # the agent's cost over the load (pgrig's harness)
        argv = [a.replace("@WORK@", self.work) for a in msg["argv"]]
        env = {k: v.replace("@WORK@", self.work) for k, v in dict(msg.get("env") or {}).items()}
        passfile = msg.get("passfile")
        if passfile:
            path = os.path.join(self.work, "pgpass")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(passfile)
            env["PGPASSFILE"] = path
        program = os.path.basename(argv[0])
        if os.sep not in argv[0]:  # a program of the host's own (sysbench): found on its PATH
            found = shutil.which(argv[0], path=env.get("PATH") or os.environ.get("PATH"))
            argv[0] = found or argv[0]
        if not os.access(argv[0], os.X_OK):
            where = f"at {argv[0]}" if os.sep in argv[0] else "on this host's PATH"
            self.send({"k": "error", "message": f"no executable {program} {where}"})
            self.send_exit(127, "")
            return
        stream_stdout = bool(msg.get("stdout_lines"))
        at = int(msg["at_us"])
        while True:  # sleep, then spin the last milliseconds: the start is what is measured
            left = at - now_us()
            if left <= 0:
                break
            time.sleep(max(0.0, left / 1e6 - 0.002) if left > 2500 else 0)
        self.deadline = time.monotonic() + float(msg.get("deadline_s", 3600))
        stdout = open(os.path.join(self.work, "pgbench.stdout"), "wb")  # noqa: SIM115
        launched = now_us()
        try:
            self.proc = subprocess.Popen(
                argv,
                env={**{"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, **env},
                cwd=self.work,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE if stream_stdout else stdout,
                stderr=subprocess.PIPE,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        except OSError as e:
            stdout.close()
            self.send({"k": "error", "message": f"cannot start {program}: {e}"})
            self.send_exit(127, "")
            return
        self.send({"k": "launched", "t": launched, "pid": self.proc.pid})
        if self.sampler is not None:
            pid = self.proc.pid
            self.sampler.track_processes("pgbench", lambda: [pid], children=False)
        tee = None
        if stream_stdout:  # each line sent as it comes, and kept for the exit frame
            tee = threading.Thread(target=self.tee_stdout, args=(self.proc, stdout), daemon=True)
            tee.start()
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.send({"k": "stderr", "line": raw.decode("utf-8", "replace").rstrip("\n")})
        rc = self.proc.wait()
        if tee is not None:
            tee.join()
        stdout.close()
        self.poll_logs()  # the last lines, written before pgbench exited
        with open(os.path.join(self.work, "pgbench.stdout"), "rb") as f:
            text = f.read().decode("utf-8", "replace")
        self.send_exit(rc, text)

    def tee_stdout(self, proc: subprocess.Popen[bytes], keep: Any) -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            keep.write(raw)
            self.send({"k": "stdout", "line": raw.decode("utf-8", "replace").rstrip("\n")})

    def send_exit(self, rc: int, stdout: str) -> None:
        if not self.exit_sent:
            self.exit_sent = True
            frame: dict[str, Any] = {"k": "exit", "rc": rc, "stdout": stdout, "t": now_us()}
            if self.cpu_at_start is not None:  # this process only: pgbench is not the harness
                frame["cpu_s"] = round(own_cpu_s() - self.cpu_at_start, 3)
            self.send(frame)

    def stop_pgbench(self, grace_s: float) -> None:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        _killpg(proc.pid, signal.SIGINT)
        end = time.monotonic() + grace_s
        while proc.poll() is None and time.monotonic() < end:
            time.sleep(0.05)
        _killpg(proc.pid, signal.SIGKILL)

    # --- the per-transaction log ------------------------------------------------------------------
    def poll_logs(self) -> None:
        with self.log_lock:
            self._poll_logs()

    def _poll_logs(self) -> None:
        try:
            names = sorted(n for n in os.listdir(self.work) if n.startswith("txlog."))
        except OSError:
            return
        for name in names:
            f = self.files.get(name)
            if f is None:
                try:
                    fd = os.open(os.path.join(self.work, name), os.O_RDWR)
                except OSError:
                    continue
                f = self.files[name] = [fd, 0, 0, b""]
            while True:
                try:
                    data = os.read(f[0], READ_CHUNK)
                except OSError:
                    break
                if not data:
                    break
                f[1] += len(data)
                buf = f[3] + data
                cut = buf.rfind(b"\n") + 1
                f[3] = buf[cut:]
                if cut:
                    packed = base64.b64encode(zlib.compress(buf[:cut], 1)).decode("ascii")
                    self.send({"k": "log", "src": name, "z": packed})
                if len(data) < READ_CHUNK:
                    break
            if f[1] - f[2] >= _holes().PUNCH_STEP:
                end = f[1] - f[1] % 4096
                if _holes().punch_hole(f[0], f[2], end - f[2]):
                    f[2] = end

    # --- OS sampling ------------------------------------------------------------------------------
    def start_sampler(self, interval: float, pid_files: dict[str, str]) -> None:
        metrics = sys.modules.get("os_metrics")
        if metrics is None:
            self.send({"k": "error", "message": "no OS sampler in this agent"})
            return
        sampler = metrics.OsSampler()
        for group, path in pid_files.items():
            sampler.track_processes(str(group), metrics.pids_from_file(path))
        self.sampler = sampler
        self.send({"k": "sampling", "ncpu": os.cpu_count(), "disks": sorted(sampler.disks)})

        def loop() -> None:
            sampler.sample()  # the baseline row
            next_at = time.monotonic() + interval
            while not self.done.wait(max(0.0, next_at - time.monotonic())):
                next_at += interval
                with contextlib.suppress(Exception):
                    self.send({"k": "os", "ts": time.time(), "row": sampler.sample()})

        threading.Thread(target=loop, daemon=True).start()

    # --- the main loop ---------------------------------------------------------------------------
    def run(self) -> int:
        self.send({"k": "hello", "pid": os.getpid(), "t": now_us(), "python": sys.version})
        threading.Thread(target=self.read_input, daemon=True).start()
        reason = "bye"
        while not self.done.wait(POLL_S):
            self.poll_logs()
            if time.monotonic() - self.last_input > self.silence_s:
                reason = "silence"
                break
            if self.deadline is not None and time.monotonic() > self.deadline:
                self.send({"k": "error", "message": "deadline passed: pgbench stopped"})
                self.stop_pgbench(0.0)
                self.deadline = None
        self.stop_pgbench(STOP_GRACE_S)
        self.cleanup()
        return 0 if reason == "bye" else 3

    def cleanup(self) -> None:
        for f in self.files.values():
            with contextlib.suppress(OSError):
                os.close(f[0])
        shutil.rmtree(self.work, ignore_errors=True)


def measure_rtt(host: str, port: int, n: int, timeout: float = 2.0) -> dict[str, Any]:
    """n TCP connects (or Unix-socket connects when host is a directory) to where pgbench
    connects, each timed from connect() to its return: one round trip (SYN, SYN-ACK) on the
    load's own path, answered by the kernel, not by the server's processes. The connection is
    closed without a byte sent (PostgreSQL logs nothing for that)."""
    out: dict[str, Any] = {"target": f"{host}:{port}", "samples_us": []}
    address: Any
    if host.startswith("/"):
        family, address = socket.AF_UNIX, f"{host}/.s.PGSQL.{port}"
        out["loopback"], out["address"], out["kind"] = True, address, "unix socket"
    else:
        try:
            info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        except OSError as e:
            out["error"] = f"cannot resolve {host}: {e}"
            return out
        family, address = info[0], info[4]
        out["address"] = str(address[0])
        out["loopback"] = out["address"].startswith("127.") or out["address"] == "::1"
        out["kind"] = "loopback" if out["loopback"] else "network"
    for _ in range(n):
        s = socket.socket(family, socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            t0 = time.perf_counter_ns()
            s.connect(address)
            out["samples_us"].append((time.perf_counter_ns() - t0) / 1000.0)
        except OSError as e:
            out["error"] = f"cannot connect to {out['target']}: {e}"
            break
        finally:
            s.close()
    return out


def _relative_name(name: str) -> str | None:
    """NAME or DIR/NAME inside the agent's directory; None for anything that would leave it."""
    parts = name.split("/")
    if len(parts) > 2 or any(p in ("", ".", "..") or "\0" in p for p in parts):
        return None
    return os.path.join(*parts)


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() == 1:
        os._exit(1)


def _killpg(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _holes() -> Any:
    """pgrig/file_holes.py (PUNCH_STEP, punch_hole), which the agent's loader put beside it
    (agent_program.py): the follower here and the agent free a log's pages the same way."""
    return sys.modules["file_holes"]


def main(argv: list[str]) -> int:
    silence_s = float(argv[1]) if len(argv) > 1 else 15.0
    agent = Agent(silence_s)
    for sig in (signal.SIGHUP, signal.SIGTERM):  # the session ended: stop pgbench, clean up
        signal.signal(sig, lambda *_: agent.done.set())
    rc = 1
    try:
        rc = agent.run()
    finally:
        agent.cleanup()
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        # not sys.exit: the stdin reader thread may hold stdin's lock, and the interpreter's
        # shutdown would then abort
        os._exit(rc)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
