"""Reference workloads where knobs matter on small machines: `pgrig tune ENV --preset NAME`.

A preset brings the whole question: the workload, its clients, the data (generated when the
environment's database lacks it), the search space for its class, trials, durations and the
confirmation and ablation repeats. Every part can still be overridden by its flag. The figures
behind each choice:

- read-heavy: pgbench select-only over scale 200 (about 3 GB, 23x the default 128 MB
  shared_buffers, well within RAM): every miss of a small shared_buffers is a copy from the OS
  page cache. The issue's measurement this week at scale 200 saw 13.8-14.4k TPS at 128 MB
  against 15.8-24.1k at 6 GB on 8 clients. Measured before choosing it (bench/preset_ceiling.py
  read-heavy --scale 200, 2026-11-28, 15 s runs, 3 rounds, busy machine): hit ratio 57% at
  128 MB and 100% at 6 GB; per round x1.195, 0.951, 1.207 (medians 5,392 against 6,039 TPS);
  the defaults wait on LWLock:BufferMapping and IO:DataFileRead where 6 GB waits on neither.
  (Scale 30, the first session's size, held 75% hits at 128 MB and gave x1.11 [0.98, 1.27].)
- mixed-reporting: tpcb-like weighted 9 against pgrig/workloads/reporting/reporting.sql
  weighted 1 (a window
  sort and a hash aggregate over pgbench_accounts, a hash join of pgbench_history). Measured
  with EXPLAIN ANALYZE at scale 10 on PostgreSQL 18: the sort spills ~21 MB to disk at
  work_mem 4 MB and at pgtune-oltp's ~20 MB; the aggregate (1M groups, ~41 MB) spills at both
  (5 batches at 20 MB with hash_mem_multiplier 2). Its ceiling, measured before a real run
  (bench/preset_ceiling.py mixed-reporting, 2026-11-28, 8 clients, 20 s runs, 3 rounds, busy
  machine): about 10 TPS at the defaults, the reports' sorts and hashes CPU-bound (92-99% of
  the wait samples on CPU); work_mem 256 MB removes every spill (6.6 MB of temp files per
  transaction to none) without a visible gain (per round x0.74-1.35 against the defaults),
  and 20 reports per run make the rounds spread x0.67-1.48. The spills go to the page cache,
  so on 2 cores they cost little; this preset has shown no decisive knob effect here.
- write-heavy-slow-disk: tpcb on an environment whose disk is limited (`pgrig env set ENV
  --disk-limit wiops=300`, cgroup blkio throttling): commits wait for WAL flushes, so WAL
  volume, commit grouping and checkpoint spreading decide. The preset refuses an environment
  without a disk limit, and says how to set one. Measured before choosing it
  (bench/preset_ceiling.py write-heavy-slow-disk, 2026-11-28, scale 10, 8 clients, 15 s runs,
  busy machine): about 110-120 WAL flushes/s at the limit in every durable configuration;
  the defaults 190-225 TPS, pgtune-oltp the same (it cuts WAL bytes, not flushes),
  commit_delay=1000 with commit_siblings=1 x1.31-1.35 in each round (more commits per flush),
  synchronous_commit=off (unsafe) x5-6.
- analytics: TPC-H's power test (`-w tpch:power`: RF1, the 22 queries, RF2) at scale factor 1,
  one session, objective Power@Size, the analytics space (memory per sort and hash, JIT and
  its thresholds, parallel query and its costs, planner I/O costs, shared_buffers), judged
  against the defaults and against PGTune's data-warehouse profile (pgtune-dw). A run lasts
  as long as its queries (no --duration). Its ceiling, measured first (bench/analytics_ceiling.py,
  2026-12-07, SF 1, PostgreSQL 18.6, 2 rounds plus one, loaded machine): no parallel workers
  x0.44-0.62 of the defaults' Power@Size, pgtune-dw x1.19-1.34 in each round, work_mem 256 MB
  (no spill left) x0.97-1.28, jit=off x0.94 (this build has no LLVM: JIT never runs).
- htap: CH-benCHmark (`-w chbench`) on 4 warehouses, the TPC-C mix on 4 clients with one
  analytic stream of the 22 CH queries in the same window, objective the transactions' NOPM;
  the analytic queries per hour are kept with every trial and shown beside it, never
  optimised (tune/objective.BESIDE). Judged against the defaults and PGTune's mixed profile
  (pgtune-mixed). Sized by reasoning, not yet by a measured ceiling (the machine was shared
  when it was built): HTAP_WAREHOUSES below says why 4; 60 s windows hold one to two cycles
  of the 22 queries at 2 warehouses here (docs/chbench.md), so a window's NOPM does not hang
  on which heavy query it overlapped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pgrig.errors import PgrigError
from pgrig.format import pgrig_command
from pgrig.tune import ablation, confirm

# shipped with the package: pgrig/workloads/reporting/
WORKLOADS_DIR = Path(__file__).resolve().parents[1] / "workloads" / "reporting"
REPORTING_SQL = "reporting.sql"
# CH-benCHmark's data of the htap preset: 4 warehouses (~460 MiB, 3.6x the default 128 MB
# shared_buffers, well within RAM), one TPC-C client per warehouse (no queueing on one
# warehouse's district rows) and an analytic stream: 5 busy sessions and pgbench on 2 cores
HTAP_WAREHOUSES = 4


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    workload: tuple[str, ...]
    # the data, generated when the database lacks it: pgbench's scale, TPC-H's scale factor
    # (scale_factor) or CH-benCHmark's warehouses (warehouses)
    scale: int | None
    clients: int
    threads: int
    trials: int
    duration: str | None  # None: a run to completion (TPC-H)
    warmup: str
    confirm_repeats: int
    space: str  # a workload class of tune/space.CLASS_KNOBS
    ablation_repeats: int = ablation.DEFAULT_REPEATS
    ablation_units: int = ablation.DEFAULT_MAX_UNITS
    needs_disk_limit: bool = False
    suggested_disk_limit: str = ""
    scale_factor: float | None = None
    warehouses: int | None = None  # TPC-C's or CH-benCHmark's data
    analytic_clients: int | None = None  # CH-benCHmark's analytic streams
    objective: str = "tps"
    # the profile the confirmation measures beside the defaults (tune/confirm.py)
    reference: str = confirm.PGTUNE_PROFILE

    def values(self) -> dict[str, Any]:
        """The tune options this preset fills (flag name -> value)."""
        return {
            "workload": list(self.workload),
            "scale": self.scale,
            "scale_factor": self.scale_factor,
            "warehouses": self.warehouses,
            "analytic_clients": self.analytic_clients,
            "objective": self.objective,
            "clients": self.clients,
            "threads": self.threads,
            "trials": self.trials,
            "duration": self.duration,
            "warmup": self.warmup,
            "confirm_repeats": self.confirm_repeats,
            "space": self.space,
            "ablation_repeats": self.ablation_repeats,
            "ablation_units": self.ablation_units,
        }


def reporting_script() -> Path:
    """workloads/reporting.sql of this checkout (shipped with the source)."""
    return WORKLOADS_DIR / REPORTING_SQL


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "read-heavy",
            "pgbench select-only over scale 200 (~3 GB, 23x the default shared_buffers)",
            ("pgbench:select-only",),
            scale=200,
            clients=8,
            threads=2,
            trials=5,
            duration="15s",
            warmup="5s",
            confirm_repeats=6,
            space="read",
            ablation_units=2,
        ),
        Preset(
            "mixed-reporting",
            "tpcb-like 9 : 1 a reporting script whose sorts and hashes spill at 4-20 MB "
            "work_mem, scale 10",
            ("pgbench:tpcb-like@9", f"{REPORTING_SQL}@1"),
            scale=10,
            clients=8,
            threads=2,
            trials=12,
            duration="30s",
            warmup="5s",
            confirm_repeats=6,
            space="mixed",
        ),
        Preset(
            "write-heavy-slow-disk",
            "pgbench tpcb at scale 10 on a disk limited with --disk-limit (wiops=300)",
            ("pgbench:tpcb",),
            scale=10,
            clients=8,
            threads=2,
            trials=8,
            duration="15s",
            warmup="5s",
            confirm_repeats=6,
            space="write",
            ablation_units=3,
            needs_disk_limit=True,
            suggested_disk_limit="wiops=300,riops=1000",
        ),
        Preset(
            "analytics",
            "TPC-H's power test at scale factor 1 (22 queries, one session), judged on "
            "Power@Size against the defaults and pgtune-dw",
            ("tpch:power",),
            scale=None,
            scale_factor=1.0,
            clients=1,
            threads=1,
            trials=8,
            duration=None,
            warmup="0",
            confirm_repeats=4,
            space="analytics",
            objective="power",
            reference="pgtune-dw",
            ablation_repeats=5,
            ablation_units=3,
        ),
        Preset(
            "htap",
            "CH-benCHmark on 4 warehouses: the TPC-C mix on 4 clients with one analytic stream "
            "of the 22 CH queries, judged on the transactions' NOPM (analytic queries per hour "
            "reported beside)",
            ("chbench",),
            scale=None,
            warehouses=HTAP_WAREHOUSES,
            analytic_clients=1,
            clients=4,
            threads=2,
            trials=8,
            duration="60s",
            warmup="10s",
            confirm_repeats=6,
            space="htap",
            objective="nopm",
            reference="pgtune-mixed",
            ablation_units=3,
        ),
    )
}


def get(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        listed = "; ".join(f"{p.name} ({p.description})" for p in PRESETS.values())
        raise PgrigError(f"--preset {name!r}: no such preset; the presets are: {listed}") from None


def resolve(name: str | None, given: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """The options of a tune: each given flag (not None) wins, then the preset's value, then
    the command's own default. A preset's workload names its shipped scripts by file name:
    they are resolved to workloads/ here."""
    preset = get(name).values() if name is not None else {}
    out = dict(defaults)
    out.update({k: v for k, v in preset.items() if k in out or k in given})
    out.update({k: v for k, v in given.items() if v is not None})
    if name is not None and given.get("workload") is None:
        out["workload"] = [_shipped(w) for w in preset["workload"]]
    return out


def _shipped(item: str) -> str:
    """'reporting.sql@1' -> '<checkout>/workloads/reporting.sql@1'; builtins unchanged."""
    head, _, weight = item.partition("@")
    if not head.endswith(".sql"):
        return item
    path = WORKLOADS_DIR / head
    return f"{path}@{weight}" if weight else str(path)


def check_disk_limit(preset: Preset, env_name: str, disk_limit: dict[str, int] | None) -> None:
    """A preset on a limited disk refuses an environment without a limit (nothing made)."""
    if preset.needs_disk_limit and not disk_limit:
        cmd = pgrig_command("env", "set", env_name, "--disk-limit", preset.suggested_disk_limit)
        raise PgrigError(
            f"--preset {preset.name}: environment {env_name} has no disk limit; set one first, "
            f"e.g. `{cmd}` (cgroup block I/O throttling), then run the preset again"
        )
