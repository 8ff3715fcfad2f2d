"""The evidence column in every report's verdict table (issue 26 item 4): what the runs show
beside each verdict, from the same function (views/evidence.py), in the tuning report's
confirmation, the sweep report, the iteration report and `report compare`."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console
from study_fakes import FakeBackend, study_toml
from test_insights_changes import digest, waits
from test_tune import TuneFake, _request

from pgrig.archive.records import RunRecord
from pgrig.archive.store import Archive
from pgrig.reports import markdown, publish
from pgrig.study.runner import run_study
from pgrig.study.spec import parse
from pgrig.tune import confirm
from pgrig.tune.runner import run_tune
from pgrig.views import evidence


def _insights(requested: int, wal_wait: int) -> dict[str, Any]:
    return {
        "log_digest": digest(requested=requested),
        "waits": waits(10, CPU=10 - wal_wait, LWLock_WALWrite=wal_wait),
        "statements": {"collected": False, "reason": "off"},
        "plans": {"collected": False, "reason": "off"},
    }


class _Stamping:
    """The archive, seen by a fake backend: every finished run gets insights by its point."""

    def __init__(self, archive: Archive, by_point: dict[str | None, dict[str, Any]]) -> None:
        self.archive, self.by_point = archive, by_point

    def __getattr__(self, name: str) -> Any:
        return getattr(self.archive, name)

    def finish_run(self, rec: RunRecord, **kw: Any) -> None:
        rec.insights = self.by_point.get(rec.study_point) or _insights(0, 0)
        self.archive.finish_run(rec, **kw)


class _TuneWithInsights(TuneFake):
    def execute(self, spec: Any, archive: Any, console: Any, stop_if: Any = None) -> Any:
        stamped = _Stamping(archive, {confirm.point_key(confirm.BASELINE): _insights(3, 6)})
        return super().execute(spec, stamped, console, stop_if)


def test_the_tuning_confirmation_carries_each_sides_evidence(archive: Archive) -> None:
    run_tune(_request(), archive=archive, backend=_TuneWithInsights(running={"e1"}))  # type: ignore[arg-type]
    text = markdown.render(publish.study_document(archive, "t"), "t")
    section = text.split("## Confirmation")[1].split("\n## ")[0]
    header = next(ln for ln in section.splitlines() if ln.startswith("| question |"))
    assert header.rstrip(" |").endswith("evidence")
    runs = archive.study_runs("t")
    archive.add_blobs(runs, ("host", "insights", "extra"))
    groups = confirm.groups(runs)
    base_text = evidence.text(groups[confirm.BASELINE])
    # independently: 3 requested checkpoints and LWLock:WALWrite at 60% in every baseline run
    assert base_text.startswith("checkpoints requested 3") and "LWLock:WALWrite 60%" in base_text
    row = next(ln for ln in section.splitlines() if ln.startswith("| best vs baseline | TPS"))
    assert f"baseline: {base_text}" in row
    assert f"best: {evidence.text(groups[confirm.BEST])}" in row


SWEEP = (
    study_toml("sw", repeats=2)
    + """
[sweep]
x = "clients"
clients = [1, 4]
"""
)


def test_the_sweep_report_has_the_evidence_column(archive: Archive) -> None:
    class Backend(FakeBackend):
        def execute(self, spec: Any, arch: Any, console: Any) -> RunRecord:
            return super().execute(spec, _Stamping(arch, {}), console)

    quiet = Console(file=io.StringIO())
    run_study(parse(SWEEP), archive=archive, backend=Backend(), console=quiet)
    text = markdown.render(publish.study_document(archive, "sw"), "sw")
    header = next(ln for ln in text.splitlines() if ln.startswith("| clients |"))
    assert "| evidence |" in header
    assert "checkpoints requested 0<br>autovacuum 0<br>top wait CPU 100%" in text


def test_the_track_report_has_each_versions_evidence(tmp_path: Any) -> None:
    from study_fakes import archive_at

    from pgrig.track import figures, runner, versions
    from pgrig.views import track as track_page
    from tests.unit.test_track_series import OFFERS, FakeMeasurer, _spec

    class Stamped(FakeMeasurer):
        def __init__(self, archive: Any, levels: dict[str, float]) -> None:
            by_point = {"18.6": _insights(2, 6)}  # the newer version: checkpoints, WAL waits
            super().__init__(_Stamping(archive, by_point), levels)

    store = archive_at(tmp_path)
    levels = {"18.3": 1000.0, "18.6": 900.0}
    series = runner.open_series(store, _spec(3), "s1", versions.expand("18.3,18.6", OFFERS))
    runner.measure(series, Stamped(store, levels), store)
    page = track_page.build(figures.build(runner.load_series(store, "s1"), archive=store))
    assert page.versions.columns[-1] == "evidence"
    newer = page.versions.rows[1][-1].lines
    # 3 repeats of 10 sampled states each (documents without effective sizes: no bounds)
    top = "top wait LWLock:WALWrite 60% of 30 samples"
    assert newer[0] == "checkpoints requested 2" and newer[-1] == top
    (md,) = publish.track_report(store, "s1", ["md"], tmp_path / "out")
    assert f"checkpoints requested 2<br>autovacuum 0<br>{top}" in md.read_text()
