"""CPU pinning of the server, the pooler and the client, and the open-files limit.

Seed 003 compared 6 and 12 cores and found pgbouncer saturating one core; seed 004 pins the
server and the client avoiding SMT siblings: where each side runs decides the result, so a
run can pin them and records where they ran.

- CPUs: --server-cpus / --client-cpus take a list ("0", "0-1,4", as taskset does) or a count
  of cores ("2cores"): a count picks one CPU per physical core first (host.cpus.spread), away
  from the other side's cores. A bare number is a CPU, never a count, so "0" means CPU 0.
- Client (pgbench): the argv is prefixed with `taskset -c CPUS`, which sets the affinity and
  execs pgbench in the same process (the pid the runner tracks stays pgbench's).
- Server and pooler: the postmaster, pgbouncer and all their current processes (every thread)
  are pinned with sched_setaffinity just before the run; backends forked later inherit the
  postmaster's mask. pgbouncer runs on the server's CPUs, as on a database machine. The
  previous masks are put back afterwards, so the environment is not left pinned.
- Open files: pgbench needs one descriptor per client (seed 003 failed above 900 clients
  with the default limit of 1,024). raise_nofile() lifts pgrig's own RLIMIT_NOFILE, which
  pgbench inherits; as root the hard limit is raised too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pgrig.errors import PgrigError
from pgrig.machine import cpus as topology
from pgrig.machine.checks import nofile_for_clients as nofile_for_clients
from pgrig.machine.cpus import format_cpus as format_cpus
from pgrig.provision import pooler
from pgrig.provision.server.affinity import move_tree
from pgrig.provision.server.affinity import process_tree as process_tree
from pgrig.provision.server.affinity import restore as restore
from pgrig.request.values import CPU_COUNT_SUFFIX, check_cpus, cpu_count, parse_cpu_list


@dataclass(frozen=True)
class Placement:
    """Where a run's processes go: CPU lists per side (None: not pinned)."""

    server: list[int] | None = None
    client: list[int] | None = None

    def sides(self, via: str = "direct") -> dict[str, list[int]]:
        """Pinned CPUs per side; a pooler runs on the server's CPUs (the database machine)."""
        out = {"server": self.server, "client": self.client}
        if via != "direct":
            out["pooler"] = self.server
        return {side: cpus for side, cpus in out.items() if cpus}


def available_cpus() -> set[int]:
    """The CPUs this process may run on (cgroups and taskset already applied)."""
    return set(os.sched_getaffinity(0))


def placement(server: str | int | None, client: str | int | None) -> Placement:
    """--server-cpus / --client-cpus: a CPU list ("3", "0-1,4") or a count of cores ("2cores").

    A count picks that many CPUs one per physical core first (SMT siblings last), away from
    the other side's CPUs and their siblings; with two counts the server chooses first.
    Deterministic: the same inputs on the same machine give the same CPUs.
    """
    usable = available_cpus()
    lists = {"server": _cpu_list(server, "--server-cpus", usable)}
    lists["client"] = _cpu_list(client, "--client-cpus", usable)
    counts = {"server": cpu_count(server), "client": cpu_count(client)}
    for side in ("server", "client"):
        n = counts[side]
        if n is None:
            continue
        other = lists["client" if side == "server" else "server"] or []
        try:
            lists[side] = topology.spread(n, usable, other)
        except ValueError as e:
            taken = f", {format_cpus(other)} taken by the other side" if other else ""
            raise PgrigError(
                f"--{side}-cpus {n}{CPU_COUNT_SUFFIX}: {e} on this machine "
                f"(usable: {format_cpus(usable)}{taken})"
            ) from None
    shared = sorted(set(lists["server"] or ()) & set(lists["client"] or ()))
    if shared:
        raise PgrigError(
            f"--client-cpus shares CPU {format_cpus(shared)} with --server-cpus "
            f"({format_cpus(lists['client'] or [])} and {format_cpus(lists['server'] or [])}): "
            "the server and pgbench would compete for it; give them separate CPUs"
        )
    return Placement(lists["server"], lists["client"])


def _cpu_list(text: str | int | None, flag: str, usable: set[int]) -> list[int] | None:
    """A CPU list, checked against this machine; None for nothing or for a count."""
    value = str(text).strip() if text is not None else ""
    if not value:
        return None
    try:
        value = check_cpus(value)
    except ValueError as e:
        raise PgrigError(f"{flag}: {e}") from None
    if cpu_count(value) is not None:
        return None
    chosen = parse_cpu_list(value)
    missing = sorted(set(chosen) - usable)
    if missing:
        raise PgrigError(
            f"{flag}: CPU {format_cpus(missing)} not available on this machine "
            f"(usable: {format_cpus(sorted(usable))})"
        )
    return chosen


def client_prefix(cpus: list[int] | None) -> list[str]:
    """argv prefix that runs the client on `cpus` (empty when not pinned)."""
    if not cpus:
        return []
    return ["taskset", "-c", format_cpus(cpus)]


# --- server processes --------------------------------------------------------------------------


def pin_tree(root: int, cpus: list[int]) -> dict[int, set[int]]:
    """Pin every thread of `root` and its descendants (those forked meanwhile too); returns the
    previous mask per thread."""
    previous: dict[int, set[int]] = {}
    try:
        move_tree(root, set(cpus), previous)
    except PermissionError as e:
        restore(previous)
        raise PgrigError(
            f"cannot pin process {root}'s tree to CPU {format_cpus(cpus)}: {e.strerror} "
            "(pinning the server needs root or the server's own OS user)"
        ) from None
    return previous


def pin_trees(roots: list[int], cpus: list[int]) -> dict[int, set[int]]:
    """pin_tree for several roots (the postmaster and pgbouncer): all pinned, or none."""
    previous: dict[int, set[int]] = {}
    try:
        for root in roots:
            for tid, mask in pin_tree(root, cpus).items():
                previous.setdefault(tid, mask)  # a thread seen twice keeps its first mask
    except BaseException:
        restore(previous)
        raise
    return previous


# --- open files ---------------------------------------------------------------------------------


def raise_nofile(needed: int) -> int:
    """Lift pgrig's own RLIMIT_NOFILE (pgbench inherits it); see provision.pooler."""
    return pooler.raise_nofile(needed)
