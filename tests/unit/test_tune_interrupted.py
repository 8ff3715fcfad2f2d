"""Issue 43, class 2: a tuning study that did not end says so first on every surface (`tune
show`, the summary, `study show --json`, the report and so the web page), gives no `env set`
line for a best trial its confirmation did not confirm, and no firm verdict from bounds wider
than the study's level."""

from __future__ import annotations

import json
from typing import Any

import pytest
from study_fakes import FakeBackend
from test_tune_attribution import _request

from pgrig.archive.store import Archive
from pgrig.reports import markdown, publish
from pgrig.tune import confirm
from pgrig.tune.runner import TuneInterrupted, run_tune
from pgrig.views import tune_attribution

# the fake's runs: the baseline (0), 4 trials (1-4), then the confirmation's rounds of 3 runs


class TuneFake(FakeBackend):
    def execute(self, spec: Any, archive: Any, console: Any, stop_if: Any = None) -> Any:
        return super().execute(spec, archive, console)


def _interrupted(archive: Archive, at: int, repeats: int, ablate: int = 0) -> Any:
    with pytest.raises(TuneInterrupted):
        run_tune(
            _request(repeats=repeats, ablate=ablate),
            archive=archive,
            backend=TuneFake(running={"e1"}, interrupt_at=at),  # type: ignore[arg-type]
        )
    rec = archive.get_study("t")
    assert rec.status == "interrupted"
    runs = archive.study_runs("t")
    return rec, runs, tune_attribution.build(rec.extra, runs, "tps", status=rec.status)


def test_interrupted_in_its_confirmation_heads_every_surface_and_suggests_nothing(
    archive: Archive, capsys: pytest.CaptureFixture[str]
) -> None:
    from pgrig.cli import tune as tune_cli

    rec, _runs, a = _interrupted(archive, at=8, repeats=4)  # after one round of three
    said = "interrupted in its confirmation after 1 of 4 rounds: the best trial is not confirmed"
    assert a.unfinished is not None and a.unfinished.startswith(said)
    assert not a.confirmation_ended
    text = tune_cli.render("t", "e1", rec.extra["best"]["settings"], a)
    lines = text.splitlines()
    assert lines[1].startswith("# I" + said[1:])  # first, under the title
    assert "\npgrig env set" not in text  # nothing a paste would run: commented out
    assert "# not to apply as it is: the best trial was not confirmed (its confirmation did " in (
        text
    )
    assert "\n# pgrig env set e1 shared_buffers=" in text

    md = " ".join(markdown.render(publish.study_document(archive, "t"), "t").split())
    answer = md.split("## Answer", 1)[1]
    assert answer.lstrip().startswith(f"> This tuning study was {said}")  # first, a warning
    assert "The best trial was not confirmed" in answer

    assert tune_cli._where_stopped(archive, "t", 4).startswith(said)  # `pgrig tune`'s own line
    tune_cli.show_study(archive, "t", as_json=True)
    doc = json.loads(capsys.readouterr().out)
    assert doc["unfinished"].startswith(said)
    assert doc["confirmation_ended"] is False and doc["confirmed"] is False


def test_a_round_stopped_inside_is_not_counted_done(archive: Archive) -> None:
    """Stopped after one whole round and the first run of the second: 1 round, not 2."""
    _rec, _runs, a = _interrupted(archive, at=9, repeats=4)
    assert a.unfinished is not None and a.unfinished.startswith(
        "interrupted in its confirmation after 1 of 4 rounds and 1 of 3 runs of the next: the "
        "best trial is not confirmed"
    )


def test_a_confirmation_stopped_in_its_first_round_has_no_verdict(archive: Archive) -> None:
    """Stopped inside the first round: no verdict rests on 'those rounds' (case 32)."""
    _rec, _runs, a = _interrupted(archive, at=7, repeats=4)
    assert a.unfinished is not None and a.unfinished.startswith(
        "interrupted in its confirmation after 0 of 4 rounds"
    ), a.unfinished
    assert a.unfinished.endswith("no round is whole, so there is no verdict"), a.unfinished


def test_interrupted_in_its_ablation_gives_no_firm_verdict_from_wide_bounds(
    archive: Archive, capsys: pytest.CaptureFixture[str]
) -> None:
    from pgrig.cli import tune as tune_cli

    # two confirmation rounds (runs 5-10): 2 vs 2 repeats reach 66.7% bounds, not 95%
    rec, runs, a = _interrupted(archive, at=13, repeats=2, ablate=3)
    assert a.unfinished is not None
    assert a.unfinished.startswith("interrupted in its ablation after ")
    assert a.confirmation_ended  # its verdicts are the answer: inconclusive, see below
    [base, _pgtune] = a.verdicts
    c = base.comparison
    assert c is not None and c.insufficient and c.lower is not None and c.lower > 1.02
    assert c.verdict == "inconclusive"  # the +20% fake, on 66.7% bounds: not "faster"
    assert c.verdict_text() == (
        "inconclusive (faster only on 66.7% bounds, below the 95% asked: too few values, "
        "add repeats)"
    )
    assert a.gain is None  # no share of a gain that is not established
    text = tune_cli.render("t", "e1", rec.extra["best"]["settings"], a)
    assert text.splitlines()[1].startswith("# Interrupted in its ablation after ")
    assert " faster;" not in text and "] faster" not in text
    # confirmed as a phase, not as faster: the line stays, commented out under the reason
    assert "\npgrig env set" not in text and "\n# pgrig env set e1 " in text
    assert (
        "# not to apply as it is: the confirmation did not find it faster than the baseline "
        "(inconclusive (faster only on 66.7% bounds" in text
    )
    # the confirmation's own verdicts, as every surface computes them
    found = confirm.verdicts(runs, "tps", 0.02, confirm.misrate_of(rec.extra))
    assert [v.comparison.verdict for v in found if v.comparison] == ["inconclusive"] * 2
    # the JSON says what the text says: the phase ended, the best is not confirmed
    tune_cli.show_study(archive, "t", as_json=True)
    doc = json.loads(capsys.readouterr().out)
    assert (doc["confirmation_ended"], doc["confirmed"]) == (True, False)


