"""A backup under load: `pgrig run ENV --workload backup:... --during pgbench:tpcb -c 8 -T 60`.

Each repeat runs the load alone first (the baseline, unless --no-baseline), then the same load
again with the backup started when its warm-up ends (the load run's per-second hook). The load
runs are ordinary archived runs (tag during=<backup workload> or during=none); the backup run
records its own figures plus, in extra["during"], the load's TPS and latency, how much of the
load's measured window the backup covered, and the comparison engine's verdict of the loads
with the backup against the loads without (analysis/compare.py: one ratio with bounds; single
runs are "indicative", repeats give firm bounds).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from rich.console import Console

from pgrig import interrupts
from pgrig.archive.records import RunRecord
from pgrig.errors import PgrigError
from pgrig.load.backup import backup_run
from pgrig.load.core import runner
from pgrig.provision.state.environment import Environment
from pgrig.record.documents import DuringDoc
from pgrig.record.protocol import RunStore
from pgrig.request import RunRequest


@dataclass
class History:
    """The runs of earlier repeats, so the verdict uses every repeat so far."""

    baselines: list[RunRecord] = field(default_factory=list)
    loads: list[RunRecord] = field(default_factory=list)


@dataclass
class Result:
    backup: RunRecord
    load: RunRecord
    baseline: RunRecord | None


class _BackupStarter:
    """The load run's per-second hook: starts the backup in a thread once the warm-up is over;
    never stops the load (returns None)."""

    def __init__(self, run: backup_run.BackupRun, warmup_s: float) -> None:
        self.run = run
        self.warmup_s = warmup_s
        self.first: float | None = None
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def __call__(self, _p95: float | None) -> str | None:
        now = time.monotonic()
        if self.first is None:
            self.first = now - 1.0  # the hook is first asked one second into the run
        if self.thread is None and now - self.first >= self.warmup_s:
            self.start()
        return None

    def start(self) -> None:
        self.thread = threading.Thread(target=self._perform, name="pgrig-backup", daemon=True)
        self.thread.start()

    def _perform(self) -> None:
        try:
            self.run.perform()
        except BaseException as e:  # KeyboardInterrupt is the main thread's
            self.error = e

    def join(self, start_late: bool = True) -> None:
        """Wait for the backup; `start_late`: the load ended before its warm-up did, so back
        up now (not after an interrupted load)."""
        if self.thread is None and start_late:
            self.start()
        if self.thread is not None:
            interrupts.join(self.thread)


def execute(
    req: backup_run.BackupRequest,
    load: RunRequest,
    *,
    archive: RunStore,
    console: Console,
    baseline: bool,
    history: History,
) -> Result:
    if load.duration_s is None:
        raise PgrigError("--during needs the load's duration (-T SECONDS)")
    env = Environment.load(req.env_name)
    backup_run.prepare(env, req, console)  # before the loads: a first pgBackRest restarts
    base_rec = None
    if baseline:
        console.print(f"[dim]·[/dim] baseline: {load.workload} without a backup", highlight=False)
        base_rec = runner.execute(
            load.model_copy(update={"tags": {**load.tags, "during": "none"}}),
            archive=archive,
            console=console,
            live=False,
        )
        history.baselines.append(base_rec)
    console.print(f"[dim]·[/dim] {load.workload} during {req.workload}", highlight=False)
    run = backup_run.BackupRun(req, env, archive, console)
    starter = _BackupStarter(run, load.warmup_s)
    try:
        run.begin()
        load_rec = runner.execute(
            load.model_copy(update={"tags": {**load.tags, "during": req.workload}}),
            archive=archive,
            console=console,
            live=False,
            stop_if=starter,
        )
        starter.join()  # the backup always completes (or fails) and is archived
        history.loads.append(load_rec)
        return Result(_finish(run, starter, load_rec, history), load_rec, base_rec)
    except BaseException as stop:  # the load interrupted or failed: the backup's row ends too
        try:
            starter.join(start_late=False)  # a backup under way completes and is archived
        finally:
            run.end_early(stop)
        raise


def _finish(
    run: backup_run.BackupRun, starter: _BackupStarter, load_rec: RunRecord, history: History
) -> RunRecord:
    """The backup's record, with what the load it ran during measured."""
    assert run.rec is not None
    if starter.error is None and run.rec.status == "running":
        run.rec.status, run.rec.error = "failed", "the backup did not run"
    run.rec.extra["during"] = _during(load_rec, run, history)
    if load_rec.status != "ok" and run.rec.status == "ok":
        run.rec.add_warning("load_not_ok", f"the load run {load_rec.id} ended {load_rec.status}")
    return run.finish()


def _during(load: RunRecord, run: backup_run.BackupRun, history: History) -> DuringDoc:
    from pgrig.analysis import compare

    window = _window(load)
    overlap = None
    if window is not None and run.t1 > run.t0:
        overlap = max(0.0, min(window[1], run.t1) - max(window[0], run.t0))
    out: DuringDoc = {
        "load": {
            "id": load.id,
            "status": load.status,
            "workload": load.workload,
            "clients": load.clients,
            "threads": load.threads,
            "duration_s": load.duration_s,
            "tps": load.tps,
            "avg_ms": load.latency.avg,
            "p95_ms": load.latency.p95,
            "p99_ms": load.latency.p99,
        },
        "baseline_runs": [r.id for r in history.baselines],
        "load_runs": [r.id for r in history.loads],
        "backup_started_s": round(run.t0 - window[0], 3) if window else None,
        "overlap_s": round(overlap, 3) if overlap is not None else None,
        "covered_fraction": round(overlap / (window[1] - window[0]), 3)
        if overlap is not None and window and window[1] > window[0]
        else None,
    }
    if history.baselines:
        comparisons = {}
        for metric in ("tps", "latency.p95"):
            c = compare.compare_runs(history.baselines, history.loads, metric)
            comparisons[metric] = c.as_dict()
        out["comparison"] = comparisons
    return out


def _window(load: RunRecord) -> tuple[float, float] | None:
    """The load's measured window on the wall clock (epoch seconds)."""
    if load.started_at is None or load.measured_s is None:
        return None
    start = load.started_at.timestamp() + (load.warmup_s or 0.0)
    return start, start + load.measured_s


def during_study_run(request: RunRequest, *, archive: RunStore, console: Console) -> RunRecord:
    """A study's run with [run].backup: the load is the study's run (its TPS and latency are
    what the study compares); the backup is archived beside it, outside the study (tag
    study=NAME), with extra["during"] pointing at the load run."""
    assert request.backup_during is not None
    tags = {k: v for k, v in request.tags.items() if k not in ("point",)}
    req = backup_run.BackupRequest(
        env_name=request.env_name,
        what=request.backup_during,
        database=request.database,
        note=f"during {request.study}: {request.note or ''}".strip(),
        tags={**tags, "study": request.study or "", "during_point": request.study_point or ""},
        repeat=request.repeat,
    )
    result = execute(
        req, request, archive=archive, console=console, baseline=False, history=History()
    )
    return result.load
