"""Run a study: validate everything, then walk the plan run by run, resumably.

Each run is archived under the study with its point key and repeat number, so an interrupted
study resumes by counting the completed ("ok") runs per (point, repeat) in the archive: failed
and aborted runs are run again, nothing that succeeded is repeated.

The environment, its settings and the data are the backend's business (provisioning and
workloads); the order of events here is: on entering a point, make sure its environment runs
and holds the data, set the study's settings layer (restarting when a setting needs it), then
the point's actions; before each run, the `before_each` actions; then the run itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from rich.console import Console
from rich.markup import escape

from pgrig import format as fmt
from pgrig import interrupts
from pgrig.archive.protocol import RunStore
from pgrig.archive.records import RunRecord, StudyRecord
from pgrig.errors import Interrupted, NotFound, PgrigError, is_interruption
from pgrig.record.documents import StudyExtra
from pgrig.record.figures import headline_text, tpch_mode
from pgrig.request import RunRequest
from pgrig.study import plan as planning
from pgrig.study.plan import Plan, PlannedRun, Point
from pgrig.study.spec import DatasetSpec, EnvSpec, StudySpec


class Backend(Protocol):
    """What the study runner needs from provisioning, workloads and the run orchestrator."""

    def check_environment(self, env: EnvSpec) -> None:
        """Raise PgrigError if `env` cannot be used (version not installed, missing env)."""

    def validate_settings(
        self, env: EnvSpec, settings: dict[str, str], origins: dict[str, str]
    ) -> None:
        """Raise PgrigError naming the key path (from `origins`) of the first bad setting."""

    def ensure_environment(self, env: EnvSpec) -> bool:
        """Create `env` if needed and start it; True when this call started the server."""

    def apply_settings(self, env: EnvSpec, settings: dict[str, str]) -> None:
        """Make `settings` the study's layer on `env`, reloading or restarting as needed."""

    def prepare_dataset(self, env: EnvSpec, dataset: DatasetSpec, force: bool) -> bool:
        """Generate the data unless it is there already (or `force`); True when generated."""

    def action(self, env: EnvSpec, action: str, database: str | None) -> None:
        """restart, checkpoint, vacuum, analyze or prewarm."""

    def stop(self, env: EnvSpec) -> None:
        """Stop the server and put back the settings it had before the study."""

    def restore(self, env: EnvSpec) -> None:
        """Put back the settings a server had before the study (it keeps running)."""

    def execute(self, request: RunRequest, archive: RunStore, console: Console) -> RunRecord: ...


@dataclass
class StudyResult:
    name: str
    status: str  # done | interrupted | failed
    planned: int
    completed: int  # ok runs now in the archive for this plan
    ran: int  # runs made by this call
    failed: int  # runs made by this call that did not succeed
    records: list[RunRecord] = field(default_factory=list)
    error: str | None = None


class StudyInterrupted(Interrupted):
    """Ctrl-C during a study: its status is "interrupted" and `--resume` continues it."""

    def __init__(self, result: StudyResult):
        super().__init__(f"study {result.name} interrupted")
        self.result = result


def validate(study: StudySpec, backend: Backend, plan: Plan | None = None) -> Plan:
    """Everything that can be checked before the first run: environments and every setting."""
    plan = plan or planning.build(study)
    used = {p.env_key for p in plan.points}
    for key in used:
        backend.check_environment(study.environments[key])
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    for point in plan.points:
        layer = (point.env_key, tuple(sorted(point.settings.items())))
        if layer in seen:
            continue
        seen.add(layer)
        backend.validate_settings(
            study.environments[point.env_key], dict(point.settings), dict(point.origins)
        )
    check_clients = getattr(backend, "check_clients", None)  # what each run will refuse
    if check_clients is not None:
        checked: set[tuple[str, int, str]] = set()
        for planned in plan.runs:
            request = plan.run_request(planned)
            shape = (planned.point.key, request.clients, request.via)
            if shape not in checked:
                checked.add(shape)
                check_clients(
                    study.environments[planned.point.env_key], dict(planned.point.settings),
                    request.clients, request.via, f"point {planned.point.label!r}",
                )  # fmt: skip
    return plan


def completed_runs(runs: list[RunRecord]) -> set[tuple[str, int]]:
    """(point key, repeat) pairs that have a successful run."""
    return {(r.study_point or "", r.repeat) for r in runs if r.status == "ok"}


