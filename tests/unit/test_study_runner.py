"""The study runner with a fake backend and a real (SQLite) archive: order of events, archive
contents, progress output, interruption and resume, failures, validation before anything."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console
from study_fakes import FakeBackend, archive_at, iterations_toml, study_toml

from pgrig.errors import PgrigError
from pgrig.study.runner import StudyInterrupted, completed_runs, run_study, validate
from pgrig.study.spec import StudySpecError, parse

STUDY = study_toml("s1", repeats=3, workload="pgbench:tpcb-like", warmup=1) + iterations_toml(
    {"name": "base", "settings": {"synchronous_commit": "on"}, "actions": ["restart"]},
    {"name": "async commit", "settings": {"synchronous_commit": "off"}},
    {"name": "checkpointed", "actions": ["checkpoint", "prewarm"]},
)


def console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, width=200, force_terminal=False), buf


def test_runs_every_point_and_repeat(tmp_path: Path) -> None:
    archive = archive_at(tmp_path)
    backend = FakeBackend()
    con, out = console()
    result = run_study(parse(STUDY), archive=archive, backend=backend, console=con)
    assert result.status == "done" and result.completed == 9 and result.ran == 9
    runs = archive.study_runs("s1")
    assert [(r.study_point, r.repeat) for r in runs] == [
        (f"iter-0{i}", k) for i in range(3) for k in range(3)
    ]
    assert all(r.status == "ok" for r in runs)
    assert archive.get_study("s1").status == "done"
    assert archive.get_study("s1").spec == STUDY
    text = out.getvalue()
    assert "[1/9] point 1/3 base repeat 1/3" in text
    assert "ETA" in text and "[9/9]" in text


def test_order_of_events(tmp_path: Path) -> None:
    backend = FakeBackend()
    con, _ = console()
    run_study(parse(STUDY), archive=archive_at(tmp_path), backend=backend, console=con)
    kinds = [c[0] for c in backend.calls]
    # validation of every distinct layer comes before any change
    first_change = kinds.index("ensure")
    assert kinds[:first_change] == ["check", "validate", "validate", "validate"][:first_change]
    assert kinds[first_change : first_change + 4] == ["ensure", "dataset", "apply", "action"]
    actions = [c[2] for c in backend.calls if c[0] == "action"]
    assert actions == ["restart", "checkpoint", "prewarm"]
    applied = [c[2] for c in backend.calls if c[0] == "apply"]
    assert applied[1] == {"synchronous_commit": "off"}
    # the data is generated once, the server started by the study is stopped at the end
    assert kinds.count("dataset") == 1
    assert backend.calls[-1] == ("stop", "s1-pg15")


def test_validation_happens_before_anything(tmp_path: Path) -> None:
    archive = archive_at(tmp_path)
    backend = FakeBackend(bad_settings={"synchronous_commit": "off"})
    with pytest.raises(StudySpecError, match=r"^iterations\[1\]\.settings\.synchronous_commit: "):
        run_study(parse(STUDY), archive=archive, backend=backend, console=console()[0])
    assert not [c for c in backend.calls if c[0] not in ("check", "validate")]
    assert archive.list_studies() == []

    backend = FakeBackend(missing_env="s1-pg15")
    with pytest.raises(StudySpecError, match=r"^environment\.version: "):
        validate(parse(STUDY), backend)


def test_interrupt_then_resume(tmp_path: Path) -> None:
    archive = archive_at(tmp_path)
    backend = FakeBackend(interrupt_at=4)
    con, _ = console()
    with pytest.raises(StudyInterrupted) as stop:
        run_study(parse(STUDY), archive=archive, backend=backend, console=con)
    assert stop.value.result.completed == 4
    assert archive.get_study("s1").status == "interrupted"
    assert ("stop", "s1-pg15") in backend.calls  # no server left running

    with pytest.raises(PgrigError, match=r"already exists.*--resume"):
        run_study(parse(STUDY), archive=archive, backend=FakeBackend(), console=con)

    resumed = FakeBackend()
    result = run_study(parse(STUDY), archive=archive, backend=resumed, console=con, resume=True)
    assert result.status == "done" and result.ran == 5 and result.completed == 9
    executed = [(c[1], c[2]) for c in resumed.calls if c[0] == "execute"]
    assert executed[0] == ("iter-01", 1)  # where it stopped
    # entering the first point again re-applies its settings (server state is unknown)
    assert next(c for c in resumed.calls if c[0] == "apply")[2] == {"synchronous_commit": "off"}
    assert len(completed_runs(archive.study_runs("s1"))) == 9
    assert archive.get_study("s1").status == "done"

    again = run_study(
        parse(STUDY), archive=archive, backend=FakeBackend(), console=con, resume=True
    )
    assert again.ran == 0 and again.status == "done"


def test_a_signal_before_the_first_run_leaves_the_study_interrupted(tmp_path: Path) -> None:
    """SIGTERM between the study's row and its first run (here: while the backend takes its
    environments) must not leave it "running" with nobody running it."""
    archive = archive_at(tmp_path)
    backend = FakeBackend()

    def stopped(*_args: object) -> None:
        raise KeyboardInterrupt

    backend.begin_study = stopped  # type: ignore[attr-defined]
    with pytest.raises(KeyboardInterrupt):
        run_study(parse(STUDY), archive=archive, backend=backend, console=console()[0])
    assert archive.get_study("s1").status == "interrupted"  # --resume continues it


def test_resume_refuses_a_changed_file(tmp_path: Path) -> None:
    archive = archive_at(tmp_path)
    con, _ = console()
    with pytest.raises(StudyInterrupted):
        run_study(parse(STUDY), archive=archive, backend=FakeBackend(interrupt_at=1), console=con)
    changed = parse(STUDY.replace("repeats = 3", "repeats = 4"))
    with pytest.raises(PgrigError, match="different file"):
        run_study(changed, archive=archive, backend=FakeBackend(), console=con, resume=True)


def test_failed_runs_are_kept_and_rerun_on_resume(tmp_path: Path) -> None:
    archive = archive_at(tmp_path)
    con, out = console()
    result = run_study(parse(STUDY), archive=archive, backend=FakeBackend(fail_at={2}), console=con)
    assert result.status == "failed" and result.failed == 1 and result.completed == 8
    assert "run 3 failed" in out.getvalue()
    assert archive.get_study("s1").status == "failed"
    again = run_study(
        parse(STUDY), archive=archive, backend=FakeBackend(), console=con, resume=True
    )
    assert again.ran == 1 and again.status == "done"
    statuses = [r.status for r in archive.study_runs("s1")]
    assert statuses.count("failed") == 1 and statuses.count("ok") == 9


def test_on_failure_stop(tmp_path: Path) -> None:
    archive = archive_at(tmp_path)
    text = STUDY.replace("repeats = 3", 'repeats = 3\non_failure = "stop"')
    result = run_study(
        parse(text), archive=archive, backend=FakeBackend(fail_at={1}), console=console()[0]
    )
    assert result.status == "failed" and result.ran == 2
    assert "run 2 failed" in (result.error or "")


def test_environment_switch_stops_the_previous_server(tmp_path: Path) -> None:
    text = STUDY.replace(
        '[environment]\nversion = "15"\n',
        '[environments.a]\nversion = "15"\n[environments.b]\nversion = "18"\n',
    ).replace('name = "async commit"', 'name = "async commit"\nenvironment = "b"')
    backend = FakeBackend()
    run_study(parse(text), archive=archive_at(tmp_path), backend=backend, console=console()[0])
    seq = [c[:2] for c in backend.calls if c[0] in ("ensure", "stop", "dataset")]
    assert seq == [
        ("ensure", "s1-a"),
        ("dataset", "s1-a"),
        ("stop", "s1-a"),
        ("ensure", "s1-b"),
        ("dataset", "s1-b"),
        ("ensure", "s1-b"),
        ("stop", "s1-b"),
    ]


def test_dataset_reset_per_run(tmp_path: Path) -> None:
    text = STUDY.replace("scale = 1", 'scale = 1\nreset = "run"')
    backend = FakeBackend()
    run_study(parse(text), archive=archive_at(tmp_path), backend=backend, console=console()[0])
    forced = [c[2] for c in backend.calls if c[0] == "dataset"]
    assert forced[0] is False and forced.count(True) == 8


def test_a_server_that_was_running_keeps_running_with_its_settings_back(tmp_path: Path) -> None:
    backend = FakeBackend(running={"s1-pg15"})
    run_study(parse(STUDY), archive=archive_at(tmp_path), backend=backend, console=console()[0])
    assert backend.calls[-1] == ("restore", "s1-pg15")
    assert ("stop", "s1-pg15") not in backend.calls
