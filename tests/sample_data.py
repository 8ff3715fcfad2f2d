"""Synthetic but realistic archive content for the web UI's tests, benchmark and screenshots.

Records go through the real Archive API (begin_run / finish_run, create_study), so what the
pages read is exactly what a real run would have stored; only the numbers are made up.
"""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta
from typing import Any

from pgrig.archive.records import LatencyStats, RunRecord, ScriptResult, StudyRecord

BASE_TIME = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)

_SETTINGS = {
    # name: (default setting, unit, vartype)
    "shared_buffers": ("16384", "8kB", "integer"),
    "work_mem": ("4096", "kB", "integer"),
    "maintenance_work_mem": ("65536", "kB", "integer"),
    "effective_cache_size": ("524288", "8kB", "integer"),
    "max_wal_size": ("1024", "MB", "integer"),
    "wal_buffers": ("-1", "8kB", "integer"),
    "random_page_cost": ("4", None, "real"),
    "synchronous_commit": ("on", None, "enum"),
    "checkpoint_timeout": ("300", "s", "integer"),
    "max_connections": ("100", None, "integer"),
    "autovacuum": ("on", None, "bool"),
    "fsync": ("on", None, "bool"),
}


def settings_snapshot(changed: dict[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """A pg_settings-like snapshot: defaults, with `changed` values from the configuration file."""
    out: dict[str, dict[str, Any]] = {}
    for name, (boot, unit, vartype) in _SETTINGS.items():
        value = (changed or {}).get(name, boot)
        out[name] = {
            "setting": value,
            "unit": unit,
            "boot_val": boot,
            "reset_val": value,
            "source": "configuration file" if value != boot else "default",
            "context": "postmaster",
            "vartype": vartype,
        }
    out["max_connections"]["source"] = "configuration file"  # set by initdb, equal to default
    return out


def host_facts(cpus: int = 8) -> dict[str, Any]:
    return {
        "hostname": "bench-01",
        "cpu_model": "AMD EPYC 7B13",
        "cpu_logical": cpus,
        "cpus": cpus,
        "ram_bytes": 32 * 2**30,
        "kernel": "6.1.0-18-amd64",
        "os_release": "Debian GNU/Linux 12 (bookworm)",
        "cpu_governor": "performance",
        "thp_enabled": "madvise",
        "load_avg": [0.4, 0.3, 0.2],
    }


def series_for(
    rng: random.Random, tps: float, lat_ms: float, duration: int, warmup: int, drift: float = 0.0
) -> dict[str, dict[str, list[float | None]]]:
    """Per-second pgbench, OS and PostgreSQL series; t < 0 is the warm-up (ramping up)."""
    t = list(range(-warmup, duration))
    level = []
    for x in t:
        ramp = 0.55 + 0.45 * (1 - math.exp((x + warmup) / -3.0)) if x < 0 else 1.0
        level.append(ramp * (1 + drift * x / max(1, duration)) * (1 + rng.gauss(0, 0.03)))
    tps_s = [round(tps * v, 1) for v in level]
    lat = [lat_ms / max(v, 0.2) for v in level]
    pgbench = {
        "t": [float(x) for x in t],
        "tps": tps_s,
        "lat_avg": [round(v, 3) for v in lat],
        "p50": [round(v * 0.9, 3) for v in lat],
        "p95": [round(v * 1.9 + abs(rng.gauss(0, 0.2)), 3) for v in lat],
        "p99": [round(v * 3.1 + abs(rng.gauss(0, 0.5)), 3) for v in lat],
        "failed": [0.0] * len(t),
    }
    busy = [min(95.0, 20 + 60 * v + rng.gauss(0, 2)) for v in level]
    os_ = {
        "t": [float(x) for x in t],
        "cpu_user": [round(b * 0.7, 2) for b in busy],
        "cpu_system": [round(b * 0.25, 2) for b in busy],
        "cpu_iowait": [round(abs(rng.gauss(2, 1)), 2) for _ in t],
        "cpu_idle": [round(max(0.0, 100 - b * 0.95 - 2), 2) for b in busy],
        "cpu_steal": [0.0] * len(t),
        "mem_used_bytes": [float(6 * 2**30 + i * 2**22) for i in range(len(t))],
        "mem_cached_bytes": [float(12 * 2**30) for _ in t],
        "disk_read_bytes": [abs(rng.gauss(2e6, 5e5)) for _ in t],
        "disk_write_bytes": [abs(rng.gauss(40e6, 8e6)) * v for v in level],
        "disk_read_iops": [abs(rng.gauss(200, 40)) for _ in t],
        "disk_write_iops": [abs(rng.gauss(2500, 300)) * v for v in level],
        "ctx_switches": [abs(rng.gauss(90000, 9000)) * v for v in level],
        "procs_running": [float(rng.randint(2, 10)) for _ in t],
        "procs_blocked": [0.0] * len(t),
        "proc_postgres_cpu": [round(b * 5, 1) for b in busy],
        "proc_pgbench_cpu": [round(b * 0.8, 1) for b in busy],
    }
    pg = {
        "t": [float(x) for x in t],
        "commits": tps_s,
        "rollbacks": [0.0] * len(t),
        "blks_hit": [v * 12 for v in tps_s],
        "blks_read": [abs(rng.gauss(150, 40)) for _ in t],
        "hit_ratio": [round(99 - abs(rng.gauss(0.4, 0.2)), 3) for _ in t],
        "tup_inserted": tps_s,
        "tup_updated": [v * 3 for v in tps_s],
        "wal_bytes": [v * 620 for v in tps_s],
        "temp_bytes": [0.0] * len(t),
        "checkpoints_timed": [0.0] * len(t),
        "checkpoints_req": [1.0 if i % 40 == 39 else 0.0 for i in range(len(t))],
        "backends": [10.0] * len(t),
        "active_backends": [float(rng.randint(4, 9)) for _ in t],
        "wait.Lock:transactionid": [float(rng.randint(0, 3)) for _ in t],
        "wait.LWLock:WALWrite": [float(rng.randint(0, 2)) for _ in t],
        "wait.CPU": [float(rng.randint(2, 6)) for _ in t],
        "deadlocks": [0.0] * len(t),
    }
    return {"pgbench": pgbench, "os": os_, "pg": pg}


def make_run(
    i: int,
    rng: random.Random,
    *,
    with_details: bool = True,
    tps: float | None = None,
    settings: dict[str, str] | None = None,
    clients: int | None = None,
    via: str = "direct",
    note: str | None = None,
    study: str | None = None,
    study_point: str | None = None,
    repeat: int = 0,
    duration: int = 60,
    warmup: int = 10,
    tpcc: bool | None = None,
    status: str | None = None,
) -> RunRecord:
    """One finished run. with_details=False leaves out series, settings and scripts (fast fill)."""
    tpcc = (i % 7 == 3) if tpcc is None else tpcc
    clients = clients or rng.choice((1, 8, 16, 32, 64, 100))
    major = rng.choice((15, 16, 17, 18))
    status = status or ("ok" if i % 23 else rng.choice(("failed", "aborted")))
    tps = tps or rng.uniform(800, 9000)
    lat = 1000.0 * clients / tps
    rec = RunRecord(
        env_name=rng.choice(("lab", "pg15", "pg18")),
        workload="tpcc" if tpcc else rng.choice(("pgbench:tpcb-like", "pgbench:select-only")),
        clients=clients,
        threads=min(clients, 4),
        status=status,
        error=None if status == "ok" else "pgbench exited with code 2: connection lost",
        started_at=BASE_TIME + timedelta(minutes=3 * i),
        ended_at=BASE_TIME + timedelta(minutes=3 * i, seconds=duration + warmup + 3),
        study=study,
        study_point=study_point,
        repeat=repeat,
        server_version=f"{major}.{rng.randint(1, 9)}",
        server_major=major,
        pgbench_version=f"{major}.2",
        database="bench",
        scenario="tpcc" if tpcc else "pgbench",
        scale=rng.choice((10, 50, 100)),
        db_size_bytes=rng.choice((160, 750, 1500)) * 2**20,
        via=via,
        duration_s=float(duration),
        warmup_s=float(warmup),
        command=f"pgbench -c {clients} -j {min(clients, 4)} -T {duration + warmup} -P 1 "
        "--log --log-prefix=/tmp/pgrig/pgbench_log bench",
        note=note
        if note is not None
        else rng.choice(("", "baseline", "after VACUUM", "bigger WAL")),
        owner="alice",
        tags={"hw": "c5.2xlarge"} if i % 3 == 0 else {},
    )
    if status == "ok":
        rec.measured_s = float(duration)
        rec.tps = tps
        rec.transactions = int(tps * duration)
        rec.failed = 0
        rec.latency = LatencyStats(
            lat, lat * 0.4, lat * 0.9, lat * 1.6, lat * 1.9, lat * 3.1, lat * 5.0, lat * 9.0
        )
        rec.cpu_user, rec.cpu_system, rec.cpu_iowait, rec.cpu_idle = 55.0, 20.0, 2.0, 23.0
        rec.hit_ratio = 99.2
        if tpcc:
            rec.nopm = tps * 60 * 0.45
            rec.tpm = tps * 60
    if with_details:
        rec.host = host_facts()
        rec.settings = settings_snapshot(settings)
        rec.settings_layers = {"profile": {"max_connections": "100"}, "run": dict(settings or {})}
        if status == "ok":
            rec.series = series_for(rng, tps, lat, duration, warmup)
            rec.scripts = [
                ScriptResult(
                    0,
                    "tpcb-like",
                    1,
                    rec.transactions or 0,
                    0,
                    0,
                    0,
                    0,
                    tps,
                    LatencyStats(
                        lat,
                        lat * 0.4,
                        lat * 0.9,
                        lat * 1.6,
                        lat * 1.9,
                        lat * 3.1,
                        lat * 5.0,
                        lat * 9.0,
                    ),
                )
            ]
    else:
        rec.host = {"hostname": "bench-01", "cpus": 8}
    return rec


def store(archive: Any, rec: RunRecord) -> int:
    """Through the same two calls the runner uses (begin_run marks the record "running")."""
    status = rec.status
    archive.begin_run(rec)
    rec.status = status
    archive.finish_run(rec)
    assert rec.id is not None
    return rec.id


def fill(archive: Any, n: int, seed: int = 1, with_details: bool = False) -> list[int]:
    rng = random.Random(seed)
    return [store(archive, make_run(i, rng, with_details=with_details)) for i in range(n)]


ITERATION_STUDY = """\
[study]
name = "{name}"
description = "Step-by-step tuning of PostgreSQL 15 for pgbench (seed 000)"
repeats = 3

[environment]
name = "lab"
version = "15"

[dataset]
scenario = "pgbench"
scale = 100

[run]
workload = "pgbench:tpcb-like"
clients = 20
threads = 2
duration = "60s"
warmup = "10s"

[[iterations]]
name = "defaults"

[[iterations]]
name = "shared_buffers 2GB"
settings = {{ shared_buffers = "2GB", effective_cache_size = "6GB" }}

[[iterations]]
name = "WAL"
settings = {{ max_wal_size = "4GB", wal_buffers = "16MB" }}

[[iterations]]
name = "unsafe"
note = "never in production"
settings = {{ fsync = "off", synchronous_commit = "off" }}
"""

SWEEP_STUDY = """\
[study]
name = "{name}"
description = "Direct vs pgbouncer (seed 003)"
repeats = 2

[environment]
name = "lab"

[dataset]
scenario = "pgbench"
scale = 10

[run]
workload = "pgbench:select-only"
duration = "20s"
warmup = "5s"

[sweep]
clients = [50, 100, 200, 400]
via = ["direct", "pgbouncer"]
x = "clients"
"""


def iteration_study(archive: Any, name: str = "tune-pg15", seed: int = 7) -> list[int]:
    """A 4-iteration study, 3 repeats each, TPS growing the way seed 000's did."""
    rng = random.Random(seed)
    _create_study(archive, name, "iterations", ITERATION_STUDY)
    levels = [
        ("iter-00", {}, 1100),
        ("iter-01", {"shared_buffers": "262144"}, 1450),
        ("iter-02", {"shared_buffers": "262144", "max_wal_size": "4096"}, 1480),
        (
            "iter-03",
            {
                "shared_buffers": "262144",
                "max_wal_size": "4096",
                "fsync": "off",
                "synchronous_commit": "off",
            },
            3050,
        ),
    ]
    ids = []
    for k, (point, settings, tps) in enumerate(levels):
        ids += _repeats(archive, rng, name, point, 3, 100 + k * 3, tps, duration=30,
                        settings=settings, clients=20)  # fmt: skip
    return ids


def sweep_study(archive: Any, name: str = "pooler-sweep", seed: int = 9) -> list[int]:
    """clients × via, 2 repeats: pgbouncer flattens out as its single thread saturates."""
    rng = random.Random(seed)
    _create_study(archive, name, "sweep", SWEEP_STUDY)
    ids = []
    for clients in (50, 100, 200, 400):
        for via in ("direct", "pgbouncer"):
            base = 30000 * (1 - math.exp(-clients / 120))
            tps = base if via == "direct" else min(base, 14000) * 0.93
            point = f"clients={clients},via={via}"
            ids += _repeats(archive, rng, name, point, 2, 200 + clients, tps, duration=20,
                            clients=clients, via=via)  # fmt: skip
    return ids


def _create_study(archive: Any, name: str, kind: str, spec_template: str) -> None:
    spec = spec_template.format(name=name)
    archive.create_study(StudyRecord(name=name, kind=kind, spec=spec, status="done"))


def _repeats(
    archive: Any, rng: random.Random, study: str, point: str, repeats: int, first_id: int,
    tps: float, duration: int, **kwargs: Any,
) -> list[int]:  # fmt: skip
    """`repeats` ok runs of one study point, ids from first_id, TPS within 3% of `tps`; the
    repeats of a point share its workload, server and data (as a study's do)."""
    recs = [
        make_run(first_id + rep, rng, tps=tps * rng.uniform(0.97, 1.03), study=study,
                 study_point=point, repeat=rep, note="", tpcc=False, duration=duration,
                 warmup=5, status="ok", **kwargs)
        for rep in range(repeats)
    ]  # fmt: skip
    same = ("env_name", "workload", "server_version", "server_major", "pgbench_version", "scale")
    for rec in recs[1:]:
        for attr in same:
            setattr(rec, attr, getattr(recs[0], attr))
    return [store(archive, rec) for rec in recs]
