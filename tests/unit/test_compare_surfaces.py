"""One answer everywhere: the same run groups give the same ratio and verdict in `pgrig runs
compare --json`, `pgrig report compare` (Markdown and HTML) and the web compare page, and no
surface ever calls a detected change "equivalent" (or "no detectable change").
"""

from __future__ import annotations

import json
import math
import random
import re
import statistics
from pathlib import Path
from typing import Any

import compare_surfaces as surfaces
import pytest
from fastapi.testclient import TestClient
from hosts_run_fakes import SECONDS, hosts_run, local_run
from study_fakes import make_record
from typer.testing import CliRunner

from pgrig.analysis.compare import compare_runs
from pgrig.archive.records import RunRecord
from pgrig.archive.store import Archive
from pgrig.cli.runs import app as runs_app
from pgrig.reports import html, markdown, publish
from pgrig.reports.run_report import compare_document
from pgrig.web import compare_page
from pgrig.web.app import templates

# name: (baseline TPS per run, candidate TPS per run, seconds per run, candidate status)
CASES: dict[str, tuple[list[float], list[float], int, str]] = {
    "repeats faster": ([1000, 1012, 995, 1004], [1100, 1093, 1111, 1104], 20, "ok"),
    "repeats equivalent": ([1000, 1003, 998, 1001, 999], [1001, 998, 1002, 999, 1000], 20, "ok"),
    "repeats inconclusive": ([1000, 1030, 985, 1010], [1040, 1075, 1025, 1060], 20, "ok"),
    "single runs, indicative": ([1000], [1080], 60, "ok"),
    "single runs, too short": ([1000], [1080], 20, "ok"),
    "a failed run": ([1000, 1010], [1100, 1100], 20, "failed"),
}


def _store(archive: Archive, tps: list[float], seconds: int, status: str, seed: int) -> list[int]:
    ids = []
    for i, v in enumerate(tps):
        last = status if i == len(tps) - 1 else "ok"
        rec = make_record(tps=v, seconds=seconds, warmup=2, seed=seed + i, status=last)
        archive.finish_run(rec)
        assert rec.id is not None
        ids.append(rec.id)
    return ids


def _label(ids: list[int]) -> str:
    return ("run " if len(ids) == 1 else "runs ") + ",".join(map(str, ids))


@pytest.mark.parametrize("case", list(CASES))
def test_every_surface_gives_the_engines_answer(
    case: str, url: str, archive: Archive, client: TestClient, tmp_path: Path
) -> None:
    base_tps, cand_tps, seconds, status = CASES[case]
    base = _store(archive, base_tps, seconds, "ok", seed=1)
    cand = _store(archive, cand_tps, seconds, status, seed=50)
    expected = compare_runs([archive.get_run(i) for i in base], [archive.get_run(i) for i in cand])
    want = (expected.ratio_text(), expected.verdict_text())

    a, b = ",".join(map(str, base)), ",".join(map(str, cand))
    result = CliRunner().invoke(runs_app, ["compare", a, b, "--json", "--archive", url])
    assert result.exit_code == 0, result.output
    assert surfaces.from_json(json.loads(result.stdout)) == want

    md, page = publish.compare_report(archive, [base, cand], ["md", "html"], tmp_path)
    assert surfaces.from_markdown(md.read_text(), _label(cand)) == want
    assert surfaces.from_report_html(page.read_text(), _label(cand)) == want

    web = client.get(compare_page.compare_url([base, cand]))
    assert web.status_code == 200
    assert surfaces.from_web(web.text) == want

    if case.startswith("repeats"):  # independently: the median of the pairwise ratios
        ratio = statistics.median(c / b for c in cand_tps for b in base_tps)
        assert want[0].startswith(f"x{ratio:.3f} [")
    verdict = want[1]
    assert {
        "repeats faster": verdict == "faster",
        "repeats equivalent": verdict == "equivalent",
        "repeats inconclusive": verdict.startswith("inconclusive (about "),
        "single runs, indicative": verdict.endswith("(indicative)"),
        "single runs, too short": verdict
        == f"no verdict: single runs under 30 s (run {base[0]}: 20 s)",
        "a failed run": verdict == f"no verdict: run {cand[-1]} is failed",
    }[case], verdict


