"""Harness overhead: raw pgbench against `pgrig run` with the samplers on, interleaved.

    python bench/overhead.py [--env bench-overhead] [--pg 18] [--rounds 5] [--duration 30]

Creates (or reuses) an environment, generates pgbench data, turns its insights layer off (its
cost is measured by bench/insights_overhead.py; --insights keeps it), then alternates
`pgbench -S -c 8 -j 2 -T 30` and `pgrig run --workload pgbench:select-only -c 8 -j 2
--duration 30` in ABBA order, and prints each pair and the median ratio pgrig/raw (the bar:
>= 0.97).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from abba import interleave
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

    def raw_tps() -> float:
        out = sh([pgbench, "-n", "-S", "-c", "8", "-j", "2", "-T", str(args.duration)], libpq)
        return pgbench_tps(out)

    def pgrig_tps() -> float:
        argv = ["pgrig", "run", args.env, "--workload", "pgbench:select-only", "--clients", "8",
                "--threads", "2", "--duration", str(args.duration), "--json",
                "--tag", "bench=overhead"]  # fmt: skip
        return float(json.loads(sh(argv))["tps"])

    interleave(raw_tps, pgrig_tps, args.rounds, ("raw pgbench", "pgrig"))


if __name__ == "__main__":
    main()
