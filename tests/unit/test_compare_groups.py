"""A group of runs compared is repeats of one configuration: a group mixing server versions,
workloads or settings gets no verdict (and no centre) on any surface; a run list names its
runs within a bound."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pgrig.errors import PgrigError


def _stored(archive: Any, tps: list[float], seed: int, **attrs: Any) -> list[int]:
    from study_fakes import make_record

    ids = []
    for i, v in enumerate(tps):
        rec = make_record(tps=v, seconds=20, warmup=2, seed=seed + i)
        for k, value in attrs.items():
            setattr(rec, k, value[i] if isinstance(value, list) else value)
        archive.finish_run(rec)
        ids.append(rec.id)
    return ids


def _all_surfaces(archive: Any, url: str, client: Any, tmp_path: Path, a: list[int], b: list[int]):
    """(CLI JSON verdict, CLI text, Markdown report, web page) of the comparison A vs B."""
    import json

    from typer.testing import CliRunner

    from pgrig.cli.runs import app as runs_app
    from pgrig.reports import publish
    from pgrig.web import compare_page

    ga, gb = ",".join(map(str, a)), ",".join(map(str, b))
    doc = json.loads(
        CliRunner().invoke(runs_app, ["compare", ga, gb, "--json", "--archive", url]).stdout
    )
    text = CliRunner().invoke(runs_app, ["compare", ga, gb, "--archive", url]).stdout
    (md,) = publish.compare_report(archive, [a, b], ["md"], tmp_path)
    web = client.get(compare_page.compare_url([a, b])).text
    return doc["verdict"], " ".join(text.split()), md.read_text(), web


def test_a_group_mixing_server_versions_gets_no_verdict_on_any_surface(
    archive: Any, url: str, client: Any, tmp_path: Path
) -> None:
    a = _stored(archive, [1000, 1010, 990], 1, server_version=["15.10", "18.1", "15.10"])
    b = _stored(archive, [1300, 1310, 1290], 20, server_version="15.10")
    verdict, text, md, web = _all_surfaces(archive, url, client, tmp_path, a, b)
    assert verdict["verdict"] is None
    assert "server version 15.10 (runs 1, 3) / 18.1 (run 2)" in verdict["reason"]
    assert "not repeats of one configuration" in text and "faster" not in text
    import compare_surfaces as surfaces

    said = f"no verdict: {verdict['reason']}"
    assert surfaces.from_markdown(md, "runs " + ",".join(map(str, b)))[1] == said
    assert surfaces.from_web(web)[1] == said


def test_a_group_mixing_workloads_or_settings_gets_no_verdict() -> None:
    from study_fakes import make_record

    from pgrig.analysis.compare import compare_runs

    def runs(first: int, tps: list[float], **attrs: Any) -> list[Any]:
        out = []
        for i, v in enumerate(tps):
            r = make_record(tps=v, seed=first + i)
            r.id = first + i
            for k, value in attrs.items():
                setattr(r, k, value[i])
            out.append(r)
        return out

    base = runs(1, [1000, 1010, 990])
    mixed = runs(10, [1300, 1310, 1290], workload=["pgbench:tpcb-like", "tpcc", "tpcc"])
    c = compare_runs(base, mixed)
    assert c.verdict is None and "workload pgbench:tpcb-like (run 10) / tpcc (runs 11, 12)" in (
        c.reason or ""
    )
    layers = [{"environment": {"work_mem": v}} for v in ("4MB", "4MB", "64MB")]
    c = compare_runs(base, runs(10, [1300, 1310, 1290], settings_layers=layers))
    assert c.verdict is None and "setting work_mem 4MB (runs 10, 11) / 64MB (run 12)" in (
        c.reason or ""
    )


def test_two_different_workloads_are_said_above_the_verdict(
    archive: Any, url: str, client: Any, tmp_path: Path
) -> None:
    a = _stored(archive, [1000, 1010, 990], 1, workload="pgbench:tpcb-like")
    b = _stored(archive, [1300, 1310, 1290], 20, workload="pgbench:select-only")
    verdict, text, md, web = _all_surfaces(archive, url, client, tmp_path, a, b)
    caveat = "different workloads: A runs pgbench:tpcb-like, B runs pgbench:select-only"
    assert verdict["caveat"] == caveat and verdict["description"].startswith(caveat)
    assert f"verdict on TPS: {caveat}" in text
    assert caveat in md and caveat in web


def test_a_group_mixing_workloads_has_no_centre() -> None:
    from pgrig.analysis.compare import group_value
    from pgrig.archive.records import RunRecord

    def run(workload: str, tps: float) -> RunRecord:
        rec = RunRecord(env_name="e", workload=workload, clients=1, threads=1, status="ok")
        rec.tps = tps
        return rec

    same = [run("pgbench:select-only", 100.0), run("pgbench:select-only", 110.0)]
    assert group_value(same, lambda r: r.tps) is not None
    mixed = [run("pgbench:select-only", 100.0), run("pgbench:tpcb-like", 10.0)]
    assert group_value(mixed, lambda r: r.tps) is None


def test_a_huge_or_backwards_run_range_gets_a_specific_error() -> None:
    from pgrig.reports.publish import parse_group

    with pytest.raises(PgrigError, match=r"'1-999999999' spans 999,999,999 runs, at most 1,001"):
        parse_group("1-999999999")
    with pytest.raises(PgrigError, match=r"'6-4' runs backwards: write 4-6"):
        parse_group("6-4")
    with pytest.raises(PgrigError, match=r"bad run list 'x'"):
        parse_group("x")
    assert parse_group("1,4-6") == [1, 4, 5, 6]
