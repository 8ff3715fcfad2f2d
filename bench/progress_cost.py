"""What pgbench's `-P 1` (the progress line every pgrig run asks for) costs by itself: raw
pgbench with and without it, interleaved pairs (the arm that goes first alternates), each run
from a CHECKPOINT, on the bench environment. One of the parts every pgrig run has and raw
pgbench does not (docs/reports/default-overhead.md, set H).

    python bench/progress_cost.py --pairs 8        # select-only, 8 clients, 2 threads, 20 s

Prints each pair's TPS and ratio (with -P 1 / without) and the median over the pairs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess

from lab import client_env, ensure_env, pgbench_tps

from pgrig.provision.state.environment import Environment


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--env", default="bench-default")
    ap.add_argument("--pg", default="18")
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--duration", type=int, default=20)
    ap.add_argument("--workload", default="select-only")
    a = ap.parse_args()
    ensure_env(a.env, a.pg, a.scale)
    bindir = Environment.load(a.env).bindir
    libpq = client_env(a.env)

    def tps(progress: bool) -> float:
        subprocess.run([os.path.join(bindir, "psql"), "-X", "-q", "-c", "CHECKPOINT"],
                       env=libpq, check=True)  # fmt: skip
        argv = [os.path.join(bindir, "pgbench"), "-n", "-b", a.workload, "-c", "8", "-j", "2",
                "-T", str(a.duration), *(["-P", "1"] if progress else [])]  # fmt: skip
        done = subprocess.run(argv, env=libpq, capture_output=True, text=True, check=True,
                              start_new_session=True)  # fmt: skip
        return pgbench_tps(done.stdout)

    ratios = []
    for i in range(a.pairs):
        if i % 2 == 0:
            without, with_p = tps(False), tps(True)
        else:
            with_p, without = tps(True), tps(False)
        ratios.append(with_p / without)
        print(f"pair {i + 1}: without {without:,.0f} tps, -P 1 {with_p:,.0f} tps, "
              f"ratio {ratios[-1]:.3f}", flush=True)  # fmt: skip
    print(f"-P 1 / without: median {statistics.median(ratios):.3f} over {len(ratios)} pairs "
          f"({min(ratios):.3f} .. {max(ratios):.3f})")  # fmt: skip


if __name__ == "__main__":
    main()
