"""TPC-H runs among the figures (record/figures.py): their headline (Power@Size, Throughput@Size,
QphH@Size with its unit) in the runs list and the run summary instead of a TPS they do not have,
and every query judged by the comparison engine, said alike by every compare surface.

The records are the captured SF 0.01 power run (tests/fixtures/runs/tpch_power.json) with its
query times scaled: what a slower query looks like, every other figure as captured.
"""

from __future__ import annotations

import copy
import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import compare_surfaces as surfaces
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from pgrig.analysis.compare import compare_runs
from pgrig.archive.records import RunRecord
from pgrig.archive.store import Archive
from pgrig.cli.runs import app as runs_app
from pgrig.record.figures import BY_KEY, headline
from pgrig.reports import publish
from pgrig.views import run_summary, runs_list
from pgrig.web import compare_page
from pgrig.workloads.tpch import metrics

CAPTURED = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "runs" / "tpch_power.json").read_text()
)


def power_run(slower: dict[int, float] | None = None, jitter: float = 0.0, n: int = 0) -> RunRecord:
    """The captured power run, query q's time times slower[q] (and 1 + jitter x a fixed
    pattern, so repeats are not identical), its Power@Size computed again from them."""
    doc = copy.deepcopy(CAPTURED["extra"]["tpch"])
    for i, q in enumerate(doc["queries"]):
        wobble = 1 + jitter * math.sin(7 * n + i)
        q["seconds"] = q["seconds"] * (slower or {}).get(q["query"], 1.0) * wobble
    by_query = {q["query"]: q["seconds"] for q in doc["queries"]}
    doc["power_at_size"] = metrics.power_at_size(
        doc["scale_factor"],
        [by_query[q] for q in sorted(by_query)],
        [r["seconds"] for r in doc["refresh"]],
    )
    rec = RunRecord(
        env_name="th", workload="tpch:power", clients=1, threads=1, status="ok",
        scenario="tpch", server_version="18.6", server_major=18,
        started_at=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=n),
    )  # fmt: skip
    rec.extra = {"tpch": doc}
    rec.measured_s = doc["interval_s"]
    return rec


def test_a_tpch_runs_headline_is_its_own_figure_with_its_unit() -> None:
    rec = power_run()
    rec.id = 3
    power = rec.extra["tpch"]["power_at_size"]
    assert headline(rec) is BY_KEY["tpch.power_at_size"]
    row = runs_list.row(rec)
    shown = f"{power:,.1f}" if power < 1000 else f"{power:,.0f}"
    assert row.text("tps") == f"{shown} QppH@Size"  # not "-": TPC-H has no TPS
    assert (row.headline.text, row.headline.more) == (shown, " QppH@Size")
    assert run_summary.headline_of(rec) == ("Power@Size", f"{shown} QppH@Size")
    for mode, key, unit in (
        ("throughput", "throughput_at_size", "QthH@Size"),
        ("performance", "qphh_at_size", "QphH@Size"),
    ):
        other = power_run()
        other.extra["tpch"] |= {"mode": mode, key: 1234.5}
        assert runs_list.row(other).text("tps") == f"1,234 {unit}"
    timed_out = power_run()
    timed_out.extra["tpch"]["power_at_size"] = None
    assert runs_list.row(timed_out).text("tps") == "-"
    pgbench = RunRecord(env_name="e", workload="pgbench:tpcb", clients=1, threads=1)
    pgbench.tps = 4321.5
    assert runs_list.row(pgbench).text("tps") == "4,322"  # as before
    assert (runs_list.row(pgbench).headline.text, runs_list.row(pgbench).headline.more) == (
        "4,322", " TPS",
    )  # fmt: skip


def test_each_query_of_a_power_run_is_a_judged_figure() -> None:
    base = [power_run(jitter=0.01, n=i) for i in range(4)]
    cand = [power_run({18: 2.0}, jitter=0.01, n=10 + i) for i in range(4)]
    q18 = compare_runs(base, cand, "tpch.q18")
    assert q18.verdict == "slower" and q18.ratio == pytest.approx(2.0, rel=0.05)
    q1 = compare_runs(base, cand, "tpch.q1")
    assert q1.verdict == "equivalent", q1.describe()
    assert compare_runs(base, cand, "tpch.power_at_size").ratio < 1
    # one run a side: one time per query, no statistics (as for any figure without seconds)
    single = compare_runs(base[:1], cand[:1], "tpch.q18")
    assert single.verdict is None and single.ratio == pytest.approx(2.0, rel=0.05)
    assert "repeat the runs" in (single.advice or "")


def _store(archive: Archive, runs: list[RunRecord]) -> list[int]:
    for rec in runs:
        archive.finish_run(rec)
    return [r.id for r in runs if r.id is not None]


