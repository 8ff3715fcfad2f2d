"""How much can a tuning preset win at all here? Interleaved rounds of the preset's own workload
at PostgreSQL's defaults against the obvious settings for it, before a preset is run for real.

    python bench/preset_ceiling.py read-heavy [--scale 200] [--clients 8] [--duration 15]
        [--rounds 3] [--lock /work/wt/measure.lock] [--disk-limit wiops=300]

In a scratch pgrig home: an environment with PostgreSQL's defaults (and the disk limit for
write-heavy-slow-disk), the preset's pgbench data generated at nice 19, the server stopped;
then (inside `--lock` when given, so only the timed part holds it) the server started at this
process's priority and raw pgbench runs of the preset's workload, every variant once per round
in turn. Before each run: the variant's settings (restart when needed), pg_prewarm of every
pgbench relation, CHECKPOINT. Per run it reads the server's own counters around pgbench: the
buffer hit ratio and temp bytes (pg_stat_database), WAL bytes (pg_stat_wal), WAL writes and
flushes (pg_stat_io, object wal), checkpoints (pg_stat_checkpointer), and samples the waits of
active client backends 5 times a second. Prints each run, then per variant the median TPS, the
per-round ratio to the defaults and the evidence means.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import fcntl
import os
import statistics
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from lab import client_env, pgbench_tps, pgrig, scratch_home

from pgrig.provision.state.environment import Environment

ENV = "ceiling"
NICE = ["nice", "-n", "19"]
REPORTING = Path(__file__).resolve().parents[1] / "src/pgrig/workloads/reporting/reporting.sql"


def pgtune() -> dict[str, str]:
    from pgrig.provision import cluster

    env = Environment.load(ENV)
    settings, _notes = cluster.resolve_profile("pgtune-oltp", env.major or 0, env.bindir)
    return {k: str(v) for k, v in settings.items()}


# preset -> (pgbench workload arguments, {variant: server settings or "pgtune"})
VARIANTS: dict[str, dict[str, dict[str, str] | str]] = {
    "read-heavy": {
        "defaults": {},
        "shared_buffers=6GB": {"shared_buffers": "6GB"},
    },
    "mixed-reporting": {
        "defaults": {},
        "pgtune-oltp": "pgtune",
        "pgtune-oltp + work_mem=256MB": "pgtune+work_mem=256MB",
        "work_mem=256MB, jit=off": {"work_mem": "256MB", "jit": "off"},
    },
    "write-heavy-slow-disk": {
        "defaults": {},
        "pgtune-oltp": "pgtune",
        "pgtune-oltp + commit_delay=1000, commit_siblings=1": (
            "pgtune+commit_delay=1000+commit_siblings=1"
        ),
        "wal_sync_method=open_datasync": {"wal_sync_method": "open_datasync"},
        "UNSAFE synchronous_commit=off": {"synchronous_commit": "off"},
    },
}


def workload(preset: str) -> list[str]:
    if preset == "read-heavy":
        return ["-b", "select-only"]
    if preset == "mixed-reporting":
        return ["-b", "tpcb-like@9", "-f", f"{REPORTING}@1"]
    return ["-b", "tpcb-like"]


def settings_of(spec: dict[str, str] | str) -> dict[str, str]:
    if isinstance(spec, dict):
        return spec
    head, *more = spec.split("+")
    out = pgtune() if head == "pgtune" else {}
    out.update(dict(m.split("=", 1) for m in more))
    return out


@contextlib.contextmanager
def locked(path: str | None) -> Iterator[None]:
    if path is None:
        yield
        return
    with open(path, "a") as f:
        print(f"waiting for {path} ...", flush=True)
        fcntl.flock(f, fcntl.LOCK_EX)
        print(f"lock held from {time.strftime('%H:%M:%S')}", flush=True)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
            print(f"lock released at {time.strftime('%H:%M:%S')}", flush=True)


COUNTERS = """
select (select sum(blks_hit) from pg_stat_database), (select sum(blks_read) from pg_stat_database),
  (select sum(temp_bytes) from pg_stat_database), (select wal_bytes from pg_stat_wal),
  (select coalesce(sum(writes), 0) from pg_stat_io where object = 'wal'),
  (select coalesce(sum(fsyncs), 0) from pg_stat_io where object = 'wal'),
  (select num_timed + num_requested from pg_stat_checkpointer)
"""
PREWARM = (
    "create extension if not exists pg_prewarm; select sum(pg_prewarm(c.oid::regclass)) "
    "from pg_class c join pg_namespace n on n.oid = c.relnamespace "
    "where n.nspname = 'public' and c.relkind in ('r', 'i')"
)
WAITS = (
    "select coalesce(wait_event_type || ':' || wait_event, 'CPU') from pg_stat_activity "
    "where state = 'active' and backend_type = 'client backend' and pid <> pg_backend_pid()"
)


def psql(libpq: dict[str, str], sql: str) -> str:
    bindir = Path(Environment.load(ENV).bindir or "")
    return subprocess.run(
        [str(bindir / "psql"), "-qAtX", "-c", sql], env=libpq, text=True, capture_output=True,
        check=True,
    ).stdout  # fmt: skip


def counters(libpq: dict[str, str]) -> list[float]:
    return [float(x or 0) for x in psql(libpq, COUNTERS).strip().split("|")]


def apply(current: dict[str, str], wanted: dict[str, str]) -> None:
    """The environment's settings become `wanted` (env set restarts when a knob needs it)."""
    if current == wanted:
        return
    gone = [k for k in current if k not in wanted]
    args = [f"{k}={v}" for k, v in wanted.items()] + [f"--reset={k}" for k in gone]
    pgrig("env", "set", ENV, *args)
    current.clear()
    current.update(wanted)


