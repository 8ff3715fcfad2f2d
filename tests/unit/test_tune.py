"""Automatic tuning without servers: the knob space, objective, guardrails, the Optuna runner
over the study fakes (restore after the end and after Ctrl-C, resume, restart groups), the
report and `profile save`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from study_fakes import FakeBackend, make_record

from pgrig.archive.records import RunRecord
from pgrig.archive.store import Archive
from pgrig.errors import PgrigError
from pgrig.request import RunRequest
from pgrig.tune import confirm, space
from pgrig.tune.guardrails import Guardrails
from pgrig.tune.objective import objective
from pgrig.tune.runner import TuneInterrupted, TunePlan, restore_leftovers, run_tune
from pgrig.views import tune_attribution

GIB = 1024**3


# --- the space --------------------------------------------------------------------------------
def test_default_ranges_follow_ram_and_cpus() -> None:
    small = space.default_space(15, 8 * GIB, 4)
    big = space.default_space(15, 64 * GIB, 16)
    assert small.knob("shared_buffers").high == 8192 * 2 // 5  # 40% of RAM, in MB
    assert big.knob("shared_buffers").high == 65536 * 2 // 5
    assert small.knob("effective_cache_size").low == 2048
    assert small.knob("effective_cache_size").high == 8192
    assert small.knob("work_mem").high == 64  # RAM/128
    assert big.knob("max_parallel_workers_per_gather").high == 8  # max_worker_processes
    assert small.knob("max_parallel_workers_per_gather").high == 4
    wal = space.default_space(15, 8 * GIB, 4, disk_free_bytes=4 * GIB)
    assert wal.knob("max_wal_size").high == 1024  # a quarter of the free disk


def test_version_gating() -> None:
    pg15 = space.default_space(15, 8 * GIB, 2)
    assert "io_method" not in pg15.names and "io_workers" not in pg15.names
    assert pg15.knob("wal_compression").choices == ("off", "pglz", "lz4", "zstd")
    assert space.default_space(14, 8 * GIB, 2).knob("wal_compression").choices == ("off", "on")
    pg18 = space.default_space(18, 8 * GIB, 2)
    assert pg18.knob("io_method").choices == ("worker", "sync")
    assert pg18.knob("io_workers").high == 4
    assert any("io_uring left out" in n for n in pg18.notes)
    uring = space.default_space(18, 8 * GIB, 2, io_uring=True)
    assert "io_uring" in uring.knob("io_method").choices


def test_unsafe_settings_only_when_allowed() -> None:
    safe = space.default_space(15, 8 * GIB, 2)
    assert not set(space.UNSAFE) & set(safe.names)
    unsafe = space.default_space(15, 8 * GIB, 2, allow_unsafe=True)
    assert set(space.UNSAFE) <= set(unsafe.names)
    assert unsafe.notes[-1].startswith("UNSAFE")


def test_space_file(tmp_path: Path) -> None:
    f = tmp_path / "space.toml"
    f.write_text(
        '[knobs.shared_buffers]\nlow = "128MB"\nhigh = "2GB"\nlog = true\n'
        "[knobs.random_page_cost]\nlow = 1.1\nhigh = 4.0\n"
        '[knobs.checkpoint_timeout]\nlow = 30\nhigh = 900\nunit = "s"\n'
        '[knobs.wal_compression]\nchoices = ["off", "lz4"]\n'
    )
    s = space.load_space(f)
    sb = s.knob("shared_buffers")
    assert (sb.low, sb.high, sb.unit, sb.log, sb.integer) == (128, 2048, "MB", True, True)
    assert not s.knob("random_page_cost").integer
    assert s.knob("checkpoint_timeout").text(60) == "60s"
    assert s.knob("wal_compression").choices == ("off", "lz4")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[knobs.fsync]\nchoices = [true, false]\n", "knobs.fsync: changes durability"),
        ("[knobs.work_mem]\nlow = 4\n", "needs low and high"),
        ("[knobs.work_mem]\nlow = 8\nhigh = 4\n", "low (8) must be below high (4)"),
        ("[knobs.work_mem]\nlow = 0\nhigh = 4\nlog = true\n", "log scale needs low > 0"),
        ("[knobs.work_mem]\nlow = 1\nhigh = 4\nstep = 1\n", "knobs.work_mem.step: unknown key"),
        ('[knobs.work_mem]\nlow = "1MB"\nhigh = 4\n', "both as sizes"),
        ("[other]\n", "other: unknown key; allowed here: knobs"),
        # the declared model (tune/space_file.py): every problem names its key path
        ('[knobs.work_mem]\nlow = "1MB"\nhigh = "lots"\n', "knobs.work_mem.high: bad size 'lots'"),
        (
            '[knobs.work_mem]\nlow = 1\nhigh = 4\nunit = "pc"\n',
            "knobs.work_mem.unit: must be one of",
        ),
        ('[knobs.jit]\nchoices = ["on", [1]]\n', "knobs.jit.choices[1]: expected a string"),
        ("[knob.work_mem]\nlow = 1\nhigh = 2\n", "knob: unknown key (did you mean 'knobs'?)"),
        (
            "[knobs.work_mem]\nlow = 1\nhigh = 4\nlog = 1\n",
            "knobs.work_mem.log: expected true or false",
        ),
    ],
)
def test_space_file_errors_name_the_key(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "space.toml"
    f.write_text(text)
    with pytest.raises(PgrigError, match=r"--space .*") as e:
        space.load_space(f)
    assert message in str(e.value)
    assert "\n" not in str(e.value)


def test_unsafe_file_allowed_loudly(tmp_path: Path) -> None:
    f = tmp_path / "space.toml"
    f.write_text("[knobs.fsync]\nchoices = [true, false]\n")
    s = space.load_space(f, allow_unsafe=True)
    assert s.knob("fsync").choices == ("on", "off")
    assert s.notes and s.notes[0].startswith("UNSAFE")


def test_check_space_validates_ends_and_drops_unsupported_choices() -> None:
    seen: list[dict[str, str]] = []

    def check(settings: dict[str, str]) -> None:
        seen.append(dict(settings))
        if settings.get("wal_compression") == "zstd":
            raise PgrigError("invalid value for wal_compression: 'zstd'")

    s = space.check_space(space.default_space(15, 8 * GIB, 2), check)
    assert s.knob("wal_compression").choices == ("off", "pglz", "lz4")
    assert any("wal_compression = zstd left out" in n for n in s.notes)
    assert seen[0]["shared_buffers"] == "128MB" and seen[1]["shared_buffers"] == "3276MB"

    def refuse(settings: dict[str, str]) -> None:
        if settings.get("work_mem") == "64MB":
            raise PgrigError("work_mem=64MB is outside the valid range")

    with pytest.raises(PgrigError, match=r"^--space: work_mem=64MB"):
        space.check_space(space.default_space(15, 8 * GIB, 2), refuse)


def test_restart_knobs_from_the_catalogue() -> None:
    s = space.default_space(15, 8 * GIB, 2).with_restart(
        lambda n: n in {"shared_buffers", "wal_buffers"}
    )
    assert s.restart_names == ["shared_buffers", "wal_buffers"]


class _FixedTrial:
    def suggest_int(self, name: str, low: int, high: int, *, log: bool = False) -> int:
        return high

    def suggest_float(self, name: str, low: float, high: float, *, log: bool = False) -> float:
        return low

    def suggest_categorical(self, name: str, choices: Any) -> Any:
        return choices[-1]


def test_suggested_settings_are_setting_text() -> None:
    s = space.default_space(15, 8 * GIB, 2)
    settings = s.suggest(_FixedTrial())
    assert settings["shared_buffers"] == "3276MB"
    assert settings["checkpoint_completion_target"] == "0.5"
    assert settings["bgwriter_delay"] == "1000ms"
    assert settings["wal_compression"] == "zstd"
    assert s.settings({"shared_buffers": 512, "jit": "off"}) == {
        "shared_buffers": "512MB",
        "jit": "off",
    }


# --- objective and guardrails -----------------------------------------------------------------
def test_objectives() -> None:
    rec = make_record(tps=1000.0)
    tps, p95 = objective("tps", "pgbench:tpcb"), objective("p95", "pgbench:tpcb")
    assert tps.direction == "maximize" and tps.value(rec) == 1000.0
    assert p95.direction == "minimize" and p95.value(rec) == pytest.approx(15.0)
    assert p95.better(10.0, 15.0) and tps.better(2.0, 1.0)
    assert tps.value(make_record(tps=1000.0, status="failed")) is None
    with pytest.raises(PgrigError, match="--objective nopm needs --workload tpcc"):
        objective("nopm", "pgbench:tpcb")
    with pytest.raises(PgrigError, match="--objective 'qps'"):
        objective("qps", "pgbench:tpcb")


def test_guardrails() -> None:
    guard = Guardrails(baseline_p95_ms=10.0)
    assert guard.p95_limit_ms == 20.0
    assert not guard.judge(make_record(tps=1000.0)).pruned  # p95 15 ms
    slow = guard.judge(make_record(tps=500.0))  # p95 30 ms
    assert slow.pruned and slow.reason == "p95 30.00 ms exceeds 2 x the baseline's 10.00 ms"
    failed = guard.judge(make_record(tps=1000.0, status="failed"))
    assert failed.pruned and "failed: pgbench: connection refused" in (failed.reason or "")
    assert not Guardrails(None).judge(make_record(tps=10.0)).pruned


def _with_forced_change(rec: RunRecord, run_id: int, after_s: float, change: str) -> RunRecord:
    """`rec` as run `run_id` with one `env set --force` change under it, `after_s` in."""
    rec.id = run_id
    rec.extra["changed_under_run"] = [
        {"after_s": after_s, "command": "env set --force", "change": change}
    ]
    return rec


def test_a_trial_changed_under_its_run_is_pruned_not_counted() -> None:
    """Issue 43 (F3): a run with `env set --force` under it measured two configurations."""
    rec = _with_forced_change(make_record(tps=1000.0), 7, 4.2, "settings work_mem=8MB")
    judged = Guardrails(baseline_p95_ms=10.0).judge(rec)
    assert judged.pruned and judged.reason == (
        "run 7 was changed while running (settings work_mem=8MB at 4.2 s): not a trial of its "
        "settings alone, not comparable"
    )


def test_a_trial_stopped_early_and_changed_under_its_run_says_both() -> None:
    """The guardrail stopped the trial on a loaded host, and a forced change came under it:
    the reason the tune prints names the change too (it is a fact of the run)."""
    rec = _with_forced_change(
        make_record(tps=1000.0, status="aborted"), 9, 3.0, "settings work_mem=8MB"
    )
    rec.error = "stopped early: p95 above 0.15 ms (2 x the baseline's) for 5 seconds"
    judged = Guardrails(baseline_p95_ms=10.0).judge(rec)
    assert judged.pruned and judged.reason == (
        "run 9 aborted: stopped early: p95 above 0.15 ms (2 x the baseline's) for 5 seconds; "
        "and it was changed while running (settings work_mem=8MB at 3 s)"
    )


def test_a_change_during_the_runs_set_up_is_said_so_not_at_a_negative_time() -> None:
    rec = _with_forced_change(make_record(tps=1000.0), 8, -0.9, "disk limit set to wiops=300")
    judged = Guardrails(baseline_p95_ms=10.0).judge(rec)
    assert judged.reason == (
        "run 8 was changed while running (disk limit set to wiops=300 during its set-up): not a "
        "trial of its settings alone, not comparable"
    )


def test_early_stop_needs_consecutive_slow_seconds() -> None:
    stop_if = Guardrails(baseline_p95_ms=10.0).early_stop(seconds=3)
    # a fast second starts the count again; a second without a figure changes nothing
    assert [stop_if(v) for v in (25.0, 25.0, 5.0, 25.0, 25.0, None)] == [None] * 6
    assert stop_if(25.0) == "p95 above 20.00 ms (2 x the baseline's) for 3 seconds in a row"
    assert Guardrails(None).early_stop()(1e9) is None


# --- the runner over fakes --------------------------------------------------------------------
class TuneFake(FakeBackend):
    """The study fake, keeping the early-stop watcher each run was given."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.watchers: dict[str | None, Any] = {}

    def execute(self, spec: RunRequest, archive: Any, console: Any, stop_if: Any = None) -> Any:
        self.watchers[spec.study_point] = stop_if
        return super().execute(spec, archive, console)


