"""How fast is `pgrig runs list` on a big archive? Fills a temporary SQLite archive with
realistic runs (full pg_settings snapshot, host facts, per-second pgbench/os/pg series of
10-300 s, two scripts, tags; a few studies) and prints:

- fill rate, archive size and bytes per run (series and blobs are zlib-compressed JSON),
- in-process latencies: open (schema check), list_runs(50), filtered lists, count, get_run,
- CLI wall and CPU time of `pgrig runs list` (and --json), next to bare Python start-up.

Usage: python bench/runs_list.py [--runs 10000] [--repeat 7] [--keep] [--os-load]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from pgrig.archive.records import LatencyStats, RunFilter, RunRecord, ScriptResult, StudyRecord
from pgrig.archive.store import Archive

OS_COLUMNS = [
    "cpu_user",
    "cpu_system",
    "cpu_iowait",
    "cpu_idle",
    "cpu_steal",
    "mem_used_bytes",
    "mem_cached_bytes",
    "disk_read_bytes",
    "disk_write_bytes",
    "disk_read_iops",
    "disk_write_iops",
    "ctx_switches",
    "load1",
    "net_bytes",
]
PG_COLUMNS = [
    "xact_commit",
    "xact_rollback",
    "blks_hit",
    "blks_read",
    "hit_ratio",
    "tup_inserted",
    "tup_updated",
    "wal_bytes",
    "temp_bytes",
    "checkpoints",
    "buffers_checkpoint",
    "autovacuum_count",
    "active",
    "waiting",
]


def settings_snapshot(rng: np.random.Generator) -> dict[str, dict[str, str]]:
    """About 350 settings with pg_settings' fields, a handful changed from the defaults."""
    out = {}
    for i in range(350):
        boot = str(int(rng.integers(1, 100000)))
        changed = i % 50 == 0
        out[f"setting_{i:03d}"] = {
            "setting": str(int(boot) * 2) if changed else boot,
            "unit": "kB" if i % 3 == 0 else None,
            "boot_val": boot,
            "reset_val": boot,
            "source": "configuration file" if changed else "default",
            "context": ("postmaster", "sighup", "user")[i % 3],
            "vartype": "integer",
            "pending_restart": False,
        }
    return out


def series(rng: np.random.Generator, seconds: int, warmup: int) -> dict[str, dict[str, list]]:
    t = list(range(-warmup, seconds))
    n = len(t)
    tps = np.round(rng.normal(1500, 60, n), 1)
    lat = np.abs(rng.normal(13, 2, (5, n)))
    out = {
        "pgbench": {
            "t": t,
            "tps": tps.tolist(),
            "lat_avg": np.round(lat[0], 3).tolist(),
            "p50": np.round(lat[1], 3).tolist(),
            "p95": np.round(lat[2] * 2, 3).tolist(),
            "p99": np.round(lat[3] * 3, 3).tolist(),
            "max": np.round(lat[4] * 8, 3).tolist(),
            "failed": rng.integers(0, 2, n).tolist(),
        },
        "os": {"t": [x + 0.013 for x in t]},
        "pg": {"t": [x + 0.021 for x in t]},
    }
    for col in OS_COLUMNS:
        out["os"][col] = np.round(rng.random(n) * 100, 1).tolist()
    for col in PG_COLUMNS:
        out["pg"][col] = np.cumsum(rng.integers(0, 5000, n)).tolist()
    return out