@pytest.mark.parametrize("query", [18, 1, 6])
def test_every_compare_surface_gives_each_querys_verdict(
    query: int, url: str, archive: Archive, client: TestClient, tmp_path: Path
) -> None:
    base = _store(archive, [power_run(jitter=0.01, n=i) for i in range(4)])
    cand = _store(archive, [power_run({18: 2.0, 6: 0.5}, jitter=0.01, n=9 + i) for i in range(4)])
    key = f"tpch.q{query}"
    expected = compare_runs(
        [archive.get_run(i) for i in base], [archive.get_run(i) for i in cand], key
    )
    want = (expected.ratio_text(), expected.verdict_text())
    assert want[1] == {18: "slower", 1: "equivalent", 6: "faster"}[query]
    heading = BY_KEY[key].heading

    a, b = ",".join(map(str, base)), ",".join(map(str, cand))
    as_json = CliRunner().invoke(runs_app, ["compare", a, b, "--json", "--archive", url])
    assert as_json.exit_code == 0, as_json.output
    doc: dict[str, Any] = json.loads(as_json.stdout)
    assert surfaces.figure_from_json(doc, key) == want
    # the headline verdict of a TPC-H comparison is on Power@Size, not a TPS it has not
    assert doc["verdict"]["metric"] == "tpch.power_at_size"
    text = CliRunner().invoke(runs_app, ["compare", a, b, "--archive", url], env={"COLUMNS": "250"})
    assert text.exit_code == 0, text.output
    assert surfaces.figure_from_text(text.stdout, heading) == want
    assert "verdict on Power@Size: " in text.stdout

    md, page = publish.compare_report(archive, [base, cand], ["md", "html"], tmp_path)
    assert surfaces.figure_from_markdown(md.read_text(), heading) == want
    assert surfaces.figure_from_report_html(page.read_text(), heading) == want
    assert "| Power@Size [bounds] |" in md.read_text()

    web = client.get(compare_page.compare_url([base, cand]))
    assert web.status_code == 200
    assert surfaces.figure_from_web(web.text, heading) == want


def test_the_runs_list_shows_a_tpch_runs_figure_on_the_cli_and_the_page(
    url: str, archive: Archive, client: TestClient
) -> None:
    """The list's light records are given the TPC-H document their headline reads (it showed
    "-" as TPS)."""
    (run_id,) = _store(archive, [power_run()])
    shown = runs_list.row(archive.get_run(run_id)).text("tps")
    assert shown.endswith(" QppH@Size") and shown[0].isdigit()
    listed = CliRunner().invoke(runs_app, ["list", "--archive", url], env={"COLUMNS": "200"})
    assert listed.exit_code == 0, listed.output
    assert shown in listed.stdout
    page = client.get("/runs")
    assert page.status_code == 200
    number = shown.removesuffix(" QppH@Size")
    assert f'{number} <span class="unit">QppH@Size</span>' in page.text


STUDY = """
[study]
name = "th-work-mem"
repeats = 2

[environment]
name = "th"
create = false

[dataset]
scenario = "tpch"
scale_factor = 0.01

[run]
workload = "{workload}"
query_timeout = 60
tpch_seed = 7
{more}

[[iterations]]
name = "base"

[[iterations]]
name = "work_mem 64MB"
settings = {{ work_mem = "64MB" }}
{iteration_run}
"""


def _study(workload: str = "tpch:power", more: str = "", iteration_run: str = "") -> Any:
    from pgrig.study import spec as study_spec

    return study_spec.parse(STUDY.format(workload=workload, more=more, iteration_run=iteration_run))


def test_a_study_runs_tpch_and_judges_its_points_on_the_tests_figure() -> None:
    from pgrig.study import plan as planning
    from pgrig.views.study_data import compare_points, summarize_point

    spec = _study()
    assert spec.dataset.scale_factor == 0.01 and spec.run.query_timeout_s == 60
    plan = planning.build(spec)
    request = plan.run_request(plan.runs[0])
    assert (request.workload, request.tpch_seed, request.query_timeout_s) == ("tpch:power", 7, 60)
    assert request.scenario == "tpch" and request.duration_s is None
    assert plan.figure is BY_KEY["tpch.power_at_size"]
    # the points' figures are their runs' Power@Size (a TPC-H run has no TPS)
    base = [power_run(jitter=0.01, n=i) for i in range(4)]
    slow = [power_run({18: 3.0, 9: 3.0}, jitter=0.01, n=9 + i) for i in range(4)]
    for i, rec in enumerate([*base, *slow]):
        rec.repeat = i % 4  # a point keeps its latest run of each repeat
    a, b = (summarize_point(p, runs, spec.misrate, {}, plan.figure)
            for p, runs in zip(plan.points, (base, slow), strict=True))  # fmt: skip
    power = base[0].extra["tpch"]["power_at_size"]
    assert a.tps is not None and a.tps.center == pytest.approx(power, rel=0.01)
    verdict = compare_points(a, b, spec.threshold, spec.misrate)
    assert verdict is not None and verdict.metric == "tpch.power_at_size"
    assert verdict.verdict == "slower"
    streamed = _study("tpch", more="streams = 2")
    assert planning.build(streamed).figure is BY_KEY["tpch.qphh_at_size"]
    assert planning.build(streamed).run_request(planning.build(streamed).runs[0]).streams == 2


def test_a_study_mixing_tpch_with_another_figure_is_refused_saying_why() -> None:
    from pgrig.study import plan as planning
    from pgrig.study.spec import StudySpecError

    mixed = _study(iteration_run='run = { workload = "tpch" }')
    with pytest.raises(StudySpecError, match=r"run.workload: workloads tpch, tpch:power share no"):
        planning.build(mixed)
    with pytest.raises(StudySpecError, match="streams"):
        _study(more="streams = 2")  # the power test has one stream


def test_a_track_refuses_tpch_saying_why_and_what_to_do_instead() -> None:
    from pgrig.errors import PgrigError
    from pgrig.track import flow

    with pytest.raises(PgrigError, match=r"TPC-H run needs its own data.*with a study instead"):
        flow.series_load(
            workload="tpch:power", clients=1, threads=1, duration=10, warmup=0, protocol="simple"
        )


def test_a_tpch_runs_summary_says_its_figures_and_no_tps_it_has_not() -> None:
    items = dict(run_summary.results(power_run()))
    assert "TPS" not in items and items["Power@Size (SF 0.01)"] != "-"
    pgbench = RunRecord(env_name="e", workload="pgbench:tpcb", clients=1, threads=1)
    assert dict(run_summary.results(pgbench))["TPS"] == "-"  # as before: no TPS measured
