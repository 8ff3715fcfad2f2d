"""The study's hosts table (views/study_hosts.py): per point and host, CPU and the RTT of each
network path, every figure checked against a computation made here from the captured run
documents (tests/fixtures/study_hosts/, real runs of pooler-over-network-small on the rig)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from study_fakes import FakeBackend, archive_at
from study_hosts_fakes import cells, decorate, expected_table, run_hosts_study

from pgrig.reports import publish
from pgrig.views import study as study_view
from pgrig.views import study_hosts
from pgrig.views.study_data import load_study


# --- the tests -------------------------------------------------------------------------------
def test_each_host_of_each_point_as_the_run_documents_say(tmp_path: Path) -> None:
    archive = archive_at(tmp_path)
    run_hosts_study(archive)
    view = study_view.build(load_study(archive, "net", with_series=False, with_evidence=True))
    table = study_hosts.table(view.hosts)
    assert table is not None and table.columns == study_hosts.COLUMNS
    assert cells(table) == expected_table()
    # the pooler's own host is in the points through pgbouncer only, RTT to it
    direct, pooled = view.hosts.points[0], view.hosts.points[2]
    assert "h2" not in [h.host for h in direct.hosts]
    assert {h.host: h.role for h in pooled.hosts}["h2"] == "pooler"


def test_json_holds_the_figures_the_table_rounds(tmp_path: Path) -> None:
    archive = archive_at(tmp_path)
    run_hosts_study(archive)
    view = study_view.build(load_study(archive, "net", with_series=False, with_evidence=True))
    doc = study_view.to_json(view)["hosts"]
    assert [p["label"] for p in doc] == [p.label for p in view.points]
    rows = iter(expected_table())
    for point in doc:
        assert point["measured"] and point["runs"] == 2
        for h in point["hosts"]:
            row = next(rows)
            assert [point["label"], h["host"]] == row[:2]
            assert f"{h['cpu_busy_pct']:.1f}" == row[3]
            assert f"{h['cpu_iowait_pct']:.1f} / {h['cpu_steal_pct']:.1f}" == row[4]
            assert str(h["cpu_samples"]) == row[6] and h["cpu_runs"] == 2
            for p in h["paths"]:
                assert f"{p['rtt_p50_ms']:.3f} / {p['rtt_p99_ms']:.3f}" == row[8]
                assert str(p["samples"]) == row[9] and p["runs"] == 2
    json.dumps(doc)  # plain JSON


def test_a_point_without_host_samplers_says_not_measured(tmp_path: Path) -> None:
    archive = archive_at(tmp_path)

    def only_direct(rec: Any, spec: Any) -> None:
        if spec.via == "direct":
            decorate(rec, spec)

    run_hosts_study(archive, backend=FakeBackend(decorate=only_direct))
    view = study_view.build(load_study(archive, "net", with_series=False, with_evidence=True))
    table = study_hosts.table(view.hosts)
    assert table is not None
    pooled = [r for r in cells(table) if r[0].startswith("via=pgbouncer")]
    assert pooled == [[f"via=pgbouncer, clients={c}",
                       "not measured: no per-host samplers in its runs", *["-"] * 8]
                      for c in (8, 32)]  # fmt: skip
    doc = study_view.to_json(view)["hosts"]
    assert doc[2] == {"key": view.points[2].key, "label": view.points[2].label, "runs": 2,
                      "measured": False, "hosts": [],
                      "reason": "not measured: no per-host samplers in its runs"}  # fmt: skip


def test_a_study_on_this_machine_alone_has_no_hosts_table(tmp_path: Path) -> None:
    archive = archive_at(tmp_path)
    run_hosts_study(archive, backend=FakeBackend())
    view = study_view.build(load_study(archive, "net", with_series=True))
    assert study_hosts.table(view.hosts) is None
    assert study_view.to_json(view)["hosts"] == []
    (md,) = publish.study_report(archive, "net", ["md"], tmp_path)
    assert "## Hosts" not in md.read_text()


def test_a_host_whose_sampler_failed_and_a_path_not_measured(tmp_path: Path) -> None:
    archive = archive_at(tmp_path)

    def broken(rec: Any, spec: Any) -> None:
        decorate(rec, spec)
        host = next(h for h, rs in rec.extra["host_roles"].items() if "db" in rs)
        del rec.series[f"os@{host}"]
        rec.extra["host_sampler_errors"] = {host: "no python3"}
        for p in rec.extra["network"]["paths"]:
            for k in ("rtt_p50_ms", "rtt_p99_ms", "rtt_max_ms"):
                p.pop(k, None)
            p["samples"], p["error"] = 0, "connection refused"

    run_hosts_study(archive, backend=FakeBackend(decorate=broken))
    view = study_view.build(load_study(archive, "net", with_series=False, with_evidence=True))
    table = study_hosts.table(view.hosts)
    assert table is not None
    rows = cells(table)
    db = next(r for r in rows if r[2] == "db")
    assert db[3] == "not measured" and db[4:7] == ["-", "-", "-"]
    load = next(r for r in rows if r[2].startswith("load"))
    assert load[8] == "not measured: connection refused" and load[9] == "-"


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_the_report_has_the_hosts_section(tmp_path: Path, fmt: str) -> None:
    archive = archive_at(tmp_path)
    run_hosts_study(archive)
    (out,) = publish.study_report(archive, "net", [fmt], tmp_path)
    text = out.read_text()
    heading = "## Hosts" if fmt == "md" else "<h2>Hosts</h2>"
    assert heading in text
    assert text.index(heading) < text.index("## Runs" if fmt == "md" else "<h2>Runs</h2>")


def test_load_from_this_machine_is_its_own_row_with_the_path() -> None:
    """A study on `env create --on h1` without --load-from: pgbench ran here, its path is from
    "localhost" (load/remote/network.local_path), this machine's sampler is series "os"."""
    from study_fakes import make_record
    from study_hosts_fakes import captured, graft

    from pgrig.views.host_figures import THIS_MACHINE, run_hosts

    rec = make_record(tps=1000, seconds=5)
    doc = captured("direct")[0]
    graft(rec, doc)
    db = next(h for h, rs in rec.extra["host_roles"].items() if "db" in rs)
    rec.extra["host_roles"] = {db: ["db"]}
    load_host = rec.extra["load"]["split"][0]["host"]
    rec.extra["load"] = {}
    rec.series["os"] = rec.series.pop(f"os@{load_host}")  # its sampler: this machine's
    path = dict(rec.extra["network"]["paths"][0], **{"from": "localhost"})
    rec.extra["network"] = {"paths": [path]}
    hosts = {h.host: h for h in run_hosts(rec)}
    assert set(hosts) == {db, THIS_MACHINE}
    mine = hosts[THIS_MACHINE]
    assert mine.role == "load" and mine.busy is not None and mine.cpu_samples > 0
    (p,) = mine.paths
    assert (p.to_host, p.p50_ms, p.samples) == (db, path["rtt_p50_ms"], path["samples"])
