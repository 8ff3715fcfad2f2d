"""Run a tuning study: baseline, Optuna trials, confirmation; resumable, always restoring.

Order of events:
  restore what an earlier killed study may have left -> check the space against the server ->
  open (or, with resume, reopen) the pgrig study and the Optuna study -> baseline run with the
  environment's own settings -> trials (TPE asks, the settings become the environment layer,
  one archived run, the guardrails judge, Optuna is told) until N trials or the budget ->
  confirmation (interleaved repeats, confirm.py) -> importances -> the environment's own
  settings back (also after Ctrl-C and SIGTERM).

The environment layer is changed through the study backend (study/backend.py), which keeps the
environment's own settings in <home>/studies/<env>.settings.json until they are put back: after
a kill -9, the next `pgrig tune ENV ...` (or `pgrig tune ENV --restore`) puts them back first.
Trials are points "trial-NNN" of the pgrig study; the baseline is "baseline"; confirmation runs
are "confirm-<config>" with their repeat number. The Optuna study lives in a journal file next
to the archive (journal_path), so `--resume` continues where a run stopped: a trial that was
running when interrupted is marked failed in Optuna and does not count.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rich.console import Console
from rich.markup import escape

from pgrig import format, interrupts, paths
from pgrig.analysis.compare import changed_under_run
from pgrig.archive.protocol import RunStore
from pgrig.archive.records import RunRecord, StudyRecord
from pgrig.errors import Interrupted, NotFound, PgrigError, first_line, is_interruption
from pgrig.format import pgrig_command
from pgrig.record.documents import DISK_LIMIT_CHANGE, AblationDoc, BestTrial, TrialDoc
from pgrig.request import RunRequest
from pgrig.study.backend import ProvisionBackend
from pgrig.study.runner import Backend as StudyBackend
from pgrig.study.runner import completed_runs
from pgrig.study.spec import DatasetSpec, EnvSpec
from pgrig.tune import ablation, confirm
from pgrig.tune.guardrails import Guardrails
from pgrig.tune.importance import knob_importances
from pgrig.tune.objective import Objective
from pgrig.tune.space import RESTART_GROUP, Param, Space

if TYPE_CHECKING:
    import optuna

    from pgrig.load.core.run_steps import StopIf

KIND = "tune"
BASELINE_POINT = "baseline"


@dataclass(frozen=True)
class TunePlan:
    """A tuning study to run: the request (request.TuneRequest) resolved against its
    environment by tune/request.py (the load as a run request, the space checked against the
    server, the reference profile's settings: pgtune-oltp's, or the preset's)."""

    name: str
    load: RunRequest  # the run of every trial (env, workload, clients, duration, ...)
    objective: Objective
    space: Space  # already checked against the server
    trials: int
    budget_s: float | None = None  # of the search; the confirmation comes on top
    confirm_repeats: int = confirm.DEFAULT_REPEATS
    allow_unsafe: bool = False
    pgtune_settings: dict[str, str] = field(default_factory=dict)  # the reference profile's
    reference: str = confirm.PGTUNE_PROFILE  # the profile the confirmation measures beside
    threshold: float = 0.02
    seed: int = 0
    # the ablation after the confirmation (tune/ablation.py): rounds (0: none; the CLI's
    # default is ablation.DEFAULT_REPEATS), most units taken back one by one
    ablation_repeats: int = 0
    ablation_max_units: int = ablation.DEFAULT_MAX_UNITS
    # the search's first trial (Optuna parameters: the reference's point in the space,
    # space.warm_start), so the search begins where the rule of thumb ends
    warm_start: dict[str, Param] = field(default_factory=dict)
    dataset: DatasetSpec | None = None  # data to generate when the database lacks it

    def spec_text(self) -> str:
        """What defines the search: a resumed study must be asked the same question."""
        return json.dumps(
            {
                "kind": KIND,
                "environment": self.load.env_name,
                "run": self.load.model_dump(mode="json", exclude={"scripts"}),
                "objective": self.objective.name,
                "space": self.space.as_dicts(),
                "allow_unsafe": self.allow_unsafe,
            },
            indent=1,
            sort_keys=True,
        )


@dataclass
class TuneResult:
    name: str
    status: str  # done | interrupted | failed
    trials_done: int = 0
    best: BestTrial | None = None
    error: str | None = None


class TuneInterrupted(Interrupted):
    """Ctrl-C or SIGTERM during tuning: the settings are restored, the study "interrupted"."""

    def __init__(self, result: TuneResult):
        super().__init__(f"tuning study {result.name} interrupted")
        self.result = result


def journal_path(archive_url: str, name: str) -> Path:
    """The Optuna journal: next to an SQLite archive, else in the pgrig home."""
    base = paths.home()
    if archive_url.startswith("sqlite:///"):
        base = Path(archive_url.removeprefix("sqlite:///")).parent
    return base / "tune" / f"{name}.optuna.log"


def env_spec(env_name: str) -> EnvSpec:
    return EnvSpec(key="main", name=env_name, create=False, path="ENV")


def restore_leftovers(env_name: str, backend: Backend | None = None) -> bool:
    """Put back an environment's own settings if a killed study or tune left them changed."""
    from pgrig.study.backend import settings_saved

    if not settings_saved(env_name):
        return False
    (backend or TuneBackend()).restore(env_spec(env_name))
    return True


def restore_now(env_name: str) -> str | None:
    """`pgrig tune ENV --restore`: while no study holds ENV (EnvBusy names the one that does),
    put back its own settings; returns who had left them changed (None: nothing to do)."""
    from pgrig.provision import study_layer

    backend = TuneBackend()
    backend.hold(env_name)
    try:
        if not study_layer.saved(env_name):
            return None
        who = study_layer.describe_owner(env_name)
        restore_leftovers(env_name, backend)
        return who
    finally:
        backend.let_go()


class Backend(StudyBackend, Protocol):
    """The study backend, whose runs may be stopped early by a guardrail."""

    def execute(
        self,
        request: RunRequest,
        archive: RunStore,
        console: Console,
        stop_if: StopIf | None = None,
    ) -> RunRecord: ...


class TuneBackend(ProvisionBackend):
    """The study backend, with runs that print no live view (the tune shows its own)."""

    def execute(
        self,
        request: RunRequest,
        archive: RunStore,
        console: Console,
        stop_if: StopIf | None = None,
    ) -> RunRecord:
        from pgrig.load.core.runner import execute

        return execute(request, archive=archive, console=console, live=False, stop_if=stop_if)


def run_tune(
    req: TunePlan,
    *,
    archive: RunStore,
    resume: bool = False,
    backend: Backend | None = None,
    console: Console | None = None,
    clock: Callable[[], float] = time.monotonic,
    on_trial: Callable[[int, int, str], None] | None = None,
) -> TuneResult:
    """The whole study; raises TuneInterrupted on Ctrl-C/SIGTERM (settings restored first)."""
    console = console or Console(stderr=True)
    backend = backend or TuneBackend(console)
    _hold(backend, req.name, req.load.env_name)  # the whole tune: no run slips in between
    try:
        return _run_held(req, archive, resume, backend, console, clock, on_trial)
    finally:
        let_go = getattr(backend, "let_go", None)
        if let_go is not None:
            let_go()


def _run_held(
    req: TunePlan,
    archive: RunStore,
    resume: bool,
    backend: Backend,
    console: Console,
    clock: Callable[[], float],
    on_trial: Callable[[int, int, str], None] | None,
) -> TuneResult:
    env = env_spec(req.load.env_name)
    if restore_leftovers(env.name, backend):
        console.print(
            f"{env.name}: put back its own settings, left changed by a study that was killed",
            highlight=False,
        )
    created = _open_study(req, archive, resume)
    try:
        return _tune(req, archive, backend, console, clock, on_trial, env, created)
    except KeyboardInterrupt:  # before the first trial (later ones end as TuneInterrupted)
        archive.set_study_status(req.name, "interrupted")
        raise


def _drop_torn_tail(journal: Path) -> int:
    """Optuna reads a journal up to its last whole line, then appends after a torn one (kill -9
    mid-write), which makes both unreadable: the torn bytes go first; returns how many."""
    try:
        data = journal.read_bytes()
    except FileNotFoundError:
        return 0
    if not data or data.endswith(b"\n"):
        return 0
    keep = data.rfind(b"\n") + 1
    with open(journal, "r+b") as f:
        f.truncate(keep)
    return len(data) - keep


def _tune(
    req: TunePlan,
    archive: RunStore,
    backend: Backend,
    console: Console,
    clock: Callable[[], float],
    on_trial: Callable[[int, int, str], None] | None,
    env: EnvSpec,
    created: bool,
) -> TuneResult:
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    journal = journal_path(archive.url, req.name)
    journal.parent.mkdir(parents=True, exist_ok=True)
    if created:  # a journal without its pgrig study is a leftover of a study that never ran
        journal.unlink(missing_ok=True)
    elif torn := _drop_torn_tail(journal):
        console.print(
            f"note: the search journal's last line was torn ({torn} bytes: a write killed "
            "midway, never done): dropped",
            highlight=False,
        )
    try:
        study = optuna.create_study(
            study_name=req.name,
            storage=JournalStorage(JournalFileBackend(str(journal))),
            direction=req.objective.direction,
            sampler=optuna.samplers.TPESampler(
                seed=req.seed, n_startup_trials=max(3, min(10, req.trials // 2))
            ),
            load_if_exists=not created,  # reopened only with --resume (_open_study)
        )
        study.get_trials(deepcopy=False)  # the journal is read lazily: read it whole here
    except ValueError as e:  # a line torn or edited (JSONDecodeError): nothing was run yet
        raise PgrigError(
            f"study {req.name!r}: its search journal {journal} cannot be read ({e}): its "
            "trials cannot be resumed; its runs stay archived: start a new study (--name)"
        ) from None
    archive.update_study_extra(
        req.name,
        {
            "journal": str(journal),
            "space": req.space.as_dicts(),
            "notes": req.space.notes,
            "objective": req.objective.name,
            "trials_planned": req.trials,
            # baseline, trials (pruned ones are runs too), the confirmation at most, and the
            # ablation once planned
            "runs": planned_runs(req, archive.get_study(req.name).extra.get("ablation")),
            "confirm_looks": [
                {"rounds": look.rounds, "misrate": look.misrate}
                for look in confirm.looks(req.confirm_repeats)
            ],
            "confirm_repeats": req.confirm_repeats,
            "ablation_repeats": req.ablation_repeats,
            "threshold": req.threshold,
            "pgtune_settings": req.pgtune_settings,
            "reference_profile": req.reference,
        },
    )
    walker = _Tuner(req, archive, backend, console, clock, study, on_trial)
    started = False
    try:
        # SIGTERM/SIGHUP arrive as KeyboardInterrupt (cli/app.py installs that for every command)
        started = backend.ensure_environment(env)
        if req.dataset is not None:
            # where an interruption now stops it: said first on every surface (unfinished)
            archive.update_study_extra(
                req.name, {"phase": "data generation", "dataset": _dataset_text(req.dataset)}
            )
            backend.prepare_dataset(env, req.dataset, False)
        walker.run()
    except BaseException as e:
        interrupted = is_interruption(e)
        with interrupts.cleaning_up():  # a second Ctrl-C must not leave the server stopped
            _close(backend, env, started, console)
            walker.save()
            status = "interrupted" if interrupted else "failed"
            if created and not interrupted and archive.delete_empty_study(req.name):
                raise  # nothing ran: no study left behind, the corrected command starts afresh
            if not interrupted:  # why it stopped, on every surface that says it failed
                archive.update_study_extra(req.name, {"error": first_line(e)})
            archive.set_study_status(req.name, status)
        if interrupted:
            raise TuneInterrupted(TuneResult(req.name, status, walker.done())) from None
        raise
    _close(backend, env, started, console)
    walker.save()
    best = walker.best()
    status = "done" if best is not None and walker.confirmed() else "failed"
    archive.set_study_status(req.name, status)
    error = None if best is not None else no_trial_completed(walker.trials())
    return TuneResult(req.name, status, walker.done(), best, error)


def _hold(backend: Backend, name: str, env_name: str) -> None:
    """Name the tune to the backend and hold its environment (fakes in tests may not)."""
    begin = getattr(backend, "begin_study", None)
    if begin is not None:
        begin(name, KIND)
    hold = getattr(backend, "hold", None)
    if hold is not None:
        hold(env_name)


def _close(backend: Backend, env: EnvSpec, started: bool, console: Console) -> None:
    """The environment's own settings back; a server the study started is stopped again."""
    try:
        if started:
            backend.stop(env)
        else:
            backend.restore(env)
        console.print(f"  {env.name}: its own settings are back", highlight=False)
    except (PgrigError, OSError) as e:
        console.print(
            f"[red]could not restore {escape(env.name)}[/red]: {escape(str(e))}; "
            f"`{pgrig_command('tune', env.name, '--restore')}` tries again",
            highlight=False,
            soft_wrap=True,
        )


def _open_study(req: TunePlan, archive: RunStore, resume: bool) -> bool:
    """Create the study (True), or reopen it with `resume` (False)."""
    try:
        existing = archive.get_study(req.name)
    except NotFound:
        existing = None
    if existing is None and resume:
        raise PgrigError(
            f"--resume: there is no study {req.name!r} to resume (`pgrig study list` shows "
            "the archive's); without --resume it starts as a new one"
        )
    if existing is None:
        archive.create_study(StudyRecord(name=req.name, kind=KIND, spec=req.spec_text()))
        return True
    if not resume:
        raise PgrigError(
            f"study {req.name!r} already exists (status {existing.status}): add --resume to "
            "continue it, or --name to start a new one"
        )
    asked = req.spec_text()
    differs = None if existing.kind != KIND else _differences(existing.spec, asked)
    if differs != []:  # another kind, another question, or a spec that cannot be read
        said = f" ({'; '.join(differs[:4])})" if differs else ""
        raise PgrigError(
            f"--resume: study {req.name!r} was started with another environment, load, "
            f"objective or space{said}; resume it as it was started, or use --name to start "
            "a new one"
        )
    archive.set_study_status(req.name, "running")
    return False


def planned_runs(req: TunePlan, ablation_plan: AblationDoc | None) -> int:
    """The runs a study plans: its baseline, its trials (pruned ones are runs too), its
    confirmation at most, and its ablation once planned (`study list`'s "planned")."""
    runs = 1 + req.trials + len(confirm.plan(req.confirm_repeats, req.name, req.reference))
    if ablation_plan:
        configs = list(ablation_plan.get("configs") or {})
        runs += len(ablation.plan(configs, int(ablation_plan.get("repeats") or 0), req.name))
    return runs


_UNSET = object()  # a key one side of a comparison does not have


def _differences(stored: str, asked: str) -> list[str] | None:
    """What a resume asks that the study was not started with ("run.clients: 2, now 4"; []:
    nothing, None: a spec that cannot be compared). A load key a later pgrig added (a new
    RunRequest field) at its default asks nothing new: without this, every study started
    before an upgrade was refused as "started with another ... load"."""
    if stored == asked:
        return []
    try:
        old, new = json.loads(stored), json.loads(asked)
    except ValueError:
        return None
    if not isinstance(old, dict) or not isinstance(new, dict):
        return None
    old_run, new_run = old.get("run"), new.get("run")
    if isinstance(old_run, dict) and isinstance(new_run, dict):
        fields = RunRequest.model_fields
        new["run"] = {
            k: v for k, v in new_run.items()
            if k in old_run or k not in fields
            or v != fields[k].get_default(call_default_factory=True)
        }  # fmt: skip

    def shown(v: object) -> str:
        return "unset" if v is _UNSET else json.dumps(v)

    out: list[str] = []
    for key in sorted(old.keys() | new.keys()):
        a, b = old.get(key, _UNSET), new.get(key, _UNSET)
        if key == "run" and isinstance(a, dict) and isinstance(b, dict):
            out += [
                f"run.{k}: {shown(a.get(k, _UNSET))}, now {shown(b.get(k, _UNSET))}"
                for k in sorted(a.keys() | b.keys())
                if a.get(k, _UNSET) != b.get(k, _UNSET)
            ]
        elif a != b:
            out.append(
                f"{key}: changed" if key == "space" else f"{key}: {shown(a)}, now {shown(b)}"
            )
    return out


class _Tuner:
    """The phases of one study, with what they found (saved to the study's extra)."""

    def __init__(
        self,
        req: TunePlan,
        archive: RunStore,
        backend: Backend,
        console: Console,
        clock: Callable[[], float],
        study: optuna.Study,
        on_trial: Callable[[int, int, str], None] | None,
    ) -> None:
        self.req, self.archive, self.backend, self.console = req, archive, backend, console
        self.clock, self.study, self.on_trial = clock, study, on_trial
        self.env = env_spec(req.load.env_name)
        self.t0 = clock()
        self.baseline_run: int | None = None
        self.baseline_s: float | None = None  # the baseline run's measured length
        self.baseline_disk: str | None = None  # the disk limit the baseline ran under
        self.guard = Guardrails(None)
        self._confirmed = False

    # --- phases ------------------------------------------------------------------------------
    def run(self) -> None:
        self._fail_stale_trials()
        self._baseline()
        if self._confirmation_started():  # the best is settled: more trials need a new study
            if self.done() < self.req.trials:
                self.console.print(
                    f"the confirmation has started: the search stays at {self.done()} trials "
                    "(a longer search needs a new study, --name)",
                    highlight=False,
                )
        else:
            self._search()
        if self.best() is not None:
            self._confirm()
            self._ablate()

    def _confirmation_started(self) -> bool:
        prefix = confirm.point_key("")
        runs = self.archive.study_runs(self.req.name)
        return any((r.study_point or "").startswith(prefix) for r in runs)

    def _baseline(self) -> None:
        runs = [
            r for r in self.archive.study_runs(self.req.name) if r.study_point == BASELINE_POINT
        ]
        # a baseline changed under it (env set --force) measured no one configuration
        ok = [r for r in runs if r.status == "ok" and not changed_under_run(r)]
        if not ok:
            self.archive.update_study_extra(self.req.name, {"phase": "baseline"})
            self.console.print("baseline: the environment's own settings", highlight=False)
            self.backend.apply_settings(self.env, {})
            rec = self._execute(BASELINE_POINT, 0)
            self._say_run(rec)
            if rec.status != "ok":
                raise PgrigError(
                    f"the baseline run {rec.id} {rec.status}: {rec.error or ''}; fix it with "
                    f"`{pgrig_command('run', self.env.name, rest='...')}` before tuning"
                )
            if changed := changed_under_run(rec):
                raise PgrigError(
                    f"the baseline run {rec.id} was changed while running ({'; '.join(changed)})"
                    f": not a measure of {self.env.name}'s own settings; resume the study "
                    f"(--resume) without changing {self.env.name} under it"
                )
            ok = [rec]
        self.baseline_run = ok[-1].id
        self.baseline_s = ok[-1].measured_s
        self.baseline_disk = _disk_text(ok[-1])
        self.guard = Guardrails(ok[-1].latency.p95)

    def _search(self) -> None:
        if self.req.warm_start and not self.study.get_trials(deepcopy=False):
            self.study.enqueue_trial(dict(self.req.warm_start), skip_if_exists=False)
            self.console.print(
                f"trial 1 starts from {self.req.reference}'s point: "
                + _settings_text(self.req.space.settings(self.req.warm_start)),
                highlight=False,
                soft_wrap=True,
            )
        while self.done() < self.req.trials:
            elapsed = self.clock() - self.t0
            budget = self.req.budget_s
            if budget is not None and elapsed + self._trial_estimate() > budget:
                self.console.print(
                    f"budget reached after {self.done()} trials ({elapsed:.0f} s of {budget:.0f})",
                    highlight=False,
                )
                break
            self._trial()
            self.save()

    def _trial(self) -> None:
        import optuna

        trial = self._ask()
        settings = self.req.space.suggest(trial)
        trial.set_user_attr("settings", settings)
        label = f"trial {trial.number + 1} ({self.done() + 1}/{self.req.trials})"
        if self.on_trial:
            self.on_trial(self.done(), self.req.trials, label)
        self.console.print(f"[bold]{label}[/bold]: {_settings_text(settings)}", highlight=False)
        try:
            self.backend.apply_settings(self.env, settings)
        except PgrigError as e:  # the server refused the combination: a pruned trial
            trial.set_user_attr("reason", f"settings refused: {e}")
            self.study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            self.console.print(f"  [yellow]pruned[/yellow]: {escape(str(e))}", highlight=False)
            return
        try:
            rec = self._execute(f"trial-{trial.number:03d}", 0, self.guard.early_stop())
        except BaseException as e:
            stopped = getattr(e, "record", None)
            if stopped is not None:
                trial.set_user_attr("run_id", stopped.id)
            # why, as its run says it: an interrupted trial is not a bare 'fail'
            why = getattr(stopped, "error", None) or (
                "interrupted" if is_interruption(e) else first_line(e)
            )
            trial.set_user_attr("reason", why)
            self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
            raise
        trial.set_user_attr("run_id", rec.id)
        if self.req.objective.beside:  # evidence kept with the trial, pruned or not
            trial.set_user_attr("beside", self.req.objective.beside_values(rec))
        value = self.req.objective.value(rec)
        judged = self.guard.judge(rec)
        self._say_run(rec)
        if judged.pruned or value is None:
            reason = judged.reason or f"run {rec.id} has no {self.req.objective.label}"
            trial.set_user_attr("reason", reason)
            if value is not None:
                trial.report(value, step=0)  # TPE then knows how bad the region is
            self.study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            self.console.print(f"  [yellow]pruned[/yellow]: {escape(reason)}", highlight=False)
            self._stop_if_disk_changed(rec)
            return
        self.study.tell(trial, value)

    def _stop_if_disk_changed(self, rec: RunRecord) -> None:
        """A disk limit forced under a trial lasts (the study puts back settings, not disk
        limits): the trials and the baseline before it ran on another disk than the ones
        after, and TPE would compare them as one search; the tune stops saying so."""
        lasting = [
            e for e in rec.extra.get("changed_under_run") or []
            if str(e.get("change", "")).startswith(DISK_LIMIT_CHANGE)
        ]  # fmt: skip
        if lasting:
            raise PgrigError(
                f"the {lasting[-1]['change']} under run {rec.id} (`pgrig "
                f"{lasting[-1]['command']}`): the baseline and the trials before it ran under "
                f"another disk limit than any after it, not one search; start a new study "
                f"(--name) on {self.env.name} as it is now"
            )

    def _ask(self) -> optuna.Trial:
        """The next trial; within a group of RESTART_GROUP trials the restart-only knobs keep
        the group's first values, so the server restarts once per group, not per trial."""
        restart = self.req.space.restart_names
        index = self.done()
        if restart and index % RESTART_GROUP != 0:
            previous = [t for t in self.study.get_trials(deepcopy=False) if t.params]
            if previous and all(k in previous[-1].params for k in restart):
                fixed = {k: previous[-1].params[k] for k in restart}
                self.study.enqueue_trial(fixed, skip_if_exists=False)
        return self.study.ask()

    def _confirm(self) -> None:
        """Interleaved rounds, stopped at the first look (confirm.looks) where every verdict
        is decisive at that look's misrate; the misrate the verdicts are judged at is saved."""
        best = self.best()
        assert best is not None
        configs = {
            confirm.BASELINE: {},
            confirm.BEST: best["settings"],
            self.req.reference: self.req.pgtune_settings,
        }
        x = self.archive.get_study(self.req.name).extra
        if x.get("confirm_stopped_at") is not None:  # a resumed study: the phase had ended
            self._confirmed = True
            return
        done = completed_runs(self.archive.study_runs(self.req.name))
        schedule = {look.rounds: look for look in confirm.looks(self.req.confirm_repeats)}
        reference = self.req.reference
        todo = len([p for p in confirm.plan(self.req.confirm_repeats, self.req.name, reference)
                    if (confirm.point_key(p[0]), p[1]) not in done])  # fmt: skip
        if todo:
            looks_text = ", ".join(
                f"after {look.rounds} at misrate {look.misrate:g}" for look in schedule.values()
            )
            self.console.print(
                f"confirmation: up to {self.req.confirm_repeats} interleaved rounds of "
                f"{', '.join(confirm.configs(reference))} ({todo} runs to go); looks "
                f"{looks_text}",
                highlight=False,
            )
        i = 0
        for repeat in range(self.req.confirm_repeats):
            for config in confirm.round_order(self.req.name, repeat, reference):
                if (confirm.point_key(config), repeat) in done:
                    continue
                if self.on_trial:
                    self.on_trial(i, todo, f"confirmation run {i + 1}/{todo}")
                i += 1
                self.backend.apply_settings(self.env, configs[config])
                rec = self._execute(confirm.point_key(config), repeat)
                self._say_run(rec, f"{config} repeat {repeat + 1}: ")
            look = schedule.get(repeat + 1)
            if look is None:
                continue
            found = confirm.verdicts(
                self.archive.study_runs(self.req.name),
                self.req.objective.metric.key,
                self.req.threshold,
                look.misrate,
                reference,
            )
            last = look.rounds == self.req.confirm_repeats
            if confirm.decisive(found) or last:
                self.archive.update_study_extra(
                    self.req.name,
                    {"confirm_stopped_at": look.rounds, "confirm_misrate": look.misrate},
                )
                if not last:
                    self.console.print(
                        f"confirmation: decisive after {look.rounds} rounds at misrate "
                        f"{look.misrate:g}: stopped early",
                        highlight=False,
                    )
                break
        self._confirmed = True

    def _ablate(self) -> None:
        """From the best configuration, each unit back to the environment's own value, run
        interleaved with the best (tune/ablation.py); the plan is saved before the first run,
        so a resumed study measures the same units."""
        best = self.best()
        repeats = self.req.ablation_repeats
        if best is None or repeats < 1:
            return
        x = self.archive.get_study(self.req.name).extra
        saved = x.get("ablation")
        if saved:
            units = [ablation.Unit(u["key"], tuple(u["knobs"])) for u in saved["units"]]
            configs = {k: dict(v) for k, v in saved["configs"].items()}
        else:
            own = self._own_values(list(best["settings"]))
            changed = ablation.changed_knobs(best["settings"], own)
            units = ablation.plan_units(
                changed, x.get("importances") or {}, self.req.ablation_max_units
            )
            if not units:
                return
            configs = ablation.configs(best["settings"], units)
            plan: AblationDoc = {
                "units": [{"key": u.key, "knobs": list(u.knobs)} for u in units],
                "configs": configs,
                "repeats": repeats,
            }
            self.archive.update_study_extra(
                self.req.name, {"ablation": plan, "runs": planned_runs(self.req, plan)}
            )
        done = completed_runs(self.archive.study_runs(self.req.name))
        todo = [
            (c, r)
            for c, r in ablation.plan(list(configs), repeats, self.req.name)
            if (ablation.point_key(c), r) not in done
        ]
        if todo:
            self.console.print(
                f"ablation: {repeats} interleaved rounds of the best and the best without "
                f"each of {', '.join(u.label for u in units)} ({len(todo)} runs to go)",
                highlight=False,
                soft_wrap=True,
            )
        for i, (config, repeat) in enumerate(todo):
            if self.on_trial:
                self.on_trial(i, len(todo), f"ablation run {i + 1}/{len(todo)}")
            self.backend.apply_settings(self.env, configs[config])
            rec = self._execute(ablation.point_key(config), repeat)
            label = "best" if config == ablation.BEST else f"without {config}"
            self._say_run(rec, f"{label} repeat {repeat + 1}: ")

    def _own_values(self, names: list[str]) -> dict[str, str | None]:
        """The environment's own value of each knob, as the baseline run's server reported it
        (None when unknown)."""
        if self.baseline_run is None:
            return {}
        try:
            settings = self.archive.get_run(self.baseline_run).settings
        except NotFound:
            return {}
        out: dict[str, str | None] = {}
        for n in names:
            s = settings.get(n) or {}
            value = s.get("setting")
            out[n] = None if value is None else _with_unit(str(value), s.get("unit"))
        return out

    # --- helpers ------------------------------------------------------------------------------
    def _execute(self, point: str, repeat: int, stop_if: StopIf | None = None) -> RunRecord:
        # Every trial and confirmation run follows a restart with new settings: warm the cache
        # first, so runs differ by their settings, not by what the restart emptied.
        request = self.req.load.model_copy(
            update={"study": self.req.name, "study_point": point, "repeat": repeat, "prewarm": True}
        )
        rec = self.backend.execute(request, self.archive, self.console, stop_if=stop_if)
        self._stop_if_disk_differs(rec)
        return rec

    def _stop_if_disk_differs(self, rec: RunRecord) -> None:
        """A disk limit forced between two runs of the study (`env set --disk-limit ...
        --force` while the tune held the environment between runs: no run's event says it)
        shows in the next run's own record: it ran on another disk than the baseline, and the
        study stops, as for a change under a run (_stop_if_disk_changed)."""
        now = _disk_text(rec)
        if self.baseline_disk is None or now == self.baseline_disk:
            return
        raise PgrigError(
            f"run {rec.id} ran under the disk limit {now}, the baseline run "
            f"{self.baseline_run} under {self.baseline_disk} (changed between two runs of the "
            f"study): the runs before and after are not one search; start a new study "
            f"(--name) on {self.env.name} as it is now"
        )

    def _fail_stale_trials(self) -> None:
        """Trials left running by an interrupted process: failed, so they do not count."""
        import optuna

        for t in self.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
            self.study.tell(t.number, state=optuna.trial.TrialState.FAIL)

    def _trial_estimate(self) -> float:
        """A run's planned length; a run to completion (TPC-H's power test) has none: the
        baseline's measured length instead."""
        return self.req.load.planned_seconds() or self.baseline_s or 0.0

    def finished_trials(self) -> list[optuna.trial.FrozenTrial]:
        import optuna

        states = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
        return list(self.study.get_trials(deepcopy=False, states=states))

    def done(self) -> int:
        return len(self.finished_trials())

    def confirmed(self) -> bool:
        return self._confirmed

    def best(self) -> BestTrial | None:
        import optuna

        complete = self.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
        if not complete:
            return None
        t = self.study.best_trial
        best = BestTrial(
            trial=t.number,
            value=t.value,
            run_id=t.user_attrs.get("run_id"),
            settings=self.req.space.settings(t.params),
        )
        if "beside" in t.user_attrs:
            best["beside"] = t.user_attrs["beside"]
        return best

    def trials(self) -> list[TrialDoc]:
        out = []
        for t in self.study.get_trials(deepcopy=False):
            if t.state.name == "WAITING":
                continue
            doc = TrialDoc(
                number=t.number,
                state=t.state.name.lower(),
                value=t.value,
                run_id=t.user_attrs.get("run_id"),
                settings=t.user_attrs.get("settings") or self.req.space.settings(t.params),
                reason=t.user_attrs.get("reason"),
            )
            if "beside" in t.user_attrs:
                doc["beside"] = t.user_attrs["beside"]
            out.append(doc)
        return out

    def save(self) -> None:
        """What the report needs, in the study's extra (kept current after every trial)."""
        importances, why = knob_importances(self.study)
        self.archive.update_study_extra(
            self.req.name,
            {
                "baseline_run": self.baseline_run,
                "baseline_p95_ms": self.guard.baseline_p95_ms,
                "trials": self.trials(),
                "best": self.best(),
                "importances": importances,
                "importances_note": why,
            },
        )

    def _say_run(self, rec: RunRecord, prefix: str = "") -> None:
        obj = self.req.objective
        value = obj.value(rec)
        shown = f"{value:,.2f} {obj.label}" if value is not None else f"no {obj.label}"
        p95 = f", p95 {rec.latency.p95:.2f} ms" if rec.latency.p95 is not None else ""
        values = obj.beside_values(rec)
        beside = "".join(
            f", {format.number(values[f.key], 0)} {f.label}"
            for f in obj.beside
            if values[f.key] is not None
        )
        status = "" if rec.status == "ok" else f" [red]{rec.status}[/red]"
        self.console.print(f"  {prefix}run {rec.id}{status}: {shown}{p95}{beside}", highlight=False)


def no_trial_completed(trials: Sequence[TrialDoc]) -> str:
    """Why a study has no best, with why its trials did not count: "no trial completed: all 3
    trials were pruned (trial 1: p95 30.00 ms exceeds 2 x the baseline's 10.00 ms; ...)"."""
    said = "no trial completed"
    ended = [t for t in trials if t.get("state") in ("pruned", "fail")]
    if not ended:
        return f"{said}: nothing to confirm"
    pruned = sum(1 for t in ended if t.get("state") == "pruned")
    if pruned == len(ended):
        count = "its one trial was pruned" if pruned == 1 else f"all {pruned} trials were pruned"
    else:
        count = f"{pruned} {'trial was' if pruned == 1 else 'trials were'} pruned, "
        count += f"{len(ended) - pruned} failed"
    reasons = "; ".join(
        f"trial {t.get('number', 0) + 1}: {t.get('reason') or 'interrupted'}" for t in ended[:3]
    )
    more = f"; and {len(ended) - 3} more" if len(ended) > 3 else ""
    return f"{said}: {count} ({reasons}{more}): nothing to confirm"


def _disk_text(rec: RunRecord) -> str:
    """The disk limit a run recorded at its start, as `env show` says it ('none' without)."""
    return str((rec.disk_limit or {}).get("text") or "none")


def _dataset_text(dataset: DatasetSpec) -> str:
    """'pgbench data, scale 10': what a preset's data generation makes."""
    return f"{dataset.scenario} data, {dataset.size_label()}"


def _with_unit(value: str, unit: str | None) -> str:
    """A pg_settings value as a setting text comparable with the space's ("128MB", "on"):
    memory in MB where it is whole MB, times with their unit; others unchanged."""
    from pgrig import format as fmt

    if not unit:
        return value
    n = fmt.setting_bytes(value, str(unit))
    if n is not None:
        mib = 1024**2
        return f"{n // mib}MB" if n % mib == 0 else f"{n // 1024}kB"
    return f"{value}{unit}"


def _settings_text(settings: dict[str, str]) -> str:
    return escape(", ".join(f"{k}={v}" for k, v in settings.items()))