def make_run(i: int, rng: np.random.Generator, snapshot: dict, host: dict) -> RunRecord:
    seconds = int(rng.choice([10, 30, 60, 60, 120, 300]))
    warmup = int(rng.choice([0, 5, 10]))
    clients = int(rng.choice([1, 10, 20, 50, 100, 200]))
    status = "ok" if i % 20 else rng.choice(["failed", "aborted"])
    started = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=7 * i)
    tps = float(rng.normal(1500, 200))
    study = f"study-{(i // 4) % 10}" if i % 4 == 0 else None
    return RunRecord(
        env_name=f"pg{15 + i % 4}",
        workload=("pgbench:tpcb-like", "pgbench:select-only", "tpcc", "read.sql@1,write.sql@1")[
            i % 4
        ],
        clients=clients,
        threads=min(clients, 2),
        status=status,
        error=None if status == "ok" else "pgbench: connection to server failed: FATAL ...",
        started_at=started,
        ended_at=started + timedelta(seconds=seconds + warmup + 3),
        study=study,
        study_point=f"clients={clients}" if study else None,
        repeat=i % 3,
        server_version=f"{15 + i % 4}.3",
        server_major=15 + i % 4,
        pgbench_version="pgbench (PostgreSQL) 18.6",
        database="pgrig",
        scenario="pgbench",
        scale=100,
        db_size_bytes=1_600_000_000,
        duration_s=float(seconds),
        warmup_s=float(warmup),
        protocol="prepared",
        command=f"pgbench -c {clients} -j 2 -T {seconds + warmup} -M prepared -P 1 -l pgrig",
        note=f"iteration {i}",
        owner="bench",
        tags={"iteration": str(i % 12), "purpose": "bench"},
        measured_s=float(seconds),
        tps=tps,
        transactions=int(tps * seconds),
        failed=0,
        retried=0,
        skipped=0,
        rollbacks=0,
        latency=LatencyStats(13.1, 2.2, 12.9, 15.8, 17.0, 21.3, 35.5, 88.1),
        cpu_user=55.0,
        cpu_system=20.0,
        cpu_iowait=3.0,
        cpu_idle=22.0,
        hit_ratio=99.5,
        scripts=[
            ScriptResult(0, "read.sql", 1, 1000, tps=tps / 2, latency=LatencyStats(p95=4.0)),
            ScriptResult(1, "write.sql", 1, 1000, tps=tps / 2, latency=LatencyStats(p95=30.0)),
        ],
        settings=snapshot,
        settings_layers={"profile": {"shared_buffers": "4GB"}, "run": {"work_mem": "8MB"}},
        host=host,
        series=series(rng, seconds, warmup),
        artifacts={"server.log": f"{i + 1}/server.log.gz", "txlog.0": f"{i + 1}/txlog.0.gz"},
        extra={"dataset": {"kind": "pgbench", "scale": 100}},
    )


