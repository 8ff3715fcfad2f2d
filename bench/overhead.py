"""Harness overhead: raw pgbench against `pgrig run` with the samplers on, interleaved.

    python bench/overhead.py [--env bench-overhead] [--pg 18] [--rounds 5] [--duration 30]
                             [--pairs | --split | --two] [--client-cpus 1|none]
                             [--builtin select-only]

--pairs (the default): the two bars of `--txlog` (load/engines/txlog_mode.py), four arms rotated in
every round (raw, raw -l, pgrig, pgrig --txlog full; reversed order every other round), pgbench
pinned (--client-cpus, CPU 1 by default):
  pgrig with its default (--txlog auto: sampled above 10,000 TPS) / raw pgbench without -l
  (bar >= 0.99), and pgrig --txlog full / raw pgbench with -l and -P 1 (bar >= 0.99).
--two: the older two-arm form (raw pgbench against pgrig's default, bar >= 0.97).

Creates (or reuses) an environment, generates pgbench data, turns its insights layer off (its
cost is measured by bench/insights_overhead.py; --insights keeps it), then alternates
`pgbench -b select-only -c 8 -j 2 -T 30` and `pgrig run --workload pgbench:select-only -c 8 -j 2
--duration 30` in ABBA order, and prints each pair and the median ratio pgrig/raw (the bar:
>= 0.97).

--split adds a third arm, raw pgbench with pgrig's logging options (`-l` on tmpfs, `-P 1`, no
pgrig), and prints the split: what pgbench pays for its per-transaction log (log/raw) and what
pgrig's own process and samplers add on top (pgrig/log).

--client-cpus pins pgbench in both arms (`taskset -c` for raw pgbench, pgrig's own
--client-cpus): on a small VM, where pgbench's threads land against the backends decides
between throughput states up to 15% apart from one run to the next, and pinning fixes that
state, so the pairs measure the harness rather than the scheduler's draw.

--builtin picks pgbench's built-in script (select-only, the default, is the worst case: the
most transactions per second, so the most per-transaction logging per second).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile

from abba import interleave, rotate, summarize
from lab import client_env, ensure_env, pgbench_tps, sh


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--env", default="bench-overhead")
    ap.add_argument("--pg", default="18")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=30)
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument(
        "--client-cpus",
        default="1",
        help="pin pgbench to these CPUs in every arm (default 1; none: no pinning)",
    )
    ap.add_argument("--split", action="store_true", help="also raw pgbench with -l -P 1")
    ap.add_argument("--two", action="store_true", help="only raw pgbench against pgrig")
    ap.add_argument("--builtin", default="select-only", help="pgbench's built-in script")
    ap.add_argument(
        "--insights",
        action="store_true",
        help="keep the insights layer on (its cost has its own bar: bench/insights_overhead.py)",
    )
    args = ap.parse_args()
    if args.client_cpus == "none" or (os.cpu_count() or 1) < 2:
        args.client_cpus = None

    ensure_env(args.env, args.pg, args.scale)
    # The harness alone by default: samplers, log reader, archive. pg_stat_statements (loaded
    # for both sides) and auto_explain sampling (pgrig's runs only) are the insights' cost.
    sh(["pgrig", "env", "set", args.env, "--insights" if args.insights else "--no-insights"])
    print(f"insights layer: {'on' if args.insights else 'off'}", flush=True)
    info = json.loads(sh(["pgrig", "env", "show", args.env, "--json"]))
    pgbench = os.path.join(info["paths"]["bindir"], "pgbench")
    libpq = client_env(args.env)
    scratch = "/dev/shm" if os.path.isdir("/dev/shm") else None

    pin = ["taskset", "-c", args.client_cpus] if args.client_cpus else []
    if args.client_cpus:
        print(f"pgbench pinned to CPUs {args.client_cpus} in both arms", flush=True)

    psql = os.path.join(info["paths"]["bindir"], "psql")

    def raw_tps(logged: bool = False) -> float:
        # pgrig starts every run from a CHECKPOINT; so does raw pgbench here, or a write
        # workload would compare runs with and without full-page writes of every first touch
        sh([psql, "-X", "-q", "-c", "CHECKPOINT"], libpq)
        argv = [*pin, pgbench, "-n", "-b", args.builtin, "-c", "8", "-j", "2",
                "-T", str(args.duration)]  # fmt: skip
        if not logged:
            return pgbench_tps(sh(argv, libpq))
        work = tempfile.mkdtemp(prefix="pgrig-bench-log-", dir=scratch)
        try:  # what pgrig adds to pgbench's command line, the log on tmpfs as pgrig puts it
            return pgbench_tps(sh([*argv, "-l", f"--log-prefix={work}/txlog", "-P", "1"], libpq))
        finally:
            shutil.rmtree(work, ignore_errors=True)

    modes: list[str] = []

    def pgrig_tps(txlog: str = "auto") -> float:
        argv = ["pgrig", "run", args.env, "--workload", f"pgbench:{args.builtin}", "--clients", "8",
                "--threads", "2", "--duration", str(args.duration), "--json",
                "--tag", "bench=overhead", "--txlog", txlog]  # fmt: skip
        if args.client_cpus:
            argv += ["--client-cpus", args.client_cpus]
        doc = json.loads(sh(argv))
        if txlog == "auto":
            modes.append(str(doc.get("txlog")))
        return float(doc["tps"])

    if args.two:
        interleave(raw_tps, pgrig_tps, args.rounds, ("raw pgbench", "pgrig"))
        return
    if not args.split:
        arms = {
            "raw": raw_tps,
            "raw -l": lambda: raw_tps(logged=True),
            "pgrig": pgrig_tps,
            "pgrig full": lambda: pgrig_tps("full"),
        }
        res = rotate(arms, args.rounds)
        print(f"pgrig's default chose --txlog {', '.join(sorted(set(modes)))}", flush=True)
        for a, b in (("raw", "pgrig"), ("raw -l", "pgrig full")):
            ratios = [y / x for x, y in zip(res[a], res[b], strict=True)]
            summarize(ratios, f"{b}/{a}", 0.99)
        return
    arms = {"raw": raw_tps, "log": lambda: raw_tps(logged=True), "pgrig": pgrig_tps}
    res = rotate(arms, args.rounds)
    for a, b, bar in (("raw", "pgrig", 0.97), ("raw", "log", None), ("log", "pgrig", None)):
        ratios = [y / x for x, y in zip(res[a], res[b], strict=True)]
        summarize(ratios, f"{b}/{a}", bar)


if __name__ == "__main__":
    main()
