"""Harness overhead: raw pgbench against `pgrig run` with the samplers on, interleaved.

    python bench/overhead.py [--env bench-overhead] [--pg 18] [--rounds 5] [--duration 30]
                             [--split] [--client-cpus 1] [--builtin select-only]

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
import subprocess
import sys
import tempfile

from abba import interleave, rotate, summarize
from lab import client_env, pgbench_tps


def sh(argv: list[str], env: dict[str, str] | None = None) -> str:
    out = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(argv)}\n{out.stderr}")
    return out.stdout


def ensure_env(name: str, pg: str, scale: int) -> None:
    """The bench environment, created with pgbench data at `scale` if missing, running."""
    envs = json.loads(sh(["pgrig", "env", "list", "--json"]))
    if not any(e["name"] == name for e in envs):
        sh(["pgrig", "env", "create", name, "--pg", pg])
        sh(["pgrig", "db", "generate", name, "--scale", str(scale)])
    sh(["pgrig", "env", "start", name])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--env", default="bench-overhead")
    ap.add_argument("--pg", default="18")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=30)
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--client-cpus", help="pin pgbench to these CPUs in every arm (e.g. 1)")
    ap.add_argument("--split", action="store_true", help="also raw pgbench with -l -P 1")
    ap.add_argument("--builtin", default="select-only", help="pgbench's built-in script")
    ap.add_argument(
        "--insights",
        action="store_true",
        help="keep the insights layer on (its cost has its own bar: bench/insights_overhead.py)",
    )
    args = ap.parse_args()

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

    def pgrig_tps() -> float:
        argv = ["pgrig", "run", args.env, "--workload", f"pgbench:{args.builtin}", "--clients", "8",
                "--threads", "2", "--duration", str(args.duration), "--json",
                "--tag", "bench=overhead"]  # fmt: skip
        if args.client_cpus:
            argv += ["--client-cpus", args.client_cpus]
        return float(json.loads(sh(argv))["tps"])

    if not args.split:
        interleave(raw_tps, pgrig_tps, args.rounds, ("raw pgbench", "pgrig"))
        return
    arms = {"raw": raw_tps, "log": lambda: raw_tps(logged=True), "pgrig": pgrig_tps}
    res = rotate(arms, args.rounds)
    for a, b, bar in (("raw", "pgrig", 0.97), ("raw", "log", None), ("log", "pgrig", None)):
        ratios = [y / x for x, y in zip(res[a], res[b], strict=True)]
        summarize(ratios, f"{b}/{a}", bar)


if __name__ == "__main__":
    main()
