"""How long an environment's life takes under a disk limit: the floor `--disk-limit` keeps.

    python bench/disk_limit_floor.py [--pg 18] wbps=1MB wbps=256kB wiops=30 wiops=10 riops=30 ...

For each limit, in a scratch pgrig home: the environment created with it (cluster.create, below
`env create`'s floor check, so limits under the floor are measured too; CREATE DATABASE writes
under the limit), stopped (the shutdown checkpoint writes the new database's pages), its data
directory's pages dropped from the page cache (posix_fadvise on its files only: nothing else is
evicted), then started cold (the catalogs read under the limit) and destroyed. Prints the wall
time of each step next to an unlimited environment's; docs/disk-limits.md quotes them, and
request/disk_limit.py's FLOOR keeps each step's added wait under about 30 s (pgrig's own
bounds on a start and a stop are 60 s). Needs root and a blkio/io controller. Timings on a
loaded machine are longer: compare with the unlimited row of the same pass.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from pathlib import Path

from lab import scratch_home

ENV = "floor"


def evict(datadir: Path) -> int:
    """The data directory's pages out of the page cache (written back first)."""
    count = 0
    for root, _dirs, files in os.walk(datadir):
        for name in files:
            try:
                fd = os.open(Path(root) / name, os.O_RDONLY)
            except OSError:
                continue
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                count += 1
            finally:
                os.close(fd)
    return count


def timed(step: Callable[[], object]) -> str:
    t0 = time.monotonic()
    try:
        step()
    except Exception as e:  # a step that fails under the limit is a figure too
        return f"failed after {time.monotonic() - t0:.1f} s ({str(e)[:60]})"
    return f"{time.monotonic() - t0:.1f} s"


def one(spec: str, pg: str) -> None:
    from pgrig.provision import cluster
    from pgrig.provision.state.environment import Environment
    from pgrig.request import disk_limit

    limit = disk_limit.parse(spec)
    with scratch_home("pgrig-floor-", ENV):
        create = timed(lambda: cluster.create_environment(ENV, pg, disk_limit=limit))
        stop = timed(lambda: cluster.stop_environment(ENV))
        evict(Environment.load(ENV).datadir)
        start = timed(lambda: cluster.start_environment(ENV))
    print(f"{spec:<16} create {create:<12} stop {stop:<12} cold start {start}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pg", default="18")
    ap.add_argument("limits", nargs="+", help="--disk-limit specs, e.g. wbps=1MB wiops=30")
    args = ap.parse_args()
    for spec in ["wiops=4000000", *args.limits]:  # first an unlimited one, as the reference
        one(spec, args.pg)


if __name__ == "__main__":
    main()