def one_run(a: argparse.Namespace, libpq: dict[str, str]) -> dict[str, float | str]:
    bindir = Path(Environment.load(ENV).bindir or "")
    psql(libpq, PREWARM)
    psql(libpq, "CHECKPOINT")
    before = counters(libpq)
    waits: collections.Counter[str] = collections.Counter()
    stop = threading.Event()

    def sample() -> None:
        time.sleep(2)
        while not stop.wait(0.2):
            with contextlib.suppress(subprocess.CalledProcessError):
                waits.update(x for x in psql(libpq, WAITS).splitlines() if x)

    sampler = threading.Thread(target=sample)
    sampler.start()
    argv = [str(bindir / "pgbench"), "-n", *workload(a.preset), "-c", str(a.clients), "-j",
            str(a.threads), "-T", str(a.duration)]  # fmt: skip
    out = subprocess.run(argv, env=libpq, text=True, capture_output=True, check=True).stdout
    stop.set()
    sampler.join()
    after = counters(libpq)
    d = [y - x for x, y in zip(before, after, strict=True)]
    tps = pgbench_tps(out)
    tx = tps * a.duration
    seen = sum(waits.values()) or 1
    top = ", ".join(f"{e} {100 * n / seen:.0f}%" for e, n in waits.most_common(3))
    return {
        "tps": tps,
        "hit": 100 * d[0] / (d[0] + d[1]) if d[0] + d[1] else float("nan"),
        "temp_mb_per_tx": d[2] / tx / 2**20 if tx else float("nan"),
        "wal_per_tx": d[3] / tx if tx else float("nan"),
        "wal_writes_s": d[4] / a.duration,
        "wal_flushes_s": d[5] / a.duration,
        "checkpoints": d[6],
        "waits": top,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("preset", choices=list(VARIANTS))
    ap.add_argument("--pg", default="18")
    ap.add_argument("--scale", type=int, default=None, help="default: the preset's")
    ap.add_argument("--clients", type=int, default=None, help="default: the preset's")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--duration", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--disk-limit", default=None, help="default: the preset's suggestion")
    ap.add_argument("--lock", default=None, help="flock this file around the timed part only")
    a = ap.parse_args()
    from pgrig.tune import presets

    p = presets.get(a.preset)
    a.scale = a.scale or p.scale
    a.clients = a.clients or p.clients
    limit = a.disk_limit or p.suggested_disk_limit
    with scratch_home(f"pgrig-ceiling-{a.preset}-", ENV):
        create = ["env", "create", ENV, "--pg", a.pg, "--profile", "default"]
        if p.needs_disk_limit:
            create += ["--disk-limit", limit]
        subprocess.run([*NICE, "pgrig", *create], check=True, capture_output=True)
        subprocess.run([*NICE, "pgrig", "db", "generate", ENV, "--scenario", "pgbench",
                        "--scale", str(a.scale)], check=True, capture_output=True)  # fmt: skip
        pgrig("env", "stop", ENV)
        variants = VARIANTS[a.preset]
        results: dict[str, list[dict[str, float | str]]] = collections.defaultdict(list)
        with locked(a.lock):
            t0 = time.monotonic()
            pgrig("env", "start", ENV)  # the server at this process's priority, not nice 19
            libpq = client_env(ENV)
            current: dict[str, str] = {}
            for r in range(a.rounds):
                for name, spec in variants.items():
                    apply(current, settings_of(spec))
                    res = one_run(a, libpq)
                    results[name].append(res)
                    print(f"round {r + 1} {name}: {res['tps']:,.0f} tps, hit {res['hit']:.1f}%, "
                          f"temp {res['temp_mb_per_tx']:.2f} MB/tx, WAL {res['wal_per_tx']:,.0f}"
                          f" B/tx, WAL flushes {res['wal_flushes_s']:.0f}/s, checkpoints "
                          f"{res['checkpoints']:.0f}; waits {res['waits']}",
                          flush=True)  # fmt: skip
            pgrig("env", "stop", ENV)
            wall = time.monotonic() - t0
        print(f"\n{a.preset}: pgbench {' '.join(workload(a.preset))} scale {a.scale}, "
              f"{a.clients} clients, {a.threads} threads, {a.duration} s runs, {a.rounds} rounds, "
              f"PostgreSQL {a.pg}" + (f", disk limit {limit}" if p.needs_disk_limit else "")
              + f"; timed part {wall / 60:.1f} min, load average "
              f"{os.getloadavg()[0]:.1f}")  # fmt: skip
        base = results["defaults"]
        for name, rows in results.items():
            tps = [float(x["tps"]) for x in rows]
            ratios = [t / float(b["tps"]) for t, b in zip(tps, base, strict=True)]

            def mean(key: str, rows: list[dict[str, float | str]] = rows) -> float:
                return statistics.fmean(float(x[key]) for x in rows)

            print(f"  {name:52s} median {statistics.median(tps):8,.0f} tps; per round vs "
                  f"defaults {', '.join(f'{x:.3f}' for x in ratios)}; hit {mean('hit'):.1f}%, "
                  f"temp {mean('temp_mb_per_tx'):.2f} MB/tx, WAL {mean('wal_per_tx'):,.0f} B/tx, "
                  f"WAL flushes {mean('wal_flushes_s'):.0f}/s, checkpoints "
                  f"{mean('checkpoints'):.1f}/run; waits (last round) "
                  f"{rows[-1]['waits']}")  # fmt: skip


if __name__ == "__main__":
    main()
