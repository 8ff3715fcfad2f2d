"""What a running run's life cycle costs (load/core/lifecycle.py), in the heartbeat thread, never
on pgbench's hot path:

- one heartbeat (an UPDATE of the run's row in its own short transaction), SQLite archive;
- one partial-series write of the last 10 s of rows (os + pg + pgbench, ~100 columns), at the
  start and at the end of an hour-long run (appends only new rows: it must not grow), and the
  snapshot of the series it is computed from (a copy of what was gathered: grows with time);
- the partial file's size per hour;
- opening the archive when nothing needs recovery (every command pays it).

Usage: python bench/heartbeat_cost.py [--seconds 3600] [--repeat 50]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from pgrig.archive.records import RunRecord
from pgrig.archive.spool import PartialSeries
from pgrig.archive.store import Archive


def _ms(fn: object, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def _series(seconds: int) -> dict[str, dict[str, list[float]]]:
    t = [float(i) for i in range(seconds)]
    return {
        "os": {"t": t, **{f"os_{c}": [1.5] * seconds for c in range(40)}},
        "pg": {"t": t, **{f"pg_{c}": [123456.0] * seconds for c in range(55)}},
        "pgbench": {"t": t, "tps": [20000.5] * seconds, "lat_avg": [0.1] * seconds},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=3600)
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="pgrig-bench-heartbeat-"))
    os.environ["PGRIG_HOME"] = str(home)
    with Archive() as archive:
        rec = RunRecord(env_name="bench", workload="pgbench:select-only", clients=1, threads=1)
        archive.begin_run(rec)
        assert rec.id is not None
        beat = _ms(lambda: archive.heartbeat(rec.id), args.repeat)
        print(f"heartbeat (SQLite UPDATE, own transaction): {beat:.2f} ms median")
        partial = PartialSeries(home)
        full = _series(args.seconds)
        for label, upto in (("first", 10), ("last", args.seconds)):
            window = {k: {c: v[:upto] for c, v in cols.items()} for k, cols in full.items()}
            partial._written = {k: max(0, upto - 10) for k in window}
            t0 = time.perf_counter()
            partial.append(window)
            print(f"partial series, {label} 10 s of {args.seconds} s: "
                  f"{(time.perf_counter() - t0) * 1000:.2f} ms")  # fmt: skip
        partial.remove()
        partial._written = {}
        partial.append(full)
        size = partial.path.stat().st_size
        print(f"partial series file for {args.seconds} s: {size / 1e6:.1f} MB")
        snap = _ms(lambda: {k: {c: v[:] for c, v in cols.items()} for k, cols in full.items()}, 5)
        print(f"series snapshot at {args.seconds} s (copied every 10 s): {snap:.2f} ms")
    opened = _ms(lambda: Archive().close(), 10)
    print(f"open the archive, nothing to recover: {opened:.2f} ms median")
    shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
