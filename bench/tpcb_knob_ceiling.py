"""How much can any setting win on pgbench:tpcb here? The ceiling behind issue 13's bar.

    python bench/tpcb_knob_ceiling.py [--pg 15] [--scale 10] [--clients 8] [--duration 15]
        [--rounds 2]

In a scratch pgrig home: an environment with PostgreSQL's defaults and pgbench data, then raw
pgbench tpcb-like runs (CHECKPOINT before each) in rounds, every variant once per round:
defaults, the WAL/commit knobs a session can set (commit_delay, wal_compression), wal_sync_method
(reloaded), pgtune-oltp's memory and WAL sizes (restarted), and synchronous_commit = off as the
UNSAFE reference (excluded from `pgrig tune` without --allow-unsafe). Prints each variant's
median TPS against the defaults, and the wait profile of the defaults (pg_stat_activity sampled
5 times a second): when WAL flushes and the row locks held across them dominate, only settings
that give up durability move the figure.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import subprocess
import threading
import time
from pathlib import Path

from lab import client_env, pgbench_tps, pgrig, scratch_home

from pgrig.provision.state.environment import Environment

ENV = "ceiling"
SESSION = {  # name -> PGOPTIONS
    "defaults": "",
    "commit_delay=20, commit_siblings=1": "-c commit_delay=20 -c commit_siblings=1",
    "commit_delay=200, commit_siblings=3": "-c commit_delay=200 -c commit_siblings=3",
    "wal_compression=lz4": "-c wal_compression=lz4",
    "UNSAFE synchronous_commit=off": "-c synchronous_commit=off",
}
RELOAD = {"wal_sync_method=open_datasync": ["wal_sync_method=open_datasync"]}
RESTART = {
    "pgtune-oltp sizes": [
        "shared_buffers=6GB", "wal_buffers=16MB", "max_wal_size=8GB", "min_wal_size=2GB",
        "checkpoint_completion_target=0.9",
    ],
}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pg", default="15")
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--duration", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()

    with scratch_home("pgrig-ceiling-", ENV):
        pgrig("env", "create", ENV, "--pg", a.pg, "--profile", "default")
        pgrig("db", "generate", ENV, "--scenario", "pgbench", "--scale", str(a.scale))
        libpq = client_env(ENV)
        bindir = Path(Environment.load(ENV).bindir or "")
        tps: dict[str, list[float]] = collections.defaultdict(list)
        waits: collections.Counter[str] = collections.Counter()
        for r in range(a.rounds):
            for name, options in SESSION.items():
                tps[name].append(pgbench(bindir, libpq, a, options, waits if not r else None))
            for group in (RELOAD, RESTART):
                for name, settings in group.items():
                    pgrig("env", "set", ENV, *settings)
                    tps[name].append(pgbench(bindir, libpq, a, "", None))
                    pgrig("env", "set", ENV, *[f"--reset={s.split('=')[0]}" for s in settings])
            print(f"round {r + 1}/{a.rounds} done", flush=True)
        base = statistics.median(tps["defaults"])
        print(f"pgbench tpcb-like, scale {a.scale}, {a.clients} clients, {a.duration} s runs, "
              f"PostgreSQL {a.pg} (medians of {a.rounds} rounds):")  # fmt: skip
        for name, values in tps.items():
            m = statistics.median(values)
            runs = ", ".join(f"{v:,.0f}" for v in values)
            print(f"  {name:40s} {m:8,.0f} tps  x{m / base:.3f}  ({runs})")
        seen = sum(waits.values())
        print("wait profile of the defaults (share of active backends seen):")
        for event, n in waits.most_common(8):
            print(f"  {event:28s} {100 * n / seen:5.1f}%")


def pgbench(
    bindir: Path,
    libpq: dict[str, str],
    a: argparse.Namespace,
    options: str,
    waits: collections.Counter[str] | None,
) -> float:
    psql = [str(bindir / "psql"), "-qAtX", "-c"]
    subprocess.run([*psql, "CHECKPOINT"], env=libpq, check=True, capture_output=True)
    argv = [str(bindir / "pgbench"), "-n", "-b", "tpcb-like", "-c", str(a.clients), "-j", "2",
            "-T", str(a.duration)]  # fmt: skip
    stop = threading.Event()
    sampler = None
    if waits is not None:
        sampler = threading.Thread(target=sample_waits, args=(psql, libpq, waits, stop))
        sampler.start()
    out = subprocess.run(argv, env={**libpq, "PGOPTIONS": options}, text=True,
                         capture_output=True, check=True).stdout  # fmt: skip
    stop.set()
    if sampler is not None:
        sampler.join()
    return pgbench_tps(out)


def sample_waits(
    psql: list[str], libpq: dict[str, str], waits: collections.Counter[str], stop: threading.Event
) -> None:
    query = (
        "select coalesce(wait_event_type || ':' || wait_event, 'CPU') from pg_stat_activity "
        "where state = 'active' and backend_type = 'client backend' and pid <> pg_backend_pid()"
    )
    time.sleep(2)
    while not stop.wait(0.2):
        out = subprocess.run([*psql, query], env=libpq, text=True, capture_output=True).stdout
        waits.update(line for line in out.splitlines() if line)


if __name__ == "__main__":
    main()
