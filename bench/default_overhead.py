"""A default run against raw pgbench: pgrig as a user gets it (insights ON) on the same server.

    python bench/default_overhead.py [--env bench-default] [--pg 18] [--rounds 5]
        [--duration 20] [--scale 10] [--workloads select-only,tpcb-like]
        [--client-cpus none|1] [--also SRC]

For each workload (pgbench's built-in select-only and tpcb-like, 8 clients, 2 threads), in
interleaved pairs (ABBA: the arm that goes first alternates), raw `pgbench -n -b W -c 8 -j 2
-T D` without -l, and `pgrig run --workload pgbench:W -c 8 -j 2 --duration D` with the
environment's insights layer on, as shipped (pg_stat_statements, auto_explain plan sampling,
waits at 10 Hz, the sampled transaction log). Both start from a CHECKPOINT. Each pair prints
both TPS, the ratio pgrig/raw and the run's harness cost line (views/harness_cost.py: CPU-s of
pgrig's own processes and of the backends serving its samplers, plans logged, server-log bytes
written); then per workload the median ratio, the range, and the paired estimate with its
bounds (the bar: >= 0.97).

--also SRC adds a third arm, pgrig from another source tree (e.g. the tree before a change),
rotated with the other two (ABC CBA): it prints each arm against raw pgbench and the two pgrig
arms against each other, so a change is measured in the same rounds as its baseline.

Raw pgbench runs in a session of its own, as pgrig's does: with autogroup scheduling a process
left in the bench's session shares that session's CPU share (see raw()).

On a shared machine the pairs are noisy: run several rounds and read the spread beside the
median. --client-cpus pins pgbench in both arms (taskset, pgrig's --client-cpus).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from typing import Any

from abba import summarize
from lab import client_env, ensure_env, pgbench_tps, pgrig, sh


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--env", default="bench-default")
    ap.add_argument("--pg", default="18")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=20)
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--workloads", default="select-only,tpcb-like")
    ap.add_argument("--client-cpus", default="none", help="pin pgbench in both arms (none: no)")
    ap.add_argument(
        "--also",
        metavar="SRC",
        help="a third arm: pgrig from this source tree (its src/ on PYTHONPATH), e.g. the tree "
        "before a change, rotated with the other two (ABC CBA) so a busy machine's drift "
        "falls on all three alike",
    )
    args = ap.parse_args()
    pin_cpus = None if args.client_cpus == "none" else args.client_cpus

    ensure_env(args.env, args.pg, args.scale)
    out = pgrig("env", "set", args.env, "--insights")  # as shipped
    if "server restarted" not in out:
        pgrig("env", "restart", args.env)
    info = json.loads(pgrig("env", "show", args.env, "--json"))
    bindir = info["paths"]["bindir"]
    libpq = client_env(args.env)
    pin = ["taskset", "-c", pin_cpus] if pin_cpus else []
    print(
        f"insights on (as shipped); {args.clients} clients, {args.threads} threads, "
        f"{args.duration} s, {args.rounds} interleaved pairs per workload; "
        f"pgbench {'pinned to CPUs ' + pin_cpus if pin_cpus else 'not pinned'}; "
        f"load average before: {os.getloadavg()[0]:.2f}",
        flush=True,
    )

    def raw(workload: str) -> float:
        sh([os.path.join(bindir, "psql"), "-X", "-q", "-c", "CHECKPOINT"], libpq)
        argv = [*pin, os.path.join(bindir, "pgbench"), "-n", "-b", workload, "-c",
                str(args.clients), "-j", str(args.threads), "-T", str(args.duration)]  # fmt: skip
        # a session of its own, as pgrig starts its pgbench (load/engines/process.py): with
        # the kernel's autogroup scheduling, a pgbench left in the bench's session shares one
        # CPU share with whatever else that session runs, and measured 2-4x below pgrig's on
        # a busy machine for that reason alone
        done = subprocess.run(
            argv, env=libpq, capture_output=True, text=True, check=False, start_new_session=True
        )
        if done.returncode != 0:
            sys.exit(f"failed: {' '.join(argv)}\n{done.stderr}")
        return pgbench_tps(done.stdout)

    def pgrig_run(workload: str, src: str | None = None) -> tuple[float, str]:
        argv = ["pgrig", "run", args.env, "--workload", f"pgbench:{workload}",
                "--clients", str(args.clients), "--threads", str(args.threads),
                "--duration", str(args.duration), "--json",
                "--tag", "bench=default-overhead"]  # fmt: skip
        if pin_cpus:
            argv += ["--client-cpus", pin_cpus]
        env = None
        if src is not None:  # that tree's pgrig, the rest of the environment as it is
            env = {**os.environ, "PYTHONPATH": os.path.join(src, "src")}
        doc = json.loads(sh(argv, env))
        harness = doc.get("harness") or {}
        return float(doc["tps"]), str(harness.get("line") or "harness: not recorded")

    results: dict[str, list[float]] = {}
    for workload in args.workloads.split(","):
        arms: dict[str, Any] = {
            "raw": lambda w=workload: (raw(w), ""),
            "pgrig": lambda w=workload: pgrig_run(w),
        }
        if args.also:
            arms["pgrig (--also)"] = lambda w=workload: pgrig_run(w, args.also)
        names = list(arms)
        per_arm: dict[str, list[float]] = {n: [] for n in names}
        for k in range(args.rounds):
            order = names if k % 2 == 0 else names[::-1]
            got = {n: arms[n]() for n in order}
            for n in names:
                per_arm[n].append(got[n][0])
            a = got["raw"][0]
            figures = "; ".join(
                f"{n} {got[n][0]:,.0f} tps"
                + (f" (x{got[n][0] / a:.3f}, {got[n][1]})" if n != "raw" else "")
                for n in names
            )
            print(f"{workload} round {k + 1} ({order[0]} first): {figures}", flush=True)
        for n in names[1:]:
            ratios = [b / a for a, b in zip(per_arm["raw"], per_arm[n], strict=True)]
            results[f"{workload} {n}"] = ratios
            summarize(ratios, f"{workload} {n}/raw", bar=0.97)
            print(f"{workload} {n}/raw: ratios range {min(ratios):.3f} .. {max(ratios):.3f}")
        if args.also:
            ratios = [
                b / a for a, b in zip(per_arm["pgrig (--also)"], per_arm["pgrig"], strict=True)
            ]
            summarize(ratios, f"{workload} pgrig/pgrig (--also)")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    for name, ratios in results.items():
        print(f"{name}/raw: median {statistics.median(ratios):.3f} (bar >= 0.97)")


if __name__ == "__main__":
    main()
