"""Where the CPU went during one arm of a bench, read from /proc independently of pgrig.

    watch = CpuWatch(postmaster_pid, psql_argv, libpq_env)
    watch.start()
    ...one arm runs (raw pgbench, or `pgrig run`), started by this process...
    print(watch.stop(transactions).line())

Exact, over the arm's whole span: this process's reaped children (getrusage RUSAGE_CHILDREN),
the arm's process tree (raw pgbench alone, or `pgrig run` with its pgbench).
The machine, over the load's window: /proc/stat's first line (user, nice, system, ... over
all CPUs); its `nice` column is the user CPU of niced processes (the other engineers' tests).
Over the load's window (from the last sample before pgbench was seen to the first after it was
gone), by sampling /proc/stat and every /proc/PID/stat each `every_s` (a process's last
reading before it exits counts; up to `every_s` of its CPU is missed): pgbench, pgrig's own
Python, the benchmark's backends, pgrig's sessions' backends (application_name from
pg_stat_activity, read once mid-arm), the server's other processes (logger, checkpointer, ...),
and everything else, niced or not.
"""

from __future__ import annotations

import os
import resource
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass
class Proc:
    pid: int
    ppid: int
    comm: str
    nice: int
    cmdline: str
    ticks: list[tuple[int, int]] = field(default_factory=list)  # (sample no, ticks)

    def at(self, i: int) -> int:
        """Its ticks at sample i: its last reading up to i, 0 before it was seen."""
        out = 0
        for n, t in self.ticks:
            if n > i:
                break
            out = t
        return out


def _stat(pid: str) -> tuple[int, str, int, int, int, int] | None:
    """(ppid, comm, nice, ticks, starttime, pid) of /proc/PID/stat."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    head, _, rest = text.rpartition(")")
    comm = head.split("(", 1)[1] if "(" in head else "?"
    v = rest.split()
    try:
        # after the name: state(0) ppid(1) ... utime(11) stime(12) ... nice(16) ... start(19)
        return int(v[1]), comm, int(v[16]), int(v[11]) + int(v[12]), int(v[19]), int(pid)
    except (IndexError, ValueError):
        return None


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _machine() -> list[int]:
    with open("/proc/stat", encoding="ascii") as f:
        return [int(x) for x in f.readline().split()[1:]]


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


ARM = ["pgbench", "pgrig python", "backends pgbench", "backends pgrig", "server other"]


@dataclass
class Usage:
    """One arm's CPU seconds by part (see the module docstring)."""

    span_s: float  # the arm's
    window_s: float  # the load's (pgbench alive), which the figures below cover
    machine_busy_s: float  # all CPUs, every process (user + nice + system + irq + softirq)
    machine_niced_s: float  # /proc/stat's nice column
    tree_s: float  # exact, over the arm's span: its process tree (reaped children of the bench)
    parts: dict[str, float] = field(default_factory=dict)
    transactions: int | None = None

    def arm_us_per_txn(self) -> float | None:
        """CPU per transaction of the arm's own processes: pgbench, its backends, pgrig's
        Python and sessions, the server's other processes."""
        if not self.transactions:
            return None
        return 1e6 * sum(self.parts.get(k, 0.0) for k in ARM) / self.transactions

    def line(self) -> str:
        order = ARM
        parts = ", ".join(f"{k} {self.parts.get(k, 0.0):.1f}" for k in order)
        others = ", ".join(
            f"{k} {v:.1f}" for k, v in sorted(self.parts.items()) if k not in order and v >= 0.05
        )
        per_txn = ""
        if self.transactions:
            be = self.parts.get("backends pgbench", 0.0)
            pgb = self.parts.get("pgbench", 0.0)
            arm = self.arm_us_per_txn() or 0.0
            per_txn = (
                f"; per transaction: backends {1e6 * be / self.transactions:.1f} us, "
                f"pgbench {1e6 * pgb / self.transactions:.1f} us, all of the arm's "
                f"{arm:.1f} us"
            )
        return (
            f"cpu over the load's {self.window_s:.1f} s: machine busy "
            f"{self.machine_busy_s:.1f} CPU-s (niced {self.machine_niced_s:.1f}); {parts}; "
            f"others: {others or '-'}{per_txn} (arm: {self.span_s:.1f} s, its process tree "
            f"{self.tree_s:.1f} CPU-s exact)"
        )


