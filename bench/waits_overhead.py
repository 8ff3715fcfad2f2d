"""Wait sampler overhead: `pgrig run --waits-hz 10` against `--waits-hz 1`, ABBA.

    PGRIG_HOME=/tmp/x python bench/waits_overhead.py [--pg 15] [--rounds 6] [--duration 10]
        [--hz 10] [--workload pgbench:select-only] [--clients 4] [--threads 2] [--scale 10]

One environment; both sides are full `pgrig run`s with everything else equal: `--waits-hz 1`
has no extra sampler (the PostgreSQL sampler's own snapshot once a second), the other side adds
the thread reading pg_stat_activity `--hz` times a second (metrics/wait_sampler.py). Runs
alternate in ABBA order; each pair prints both TPS and the ratio, then the median ratio and the
paired estimate with its bounds (bar: >= 0.99 for the sampler, which must not slow the load),
and what the sampler measured of itself over the last run: snapshots, its thread's CPU and the
round trip per snapshot, so the ratio can be checked against the cost it implies
(cpu_ms_per_snapshot x hz = the sampler's CPU ms per second on a machine of N cores).
pgbench:select-only is the hardest case: the most statements per second on the same CPUs.
"""

from __future__ import annotations

import argparse
import os

from lab import Side, ensure_env, load_options, pgrig, pgrig_runs_abba


def main() -> None:
    ap = argparse.ArgumentParser()
    load_options(ap, rounds=6, duration=10, warmup=2, clients=4)
    ap.add_argument("--hz", type=float, default=10)
    ap.add_argument("--keep", action="store_true", help="keep the environment afterwards")
    args = ap.parse_args()
    env = "bench-waits"
    ensure_env(env, args.pg, args.scale)
    try:
        last = pgrig_runs_abba(
            env,
            args,
            "waits-overhead",
            Side("waits 1 Hz", ["--waits-hz", "1"]),
            Side(f"waits {args.hz:g} Hz", ["--waits-hz", f"{args.hz:g}"]),
        )
    finally:
        if not args.keep:
            pgrig("env", "destroy", env, "--yes")
    chosen = last.get("wait_sampling", {})
    stats = chosen.get("sampler", {})
    cpu = stats.get("cpu_ms_per_snapshot")
    print(
        f"last {args.hz:g} Hz run: {stats.get('snapshots', 0):,} snapshots, "
        f"{stats.get('missed_ticks', 0)} missed ticks, sampler thread CPU {cpu} ms and round "
        f"trip {stats.get('query_ms_per_snapshot')} ms per snapshot"
        + (f" = {cpu * args.hz / 10:.2f}% of one core of {os.cpu_count()}" if cpu else "")
    )
    waits = last.get("waits") or {}
    print(f"waits: {waits.get('source')}, {waits.get('active_seen', 0):,} samples")


if __name__ == "__main__":
    main()