def _space() -> space.Space:
    return space.Space(
        [
            space.Knob("shared_buffers", choices=("128MB", "1GB"), restart=True),
            space.Knob("work_mem", 1, 64, "MB", log=True),
        ]
    )


def _request(name: str = "t", trials: int = 6, repeats: int = 2) -> TunePlan:
    load = RunRequest(env_name="e1", workload="pgbench:tpcb", clients=8, duration_s=20.0)
    return TunePlan(
        name=name,
        load=load,
        objective=objective("tps", "pgbench:tpcb"),
        space=_space(),
        trials=trials,
        confirm_repeats=repeats,
        pgtune_settings={"shared_buffers": "1GB"},
    )


def test_tune_runs_trials_as_study_runs_then_confirms_and_restores(archive: Archive) -> None:
    backend = TuneFake(running={"e1"})
    result = run_tune(_request(), archive=archive, backend=backend)  # type: ignore[arg-type]
    assert result.status == "done" and result.trials_done == 6
    runs = archive.study_runs("t")
    points = [r.study_point for r in runs]
    assert points[0] == "baseline"
    assert points[1:7] == [f"trial-{n:03d}" for n in range(6)]
    assert points[7:] == [confirm.point_key(c) for c, _ in confirm.plan(2, "t")]
    study = archive.get_study("t")
    assert study.kind == "tune" and study.status == "done"
    x = study.extra
    assert x["best"]["settings"]["shared_buffers"] == "1GB"  # the fake's +20%
    assert [t["run_id"] for t in x["trials"]] == [r.id for r in runs[1:7]]
    assert x["importances"] and abs(sum(x["importances"].values()) - 1) < 1e-6
    # the restart-only knob keeps its value over a group of trials
    group = {t["settings"]["shared_buffers"] for t in x["trials"][: space.RESTART_GROUP]}
    assert len(group) == 1
    # confirmation settings: baseline = the environment's own (empty layer), best, pgtune
    applied = [c[2] for c in backend.calls if c[0] == "apply"]
    pgtune = {"shared_buffers": "1GB"}
    configs = {confirm.BASELINE: {}, confirm.BEST: x["best"]["settings"], confirm.PGTUNE: pgtune}
    last_round = confirm.round_order("t", 1)  # each round in an order of its own
    assert applied[0] == {} and applied[-3:] == [configs[c] for c in last_round]
    assert backend.calls[-1] == ("restore", "e1")  # the environment's own settings back
    # trials run under the guardrail's watcher (limit: 2 x the baseline's p95); others do not
    assert backend.watchers["baseline"] is None and backend.watchers["confirm-best"] is None
    watch = backend.watchers["trial-000"]
    limit = 2 * runs[0].latency.p95
    assert [watch(limit * 1.01) for _ in range(5)][-1] is not None
    verdicts = confirm.verdicts(runs, "tps", 0.02)
    assert [v.question for v in verdicts] == ["best vs baseline", "best vs pgtune-oltp"]
    assert all(v.comparison is not None and v.comparison.method == "repeats" for v in verdicts)


