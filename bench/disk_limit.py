"""Does an fsync-bound workload follow `--disk-limit`? pgbench tpcb with and without wiops=N.

    python bench/disk_limit.py [--pg 18] [--scale 10] [--clients 4] [--duration 15]
        [--rounds 3] [--wiops 300] [--wbps 20MB]

In a scratch pgrig home: an environment with PostgreSQL's defaults (synchronous_commit on) and
pgbench data, then raw pgbench tpcb-like runs (CHECKPOINT before each), in rounds that
alternate the sides: no limit, then `env set --disk-limit wiops=N`. For each run: TPS, WAL
flushes per second (pg_stat_io's fsyncs of object wal on 18, pg_stat_wal's wal_sync before) and
the write operations the cgroup's own counter saw (blkio.throttle.io_serviced, v1). Then what
v1 does with data-file writeback: the same UPDATE of every account dirties the tables, and a
CHECKPOINT is timed with no limit and with `--disk-limit wbps=SIZE` (the checkpointer's
writeback goes through sync_file_range and fsync in its own context, which v1 throttles).
Prints every figure; docs/reports/disk-limit.md quotes them.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import psycopg
from lab import client_env, pgbench_tps, pgrig, scratch_home

from pgrig.provision.server import disk_throttle
from pgrig.provision.state.environment import Environment

ENV = "disklimit"


def wal_flushes(conn: psycopg.Connection[Any], major: int) -> int:
    """WAL fsyncs since the statistics were reset (the server's own count)."""
    if major >= 18:
        sql = "select coalesce(sum(fsyncs), 0) from pg_stat_io where object = 'wal'"
    else:
        sql = "select wal_sync from pg_stat_wal"
    row = conn.execute(sql).fetchone()
    return int(row[0]) if row else 0


def cgroup_writes(env: Environment) -> int | None:
    """Write operations the environment's cgroup was charged with (None: no cgroup now)."""
    h = disk_throttle.hierarchy()
    f = disk_throttle.cgroup_dir(env, h) / "blkio.throttle.io_serviced"
    if h.version != 1 or not f.exists():
        return None
    return sum(int(ln.split()[2]) for ln in f.read_text().splitlines() if " Write " in ln)


def one_run(env: Environment, a: argparse.Namespace) -> dict[str, float | None]:
    bindir = Path(env.bindir or "")
    with psycopg.connect(env.conninfo("pgrig"), autocommit=True) as conn:
        conn.execute("checkpoint")
        flushes0 = wal_flushes(conn, env.major or 0)
        writes0 = cgroup_writes(env)
        t0 = time.monotonic()
        out = subprocess.run(
            [str(bindir / "pgbench"), "-n", "-b", "tpcb-like", "-c", str(a.clients),
             "-j", str(min(a.clients, 2)), "-T", str(a.duration), "pgrig"],
            capture_output=True, text=True, env=client_env(ENV), check=True,
        )  # fmt: skip
        elapsed = time.monotonic() - t0
        flushes = wal_flushes(conn, env.major or 0) - flushes0
        writes1 = cgroup_writes(env)
    writes = (writes1 - writes0) / elapsed if writes0 is not None and writes1 is not None else None
    return {"tps": pgbench_tps(out.stdout), "wal_flushes_s": flushes / elapsed, "writes_s": writes}


def checkpoint_seconds(env: Environment) -> float:
    """Dirty every account row (no limit while it runs), then time a CHECKPOINT."""
    with psycopg.connect(env.conninfo("pgrig"), autocommit=True) as conn:
        conn.execute("checkpoint")
        conn.execute("update pgbench_accounts set abalance = abalance + 1")
        t0 = time.monotonic()
        conn.execute("checkpoint")
        return time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pg", default="18")
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--duration", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--wiops", type=int, default=300)
    ap.add_argument("--wbps", default="20MB")
    a = ap.parse_args()
    limited = f"wiops={a.wiops}"

    with scratch_home("pgrig-disklimit-", ENV):
        pgrig("env", "create", ENV, "--pg", a.pg, "--profile", "default")
        pgrig("db", "generate", ENV, "--scenario", "pgbench", "--scale", str(a.scale))
        env = Environment.load(ENV)
        sides: dict[str, list[dict[str, float | None]]] = {"none": [], limited: []}
        for r in range(a.rounds):
            for side in sides:
                pgrig("env", "set", ENV, "--disk-limit", side)
                sides[side].append(one_run(env, a))
            print(f"round {r + 1}/{a.rounds} done", flush=True)
        pgrig("env", "set", ENV, "--disk-limit", "none")
        ckpt = {"none": checkpoint_seconds(env)}
        pgrig("env", "set", ENV, "--disk-limit", f"wbps={a.wbps}")
        ckpt[f"wbps={a.wbps}"] = checkpoint_seconds(env)
        pgrig("env", "set", ENV, "--disk-limit", "none")
        ckpt["none (again)"] = checkpoint_seconds(env)
        shown = pgrig("env", "show", ENV)

    print(
        f"\npgbench tpcb-like, scale {a.scale}, {a.clients} clients, {a.duration} s runs, "
        f"PostgreSQL {env.version}, synchronous_commit on, {a.rounds} interleaved rounds:"
    )
    base = statistics.median(float(x["tps"] or 0) for x in sides["none"])
    for side, runs in sides.items():
        tps = [float(x["tps"] or 0) for x in runs]
        flushes = [float(x["wal_flushes_s"] or 0) for x in runs]
        writes = [x["writes_s"] for x in runs if x["writes_s"] is not None]
        m = statistics.median(tps)
        per_run = ", ".join(f"{v:,.0f}" for v in tps)
        charged = f"  cgroup write ops/s {statistics.median(writes):7,.1f}" if writes else ""
        print(
            f"  disk limit {side:12s} TPS median {m:8,.0f} (x{m / base:.3f}; runs {per_run})  "
            f"WAL flushes/s {statistics.median(flushes):7,.1f}{charged}"
        )
    print("CHECKPOINT after an UPDATE of every pgbench_accounts row:")
    for side, seconds in ckpt.items():
        print(f"  disk limit {side:14s} {seconds:6.1f} s")
    print("\n`pgrig env show` while limited said (last state: none):")
    print("\n".join(ln for ln in shown.splitlines() if "disk limit" in ln or "limited" in ln))


if __name__ == "__main__":
    main()