# --- the property, on every formatter ------------------------------------------------------
def _group(tps: list[float], first_id: int) -> list[RunRecord]:
    out = []
    for i, v in enumerate(tps):
        rec = RunRecord(env_name="e", workload="w", clients=1, threads=1, status="ok")
        rec.id, rec.tps = first_id + i, v
        out.append(rec)
    return out


def _simulated_groups(count: int) -> list[tuple[list[RunRecord], list[RunRecord], float]]:
    rng = random.Random(99)
    out = []
    for k in range(count):
        n, m = rng.randint(2, 7), rng.randint(2, 7)
        effect = rng.choice([0.0, 0.004, 0.01, 0.015, 0.02, 0.03, -0.01, -0.025])
        noise = rng.choice([0.001, 0.004, 0.01, 0.03])
        base = [1000 * math.exp(rng.gauss(0, noise)) for _ in range(n)]
        cand = [1000 * math.exp(effect + rng.gauss(0, noise)) for _ in range(m)]
        threshold = rng.choice([0.005, 0.01, 0.02, 0.05])
        out.append((_group(base, 1000 * k), _group(cand, 1000 * k + 100), threshold))
    return out


def _check(cells: list[str]) -> int:
    """No cell says 'no detectable change'; every cell that says 'equivalent' shows bounds
    that include 1. Returns how many said 'equivalent'."""
    said = 0
    for cell in cells:
        assert "no detectable change" not in cell
        if re.search(r"\bequivalent\b", cell):
            bounds = re.search(r"\[(\d+\.\d+), (\d+\.\d+)\]", cell)
            assert bounds, cell
            assert float(bounds.group(1)) <= 1 <= float(bounds.group(2)), cell
            said += 1
    return said


def _markdown_cells(text: str) -> list[str]:
    return [c for ln in text.splitlines() if ln.startswith("| ") for c in ln.split(" | ")]


def _html_cells(text: str) -> list[str]:
    return re.findall(r"<td[^>]*>(.*?)</td>", text, re.S)


def test_no_surface_calls_a_detected_change_equivalent() -> None:
    env = templates()
    seen = 0
    verdicts: set[str] = set()
    for base, cand, threshold in _simulated_groups(400):
        c = compare_runs(base, cand, threshold=threshold)
        verdicts.add(str(c.verdict))
        seen += _check([c.describe()])  # the CLI's verdict line (and --json "description")
        doc = compare_document([base, cand], threshold=threshold)
        # the TPS verdict is said twice: the results table and the figures table (the view)
        said = 2 * (c.verdict == "equivalent")
        assert _check(_markdown_cells(markdown.render(doc, "x"))) == said
        assert _check(_html_cells(html.render(doc))) == said
        if threshold == 0.02:  # the web page uses the default threshold
            page = compare_page.build([base, cand])
            _check(_html_cells(env.get_template("compare.html").render(v=page, archive_url="-")))
    assert verdicts == {"faster", "slower", "equivalent", "inconclusive"}
    assert seen > 40


# --- the settings diff and the run summary: the same rows and values on every surface -------
def _with_settings(rec: RunRecord, pages: str, work_mem: str, layer: str) -> RunRecord:
    rec.settings = {
        "shared_buffers": {"setting": pages, "unit": "8kB", "boot_val": "16384",
                           "source": "configuration file"},
        "work_mem": {"setting": work_mem, "unit": "kB", "boot_val": "4096",
                     "source": "configuration file"},
        "jit": {"setting": "off", "unit": None, "boot_val": "on", "source": "configuration file"},
    }  # fmt: skip
    rec.settings_layers = {layer: {"shared_buffers": "x", "work_mem": "y"}}
    return rec