def test_interrupted_tune_restores_and_resumes(archive: Archive) -> None:
    backend = TuneFake(running={"e1"}, interrupt_at=3)  # baseline, trials 0, 1, then Ctrl-C
    with pytest.raises(TuneInterrupted) as stop:
        run_tune(_request(trials=4), archive=archive, backend=backend)  # type: ignore[arg-type]
    assert stop.value.result.trials_done == 2
    assert backend.calls[-1] == ("restore", "e1")
    assert archive.get_study("t").status == "interrupted"
    with pytest.raises(PgrigError, match="add --resume"):
        run_tune(_request(trials=4), archive=archive, backend=TuneFake(running={"e1"}))  # type: ignore[arg-type]
    again = TuneFake(running={"e1"})
    result = run_tune(_request(trials=4), archive=archive, backend=again, resume=True)  # type: ignore[arg-type]
    assert result.status == "done" and result.trials_done == 4
    executed = [c[1] for c in again.calls if c[0] == "execute"]
    assert "baseline" not in executed  # kept from the first attempt
    assert executed[:2] == ["trial-003", "trial-004"]  # trial 2 failed (interrupted): redone
    states = [t["state"] for t in archive.get_study("t").extra["trials"]]
    assert states.count("fail") == 1 and states.count("complete") + states.count("pruned") == 4


