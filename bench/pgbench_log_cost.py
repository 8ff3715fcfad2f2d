"""What pgbench's own per-transaction log costs: raw pgbench with and without `-l -P 1`, ABBA.

    python bench/pgbench_log_cost.py [--env bench-overhead] [--rounds 8] [--duration 15]

pgrig runs pgbench with `-l` (every transaction's latency, for exact percentiles and the
per-second series) and `-P 1` (the live view), writing the log to tmpfs. This bench runs the
same raw pgbench command (select-only, 8 clients, 2 threads, simple protocol) with and without
those two options, no pgrig involved, so bench/overhead.py's figure can be split into what
pgbench itself pays for the log and what pgrig's process adds. Uses the environment
bench/overhead.py creates (run that first).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from abba import interleave
from lab import client_env, pgbench_tps

from pgrig.provision.environment import Environment


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", default="bench-overhead")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--duration", type=int, default=15)
    a = ap.parse_args()
    started = subprocess.run(["pgrig", "env", "start", a.env], capture_output=True, text=True)
    if started.returncode != 0:
        raise SystemExit(f"pgrig env start {a.env}: {started.stderr.strip()}")
    pgbench = str(Path(Environment.load(a.env).bindir or "") / "pgbench")
    libpq = client_env(a.env)
    scratch = "/dev/shm" if os.path.isdir("/dev/shm") else None

    def tps(logged: bool) -> float:
        work = tempfile.mkdtemp(prefix="pgbench-log-cost-", dir=scratch)
        try:
            extra = ["-l", f"--log-prefix={work}/txlog", "-P", "1"] if logged else []
            argv = [pgbench, "-n", "-S", "-c", "8", "-j", "2", "-T", str(a.duration),
                    "-M", "simple", *extra]  # fmt: skip
            run = subprocess.run(argv, env=libpq, capture_output=True, text=True, check=True)
            return pgbench_tps(run.stdout)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    interleave(lambda: tps(False), lambda: tps(True), a.rounds, ("plain", "-l -P 1"))


if __name__ == "__main__":
    main()
