"""CPU affinity of a process tree (a postmaster and its backends, pgbouncer): read and set.

load/core/pinning.py pins a run's server with these; provision/run_journal.py puts a killed run's
pinning back with them; provision/live_state.py checks them before a run records anything.
Every thread counts: a mask is per thread (sched_setaffinity takes a tid).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def process_tree(root: int, proc: str = "/proc") -> list[int]:
    """`root` and its descendants (a postmaster's backends, workers and their children)."""
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in out:
            continue
        out.append(pid)
        for task in tasks(pid, proc):
            with contextlib.suppress(OSError, ValueError):
                text = Path(f"{proc}/{pid}/task/{task}/children").read_text()
                todo.extend(int(x) for x in text.split())
    return out


def tasks(pid: int, proc: str = "/proc") -> list[int]:
    """The thread ids of `pid` (empty when it is gone)."""
    try:
        return [int(t) for t in os.listdir(f"{proc}/{pid}/task")]
    except (OSError, ValueError):
        return []


def tree_masks(root: int) -> dict[int, set[int]]:
    """The affinity of every thread of `root` and its descendants (gone ones skipped)."""
    out: dict[int, set[int]] = {}
    for pid in process_tree(root):
        for tid in tasks(pid) or [pid]:
            with contextlib.suppress(OSError):
                out[tid] = set(os.sched_getaffinity(tid))
    return out


def restore(previous: dict[int, set[int]]) -> None:
    """Put masks back on the threads that still exist (new backends die with the run)."""
    for tid, mask in previous.items():
        with contextlib.suppress(OSError):
            os.sched_setaffinity(tid, mask)


def set_tree(root: int, mask: set[int]) -> None:
    """Every thread of `root` and its descendants on `mask` (best effort: gone ones skipped)."""
    move_tree(root, mask, {}, strict=False)


def move_tree(
    root: int, mask: set[int], previous: dict[int, set[int]], *, strict: bool = True
) -> None:
    """Every thread of `root` and its descendants on `mask`, the tree listed again until a pass
    changes nothing: a child forked between a listing and its parent's move inherits the
    parent's old mask and would stay outside (disk_throttle._join_tree is the same for the
    disk's cgroup). `previous` gets the mask each thread had before its first change (filled
    as it goes, for the caller to put back when a later thread refuses). `strict`: a thread
    that cannot be moved (PermissionError) raises; else it is skipped. Gone ones are skipped."""
    for _ in range(MAX_PASSES):
        moved = False
        for pid in process_tree(root):
            for tid in tasks(pid) or [pid]:
                try:
                    before = set(os.sched_getaffinity(tid))
                    if before == mask:
                        continue
                    os.sched_setaffinity(tid, mask)
                except ProcessLookupError:
                    continue  # exited meanwhile
                except OSError:
                    if strict:
                        raise
                    continue
                previous.setdefault(tid, before)
                moved = True
        if not moved:
            return


MAX_PASSES = 10  # a server forks backends on every connection: the passes are bounded
