"""The runs list (views/runs_list.py) and the run page's results: `pgrig runs list` and the web's
/runs show the same columns with the same cells; the run page's results and per-script tables
are views/run_summary's, as `runs show` and `report run` print them."""

from __future__ import annotations

import html
import random

import sample_data
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from pgrig.archive.records import ScriptResult
from pgrig.archive.store import Archive
from pgrig.cli.runs import _list_rows
from pgrig.cli.runs import app as runs_app
from pgrig.views import run_summary, runs_list


def _stored(archive: Archive) -> tuple[int, int]:
    rng = random.Random(5)
    rec = sample_data.make_run(1, rng, tps=2345.6, clients=24, note="short run", tpcc=False)
    rec.measured_s = 58.0  # stopped early: 58 s measured of the 60 s planned
    run_id = sample_data.store(archive, rec)
    tpcc = sample_data.make_run(2, rng, tps=812.5, tpcc=True)
    return run_id, sample_data.store(archive, tpcc)


def test_both_lists_have_the_same_columns() -> None:
    cli = {c.key for c in runs_list.COLUMNS} - {"tps", "nopm"}
    page = {key for key, _ in runs_list.PAGE_COLUMNS} - {"result"}  # TPS and NOPM in one cell
    assert cli == page


def test_the_duration_is_the_measured_window_on_both(
    archive: Archive, client: TestClient, url: str
) -> None:
    run_id, _ = _stored(archive)
    rec = archive.get_run(run_id)
    assert rec.duration_s == 60.0 and _list_rows([rec])[0]["duration"] == "58s"
    page = client.get("/runs").text
    row = page.split(f'value="{run_id}"')[1].split("</tr>")[0]
    assert ">58s<" in row and "1m" not in row
    out = CliRunner().invoke(runs_app, ["list", "--archive", url]).stdout
    assert "58s" in next(line for line in out.splitlines() if line.split()[0] == str(run_id))


def test_every_cell_of_the_cli_is_on_the_page(archive: Archive, client: TestClient) -> None:
    ids = _stored(archive)
    page = html.unescape(client.get("/runs").text)
    for rec in archive.list_runs():
        assert rec.id in ids
        view = runs_list.row(rec)
        row = page.split(f'value="{rec.id}"')[1].split("</tr>")[0]
        for key in ("id", "started", "engine", "workload", "clients", "duration", "volume",
                    "p95", "failed", "env", "cpus"):  # fmt: skip
            assert view.cells[key].text in row, key
        assert view.headline.text in row and view.headline.more.strip() in row


def test_the_headline_is_nopm_for_tpcc_on_both(archive: Archive, client: TestClient) -> None:
    _, tpcc_id = _stored(archive)
    rec = archive.get_run(tpcc_id)
    view = runs_list.row(rec)
    assert view.headline.more == " NOPM" and view.headline.text == view.cells["nopm"].text
    row = client.get("/runs").text.split(f'value="{tpcc_id}"')[1].split("</tr>")[0]
    assert f'{view.headline.text} <span class="unit">NOPM</span>' in row
    page = client.get(f"/runs/{tpcc_id}").text
    assert f'<div class="k">NOPM</div><div class="v">{view.headline.text}</div>' in page


def test_the_run_page_renders_the_summarys_results_and_scripts(
    archive: Archive, client: TestClient
) -> None:
    run_id, _ = _stored(archive)
    rec = archive.get_run(run_id)
    page = html.unescape(client.get(f"/runs/{run_id}").text)
    results = page.split('<table class="compact kv results">')[1].split("</table>")[0]
    for label, text in run_summary.results(rec):
        assert f"<tr><th>{label}</th><td>{text}</td></tr>" in results
    table = run_summary.scripts_table(rec)
    assert table is not None
    scripts = page.split('data-part="scripts"')[1].split("</table>")[0]
    for column in table.columns:
        assert f">{column}</th>" in scripts
    for cells in table.rows:
        for cell in cells:
            assert all(line in scripts for line in cell.lines)


def test_script_counts_are_shown_where_a_script_has_one() -> None:
    rng = random.Random(1)
    rec = sample_data.make_run(1, rng, tps=100.0, tpcc=False)
    rec.scripts = [ScriptResult(script_no=0, name="a", weight=1, transactions=10, tps=1.0)]
    table = run_summary.scripts_table(rec)
    assert table is not None and "retried" not in table.columns
    rec.scripts[0].retried = 3
    table = run_summary.scripts_table(rec)
    assert table is not None and table.columns[5] == "retried" and "rollbacks" not in table.columns


def test_a_run_changed_under_it_is_flagged_on_both(
    archive: Archive, client: TestClient, url: str
) -> None:
    """Issue 43 (F12): a run with changed_under_run events says so beside its status in
    `runs list` and on /runs, the columns in their order."""
    rng = random.Random(7)
    changed = sample_data.make_run(1, rng, tps=1000.0)
    changed.extra["changed_under_run"] = [
        {"after_s": 4.2, "command": "env set --force", "change": "settings work_mem=8MB"}
    ]
    changed_id = sample_data.store(archive, changed)
    plain_id = sample_data.store(archive, sample_data.make_run(2, rng, tps=1000.0))
    rows = {int(r["id"]): r for r in _list_rows(archive.add_warnings(archive.list_runs()))}
    assert rows[changed_id]["status"] == "ok (changed)" and rows[plain_id]["status"] == "ok"
    out = CliRunner().invoke(runs_app, ["list", "--archive", url]).stdout
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["id", "status", "tps"]  # (nopm: TPC-C runs only)
    line = next(ln for ln in lines if ln.split()[0] == str(changed_id))
    assert line.split()[1:3] == ["ok", "(changed)"]
    assert "(changed)" not in next(ln for ln in lines if ln.split()[0] == str(plain_id))
    page = client.get("/runs").text
    thead = page.split("<thead>")[1].split("</thead>")[0]
    assert "Result" in thead.split("</th>")[5]  # the 6th header, after the checkboxes' one
    row = page.split(f'value="{changed_id}"')[1].split("</tr>")[0]
    assert (
        '<span class="status s-ok">ok</span> <span class="muted" title="the environment was ' in row
    )
    assert ">changed)<" not in row and ">(changed)</span>" in row
    plain = page.split(f'value="{plain_id}"')[1].split("</tr>")[0]
    assert "(changed)" not in plain
