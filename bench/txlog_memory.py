"""Does `pgrig run` stay flat in memory and scratch space whatever the duration?

    python bench/txlog_memory.py [--env bench-memory] [--pg 15] [--scale 10]
                                 [--short 30] [--long 300] [--clients 8] [--threads 2]

Runs `pgrig run ENV --workload pgbench:select-only -c 8 -j 2` for --short then --long seconds,
each with its own scratch directory (PGRIG_WORK_DIR, on /dev/shm like pgrig's default), and
prints for each: TPS, transactions, pgrig's peak RSS (the child's ru_maxrss from wait4: pgrig
itself, pgbench is far smaller) and the peak of the scratch space pgbench's log took (allocated
blocks of every file in the directory, sampled every 0.1 s). The bars (issue 9): peak RSS of the
long run at most 1.3x the short one; scratch space under 200 MB.
"""

from __future__ import annotations

import argparse

from lab import ensure_env, watched_run  # bench/ is on sys.path when a bench runs


def measure(args: argparse.Namespace, duration: int) -> dict:
    argv = ["pgrig", "run", args.env, "--workload", "pgbench:select-only",
            "-c", str(args.clients), "-j", str(args.threads), "--duration", str(duration),
            "--json", "--tag", "bench=txlog-memory"]  # fmt: skip
    run = watched_run(argv, "pgrig-membench-", every_s=0.1)
    return {
        "duration": duration,
        "tps": run.doc["tps"],
        "transactions": run.doc["transactions"],
        "peak_rss_mb": run.peak_rss / 2**20,
        "peak_scratch_mb": run.peak_scratch / 1e6,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", default="bench-memory")
    ap.add_argument("--pg", default="15")
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--short", type=int, default=30)
    ap.add_argument("--long", type=int, default=300)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    ensure_env(args.env, args.pg, args.scale)

    rows = []
    for duration in (args.short, args.long):
        r = measure(args, duration)
        rows.append(r)
        print(
            f"{r['duration']:>5} s: {r['tps']:>10,.0f} tps, {r['transactions']:>12,} transactions,"
            f" peak RSS {r['peak_rss_mb']:7.1f} MB,"
            f" peak scratch (tmpfs) {r['peak_scratch_mb']:6.1f} MB",
            flush=True,
        )
    short, long = rows
    ratio = long["peak_rss_mb"] / short["peak_rss_mb"]
    scratch = max(r["peak_scratch_mb"] for r in rows)
    print(f"peak RSS {long['duration']} s / {short['duration']} s: {ratio:.2f} (bar: <= 1.3)")
    print(f"peak scratch space: {scratch:.1f} MB (bar: < 200 MB)")


if __name__ == "__main__":
    main()