def test_every_surface_shows_the_same_settings_diff(
    url: str, archive: Archive, client: TestClient, tmp_path: Path
) -> None:
    from pgrig.views import compare as compare_view_model

    a = _with_settings(make_record(tps=1000, seconds=20, seed=1), "16384", "4096", "profile")
    b = _with_settings(make_record(tps=1100, seconds=20, seed=2), "771378", "20070", "profile")
    for rec in (a, b):
        archive.finish_run(rec)
    assert a.id is not None and b.id is not None
    view = compare_view_model.build([[archive.get_run(a.id)], [archive.get_run(b.id)]])
    want = [(s.label, s.values) for s in view.settings]
    # human units, computed independently: 771378 pages of 8 KiB, 20070 KiB
    assert want == [
        ("shared_buffers (profile)", ["128 MiB", f"{771378 * 8 / 2**20:.1f} GiB"]),
        ("work_mem (profile)", ["4 MiB", f"{20070 / 2**10:.1f} MiB"]),
    ]

    text = CliRunner().invoke(runs_app, ["compare", str(a.id), str(b.id), "--archive", url])
    assert text.exit_code == 0, text.output
    assert surfaces.settings_from_cli(text.stdout) == want
    doc = json.loads(
        CliRunner()
        .invoke(runs_app, ["compare", str(a.id), str(b.id), "--json", "--archive", url])
        .stdout
    )
    assert doc["settings_diff"] == {
        "shared_buffers": {"a": "16384", "b": "771378"},  # raw, in the setting's unit
        "work_mem": {"a": "4096", "b": "20070"},
    }
    web = client.get(compare_page.compare_url([[a.id], [b.id]])).text
    assert surfaces.settings_from_web(web) == want
    (md,) = publish.compare_report(archive, [[a.id], [b.id]], ["md"], tmp_path)
    assert surfaces.settings_from_markdown(md.read_text()) == want


def test_every_surface_shows_the_same_run_summary(
    url: str, archive: Archive, client: TestClient, tmp_path: Path
) -> None:
    from pgrig.views import run_summary

    rec = make_record(tps=1234.5, seconds=20, seed=3, note="baseline <b>", settings={"jit": "off"})
    rec.db_size_bytes = 1536 * 2**20
    archive.finish_run(rec)
    assert rec.id is not None
    want = [(k, [v]) for k, v in run_summary.build(archive.get_run(rec.id)).about]
    labels = [k for k, _ in want]
    assert {"started", "environment", "server", "data", "load"} <= set(labels)
    assert "1.5 GiB" in dict(want)["data"][0]  # binary units
    assert dict(want)["started"][0].startswith("2025-01-01 00:03:00 UTC")  # the zone shown

    shown = CliRunner().invoke(runs_app, ["show", str(rec.id), "--archive", url])
    assert shown.exit_code == 0, shown.output
    assert surfaces.summary_from_cli(shown.stdout) == want
    page = client.get(f"/runs/{rec.id}").text
    assert surfaces.summary_from_web(page) == want
    (md,) = publish.run_report(archive, rec.id, ["md"], tmp_path)
    in_report = surfaces.summary_from_markdown(md.read_text())
    assert [row for row in in_report if row[0] in labels] == want


