"""Issue 21's merge bar: merged TPS from 2 load hosts against one pgbench with the same clients
from one host, select-only (ratio >= 0.97), and the start skew of the 2-host runs (<= 20 ms).

Against an existing environment reachable from the load hosts (e.g. `pgrig env create lab --pg
18 --on h1` on the namespace rig, pgbench data generated), interleaved repeats of:
  A: pgrig run ENV -w pgbench:select-only -c C -j J -T T --load-from H1
  B: pgrig run ENV -w pgbench:select-only -c C -j J -T T --load-from H1 --load-from H2
prints each run's TPS, the median ratio B/A with its range, and the launch and first-transaction
skews of the B runs (from the runs' records, extra["load"]).

    scripts/test-hosts.sh up 3 && pgrig host import /var/lib/pgrig-rig/inventory.ini
    pgrig host provision h1 && pgrig env create lab --pg 18 --on h1
    pgrig db generate lab --scenario pgbench --scale 10
    python bench/multi_host_merge.py lab --hosts h2,h3 -c 8 -j 2 -T 10 --repeats 3

On one machine every "host" shares the same CPUs: two load hosts add no client CPU, so the ratio
shows what merging costs and whether it counts right, not how load scales out.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

from lab import pgrig  # bench/ is on sys.path when a bench runs


def run(env: str, hosts: list[str], a: argparse.Namespace) -> dict:
    args = ["run", env, "-w", "pgbench:select-only", "-c", str(a.clients), "-j", str(a.threads)]
    args += ["-T", str(a.duration), "--warmup", str(a.warmup), "--json", "--tag", "bench=merge"]
    for h in hosts:
        args += ["--load-from", h]
    doc = json.loads(pgrig(*args))
    from pgrig.cli import common

    rec = common.open_archive(None).get_run(doc["id"])
    load = rec.extra.get("load") or {}
    return {"id": doc["id"], "status": doc["status"], "tps": doc["tps"],
            "skew_ms": load.get("start_skew_ms"), "first_tx_ms": load.get("first_tx_skew_ms"),
            "warnings": [w.get("code") for w in rec.warnings()]}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("env")
    ap.add_argument("--hosts", required=True, help="two load hosts, e.g. h2,h3")
    ap.add_argument("-c", "--clients", type=int, default=8)
    ap.add_argument("-j", "--threads", type=int, default=2)
    ap.add_argument("-T", "--duration", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    hosts = a.hosts.split(",")
    if len(hosts) != 2:
        sys.exit("--hosts takes two load hosts")
    ratios, skews, first = [], [], []
    for k in range(a.repeats):
        one = run(a.env, hosts[:1], a)
        two = run(a.env, hosts, a)
        print(f"repeat {k + 1}: one host run {one['id']} {one['tps']:,.0f} TPS {one['warnings']}; "
              f"two hosts run {two['id']} {two['tps']:,.0f} TPS, launch skew "
              f"{two['skew_ms']:.3f} ms, first transactions {two['first_tx_ms']:.1f} ms apart "
              f"{two['warnings']}")  # fmt: skip
        if one["tps"] and two["tps"]:
            ratios.append(two["tps"] / one["tps"])
        skews.append(two["skew_ms"])
        first.append(two["first_tx_ms"])
    if ratios:
        low, high = min(ratios), max(ratios)
        print(f"merged / single TPS: median x{statistics.median(ratios):.3f} "
              f"(range {low:.3f} .. {high:.3f}, {len(ratios)} pairs); bar >= 0.97")  # fmt: skip
    print(f"launch skew of the 2-host runs: max {max(skews):.3f} ms; first transactions: max "
          f"{max(first):.1f} ms apart; bar <= 20 ms")  # fmt: skip


if __name__ == "__main__":
    main()
