"""Where the CPU went during a run's measured window, and whether the host was busy.

The OS sampler tracks the server (postmaster and its backends), pgbench, the pooler and pgrig
itself, each in % of one core; proc_other_cpu is every other process (os_metrics.py). A run
shares its machine with nothing else on a quiet host, so "other" then stays near zero; when it
does not, the result measured the benchmark AND a neighbour, and says so (busy_host_warning).

The busy-host rule: other processes used, on average over the measured window, more than
BUSY_HOST_CORE_PCT of one core AND more than BUSY_HOST_MACHINE_PCT of the whole machine.
- BUSY_HOST_MACHINE_PCT = 2: the default practical threshold of a comparison (--threshold
  0.02, measurement.md). CPU taken by others beyond it can move a CPU-bound result by more than
  the smallest change pgrig reports. On a 16-core host that is a third of a core; on 64 cores
  more than one whole core, which big hosts spend on kernel work that scales with the load.
- BUSY_HOST_CORE_PCT = 20: the floor on small hosts, where 2% of the machine is a few % of
  one core: a quiet host's daemons and kernel threads (writeback, journalling) stay below it
  during a benchmark (measured on the 2-core reference machine: kernel threads and PID 1 used
  1% of one core during select-only runs, 5% during tpcb-like ones), and any process that
  keeps busy (a build, a second benchmark, a busy loop: 100% of a core) is far above it.
"""

from __future__ import annotations

from pgrig.record.run import SeriesColumns

# % of one core and % of the machine; both must be exceeded (module docstring).
BUSY_HOST_CORE_PCT = 20.0
BUSY_HOST_MACHINE_PCT = 2.0
BUSY_HOST = "busy_host"  # the warning code (RunRecord.extra["warnings"])

_GROUPS = ("pgbench", "server", "pooler", "pgrig", "other")
_LOAD = ("pgbench", "server", "pooler")  # what the benchmark itself is made of


def cpu_share(os_cols: SeriesColumns, t0: float, t1: float, cpus: int | None) -> dict[str, float]:
    """Mean CPU (% of one core) of each process group over ts in (t0, t1], the client's share
    of the benchmark's CPU (pgbench must stay small or it is the bottleneck), and other
    processes' CPU also in % of the `cpus` logical CPUs of the machine."""
    ts = os_cols.get("ts") or []
    out: dict[str, float] = {}
    for name in _GROUPS:
        values = os_cols.get(f"proc_{name}_cpu")
        if not values:
            continue
        picked = [
            v
            for t, v in zip(ts, values, strict=False)
            if t is not None and t0 < t <= t1 and v is not None
        ]
        if picked:
            out[f"{name}_cpu_pct_core"] = round(sum(picked) / len(picked), 2)
    load = sum(out.get(f"{name}_cpu_pct_core", 0.0) for name in _LOAD)
    if load > 0 and "pgbench_cpu_pct_core" in out:
        out["client_share_pct"] = round(100.0 * out["pgbench_cpu_pct_core"] / load, 2)
    if "other_cpu_pct_core" in out and cpus:
        out["cpus"] = cpus
        out["other_cpu_pct_host"] = round(out["other_cpu_pct_core"] / cpus, 2)
    return out


def busy_host_warning(share: dict[str, float]) -> str | None:
    """The busy-host message for a run's cpu_share, None on a quiet host or when unknown.

    Only when the server's CPU was tracked (a managed environment): for an external server on
    the same machine, the server itself would count as "other".
    """
    core, host = share.get("other_cpu_pct_core"), share.get("other_cpu_pct_host")
    if core is None or host is None or "server_cpu_pct_core" not in share:
        return None
    if core <= BUSY_HOST_CORE_PCT or host <= BUSY_HOST_MACHINE_PCT:
        return None
    return (
        f"busy host: other processes used {core:.0f}% of one core ({host:.1f}% of the "
        f"machine's {share['cpus']:g} CPUs) during the measured window, above the "
        f"{BUSY_HOST_CORE_PCT:g}%-of-a-core and {BUSY_HOST_MACHINE_PCT:g}%-of-the-machine "
        "limits: this result measured the benchmark and a neighbour; repeat it on a quiet host"
    )
