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

from lab import Side, ensure_env, load_options, pgrig, pgrig_runs_abba


def switch(name: str, insights: bool) -> None:
    """The side's state on a freshly started server (a changed library list restarts it)."""
    out = pgrig("env", "set", name, "--insights" if insights else "--no-insights")
    if "server restarted" not in out:
        pgrig("env", "restart", name)


def main() -> None:
    ap = argparse.ArgumentParser()
    load_options(ap, rounds=8, duration=20, warmup=5, clients=8)
    args = ap.parse_args()
    env = "bench-insights"
    ensure_env(env, args.pg, args.scale)
    try:
        on = pgrig_runs_abba(
            env,
            args,
            "insights-overhead",
            Side("insights off", before=lambda: switch(env, False)),
            Side("insights on", before=lambda: switch(env, True)),
        )
    finally:
        pgrig("env", "set", env, "--insights")
    last = json.loads(pgrig("runs", "show", str(on["id"]), "--json")) if on else {}
    plans, st = last.get("plans", {}), last.get("statements", {})
    print(
        f"last 'on' run: {plans.get('samples', 0):,} plans sampled "
        f"(rates {[r['rate'] for r in plans.get('sampling', {}).get('rates', [])]}), "
        f"{st.get('statements', 0)} statements with {st.get('calls', 0):,} top-level calls"
    )


if __name__ == "__main__":
    main()