def run_study(
    study: StudySpec,
    *,
    archive: RunStore,
    backend: Backend | None = None,
    console: Console | None = None,
    resume: bool = False,
    clock: Callable[[], float] = time.monotonic,
) -> StudyResult:
    """Validate, then run every planned run not yet completed. Raises StudyInterrupted on
    Ctrl-C (after marking the study), PgrigError for invalid input (nothing is run)."""
    console = console or Console(stderr=True)
    backend = backend or default_backend()
    plan = validate(study, backend)
    record = _open_study(study, plan, archive, resume)
    try:
        begin = getattr(backend, "begin_study", None)  # it then holds its environments
        if begin is not None:
            begin(study.name, study.kind)
        try:
            return _run_planned(study, plan, record, archive, backend, console, resume, clock)
        finally:
            let_go = getattr(backend, "let_go", None)
            if let_go is not None:
                let_go()
    except KeyboardInterrupt:  # before its first run (a run's own is StudyInterrupted)
        archive.set_study_status(study.name, "interrupted")
        raise


def _run_planned(
    study: StudySpec,
    plan: Plan,
    record: StudyRecord,
    archive: RunStore,
    backend: Backend,
    console: Console,
    resume: bool,
    clock: Callable[[], float],
) -> StudyResult:
    done = completed_runs(archive.study_runs(study.name)) if resume else set()
    todo = [r for r in plan.runs if (r.point.key, r.repeat) not in done]
    result = StudyResult(study.name, "running", len(plan.runs), len(plan.runs) - len(todo), 0, 0)
    _announce(console, study, plan, todo, record)
    if not todo:
        archive.set_study_status(study.name, "done")
        result.status = "done"
        return result
    walker = _Walker(study, plan, archive, backend, console, clock, result)
    try:
        walker.walk(todo)
    except BaseException as e:
        with interrupts.cleaning_up():  # a second Ctrl-C must not cut the settings' restore
            walker.close(quiet=True)
            if not is_interruption(e):
                archive.set_study_status(study.name, "failed")
                raise
            rec = getattr(e, "record", None)  # a run's Interrupted: the orchestrator archived it
            if rec is not None:
                result.records.append(rec)
            archive.set_study_status(study.name, "interrupted")
        result.status = "interrupted"
        raise StudyInterrupted(result) from None
    walker.close()
    # Any run that did not succeed makes the study "failed"; --resume runs those again.
    status = "done" if result.completed >= result.planned else "failed"
    archive.set_study_status(study.name, status)
    result.status = status
    return result


def _open_study(study: StudySpec, plan: Plan, archive: RunStore, resume: bool) -> StudyRecord:
    try:
        existing = archive.get_study(study.name)
    except NotFound:
        existing = None
    if existing is not None:
        if not resume:
            raise PgrigError(
                f"study {study.name!r} already exists (status {existing.status}): "
                "add --resume to continue it, or --name to start a new one"
            )
        if existing.spec != study.source:
            raise PgrigError(
                f"study {study.name!r} was started from a different file: the plan would not "
                "match its runs; use --name to start a new study"
            )
        archive.set_study_status(study.name, "running")
        return existing
    extra = StudyExtra(
        points=len(plan.points),
        repeats=study.repeats,
        runs=len(plan.runs),
        base_dir=str(study.base_dir),
    )
    rec = StudyRecord(name=study.name, kind=study.kind, spec=study.source, extra=extra)
    return archive.create_study(rec)


def _announce(
    console: Console, study: StudySpec, plan: Plan, todo: list[PlannedRun], rec: StudyRecord
) -> None:
    total = len(plan.runs)
    eta = plan.estimated_seconds(todo)
    what = f"{len(plan.points)} points x {study.repeats} repeats = {total} runs"
    if len(todo) < total:
        what += f", {total - len(todo)} already done, {len(todo)} to go"
    console.print(
        f"study [bold]{study.name}[/bold] ({study.kind}): {what}"
        + (f", about {fmt.duration(eta)}" if eta else ""),
        highlight=False,
        soft_wrap=True,
    )