def timed(fn, repeat: int) -> tuple[float, object]:
    """Best-of-`repeat` wall time in milliseconds and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1000, result


def cli_times(argv: list[str], env: dict[str, str], repeat: int) -> tuple[float, float, float]:
    """Median and best wall time and median CPU time (user+system, ms) of a command.

    CPU time is the steadier figure on a shared machine: wall time includes waiting for a core.
    """
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(
            argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True
        )
        walls.append((time.perf_counter() - t0) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(1000 * (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime))
    return statistics.median(walls), min(walls), statistics.median(cpus)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--keep", action="store_true", help="keep the temporary archive")
    ap.add_argument("--os-load", action="store_true", help="print the load average first")
    args = ap.parse_args()

    if args.os_load:
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    home = Path(tempfile.mkdtemp(prefix="pgrig-bench-runs-", dir="/tmp"))
    os.environ["PGRIG_HOME"] = str(home)
    os.environ.pop("PGRIG_ARCHIVE", None)
    db = home / "archive.sqlite"
    url = f"sqlite:///{db}"
    try:
        rng = np.random.default_rng(42)
        snapshot = settings_snapshot(rng)
        host = {"hostname": "bench1", "cpu_model": "x86", "cpu_logical": 16, "ram_bytes": 64 << 30}
        host |= {f"fact_{i}": f"value {i}" for i in range(25)}

        t0 = time.perf_counter()
        archive = Archive(url)
        create_ms = (time.perf_counter() - t0) * 1000
        for s in range(10):
            archive.create_study(StudyRecord(name=f"study-{s}", kind="sweep", spec="[study]\n"))
        t0 = time.perf_counter()
        raw = 0
        for i in range(args.runs):
            rec = make_run(i, rng, snapshot, host)
            if i < 50:  # JSON size before compression, on a sample
                for doc in (rec.series, rec.settings):
                    raw += len(json.dumps(doc, separators=(",", ":")).encode())
            if i == args.runs - 1:  # one run the way the runner does it: begin, then finish
                t1 = time.perf_counter()
                archive.begin_run(rec)
                begin_ms = (time.perf_counter() - t1) * 1000
                rec.status = "ok"
                t1 = time.perf_counter()
                archive.finish_run(rec)
                finish_ms = (time.perf_counter() - t1) * 1000
            else:
                archive.finish_run(rec)
        fill_s = time.perf_counter() - t0
        archive.close()
        size = sum(p.stat().st_size for p in home.glob("archive.sqlite*"))

        print(
            f"archive: {args.runs} runs, {size / 1e6:.1f} MB ({size / args.runs / 1e3:.1f} kB/run)"
        )
        print(f"  filled in {fill_s:.1f} s ({args.runs / fill_s:.0f} runs/s incl. generating data)")
        con = sqlite3.connect(db)
        stored = {
            t: con.execute(f"SELECT coalesce(sum(length(data)), 0) FROM {t}").fetchone()[0]
            for t in ("run_series", "run_blobs")
        }
        con.close()
        print(
            f"  series+settings as JSON {raw / 50 / 1e3:.0f} kB/run; stored (zlib level 1): "
            f"series {stored['run_series'] / args.runs / 1e3:.1f} kB/run, "
            f"blobs {stored['run_blobs'] / args.runs / 1e3:.1f} kB/run"
        )
        print(f"  create + migrate a new archive: {create_ms:.0f} ms")
        print(f"  begin_run {begin_ms:.1f} ms, finish_run {finish_ms:.1f} ms (one full run)")

        print(f"in-process (best of {args.repeat}):")
        open_ms, archive = timed(lambda: Archive(url), 1)
        print(f"  open (schema at head)      {open_ms:7.1f} ms")
        cases = [
            ("list_runs(limit=50)", lambda: archive.list_runs()),
            ("list_runs(env, limit=50)", lambda: archive.list_runs(RunFilter(env_name="pg16"))),
            ("list_runs(tag)", lambda: archive.list_runs(RunFilter(tag=("iteration", "3")))),
            ("list_runs(study)", lambda: archive.list_runs(RunFilter(study="study-3"))),
            ("list_runs(status=failed)", lambda: archive.list_runs(RunFilter(status="failed"))),
            ("list_runs(order=-tps)", lambda: archive.list_runs(order="-tps")),
            ("count_runs()", lambda: archive.count_runs()),
            ("study_runs(study-3)", lambda: archive.study_runs("study-3")),
            ("get_run (full, series)", lambda: archive.get_run(args.runs // 2)),
        ]
        for label, fn in cases:
            ms, _ = timed(fn, args.repeat)
            print(f"  {label:26s} {ms:7.1f} ms")
        archive.close()

        pgrig = shutil.which("pgrig") or "pgrig"
        env = {**os.environ, "PGRIG_ARCHIVE": url}
        print(f"CLI, includes Python start-up (of {args.repeat}: wall median / best, CPU median):")
        for label, argv in [
            ("python -c pass", [sys.executable, "-c", "pass"]),
            ("pgrig --help", [pgrig, "--help"]),
            ("pgrig runs list", [pgrig, "runs", "list"]),
            ("pgrig runs list --json", [pgrig, "runs", "list", "--json"]),
            ("pgrig runs list --env pg16", [pgrig, "runs", "list", "--env", "pg16"]),
            ("pgrig runs show N", [pgrig, "runs", "show", str(args.runs // 2)]),
        ]:
            med, best, cpu = cli_times(argv, env, args.repeat)
            print(f"  {label:28s} {med:6.0f} / {best:4.0f} ms   cpu {cpu:4.0f} ms")
    finally:
        if args.keep:
            print(f"kept {home}")
        else:
            shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
