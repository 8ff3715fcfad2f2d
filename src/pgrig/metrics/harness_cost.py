"""What pgrig itself took from a run: CPU seconds of its own processes and of the server
backends that serve its sessions, read from /proc at the start and the end of the load.

- pgrig's own processes: this process (every thread: the samplers, the log readers, the live
  view) and its descendants, without the load generator's subtree (pgbench, sysbench: the
  benchmark, not the harness). /proc/PID/stat utime + stime; a process's own figure never
  includes its reaped children (those are cutime/cstime, not read here), so pgbench reaped
  by pgrig is never counted as pgrig's. A helper child that started and was reaped inside the
  span is not seen (none runs during a load today).
- The backends of pgrig's sessions (the PostgreSQL sampler, the wait sampler, the insights
  collection: application_name pgrig or pgrig-*), by pid, on the server's machine when it is
  this one.

A process seen at both ends counts its difference; one seen only at the end started inside
the span and counts its whole life; a pid reused in between (another start time) counts as
new. One gone by the end is not counted (its last figures are unknown).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class ProcTimes:
    """One process's CPU from /proc/PID/stat: utime + stime (clock ticks, every thread), and
    its start time (ticks after boot) to tell a reused pid."""

    pid: int
    ppid: int
    ticks: int
    started: int


def parse_stat(text: str) -> ProcTimes | None:
    """/proc/PID/stat's line (the command name, in parentheses, may hold spaces and ')')."""
    head, sep, rest = text.rpartition(")")
    if not sep:
        return None
    try:
        pid = int(head.split("(", 1)[0])
        fields = rest.split()
        # after the name: state(0) ppid(1) ... utime(11) stime(12) ... starttime(19)
        return ProcTimes(pid, int(fields[1]), int(fields[11]) + int(fields[12]), int(fields[19]))
    except (ValueError, IndexError):
        return None


def read_times(pid: int, proc: str = "/proc") -> ProcTimes | None:
    try:
        with open(f"{proc}/{pid}/stat", encoding="ascii", errors="replace") as f:
            return parse_stat(f.read())
    except OSError:
        return None


def children(pid: int, proc: str = "/proc") -> list[int]:
    """Direct children of every thread of `pid` (/proc/PID/task/TID/children)."""
    out: list[int] = []
    try:
        tids = os.listdir(f"{proc}/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"{proc}/{pid}/task/{tid}/children", encoding="ascii") as f:
                out.extend(int(p) for p in f.read().split())
        except (OSError, ValueError):
            continue
    return out


def tree(root: int, exclude: Iterable[int] = (), proc: str = "/proc") -> list[int]:
    """`root` and its descendants, without the subtrees of `exclude` (the load generator)."""
    skip = set(exclude)
    out: list[int] = []
    todo = [root]
    while todo:
        pid = todo.pop()
        if pid in skip or pid in out:
            continue
        out.append(pid)
        todo.extend(children(pid, proc))
    return out


def snapshot(pids: Iterable[int], proc: str = "/proc") -> dict[int, ProcTimes]:
    """The CPU of each pid still alive."""
    out: dict[int, ProcTimes] = {}
    for pid in pids:
        t = read_times(pid, proc)
        if t is not None:
            out[pid] = t
    return out


def cpu_seconds(
    before: Mapping[int, ProcTimes], after: Mapping[int, ProcTimes], clk_tck: int = CLK_TCK
) -> float:
    """CPU seconds the processes of `after` used since `before` (module docstring)."""
    ticks = 0
    for pid, end in after.items():
        start = before.get(pid)
        if start is not None and start.started == end.started:
            ticks += max(0, end.ticks - start.ticks)
        else:  # started inside the span (or a reused pid): its whole life is inside it
            ticks += end.ticks
    return ticks / clk_tck


def machine_pct(cpu_s: float | None, span_s: float | None, cpus: int | None) -> float | None:
    """CPU seconds as % of the machine's capacity over the span (cpus x span)."""
    if cpu_s is None or not span_s or not cpus or span_s <= 0:
        return None
    return 100.0 * cpu_s / (span_s * cpus)