class CpuWatch:
    def __init__(self, postmaster: int, psql: list[str], libpq: Mapping[str, str]) -> None:
        self.postmaster, self.psql, self.libpq = postmaster, psql, dict(libpq)
        self.every_s = 0.5
        self.procs: dict[tuple[int, int], Proc] = {}
        self.times: list[float] = []
        self.machine: list[list[int]] = []
        self.apps: dict[int, str] = {}
        self.stop_event = threading.Event()
        self.thread: threading.Thread | None = None

    def _sample(self) -> None:
        n = len(self.times)
        self.times.append(time.monotonic())
        self.machine.append(_machine())
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            st = _stat(name)
            if st is None:
                continue
            ppid, comm, nice, ticks, start, pid = st
            p = self.procs.get((pid, start))
            if p is None:
                p = self.procs[(pid, start)] = Proc(pid, ppid, comm, nice, _cmdline(pid))
            p.nice = nice
            p.ticks.append((n, ticks))

    def _apps(self) -> None:
        sql = (
            "SELECT pid, application_name FROM pg_stat_activity "
            "WHERE backend_type = 'client backend'"
        )
        out = subprocess.run(
            [*self.psql, "-X", "-A", "-t", "-F", "|", "-c", sql],
            env=self.libpq, capture_output=True, text=True, check=False,
        )  # fmt: skip
        for row in out.stdout.splitlines():
            pid, _, app = row.partition("|")
            if pid.isdigit():
                self.apps[int(pid)] = app

    def _loop(self) -> None:
        t0 = time.monotonic()
        asked = 0
        while not self.stop_event.wait(self.every_s):
            self._sample()
            if asked < 2 and time.monotonic() - t0 > (1.5 if asked == 0 else 6.0):
                self._apps()
                asked += 1

    def start(self) -> None:
        self.children0 = _children_cpu()
        self.t0 = time.monotonic()
        self._sample()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def stop(self, transactions: int | None = None) -> Usage:
        self.stop_event.set()
        if self.thread is not None:
            self.thread.join()
        self._sample()
        tree = _children_cpu() - self.children0
        me = os.getpid()
        by_pid = {p.pid: p for p in self.procs.values()}

        def descends(p: Proc) -> bool:
            """A descendant of this process (the arm's own, not another pgbench's)."""
            ppid, hops = p.ppid, 0
            while ppid > 1 and hops < 50:
                if ppid == me:
                    return True
                parent = by_pid.get(ppid)
                if parent is None:
                    return False
                ppid, hops = parent.ppid, hops + 1
            return False

        # the load's window: from the last sample before pgbench was seen to the first after
        # it was gone (the whole arm when it ran from start to end)
        ours = [p for p in self.procs.values() if p.comm == "pgbench" and descends(p)]
        seen = sorted({n for p in ours for n, _ in p.ticks})
        i0 = max(0, seen[0] - 1) if seen else 0
        i1 = min(len(self.times) - 1, seen[-1] + 1) if seen else len(self.times) - 1
        d = [b - a for a, b in zip(self.machine[i0], self.machine[i1], strict=False)]
        busy = d[0] + d[1] + d[2] + d[5] + d[6]  # user nice system (idle iowait) irq softirq
        parts: dict[str, float] = {}

        for p in self.procs.values():
            used = max(0, p.at(i1) - p.at(i0))
            if used == 0 or p.pid == me:
                continue
            mine = descends(p)
            if p.comm == "pgbench" and mine:
                part = "pgbench"
            elif p.ppid == self.postmaster:
                app = self.apps.get(p.pid)
                if app is None and "postgres: postgres" not in p.cmdline:
                    part = "server other"
                elif app is not None and app.startswith("pgrig"):
                    part = "backends pgrig"
                elif app == "pgbench" or (app or "").startswith("pgbench-of-pgrig-"):
                    part = "backends pgbench"  # raw pgbench's, or the one pgrig ran (its name)
                else:
                    part = "backends other"
            elif p.pid == self.postmaster:
                part = "server other"
            elif mine:
                part = "pgrig python" if "python" in p.comm or "pgrig" in p.comm else "arm other"
            else:
                part = f"other nice {p.nice}"
            parts[part] = parts.get(part, 0.0) + used / CLK_TCK
        return Usage(
            span_s=self.times[-1] - self.t0,
            window_s=self.times[i1] - self.times[i0],
            machine_busy_s=busy / CLK_TCK,
            machine_niced_s=d[1] / CLK_TCK,
            tree_s=tree,
            parts=parts,
            transactions=transactions,
        )
