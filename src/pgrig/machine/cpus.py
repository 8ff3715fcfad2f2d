"""CPU lists, SMT siblings and NUMA nodes, and picking N CPUs one per physical core.

Seed 004: pin the server and the client avoiding sibling cores. Two SMT siblings share one
physical core's execution units, so "2 CPUs" on siblings is about one core's worth of work:
a count of CPUs is honoured with one CPU per physical core first (from each CPU's
topology/thread_siblings_list), and only then with second threads.
"""

from __future__ import annotations

from collections.abc import Iterable

from pgrig.machine.sysfs import REAL, HostFs, read_text
from pgrig.request.values import parse_cpu_list


def format_cpus(cpus: Iterable[int]) -> str:
    """[0, 1, 2, 3, 6] -> "0-3,6" (the form taskset, the kernel and people read)."""
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


def siblings(cpu: int, fs: HostFs = REAL) -> frozenset[int]:
    """The CPUs sharing `cpu`'s physical core, itself included ({cpu} when unknown)."""
    text = read_text(fs.cpu_dir / f"cpu{cpu}/topology/thread_siblings_list")
    try:
        found = frozenset(parse_cpu_list(text)) if text else frozenset()
    except ValueError:
        found = frozenset()
    return found | {cpu}


def cores(cpus: Iterable[int], fs: HostFs = REAL) -> list[list[int]]:
    """`cpus` grouped by physical core, cores in order of their first CPU."""
    groups: dict[frozenset[int], list[int]] = {}
    for cpu in sorted(set(cpus)):
        groups.setdefault(siblings(cpu, fs), []).append(cpu)
    return sorted(groups.values())


def sibling_pairs(cpus: Iterable[int], fs: HostFs = REAL) -> list[tuple[int, int]]:
    """Pairs of the given CPUs that are SMT siblings of each other (they share a core)."""
    chosen = sorted(set(cpus))
    return [(a, b) for i, a in enumerate(chosen) for b in chosen[i + 1 :] if b in siblings(a, fs)]


def spread(
    n: int, usable: Iterable[int], taken: Iterable[int] = (), fs: HostFs = REAL
) -> list[int]:
    """`n` CPUs of `usable`, none in `taken`: one per physical core first, preferring cores
    no taken CPU sits on, then second threads, then cores shared with `taken`.

    Raises ValueError when fewer than `n` CPUs are left.
    """
    taken = set(taken)
    left = sorted(set(usable) - taken)
    if n > len(left):
        raise ValueError(f"{n} CPUs asked, {len(left)} usable")
    groups = cores(left, fs)
    free = [g for g in groups if not (siblings(g[0], fs) & taken)]
    shared = [g for g in groups if siblings(g[0], fs) & taken]
    order = [g[0] for g in free]  # one CPU per free core
    order += [c for g in free for c in g[1:]]  # then their second threads
    order += [c for g in shared for c in g]  # then cores the other side already uses
    return sorted(order[:n])


def numa_nodes(fs: HostFs = REAL) -> dict[int, list[int]]:
    """NUMA node -> its CPUs (empty when the kernel exposes no nodes)."""
    out: dict[int, list[int]] = {}
    for d in sorted((fs.sys / "devices/system/node").glob("node[0-9]*")):
        text = read_text(d / "cpulist")
        try:
            out[int(d.name[4:])] = parse_cpu_list(text) if text else []
        except ValueError:
            out[int(d.name[4:])] = []
    return out
