"""CPU pinning of the server and the client, and the open-files limit for many clients.

Seed 003 compared 6 and 12 cores and found pgbouncer saturating one core: where each side runs
decides the result, so a run can pin them and records where they ran.

- Client (pgbench): the argv is prefixed with `taskset -c CPUS`, which sets the affinity and
  execs pgbench in the same process (the pid the runner tracks stays pgbench's).
- Server: the postmaster and all its current processes (every thread) are pinned with
  sched_setaffinity just before the run; backends forked later inherit the postmaster's mask.
  The previous masks are put back afterwards, so the environment is not left pinned.
- Open files: pgbench needs one descriptor per client (seed 003 failed above 900 clients
  with the default limit of 1,024). raise_nofile() lifts pgrig's own RLIMIT_NOFILE, which
  pgbench inherits; as root the hard limit is raised too.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from pgrig.errors import PgrigError
from pgrig.provision import pooler

FD_MARGIN = 64  # descriptors beyond one per client: logs, the script files, stdio, libpq


def available_cpus() -> set[int]:
    """The CPUs this process may run on (cgroups and taskset already applied)."""
    return set(os.sched_getaffinity(0))


def parse_cpus(text: str | None, flag: str = "--cpus") -> list[int] | None:
    """ "0-3,6" -> [0, 1, 2, 3, 6]; None or "" -> None. Every CPU must be usable here."""
    if text is None or not str(text).strip():
        return None
    cpus: set[int] = set()
    for part in str(text).split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        try:
            first = int(lo)
            last = int(hi) if sep else first
        except ValueError:
            raise PgrigError(
                f"{flag}: {part!r} is not a CPU number or range (e.g. 0-3,6)"
            ) from None
        if first < 0 or last < first:
            raise PgrigError(f"{flag}: bad CPU range {part!r} (e.g. 0-3,6)")
        cpus.update(range(first, last + 1))
    usable = available_cpus()
    missing = sorted(cpus - usable)
    if missing:
        raise PgrigError(
            f"{flag}: CPU {format_cpus(missing)} not available on this machine "
            f"(usable: {format_cpus(sorted(usable))})"
        )
    return sorted(cpus)


def format_cpus(cpus: Iterable[int]) -> str:
    """[0, 1, 2, 3, 6] -> "0-3,6" (the form taskset and people read)."""
    out: list[str] = []
    run: list[int] = []
    for c in sorted(set(cpus)):
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append(_span(run))
        run = [c]
    if run:
        out.append(_span(run))
    return ",".join(out)


def _span(run: list[int]) -> str:
    return str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}"


def client_prefix(cpus: list[int] | None) -> list[str]:
    """argv prefix that runs the client on `cpus` (empty when not pinned)."""
    if not cpus:
        return []
    return ["taskset", "-c", format_cpus(cpus)]


# --- server processes --------------------------------------------------------------------------


def process_tree(root: int, proc: str = "/proc") -> list[int]:
    """`root` and its descendants (a postmaster's backends, workers and their children)."""
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in out:
            continue
        out.append(pid)
        for task in _tasks(pid, proc):
            with contextlib.suppress(OSError, ValueError):
                text = Path(f"{proc}/{pid}/task/{task}/children").read_text()
                todo.extend(int(x) for x in text.split())
    return out


def _tasks(pid: int, proc: str = "/proc") -> list[int]:
    try:
        return [int(t) for t in os.listdir(f"{proc}/{pid}/task")]
    except (OSError, ValueError):
        return []


def pin_tree(root: int, cpus: list[int]) -> dict[int, set[int]]:
    """Pin every thread of `root` and its descendants; returns the previous mask per thread."""
    previous: dict[int, set[int]] = {}
    for pid in process_tree(root):
        for tid in _tasks(pid) or [pid]:
            try:
                previous[tid] = set(os.sched_getaffinity(tid))
                os.sched_setaffinity(tid, cpus)
            except ProcessLookupError:
                continue  # exited meanwhile
            except PermissionError as e:
                restore(previous)
                raise PgrigError(
                    f"cannot pin process {pid} to CPU {format_cpus(cpus)}: {e.strerror} "
                    "(pinning the server needs root or the server's own OS user)"
                ) from None
    return previous


def restore(previous: dict[int, set[int]]) -> None:
    """Put masks back on the threads that still exist (new backends die with the run)."""
    for tid, mask in previous.items():
        with contextlib.suppress(OSError):
            os.sched_setaffinity(tid, mask)


@contextlib.contextmanager
def server_pinned(postmaster_pid: int | None, cpus: list[int] | None) -> Iterator[None]:
    """Pin the server for the duration of a run, then restore the old masks.

    Backends started during the run inherit the postmaster's mask; restoring the postmaster
    afterwards gives new backends the old mask again.
    """
    if not cpus or postmaster_pid is None:
        yield
        return
    previous = pin_tree(postmaster_pid, cpus)
    try:
        yield
    finally:
        restore(previous)


# --- open files ---------------------------------------------------------------------------------


def nofile_for_clients(clients: int) -> int:
    return clients + FD_MARGIN


def raise_nofile(needed: int) -> int:
    """Lift pgrig's own RLIMIT_NOFILE (pgbench inherits it); see provision.pooler."""
    return pooler.raise_nofile(needed)
