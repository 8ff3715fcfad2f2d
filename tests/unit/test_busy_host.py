"""The busy-host warning: CPU attribution over the window, the rule, and every surface."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from rich.console import Console
from study_fakes import FakeBackend, archive_at, iterations_toml, make_record, study_toml
from typer.testing import CliRunner

from pgrig.archive.export import run_to_json
from pgrig.archive.store import Archive
from pgrig.cli.runs import app as runs_app
from pgrig.load.engines.results import attach_samples
from pgrig.metrics.cpu_share import (
    BUSY_HOST_CORE_PCT,
    BUSY_HOST_MACHINE_PCT,
    busy_host_warning,
    cpu_share,
)
from pgrig.reports import iteration, markdown
from pgrig.reports.run_report import run_document
from pgrig.reports.summary import load_study
from pgrig.study.runner import run_study
from pgrig.study.spec import parse
from pgrig.web.app import create_app

T0 = 1_700_000_000.0


def os_series(other: float, seconds: int = 10, server: float = 120.0) -> dict[str, list]:
    """Sampler rows (epoch ts) with constant per-group CPU; the first row is in the warm-up."""
    ts = [T0 + i for i in range(-1, seconds + 1)]
    n = len(ts)
    return {
        "ts": ts,
        "proc_server_cpu": [server] * n,
        "proc_pgbench_cpu": [30.0] * n,
        "proc_pgrig_cpu": [2.0] * n,
        "proc_other_cpu": [None, *([other] * (n - 1))],
    }


def test_cpu_share_means_over_the_window_only() -> None:
    cols = os_series(other=50.0)
    cols["proc_other_cpu"][0] = 900.0  # warm-up row: outside (t0, t1]
    share = cpu_share(cols, T0, T0 + 10.5, cpus=4)
    assert share["other_cpu_pct_core"] == 50.0
    assert share["other_cpu_pct_host"] == 12.5  # 50% of one core out of 4 cores
    assert share["cpus"] == 4
    assert share["pgrig_cpu_pct_core"] == 2.0
    # the client's share is of the benchmark only (pgbench, server, pooler): 30 / 150
    assert share["client_share_pct"] == pytest.approx(20.0)


@pytest.mark.parametrize(
    ("core", "cpus", "busy"),
    [
        (100.0, 2, True),  # one busy loop on a 2-core host
        (BUSY_HOST_CORE_PCT, 2, False),  # at the limit: not above it
        (BUSY_HOST_CORE_PCT + 1, 2, True),
        (5.0, 2, False),  # daemons and kernel threads of a quiet host
        (100.0, 64, False),  # one core of 64 is 1.6% of the machine
        (BUSY_HOST_MACHINE_PCT * 64 + 10, 64, True),
    ],
)
def test_busy_host_rule(core: float, cpus: int, busy: bool) -> None:
    share = {
        "server_cpu_pct_core": 100.0,
        "other_cpu_pct_core": core,
        "other_cpu_pct_host": core / cpus,
        "cpus": cpus,
    }
    message = busy_host_warning(share)
    assert (message is not None) == busy
    if busy:
        assert f"{core:.0f}% of one core" in message and f"{cpus} CPUs" in message


def test_no_verdict_without_the_server_or_other_figures() -> None:
    # an external server on this host would count as "other": no warning without its own CPU
    assert busy_host_warning({"other_cpu_pct_core": 200.0, "other_cpu_pct_host": 100.0}) is None
    assert busy_host_warning({}) is None


def _record_with(other: float):
    rec = make_record(tps=1000, seed=1)
    rec.id, rec.measured_s = 5, 10.0
    attach_samples(rec, {"os": os_series(other)}, T0)
    return rec


def test_attach_samples_records_the_warning_once() -> None:
    quiet = _record_with(other=3.0)
    assert quiet.warnings() == [] and quiet.extra["cpu_share"]["other_cpu_pct_core"] == 3.0
    busy = _record_with(other=100.0)
    [w] = busy.warnings()
    assert w["code"] == "busy_host" and "100% of one core" in w["message"]
    busy.add_warning("busy_host", "again")  # one per code
    assert [w["message"] for w in busy.warnings()] == ["again"]
    assert run_to_json(busy)["warnings"] == busy.warnings()
    assert run_to_json(quiet)["warnings"] == []


def test_every_surface_names_the_busy_host(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'a.sqlite'}"
    rec = _record_with(other=100.0)
    rec.id = None
    rec.settings = {}
    with Archive(url) as archive:
        archive.finish_run(rec)
        run_id = rec.id
    result = CliRunner().invoke(runs_app, ["show", str(run_id), "--archive", url])
    assert result.exit_code == 0 and "warning: busy host: other processes used 100%" in (
        " ".join(result.stdout.split())
    )
    doc = json.loads(CliRunner().invoke(runs_app, ["show", str(run_id), "--archive", url,
                                                   "--json"]).stdout)  # fmt: skip
    assert doc["warnings"][0]["code"] == "busy_host"
    listed = json.loads(CliRunner().invoke(runs_app, ["list", "--archive", url, "--json"]).stdout)
    assert listed[0]["warnings"] == doc["warnings"]  # light records get their warnings too
    page = TestClient(create_app(url)).get(f"/runs/{run_id}").text
    assert 'class="warn run-warning" data-code="busy_host"' in page
    text = markdown.render(run_document(rec), "run")
    assert "busy host: other processes used 100% of one core" in text


def test_study_reports_mark_points_that_ran_on_a_busy_host(tmp_path: Path) -> None:
    text = study_toml("{name}", study={"repeats": 3}, duration=20, warmup=3) + iterations_toml(
        {"name": "first", "settings": {"work_mem": "4MB"}},
        {"name": "second", "settings": {"work_mem": "8MB"}},
    )
    archive = archive_at(tmp_path)
    out = io.StringIO()
    run_study(
        parse(text.replace("{name}", "busy")),
        archive=archive,
        backend=FakeBackend(busy_at={4}),  # second point, second repeat
        console=Console(file=out, width=200),
    )
    assert out.getvalue().count("warning: busy host") == 1  # said as the run ends
    doc = iteration.build(load_study(archive, "busy"))
    rendered = markdown.render(doc, "busy")
    assert rendered.count("busy host in 1 of 3 runs") == 1
    assert "Busy host (other processes used more CPU than the limits" in rendered
    results = next(s for s in doc.sections if s.title == "Results")
    table = next(b for b in results.blocks if hasattr(b, "rows"))
    marked = [row[1].lines for row in table.rows if "busy host" in str([c.lines for c in row])]
    assert marked == [["second"]]
