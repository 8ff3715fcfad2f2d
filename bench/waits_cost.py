"""What one wait snapshot costs, in CPU time (robust to a busy machine, unlike TPS ratios).

    PGRIG_HOME=/tmp/x python bench/waits_cost.py [--pg 15] [--snapshots 3000] [--backends 16]

A scratch environment with `--backends` extra idle connections (pg_stat_activity's size is
what the query walks); the wait sampler's statement (metrics/wait_sampler.ACTIVITY_SQL, prepared
as the sampler runs it) `--snapshots` times on one connection. Prints the server backend's CPU
(utime + stime of its process, from /proc) and this process's CPU per snapshot, and what that
is at 10 Hz as a share of one core: the load the 10 Hz sampler takes from the machine.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from pathlib import Path

import psycopg

from pgrig.metrics import wait_sampler
from pgrig.provision.state.environment import Environment

ENV = "bench-waits-cost"


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pg", default="15")
    ap.add_argument("--snapshots", type=int, default=3000)
    ap.add_argument("--backends", type=int, default=16)
    args = ap.parse_args()
    subprocess.run(["pgrig", "env", "create", ENV, "--pg", args.pg], check=True,
                   capture_output=True)  # fmt: skip
    try:
        env = Environment.load(ENV)
        idle = [psycopg.connect(env.conninfo("postgres")) for _ in range(args.backends)]
        conn = psycopg.connect(env.conninfo("postgres"), autocommit=True,
                               application_name="pgrig-waits")  # fmt: skip
        backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        for _ in range(50):  # prepared after 5 executions, warm caches
            conn.execute(wait_sampler.ACTIVITY_SQL, prepare=True).fetchall()
        s0, c0, w0 = cpu_s(backend), time.process_time(), time.perf_counter()
        for _ in range(args.snapshots):
            conn.execute(wait_sampler.ACTIVITY_SQL, prepare=True).fetchall()
        s1, c1, w1 = cpu_s(backend), time.process_time(), time.perf_counter()
        n = args.snapshots
        server_ms, client_ms = 1000 * (s1 - s0) / n, 1000 * (c1 - c0) / n
        print(f"{n} snapshots with {args.backends + 1} other backends: server backend CPU "
              f"{server_ms:.3f} ms, client CPU {client_ms:.3f} ms, wall {1000 * (w1 - w0) / n:.3f}"
              f" ms per snapshot (CPU clock ticks of 10 ms: server figure +- "
              f"{1000 * 0.01 / n:.3f} ms)")  # fmt: skip
        total = (server_ms + client_ms) * 10 / 1000 * 100
        print(f"at 10 Hz: {total:.2f}% of one core ({total / (os.cpu_count() or 1):.2f}% of this "
              f"machine's {os.cpu_count()} cores)")  # fmt: skip
        conn.close()
        for c in idle:
            c.close()
    finally:
        subprocess.run(["pgrig", "env", "destroy", ENV, "--yes"], check=False, capture_output=True)


if __name__ == "__main__":
    main()