# --- the study view: the same points, verdicts and bounds on every surface ------------------
def test_every_surface_shows_the_same_study(
    url: str, archive: Archive, client: TestClient, tmp_path: Path
) -> None:
    import io

    from rich.console import Console
    from study_fakes import FakeBackend, iterations_toml, study_toml

    from pgrig import format as fmt
    from pgrig.cli.study import study_app
    from pgrig.study.runner import run_study
    from pgrig.study.spec import parse
    from pgrig.views import study as study_view
    from pgrig.views.study_data import load_study

    text = study_toml("surf", repeats=4, clients=2, threads=None) + iterations_toml(
        {"name": "a", "note": "defaults"},
        {"name": "b", "settings": {"synchronous_commit": "off"}},
        {"name": "c", "settings": {"shared_buffers": "1GB"}},
    )
    run_study(
        parse(text), archive=archive, backend=FakeBackend(), console=Console(file=io.StringIO())
    )
    view = study_view.build(load_study(archive, "surf"))
    want = [
        {
            "label": p.label,
            "runs": p.runs_text,
            "tps": p.tps_lines,
            **{v.title: v.lines for v in p.verdicts},
            "p95": fmt.ms(p.latency("p95")),
        }
        for p in view.points
    ]
    # the engine's verdicts, as the model says: b and c are faster than a; c is the best
    assert want[1]["vs iteration 0"][1] == "faster" and want[0]["vs iteration 0"] == ["baseline"]
    assert view.best is view.points[2] and view.best_against is not None
    assert view.best_against.verdict == "faster"

    def rows_of(table: list[dict[str, list[str]]], label: str) -> list[dict[str, Any]]:
        return [
            {
                "label": r[label][0],
                "runs": r["runs"][0],
                "tps": r["TPS [bounds]"],
                "vs previous": r["vs previous"],
                "vs iteration 0": r["vs iteration 0"],
                "p95": r["p95 ms"][0],
            }
            for r in table
        ]

    (md,) = publish.study_report(archive, "surf", ["md"], tmp_path)
    assert rows_of(surfaces.study_from_markdown(md.read_text(), "#"), "iteration") == want
    web = client.get("/studies/surf")
    assert web.status_code == 200
    assert rows_of(surfaces.study_from_web(web.text), "iteration") == want

    res = CliRunner().invoke(study_app, ["show", "surf", "--json", "--archive", url])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert [p["label"] for p in doc["points"]] == [w["label"] for w in want]
    for p, w, pv in zip(doc["points"], want, view.points, strict=True):
        assert (p["tps"], p["tps_lower"], p["tps_upper"]) == (
            pv.tps.center, pv.tps.lower, pv.tps.upper,
        )  # fmt: skip
        assert [v["title"] for v in p["verdicts"]] == ["vs previous", "vs iteration 0"]
        for v in p["verdicts"]:
            if "text" in v:  # compared: the same ratio and verdict as the tables
                assert [v["text"], v["verdict_text"]] == w[v["title"]]
    assert doc["best"]["key"] == view.points[2].key

    res = CliRunner().invoke(study_app, ["show", "surf", "--archive", url])
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert max(len(ln) for ln in out.splitlines()) <= 120
    blocks = re.split(r"\n(?=\d+ )", out.split("\n", 2)[2])  # one block per point's row
    for w, block in zip(want, blocks, strict=False):
        for key in ("tps", "vs previous", "vs iteration 0"):
            for line in w[key]:
                assert line in block, (line, block)
        assert f" {w['p95']} " in block
    assert view.best_text and view.best_text in " ".join(out.split())


# --- the hosts of the compared runs (views/compare_hosts.py): the same rows everywhere -------
def _in_window(cols: dict[str, list], name: str) -> list[float]:
    """The values of the measured window (0 < t <= SECONDS + 0.5), computed here."""
    return [v for t, v in zip(cols["t"], cols[name], strict=True) if 0 < t <= SECONDS + 0.5]


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def _expected(rec: RunRecord, kind: str) -> dict[str, str]:
    cols = rec.series[kind]
    idle, wait = _in_window(cols, "cpu_idle"), _in_window(cols, "cpu_iowait")
    return {
        "CPU busy %": f"{_mean([100 - i - w for i, w in zip(idle, wait, strict=True)]):.1f}",
        "CPU iowait %": f"{_mean(wait):.1f}",
        "CPU steal %": f"{_mean(_in_window(cols, 'cpu_steal')):.1f}",
    }