class _Walker:
    """Walks planned runs, entering points as needed; remembers what it started."""

    def __init__(
        self,
        study: StudySpec,
        plan: Plan,
        archive: RunStore,
        backend: Backend,
        console: Console,
        clock: Callable[[], float],
        result: StudyResult,
    ):
        self.study = study
        self.plan = plan
        self.archive = archive
        self.backend = backend
        self.console = console
        self.clock = clock
        self.result = result
        self.current: Point | None = None
        self.started: dict[str, EnvSpec] = {}  # env key -> spec, servers this study started
        self.touched: dict[str, EnvSpec] = {}  # every environment whose settings it changed
        self.data_ready: set[str] = set()
        self.t0 = clock()

    def walk(self, todo: list[PlannedRun]) -> None:
        db = self.study.dataset.database
        for i, planned in enumerate(todo):
            point = planned.point
            self._progress(i, todo, planned)
            if self.current is None or point.key != self.current.key:
                self._enter(point)
            env = self.study.environments[point.env_key]
            if self.study.dataset.reset == "run" and i > 0:
                self.backend.prepare_dataset(env, self.study.dataset, force=True)
            for action in point.run.before_each:
                self._action(env, action, db)
            request = self.plan.run_request(planned)
            rec = self.backend.execute(request, self.archive, self.console)
            self.result.records.append(rec)
            self.result.ran += 1
            if rec.status == "ok":
                self.result.completed += 1
            else:
                self.result.failed += 1
            self._report(rec)
            if rec.status != "ok" and self.study.on_failure == "stop":
                self.result.status = "failed"
                self.result.error = f"run {rec.id} {rec.status}: {rec.error or ''}".strip()
                self.console.print(
                    '[red]stopping the study[/red] (on_failure = "stop"): '
                    + escape(self.result.error),
                    highlight=False,
                    soft_wrap=True,
                )
                return

    def _enter(self, point: Point) -> None:
        env = self.study.environments[point.env_key]
        prev = self.current
        if prev is not None and prev.env_key != point.env_key and prev.env_key in self.started:
            self.backend.stop(self.study.environments[prev.env_key])  # one server at a time
            self.started.pop(prev.env_key)
            self.touched.pop(prev.env_key, None)
        if self.backend.ensure_environment(env):
            self.started[env.key] = env
        reset = self.study.dataset.reset
        if env.key not in self.data_ready or reset == "point":
            generated = self.backend.prepare_dataset(
                env, self.study.dataset, force=reset != "study" and self.result.ran > 0
            )
            if generated:
                self.console.print(f"  data ready in {env.name}", highlight=False, soft_wrap=True)
            self.data_ready.add(env.key)
        self.touched[env.key] = env
        self.backend.apply_settings(env, dict(point.settings))
        for action in point.actions:
            self._action(env, action, self.study.dataset.database)
        self.current = point

    def _action(self, env: EnvSpec, action: str, database: str | None) -> None:
        if action == "regenerate":
            self.backend.prepare_dataset(env, self.study.dataset, force=True)
        else:
            self.backend.action(env, action, database)

    def _progress(self, i: int, todo: list[PlannedRun], planned: PlannedRun) -> None:
        point = planned.point
        done_before = self.result.planned - len(todo)
        elapsed = self.clock() - self.t0
        if i > 0:
            eta: float | None = elapsed / i * (len(todo) - i)
        else:
            eta = self.plan.estimated_seconds(todo)
        self.console.print(
            f"[bold][{done_before + i + 1}/{self.result.planned}][/bold] "
            f"point {point.index + 1}/{len(self.plan.points)} "
            f"[cyan]{_clip(point.label)}[/cyan] repeat {planned.repeat + 1}/{self.study.repeats}"
            f"  elapsed {fmt.duration(elapsed)}"
            + (f"  ETA {fmt.duration(eta)}" if eta is not None else ""),
            highlight=False,
            soft_wrap=True,
            markup=True,
        )

    def _report(self, rec: RunRecord) -> None:
        if rec.status == "ok":
            tps = f"{rec.tps:,.1f} tps" if rec.tps is not None else "no tps"
            if tpch_mode(rec.workload) is not None:  # a TPC-H run's own figure, no TPS
                text, unit = headline_text(rec)
                tps = f"{text} {unit}"
            p95 = f", p95 {rec.latency.p95:.2f} ms" if rec.latency.p95 is not None else ""
            self.console.print(f"  run {rec.id}: {tps}{p95}", highlight=False, soft_wrap=True)
        else:
            self.console.print(
                f"  [red]run {rec.id} {rec.status}[/red]: {escape(rec.error or '')}",
                highlight=False,
                soft_wrap=True,
            )
        for w in rec.warnings():  # a busy host, ...: said as the run ends, not only in reports
            message = escape(str(w.get("message")))
            self.console.print(
                f"  [yellow]warning:[/yellow] {message}", highlight=False, soft_wrap=True
            )

    def close(self, quiet: bool = False) -> None:
        """Stop the servers this study started (never leave them running); servers that were
        running before keep running with their own settings back."""
        envs = dict(self.touched) | {k: e for k, e in self.started.items()}
        for key, env in envs.items():
            try:
                if key in self.started:
                    self.backend.stop(env)
                else:
                    self.backend.restore(env)
            except Exception as e:  # best effort; the study's outcome stands
                if not quiet:
                    self.console.print(
                        f"  could not stop or restore {env.name}: {escape(str(e))}",
                        highlight=False,
                        soft_wrap=True,
                    )
        self.started.clear()
        self.touched.clear()


def _clip(text: str, width: int = 60) -> str:
    return escape(text if len(text) <= width else text[: width - 1] + "…")


def default_backend() -> Backend:
    from pgrig.study.backend import ProvisionBackend

    return ProvisionBackend()
