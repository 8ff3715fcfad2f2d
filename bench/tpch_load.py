"""Where a TPC-H load's time goes: the generator alone, then `db generate`'s phases (COPY per
table, each index, ANALYZE). Issue 41's target: SF 1 loaded, indexed and analyzed in 60 s.

Uses an environment of pgrig's (made and destroyed here, in a PGRIG_HOME of its own, unless
--env names one to load into: its tpch tables are replaced).

    python bench/tpch_load.py                       # SF 1, 2 jobs, PostgreSQL 18
    python bench/tpch_load.py --scale-factor 0.1 --jobs 2
    python bench/tpch_load.py --env lab --db tpch   # into an existing environment
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time

from pgrig.workloads.tpch import loader


def generator_alone(sf: float) -> float:
    """tpchgen-cli writing every table as CSV into /dev/null-like files (its own speed)."""
    with tempfile.TemporaryDirectory(prefix="tpch-bench-") as tmp:
        t0 = time.monotonic()
        subprocess.run([loader.tpchgen(), "csv", "-s", f"{sf:g}", "-o", tmp, "-q"], check=True)
        return time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale-factor", type=float, default=1.0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--env", default=None, help="an existing environment (default: a new one)")
    ap.add_argument("--db", default="pgrig")
    ap.add_argument("--pg", default="18")
    args = ap.parse_args()

    gen_s = generator_alone(args.scale_factor)
    own_home = args.env is None
    if own_home:
        home = tempfile.mkdtemp(prefix="pgrig-tpch-bench-")
        os.chmod(home, 0o755)
        os.environ["PGRIG_HOME"] = home
        os.environ.setdefault("PGRIG_PG_DIR", "/var/lib/pgrig/pg")
        subprocess.run(
            ["pgrig", "env", "create", "tpchbench", "--pg", args.pg,
             "--set", "shared_buffers=2GB", "--set", "max_wal_size=8GB"],
            check=True, capture_output=True,
        )  # fmt: skip
    name = args.env or "tpchbench"
    try:
        from pgrig.provision.state.environment import Environment
        from pgrig.request import DatasetRequest
        from pgrig.workloads import datasets

        env = Environment.load(name)
        req = DatasetRequest(
            scenario="tpch", scale_factor=args.scale_factor, jobs=args.jobs, database=args.db
        )
        t0 = time.monotonic()
        info = datasets.generate(env, req)
        wall = time.monotonic() - t0
    finally:
        if own_home:
            subprocess.run(["pgrig", "env", "destroy", name, "--yes"], capture_output=True)
    load = os.getloadavg()
    print(f"TPC-H SF {args.scale_factor:g}, {args.jobs} jobs, {info['generator']}")
    print(f"load average at the end: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} (2 CPUs)")
    print(f"generator alone (all tables as CSV files): {gen_s:6.1f} s")
    print(f"db generate, wall:                         {wall:6.1f} s")
    for phase, s in info["phases"].items():
        print(f"  {phase:<10} {s:6.1f} s")
    print("  COPY per table (lineitem streamed; the others from files written meanwhile):")
    for table, t in info["tables"].items():
        mb = t["csv_bytes"] / 1e6
        print(f"    {table:<9} {t['rows']:>10,} rows {mb:8.1f} MB {t['copy_s']:6.1f} s")
    print("  indexes (in parallel, largest first):")
    for label, s in info["indexes"].items():
        print(f"    {label:<28} {s:6.1f} s")
    print(f"  size: {info['size_bytes'] / 2**30:.2f} GiB (tables and indexes)")


if __name__ == "__main__":
    main()
