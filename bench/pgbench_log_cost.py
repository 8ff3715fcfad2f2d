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
import json
import os
import re
import shutil
import subprocess
import tempfile

from abba import interleave


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", default="bench-overhead")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--duration", type=int, default=15)
    a = ap.parse_args()
    subprocess.run(["pgrig", "env", "start", a.env], capture_output=True, check=True)
    out = subprocess.run(["pgrig", "env", "show", a.env, "--json"], capture_output=True, text=True)
    info = json.loads(out.stdout)
    pgbench = os.path.join(info["paths"]["bindir"], "pgbench")
    libpq = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PG")},
        "PGHOST": info.get("host", "127.0.0.1"),
        "PGPORT": str(info["port"]),
        "PGUSER": info.get("user", "postgres"),
        "PGDATABASE": "pgrig",
    }
    scratch = "/dev/shm" if os.path.isdir("/dev/shm") else None

    def tps(logged: bool) -> float:
        work = tempfile.mkdtemp(prefix="pgbench-log-cost-", dir=scratch)
        try:
            extra = ["-l", f"--log-prefix={work}/txlog", "-P", "1"] if logged else []
            argv = [pgbench, "-n", "-S", "-c", "8", "-j", "2", "-T", str(a.duration),
                    "-M", "simple", *extra]  # fmt: skip
            run = subprocess.run(argv, env=libpq, capture_output=True, text=True, check=True)
            return float(re.search(r"^tps = ([\d.]+)", run.stdout, re.M).group(1))  # type: ignore[union-attr]
        finally:
            shutil.rmtree(work, ignore_errors=True)

    interleave(lambda: tps(False), lambda: tps(True), a.rounds, ("plain", "-l -P 1"))


if __name__ == "__main__":
    main()