def test_a_study_that_ended_is_not_called_unfinished(
    archive: Archive, capsys: pytest.CaptureFixture[str]
) -> None:
    from pgrig.cli import tune as tune_cli

    run_tune(_request(repeats=4), archive=archive, backend=TuneFake(running={"e1"}))  # type: ignore[arg-type]
    rec = archive.get_study("t")
    a = tune_attribution.build(rec.extra, archive.study_runs("t"), "tps", status=rec.status)
    assert rec.status == "done" and a.unfinished is None and a.confirmation_ended
    assert a.gain is not None and tune_cli.unconfirmed(a) is None  # confirmed faster
    text = tune_cli.render("t", "e1", rec.extra["best"]["settings"], a)
    assert "# apply with pgrig:\npgrig env set e1 " in text and "not to apply" not in text
    tune_cli.show_study(archive, "t", as_json=True)
    doc = json.loads(capsys.readouterr().out)
    assert (doc["unfinished"], doc["confirmation_ended"], doc["confirmed"]) == (None, True, True)


def test_an_interrupted_plain_study_says_so_first_on_every_surface(tmp_path: Any) -> None:
    from study_fakes import archive_at, iterations_toml, study_toml

    from pgrig.study.runner import StudyInterrupted, run_study
    from pgrig.study.spec import parse
    from pgrig.views import study as study_view
    from pgrig.views.study_data import load_study

    text = study_toml("s1", repeats=3, workload="pgbench:tpcb-like") + iterations_toml(
        {"name": "base", "settings": {"synchronous_commit": "on"}},
        {"name": "async commit", "settings": {"synchronous_commit": "off"}},
    )
    archive = archive_at(tmp_path)
    with pytest.raises(StudyInterrupted):
        run_study(parse(text), archive=archive, backend=FakeBackend(interrupt_at=4))
    view = study_view.build(load_study(archive, "s1", with_series=False))
    said = "interrupted: 4 of 6 runs done; its figures, verdicts and best point rest on those"
    assert view.unfinished is not None and view.unfinished.startswith(said)
    assert study_view.to_json(view)["unfinished"] == view.unfinished
    md = " ".join(markdown.render(publish.study_document(archive, "s1"), "s1").split())
    setup = md.split("## Set-up", 1)[1].lstrip()
    assert setup.startswith("> This study is interrupted: 4 of 6 runs done;")


class _DataFake(TuneFake):
    """Ctrl-C while the preset's data is generated."""

    def prepare_dataset(self, env: Any, dataset: Any, force: bool) -> bool:
        raise KeyboardInterrupt


@pytest.mark.parametrize(
    ("where", "said"),
    [
        (
            "data generation",
            "interrupted in its data generation (pgbench data, scale 1), before its baseline: "
            "nothing measured",
        ),
        ("baseline", "interrupted in its baseline run, before any trial: nothing measured"),
    ],
)
def test_interrupted_before_its_first_trial_says_where_on_every_surface(
    archive: Archive, capsys: pytest.CaptureFixture[str], where: str, said: str
) -> None:
    """Issue 43 (F10): not only "no completed trial": where it stopped heads `tune show`, the
    summary, `study show --json` and `pgrig tune`'s own line."""
    from dataclasses import replace

    from pgrig.cli import tune as tune_cli
    from pgrig.errors import PgrigError
    from pgrig.study.spec import DatasetSpec

    req = replace(_request(), dataset=DatasetSpec(scenario="pgbench", scale=1))
    backend = (
        _DataFake(running={"e1"})
        if where == "data generation"
        else TuneFake(running={"e1"}, interrupt_at=0)
    )
    with pytest.raises(TuneInterrupted):
        run_tune(req, archive=archive, backend=backend)  # type: ignore[arg-type]
    rec = archive.get_study("t")
    assert rec.status == "interrupted"
    assert tune_attribution.unfinished(rec.status, rec.extra, archive.study_runs("t")) == said
    with pytest.raises(PgrigError) as e:
        tune_cli.show_recommendation(archive, "t")
    assert str(e.value) == (
        f"tuning study 't' {said}; it has no completed trial: nothing to recommend"
    )
    assert tune_cli._where_stopped(archive, "t", 0) == said
    tune_cli.show_study(archive, "t", as_json=True)
    assert json.loads(capsys.readouterr().out)["unfinished"] == said
    tune_cli.show_study(archive, "t", as_json=False)
    err = " ".join(capsys.readouterr().err.split())
    assert f"tuning study t {said}" in err


@pytest.mark.parametrize("at", [12, 13])
def test_an_ablation_round_stopped_inside_is_not_counted_done(archive: Archive, at: int) -> None:
    """A SIGTERM in the first ablation round, after its best's run: '1 of 2 rounds' was said
    (rounds were counted by the best's runs alone) where none was measured whole."""
    rec, runs, a = _interrupted(archive, at=at, repeats=2, ablate=3)
    names = list(rec.extra["ablation"]["configs"])
    begun = len([r for r in runs if (r.study_point or "").startswith("ablate-")])
    assert 0 < begun < len(names)
    assert a.unfinished == (
        f"interrupted in its ablation after 0 of 3 rounds and {begun} of {len(names)} runs of "
        "the next: no round is whole, so no share of the gain is measured"
    )  # not "rest on those rounds alone": there are none (issue 43, case 32)