def test_every_surface_shows_the_same_hosts(
    url: str, archive: Archive, client: TestClient, tmp_path: Path
) -> None:
    a, b = local_run(1), hosts_run(2, busy_c1=True)
    for rec in (a, b):
        archive.finish_run(rec)
    assert a.id is not None and b.id is not None
    a, b = archive.get_run(a.id), archive.get_run(b.id)
    from pgrig.views import compare as compare_view_model

    view = compare_view_model.build([[a], [b]])
    table = compare_view_model.hosts_table(view, ("A", "B"))
    assert table is not None
    want = surfaces.hosts_from_table(table)

    # independently: each host's figures from its own series, '-' where a column has no host
    mine, db1, c1, c2 = (_expected(a, "os"), _expected(b, "os@db1"), _expected(b, "os@c1"),
                         _expected(b, "os@c2"))  # fmt: skip
    expected: surfaces.HostRows = []
    for host, role, figs, col in (("this machine", "db, load", mine, 0), ("c1", "load", c1, 1),
                                  ("c2", "load", c2, 1), ("db1", "db", db1, 1)):  # fmt: skip
        for label, value in figs.items():
            vals = ["-", "-"]
            vals[col] = value
            expected.append((host, role, label, vals))
        if role == "load":
            expected.append((host, role, "saturated (> 90% busy)",
                             ["-", "yes" if host == "c1" else "no"]))  # fmt: skip
    assert sorted(want) == sorted(expected)
    assert float(c1["CPU busy %"]) > 90  # the fixture's saturated load host is busy

    runner = CliRunner()
    shown = runner.invoke(runs_app, ["compare", str(a.id), str(b.id), "--archive", url],
                          env={"COLUMNS": "160"})  # fmt: skip
    assert shown.exit_code == 0, shown.output
    assert surfaces.hosts_from_cli(shown.stdout) == want
    args = ["compare", str(a.id), str(b.id), "--json", "--archive", url]
    doc = json.loads(runner.invoke(runs_app, args).stdout)
    by_json: surfaces.HostRows = []
    for h in doc["hosts"]:
        for key, label in (("cpu_busy_pct", "CPU busy %"), ("cpu_iowait_pct", "CPU iowait %"),
                           ("cpu_steal_pct", "CPU steal %")):  # fmt: skip
            vals = [h[key][n] for n in ("a", "b")]
            shown_vals = ["-" if v is None else f"{v:.1f}" for v in vals]
            by_json.append((h["host"], h["role"], label, shown_vals))
        if "saturated" in h:
            sat = [h["saturated"][n] or "-" for n in ("a", "b")]
            by_json.append((h["host"], h["role"], "saturated (> 90% busy)", sat))
    assert by_json == want

    web = client.get(compare_page.compare_url([[a.id], [b.id]]))
    assert web.status_code == 200
    assert surfaces.hosts_from_web(web.text) == want
    md, page = publish.compare_report(archive, [[a.id], [b.id]], ["md", "html"], tmp_path)
    assert surfaces.hosts_from_markdown(md.read_text()) == want
    assert surfaces.hosts_from_report_html(page.read_text()) == want


# --- the hosts of a study (views/study_hosts.py): the same rows on every surface -------------
def test_every_surface_shows_the_same_study_hosts(
    url: str, archive: Archive, client: TestClient, tmp_path: Path
) -> None:
    from study_hosts_fakes import expected_table, run_hosts_study

    from pgrig.cli.study import study_app
    from pgrig.views import study as study_view
    from pgrig.views import study_hosts
    from pgrig.views.study_data import load_study

    run_hosts_study(archive, "hostly")
    view = study_view.build(load_study(archive, "hostly"))
    table = study_hosts.table(view.hosts)
    assert table is not None
    want = surfaces.study_hosts_from_table(table)
    # every figure as computed here from the captured run documents
    assert want == expected_table()

    (md, page) = publish.study_report(archive, "hostly", ["md", "html"], tmp_path)
    assert surfaces.study_hosts_from_markdown(md.read_text()) == want
    assert surfaces.study_hosts_from_report_html(page.read_text()) == want
    web = client.get("/studies/hostly")
    assert web.status_code == 200
    assert surfaces.study_hosts_from_web(web.text) == want

    res = CliRunner().invoke(study_app, ["show", "hostly", "--json", "--archive", url])
    assert res.exit_code == 0, res.output
    by_json = []
    for point in json.loads(res.stdout)["hosts"]:
        for h in point["hosts"]:
            (path,) = h["paths"] or [None]
            by_json.append([
                point["label"], h["host"], f"{h['cpu_busy_pct']:.1f}",
                f"{h['cpu_iowait_pct']:.1f} / {h['cpu_steal_pct']:.1f}", str(h["cpu_samples"]),
                f"{path['rtt_p50_ms']:.3f} / {path['rtt_p99_ms']:.3f}" if path else "-",
                str(path["samples"]) if path else "-",
            ])  # fmt: skip
    figures = [0, 1, 3, 4, 6, 8, 9]  # point, host and every figure (the others are words)
    assert by_json == [[r[i] for i in figures] for r in want]

    res = CliRunner().invoke(study_app, ["show", "hostly", "--archive", url])
    assert res.exit_code == 0, res.output
    assert max(len(ln) for ln in res.stdout.splitlines()) <= 120
    shown = surfaces.study_hosts_from_cli(res.stdout, len(table.columns))
    assert len(shown) == len(want)
    for cli_row, row in zip(shown, want, strict=True):
        assert row[0].startswith(cli_row[0])  # the point's label wraps; the figures never do
        assert [cli_row[i] for i in figures[1:]] == [row[i] for i in figures[1:]]
