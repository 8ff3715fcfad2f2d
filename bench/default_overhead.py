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

--variant NAME=FLAGS adds a pgrig arm with extra flags of `pgrig run` (repeatable), e.g.
'txlog-off=--txlog off' or 'waits-off=--waits-hz 0': one part of the harness off at a time,
rotated with the others, to attribute the cost (with --watch, by CPU per transaction too).

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
import shlex
import statistics
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass

from abba import summarize
from cpu_watch import CpuWatch
from lab import client_env, ensure_env, pgbench_tps, pgrig, sh


@dataclass(frozen=True)
class Arm:
    """One arm's run: the TPS it reports (pgrig's, or raw pgbench's), pgbench's own tps line,
    the transactions, the harness line (pgrig), and where the CPU went (--watch)."""

    tps: float
    pgbench_tps: float
    transactions: int
    harness: str = ""
    cpu: str = ""
    cpu_us_per_txn: float | None = None  # all of the arm's processes (--watch)


def own_tps(stdout: str) -> tuple[float, int]:
    """pgbench's own `tps = ...` and `number of transactions actually processed` lines."""
    lines = stdout.splitlines()
    tps = next((x for x in lines if x.startswith("tps = ")), None)
    txns = next((x for x in lines if "actually processed" in x), None)
    if tps is None or txns is None:
        sys.exit(f"pgbench printed no tps line:\n{stdout}")
    return float(tps.split()[2]), int(txns.split()[-1].split("/")[0])


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.pin_cpus = None if args.client_cpus == "none" else args.client_cpus
        info = json.loads(pgrig("env", "show", args.env, "--json"))
        self.paths = info["paths"]
        self.libpq = client_env(args.env)
        from pgrig import paths

        self.artifacts = str(paths.artifacts_dir())  # pgrig's own rule (root: /var/lib/pgrig)

    def watched(self, arm: Callable[[], Arm]) -> Callable[[], Arm]:
        """`arm` run under a CpuWatch (--watch): where the CPU went, beside its figures."""
        if not self.args.watch:
            return arm

        def run() -> Arm:
            with open(os.path.join(self.paths["datadir"], "postmaster.pid")) as f:
                postmaster = int(f.readline())
            watch = CpuWatch(postmaster, [os.path.join(self.paths["bindir"], "psql")], self.libpq)
            watch.start()
            got = arm()
            usage = watch.stop(got.transactions)
            return Arm(
                got.tps, got.pgbench_tps, got.transactions, got.harness, usage.line(),
                usage.arm_us_per_txn(),
            )  # fmt: skip

        return run

    def raw(self, workload: str) -> Arm:
        a = self.args
        sh([os.path.join(self.paths["bindir"], "psql"), "-X", "-q", "-c", "CHECKPOINT"], self.libpq)
        pin = ["taskset", "-c", self.pin_cpus] if self.pin_cpus else []
        argv = [*pin, os.path.join(self.paths["bindir"], "pgbench"), "-n", "-b", workload,
                "-c", str(a.clients), "-j", str(a.threads), "-T", str(a.duration)]  # fmt: skip
        # a session of its own, as pgrig starts its pgbench (load/engines/process.py): with
        # the kernel's autogroup scheduling, a pgbench left in the bench's session shares one
        # CPU share with whatever else that session runs, and measured 2-4x below pgrig's on
        # a busy machine for that reason alone
        done = subprocess.run(
            argv, env=self.libpq, capture_output=True, text=True, check=False,
            start_new_session=True,
        )  # fmt: skip
        if done.returncode != 0:
            sys.exit(f"failed: {' '.join(argv)}\n{done.stderr}")
        tps, txns = own_tps(done.stdout)
        return Arm(pgbench_tps(done.stdout), tps, txns)

    def pgrig_run(self, workload: str, src: str | None = None, flags: str = "") -> Arm:
        a = self.args
        argv = ["pgrig", "run", a.env, "--workload", f"pgbench:{workload}",
                "--clients", str(a.clients), "--threads", str(a.threads),
                "--duration", str(a.duration), "--json",
                "--tag", "bench=default-overhead", *shlex.split(flags)]  # fmt: skip
        if self.pin_cpus:
            argv += ["--client-cpus", self.pin_cpus]
        env = None
        if src is not None:  # that tree's pgrig, the rest of the environment as it is
            env = {**os.environ, "PYTHONPATH": os.path.join(src, "src")}
        doc = json.loads(sh(argv, env))
        name = (doc.get("artifacts") or {}).get("pgbench.stdout")
        if not name:
            sys.exit(f"run {doc['id']}: no pgbench.stdout artifact to read pgbench's own tps")
        with open(os.path.join(self.artifacts, name)) as f:
            tps, txns = own_tps(f.read())  # the whole pgbench run's, as the CPU watch sees it
        harness = doc.get("harness") or {}
        line = str(harness.get("line") or "harness: not recorded")
        return Arm(float(doc["tps"]), tps, txns, line)

    def workload(self, workload: str) -> dict[str, list[float]]:
        """The rounds of one workload; the ratios per pgrig arm (by reported TPS)."""
        arms: dict[str, Callable[[], Arm]] = {
            "raw": self.watched(lambda: self.raw(workload)),
            "pgrig": self.watched(lambda: self.pgrig_run(workload)),
        }
        if self.args.also:
            also = self.args.also
            arms["pgrig (--also)"] = self.watched(lambda: self.pgrig_run(workload, also))
        for variant in self.args.variant:
            name, _, flags = variant.partition("=")
            arms[f"pgrig {name}"] = self.watched(lambda f=flags: self.pgrig_run(workload, flags=f))
        names = list(arms)
        per_arm: dict[str, list[Arm]] = {n: [] for n in names}
        for k in range(self.args.rounds):
            order = names if k % 2 == 0 else names[::-1]
            got = {n: arms[n]() for n in order}
            for n in names:
                per_arm[n].append(got[n])
            base = got["raw"]
            figures = "; ".join(
                f"{n} {got[n].tps:,.0f} tps"
                + (
                    f" (x{got[n].tps / base.tps:.3f}; by pgbench's own tps lines "
                    f"x{got[n].pgbench_tps / base.pgbench_tps:.3f}; {got[n].harness})"
                    if n != "raw"
                    else ""
                )
                for n in names
            )
            print(f"{workload} round {k + 1} ({order[0]} first): {figures}", flush=True)
            for n in names:
                if got[n].cpu:
                    print(f"  {n}: {got[n].cpu}", flush=True)
        results: dict[str, list[float]] = {}
        for n in names[1:]:
            pairs = list(zip(per_arm["raw"], per_arm[n], strict=True))
            ratios = [b.tps / a.tps for a, b in pairs]
            results[f"{workload} {n}"] = ratios
            summarize(ratios, f"{workload} {n}/raw", bar=0.97)
            print(f"{workload} {n}/raw: ratios range {min(ratios):.3f} .. {max(ratios):.3f}")
            own = [b.pgbench_tps / a.pgbench_tps for a, b in pairs]
            print(
                f"{workload} {n}/raw by pgbench's own tps lines: median "
                f"{statistics.median(own):.3f}, range {min(own):.3f} .. {max(own):.3f}"
            )
        if self.args.watch:
            for n in names:
                cost = [x.cpu_us_per_txn for x in per_arm[n] if x.cpu_us_per_txn is not None]
                if cost:
                    print(
                        f"{workload} {n}: CPU per transaction, all of the arm's processes: "
                        f"median {statistics.median(cost):.1f} us "
                        f"(range {min(cost):.1f} .. {max(cost):.1f})"
                    )
        if self.args.also:
            ratios = [
                b.tps / a.tps
                for a, b in zip(per_arm["pgrig (--also)"], per_arm["pgrig"], strict=True)
            ]
            summarize(ratios, f"{workload} pgrig/pgrig (--also)")
        return results


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
    ap.add_argument("--watch", action="store_true", help="per arm, where the CPU went (/proc)")
    ap.add_argument(
        "--also",
        metavar="SRC",
        help="a third arm: pgrig from this source tree (its src/ on PYTHONPATH), e.g. the tree "
        "before a change, rotated with the other two (ABC CBA) so a busy machine's drift "
        "falls on all three alike",
    )
    ap.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME=FLAGS",
        help="another pgrig arm with these flags of `pgrig run` (e.g. 'txlog-off=--txlog off'),"
        " rotated with the others: one part of the harness off at a time, to attribute its cost",
    )
    args = ap.parse_args()

    ensure_env(args.env, args.pg, args.scale)
    out = pgrig("env", "set", args.env, "--insights")  # as shipped
    if "server restarted" not in out:
        pgrig("env", "restart", args.env)
    bench = Bench(args)
    pinned = f"pinned to CPUs {bench.pin_cpus}" if bench.pin_cpus else "not pinned"
    print(
        f"insights on (as shipped); {args.clients} clients, {args.threads} threads, "
        f"{args.duration} s, {args.rounds} interleaved pairs per workload; pgbench {pinned}; "
        f"load average before: {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    results: dict[str, list[float]] = {}
    for workload in args.workloads.split(","):
        results.update(bench.workload(workload))
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    for name, ratios in results.items():
        print(f"{name}/raw: median {statistics.median(ratios):.3f} (bar >= 0.97)")


if __name__ == "__main__":
    main()