def test_a_trial_stopped_by_an_interruption_says_so(archive: Archive) -> None:
    """Issue 43, pass 3: a trial whose run Ctrl-C stopped was a bare 'fail' with no reason in
    `study show` (text and --json) and the report, while its run said 'interrupted'."""
    backend = TuneFake(running={"e1"}, interrupt_at=3)  # baseline, trials 0, 1, then Ctrl-C
    with pytest.raises(TuneInterrupted):
        run_tune(_request(trials=4), archive=archive, backend=backend)  # type: ignore[arg-type]
    [stopped] = [t for t in archive.get_study("t").extra["trials"] if t["state"] == "fail"]
    assert stopped["reason"] == "interrupted"


def test_a_signal_before_the_first_trial_leaves_the_study_interrupted(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM between the study's row and its first trial (the optuna study being set up)
    must not leave it "running" with nobody running it."""

    def stopped(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(archive, "update_study_extra", stopped)
    with pytest.raises(KeyboardInterrupt):
        run_tune(_request(trials=4), archive=archive, backend=TuneFake(running={"e1"}))  # type: ignore[arg-type]
    assert archive.get_study("t").status == "interrupted"


def test_resume_after_the_confirmation_keeps_the_best(archive: Archive) -> None:
    first = run_tune(_request(trials=2), archive=archive, backend=TuneFake(running={"e1"}))  # type: ignore[arg-type]
    again = TuneFake(running={"e1"})
    second = run_tune(_request(trials=5), archive=archive, backend=again, resume=True)  # type: ignore[arg-type]
    assert second.trials_done == 2 and second.best == first.best
    assert not [c for c in again.calls if c[0] == "execute"]  # everything was done already


def test_resume_refuses_another_question(archive: Archive) -> None:
    run_tune(_request(trials=1, repeats=2), archive=archive, backend=TuneFake(running={"e1"}))  # type: ignore[arg-type]
    other = _request(trials=1)
    other = TunePlan(**{**other.__dict__, "objective": objective("p95", "pgbench:tpcb")})
    with pytest.raises(PgrigError, match="--resume: study 't' was started with another") as e:
        run_tune(other, archive=archive, backend=TuneFake(running={"e1"}), resume=True)  # type: ignore[arg-type]
    assert '(objective: "tps", now "p95")' in str(e.value)  # what differs is said (case 28)


def test_resume_of_a_study_that_does_not_exist_is_refused(archive: Archive) -> None:
    """--resume asks to continue: a name the archive does not hold starts nothing (case 29)."""
    fake = TuneFake(running={"e1"})
    with pytest.raises(PgrigError, match="--resume: there is no study 't' to resume"):
        run_tune(_request(trials=1), archive=archive, backend=fake, resume=True)  # type: ignore[arg-type]
    assert not [c for c in fake.calls if c[0] == "execute"]
    assert not [s for s in archive.list_studies() if s.name == "t"]


def test_resume_with_a_damaged_journal_says_so(archive: Archive) -> None:
    """A torn or edited line in the Optuna journal: a clear error, not a JSONDecodeError."""
    from pgrig.tune.runner import journal_path

    with pytest.raises(TuneInterrupted):
        run_tune(
            _request(trials=3), archive=archive, backend=TuneFake(running={"e1"}, interrupt_at=3)
        )  # type: ignore[arg-type]
    journal = journal_path(archive.url, "t")
    whole = journal.read_bytes()
    # a last line torn (kill -9 mid-write): that write never happened, the study resumes
    journal.write_bytes(whole[:-40])
    run_tune(_request(trials=3), archive=archive, backend=TuneFake(running={"e1"}), resume=True)  # type: ignore[arg-type]
    assert archive.get_study("t").status == "done"
    # a line damaged inside (edited): a clear error, not a JSONDecodeError
    lines = journal.read_bytes().split(b"\n")
    journal.write_bytes(b"\n".join([lines[0], lines[1][:30], *lines[2:]]))
    archive.set_study_status("t", "interrupted")
    with pytest.raises(PgrigError) as e:
        run_tune(_request(trials=3), archive=archive, backend=TuneFake(running={"e1"}), resume=True)  # type: ignore[arg-type]
    assert str(e.value).startswith(f"study 't': its search journal {journal} cannot be read (")
    assert str(e.value).endswith("start a new study (--name)")


def test_resume_after_an_upgrade_that_added_a_load_key(archive: Archive) -> None:
    """A study started by a pgrig whose RunRequest lacked a field added since (at its default)
    resumes; a changed load is still refused."""
    with pytest.raises(TuneInterrupted):
        run_tune(
            _request(trials=3), archive=archive, backend=TuneFake(running={"e1"}, interrupt_at=3)
        )  # type: ignore[arg-type]
    spec = json.loads(archive.get_study("t").spec)
    del spec["run"]["streams"]  # as an older pgrig wrote it
    import sqlite3

    with sqlite3.connect(archive.url.removeprefix("sqlite:///")) as conn:
        conn.execute(
            "UPDATE studies SET spec = ? WHERE name = 't'",
            (json.dumps(spec, indent=1, sort_keys=True),),
        )
    run_tune(_request(trials=3), archive=archive, backend=TuneFake(running={"e1"}), resume=True)  # type: ignore[arg-type]
    assert archive.get_study("t").status == "done"
    plan = _request(name="t")
    other = TunePlan(**{**plan.__dict__, "load": plan.load.model_copy(update={"clients": 7})})
    archive.set_study_status("t", "interrupted")
    with pytest.raises(PgrigError, match="--resume: study 't' was started with another") as e:
        run_tune(other, archive=archive, backend=TuneFake(running={"e1"}), resume=True)  # type: ignore[arg-type]
    assert "(run.clients: 8, now 7)" in str(e.value)  # what differs is said (case 28)


def _forced_under(points: set[str]) -> Any:
    def decorate(rec: Any, spec: RunRequest) -> None:
        if spec.study_point in points:
            rec.extra["changed_under_run"] = [
                {"after_s": 1.0, "command": "env set --force", "change": "settings jit=off"}
            ]

    return decorate


def test_a_disk_limit_forced_between_two_runs_stops_the_tune(archive: Archive) -> None:
    """Issue 43, pass 3: `env set --disk-limit ... --force` while the tune held the
    environment between two runs is no event of any run ('no run records this change'): the
    trials after it ran on another disk than the baseline, and TPE compared them as one
    search. The next run's own disk limit shows it, and the tune stops."""

    def disk(rec: Any, spec: RunRequest) -> None:
        text = "wiops=300" if spec.study_point in ("baseline", "trial-000") else "wiops=900"
        rec.disk_limit = {"limit": {}, "text": text, "in_force": True}

    backend = TuneFake(running={"e1"}, decorate=disk)
    with pytest.raises(PgrigError) as stopped:
        run_tune(_request(trials=3), archive=archive, backend=backend)  # type: ignore[arg-type]
    assert str(stopped.value).startswith("run 3 ran under the disk limit wiops=900, the baseline")
    assert "under wiops=300 (changed between two runs of the study)" in str(stopped.value)
    [trial, stopped_one] = archive.get_study("t").extra["trials"]
    assert trial["state"] == "complete" and stopped_one["state"] == "fail"
    assert stopped_one["reason"].startswith("run 3 ran under the disk limit wiops=900")
    assert backend.calls[-1] == ("restore", "e1")
    # the study says why it failed, not only where (study show, its --json, tune show)
    study = archive.get_study("t")
    said = tune_attribution.unfinished(study.status, study.extra, archive.study_runs("t"))
    assert said == (
        f"failed in its search after 1 of 3 trials: nothing confirmed; it stopped on: "
        f"{stopped.value}"
    )


def test_a_trial_forced_under_is_pruned_and_a_changed_baseline_stops_the_tune(
    archive: Archive,
) -> None:
    """Issue 43 (F3): the trial's own settings were not what it measured: it is no best."""
    backend = TuneFake(running={"e1"}, decorate=_forced_under({"trial-000"}))
    result = run_tune(_request(trials=3), archive=archive, backend=backend)  # type: ignore[arg-type]
    trials = archive.get_study("t").extra["trials"]
    assert trials[0]["state"] == "pruned"
    assert "was changed while running (settings jit=off at 1 s)" in trials[0]["reason"]
    assert result.best is not None and result.best["trial"] != 0
    changed = TuneFake(running={"e1"}, decorate=_forced_under({"baseline"}))
    with pytest.raises(PgrigError, match=r"the baseline run \d+ was changed while running"):
        run_tune(_request(name="t2", trials=3), archive=archive, backend=changed)  # type: ignore[arg-type]
    assert not [c for c in changed.calls if c[0] == "execute" and c[1] != "baseline"]


def test_a_tune_whose_every_trial_was_pruned_says_why(
    archive: Archive, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 43 (F13): not only "no trial completed": how many were pruned, and why."""
    from pgrig.cli import tune as tune_cli

    backend = TuneFake(running={"e1"}, fail_at={1, 2, 3, 4})  # every trial's run fails
    result = run_tune(_request(trials=4), archive=archive, backend=backend)  # type: ignore[arg-type]
    assert result.status == "failed" and result.best is None
    error = result.error or ""
    assert error.startswith("no trial completed: all 4 trials were pruned (trial 1: run 2 failed: ")
    assert "; trial 3: run 4 failed: " in error and error.endswith(
        "; and 1 more): nothing to confirm"
    )
    with pytest.raises(PgrigError) as e:
        tune_cli.show_recommendation(archive, "t")
    said = str(e.value)
    assert said.startswith("tuning study 't' failed in its search after 4 of 4 trials")
    assert "; it has no completed trial: all 4 trials were pruned (trial 1: run 2 failed: " in said
    assert said.endswith("; and 1 more): nothing to recommend")


def test_a_disk_limit_forced_under_a_trial_stops_the_tune(archive: Archive) -> None:
    """A forced disk limit lasts (settings are put back before the next run, it is not):
    the trials after it would be compared with the baseline and trials before it."""

    def decorate(rec: Any, spec: RunRequest) -> None:
        if spec.study_point == "trial-001":
            rec.extra["changed_under_run"] = [
                {
                    "after_s": 1.0,
                    "command": "env set --force",
                    "change": "disk limit set to wiops=2000",
                }
            ]

    backend = TuneFake(running={"e1"}, decorate=decorate)
    with pytest.raises(PgrigError) as e:
        run_tune(_request(name="d", trials=4), archive=archive, backend=backend)  # type: ignore[arg-type]
    assert str(e.value).startswith("the disk limit set to wiops=2000 under run ")
    assert "not one search; start a new study (--name) on e1 as it is now" in str(e.value)
    # no trial after it was measured
    assert [c[1] for c in backend.calls if c[0] == "execute"][-1] == "trial-001"
    # a forced settings change is put back by the next trial's: the search goes on
    settings = TuneFake(running={"e1"}, decorate=_forced_under({"trial-001"}))
    run_tune(_request(name="d2", trials=3), archive=archive, backend=settings)  # type: ignore[arg-type]


def test_failed_trials_are_pruned_not_dropped(archive: Archive) -> None:
    backend = TuneFake(running={"e1"}, fail_at={2})  # the second trial's run fails
    run_tune(_request(trials=3), archive=archive, backend=backend)  # type: ignore[arg-type]
    trials = archive.get_study("t").extra["trials"]
    assert trials[1]["state"] == "pruned" and "failed" in trials[1]["reason"]
    assert archive.get_run(trials[1]["run_id"]).status == "failed"


def test_a_study_whose_first_run_cannot_start_is_not_left_behind(archive: Archive) -> None:
    class Refusing(TuneFake):
        def execute(self, spec: RunRequest, archive: Any, console: Any, stop_if: Any = None) -> Any:
            raise PgrigError("database 'nope' does not exist in e1")

    with pytest.raises(PgrigError, match="database 'nope'"):
        run_tune(_request(trials=1), archive=archive, backend=Refusing(running={"e1"}))  # type: ignore[arg-type]
    assert [s.name for s in archive.list_studies()] == []
    result = run_tune(_request(trials=1), archive=archive, backend=TuneFake(running={"e1"}))  # type: ignore[arg-type]
    assert result.status == "done"  # the corrected command starts afresh (journal included)


def test_sigterm_ends_the_study_like_ctrl_c(archive: Archive) -> None:
    # cli/app.py turns SIGTERM into Terminated (a KeyboardInterrupt) for every command
    import signal

    from pgrig.errors import Terminated

    backend = TuneFake(running={"e1"}, interrupt_at=2, interruption=Terminated(signal.SIGTERM))
    with pytest.raises(TuneInterrupted):
        run_tune(_request(trials=4), archive=archive, backend=backend)  # type: ignore[arg-type]
    assert backend.calls[-1] == ("restore", "e1")
    assert archive.get_study("t").status == "interrupted"


def test_a_server_the_tune_started_is_stopped_again(archive: Archive) -> None:
    backend = TuneFake()  # not running: ensure_environment starts it
    run_tune(_request(trials=1), archive=archive, backend=backend)  # type: ignore[arg-type]
    assert backend.calls[-1] == ("stop", "e1")


def test_restore_leftovers_after_a_kill(pgrig_home: Path) -> None:
    backend = TuneFake()
    assert not restore_leftovers("e1", backend)  # type: ignore[arg-type]
    saved = pgrig_home / "studies" / "e1.settings.json"
    saved.parent.mkdir(parents=True)
    saved.write_text(json.dumps({"work_mem": "8MB"}))
    assert restore_leftovers("e1", backend)  # type: ignore[arg-type]
    assert backend.calls == [("restore", "e1")]


# --- report and profile -----------------------------------------------------------------------
def test_report_shows_best_verdicts_importances_and_chart(archive: Archive) -> None:
    from pgrig.reports import markdown, publish

    run_tune(_request(), archive=archive, backend=TuneFake(running={"e1"}))  # type: ignore[arg-type]
    doc = publish.study_document(archive, "t")
    text = markdown.render(doc, "t")
    for heading in ("## Best configuration", "## Confirmation", "## Knob importances", "## Trials"):
        assert heading in text
    runs = archive.study_runs("t")
    for v in confirm.verdicts(runs, "tps", 0.02):
        assert v.comparison is not None
        assert f"| {v.question} | TPS | {v.comparison.ratio_text()} |" in text
    (fig,) = doc.figures()
    completed = next(t for t in fig.chart.traces if t.label == "completed trial")
    x = archive.get_study("t").extra
    assert len(completed.y) == sum(t["state"] == "complete" for t in x["trials"])
    best = next(t for t in fig.chart.traces if t.label == "best so far")
    assert max(v for v in best.y if v is not None) == pytest.approx(x["best"]["value"])


def test_profile_save_from_study(archive: Archive, pgrig_home: Path) -> None:
    from typer.testing import CliRunner

    from pgrig.cli.app import _register, app
    from pgrig.provision.settings import profiles

    run_tune(_request(trials=2), archive=archive, backend=TuneFake(running={"e1"}))  # type: ignore[arg-type]
    _register()
    r = CliRunner().invoke(app, ["profile", "save", "tuned", "--from-study", "t"])
    assert r.exit_code == 0, r.output
    best = archive.get_study("t").extra["best"]["settings"]
    settings, _notes = profiles.resolve_profile("tuned", 15, ram_bytes=8 * GIB, cpus=2)
    assert settings == best
    again = CliRunner().invoke(app, ["profile", "save", "tuned", "--from-study", "t"])
    assert isinstance(again.exception, PgrigError) and "add --force" in str(again.exception)


def test_web_study_page_of_a_tuning_study(archive: Archive, client: Any) -> None:
    run_tune(_request(), archive=archive, backend=TuneFake(running={"e1"}))  # type: ignore[arg-type]
    page = client.get("/studies/t")
    assert page.status_code == 200
    for text in ("Best configuration", "Confirmation", "Knob importances", "best vs baseline"):
        assert text in page.text
    assert page.text.count('<svg class="chart"') == 1  # the objective per trial
    assert "t" in client.get("/studies").text


def test_default_confirmation_repeats_give_95_percent_bounds() -> None:
    import typer

    from pgrig.analysis.compare import DEFAULT_MISRATE, min_repeats
    from pgrig.cli.app import _register, app

    assert min_repeats(DEFAULT_MISRATE) == confirm.DEFAULT_REPEATS
    _register()
    group: Any = typer.main.get_command(app)
    command = group.commands["tune"]
    default = next(p.default for p in command.params if p.name == "confirm_repeats")
    assert default == confirm.DEFAULT_REPEATS


def test_report_evidence_and_best_table_in_human_units() -> None:
    """The evidence section's means, computed independently here from the runs' series; the
    best table in binary units (pgtune's "6171024kB" is 5.9 GiB) and the profile hint naming
    the study, not a knob."""
    from pgrig.archive.records import RunRecord, StudyRecord
    from pgrig.reports import markdown, tune_report

    def run(config: str, repeat: int, tps: float, wal: list[float], ckpt: list[float],
            idle: float) -> RunRecord:  # fmt: skip
        rec = RunRecord(env_name="e", workload="pgbench:tpcb", clients=16, threads=2)
        rec.id, rec.status, rec.tps, rec.duration_s, rec.measured_s = 10 + repeat, "ok", tps, 3, 3
        rec.study_point, rec.repeat = confirm.point_key(config), repeat
        rec.cpu_idle, rec.cpu_iowait = idle, 0.5
        t = [-1.0, 0.0, 1.0, 2.0, 3.0]  # -1 is the warm-up, 3 is after the window: both left out
        zero = [0.0] * 5
        rec.series["pg"] = {"t": t, "wal_bytes": wal, "checkpoints_timed": ckpt,
                            "checkpoints_req": zero, "hit_ratio": [90.0] * 5}  # fmt: skip
        return rec

    mib = 1024.0**2
    runs = [
        run(confirm.BASELINE, 0, 2000.0, [99 * mib, 20 * mib, 20 * mib, 20 * mib, 99 * mib],
            [5, 1, 0, 0, 5], 1.0),
        run(confirm.BASELINE, 1, 1000.0, [0, 10 * mib, 10 * mib, 10 * mib, 0], [0, 0, 0, 0, 0],
            2.0),
        run(confirm.BEST, 0, 3000.0, [0, 4 * mib, 4 * mib, 4 * mib, 0], [0] * 5, 3.0),
    ]  # fmt: skip
    record = StudyRecord(name="tune-x", kind="tune", spec={})
    record.extra = {
        "best": {"trial": 0, "run_id": 1, "value": 3000.0, "settings": {"shared_buffers": "374MB"}},
        "pgtune_settings": {"shared_buffers": "6171024kB"},
    }
    text = markdown.render(tune_report.build(record, runs, None, runs), "tune-x")
    # baseline: TPS (2000+1000)/2, WAL (20+10)/2 MiB/s, per transaction 15 MiB/1500, 0.5 ckpt
    assert "| baseline | 2 | 1,500 | 15.0 MiB/s | 10.2 KiB | 0.5 | 90.0 | 1.5 | 0.5 |" in text
    assert "| best | 1 | 3,000 | 4.0 MiB/s | 1.4 KiB | 0.0 | 90.0 | 3.0 | 0.5 |" in text
    assert "CPU idle averaged 2.0% over the confirmation runs (at most 3.0%)" in text
    assert "| shared_buffers | 374 MiB | - | 5.9 GiB |" in text
    assert "--from-study tune-x keeps it" in text
