"""Insights overhead: `pgrig run` with insights on against the same run with them off, ABBA.

    python bench/insights_overhead.py [--pg 15] [--rounds 8] [--duration 20] [--warmup 5]
        [--workload pgbench:select-only] [--clients 8] [--threads 2] [--scale 10]

One environment, so both sides run on the same cluster and data: before every run the bench
sets the side's state with `pgrig env set --insights` (pgrig's insights layer: pg_stat_statements
with track = all, auto_explain sampling plans within the plan budget, the log settings, and the
collection around the run) or `--no-insights` (neither library loaded, nothing collected), and
restarts the server when the state did not change, so every run starts from a freshly started
server after the same warm-up. Runs alternate in ABBA order; each pair prints both TPS and the
ratio on/off, then the median ratio and the paired estimate with its bounds (the bar: >= 0.97),
and what the last "on" run collected (plans sampled, statements), so a ratio near 1 cannot come
from an idle collector. pgbench:select-only is the hardest case: the most statements per second.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from abba import interleave


def sh(*argv: str) -> str:
    out = subprocess.run(list(argv), capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(argv)}\n{out.stderr}")
    return out.stdout


def prepare(name: str, pg: str, scale: int) -> None:
    envs = json.loads(sh("pgrig", "env", "list", "--json"))
    if not any(e["name"] == name for e in envs):
        sh("pgrig", "env", "create", name, "--pg", pg)
        sh("pgrig", "db", "generate", name, "--scenario", "pgbench", "--scale", str(scale))
    sh("pgrig", "env", "start", name)


def switch(name: str, insights: bool) -> None:
    """The side's state on a freshly started server (a changed library list restarts it)."""
    out = sh("pgrig", "env", "set", name, "--insights" if insights else "--no-insights")
    if "server restarted" not in out:
        sh("pgrig", "env", "restart", name)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pg", default="15")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--duration", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--workload", default="pgbench:select-only")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--scale", type=int, default=10)
    args = ap.parse_args()
    env = "bench-insights"
    prepare(env, args.pg, args.scale)
    last: dict = {}

    def tps(insights: bool) -> float:
        nonlocal last
        switch(env, insights)
        argv = ["pgrig", "run", env, "--workload", args.workload, "--clients", str(args.clients),
                "--threads", str(args.threads), "--duration", str(args.duration),
                "--warmup", str(args.warmup), "--json",
                "--tag", "bench=insights-overhead"]  # fmt: skip
        rec = json.loads(sh(*argv))
        if insights:
            last = json.loads(sh("pgrig", "runs", "show", str(rec["id"]), "--json"))
        return float(rec["tps"])

    try:
        interleave(lambda: tps(False), lambda: tps(True), args.rounds,
                   ("insights off", "insights on"))  # fmt: skip
    finally:
        sh("pgrig", "env", "set", env, "--insights")
    plans, st = last.get("plans", {}), last.get("statements", {})
    print(
        f"last 'on' run: {plans.get('samples', 0):,} plans sampled "
        f"(rates {[r['rate'] for r in plans.get('sampling', {}).get('rates', [])]}), "
        f"{st.get('statements', 0)} statements with {st.get('calls', 0):,} top-level calls"
    )


if __name__ == "__main__":
    main()
