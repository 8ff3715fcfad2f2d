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

import compare_surfaces as surfaces
import pytest
from fastapi.testclient import TestClient
from study_fakes import make_record
from typer.testing import CliRunner

from pgrig.analysis.compare import compare_runs
from pgrig.archive.records import RunRecord
from pgrig.archive.store import Archive
from pgrig.cli.runs import app as runs_app
from pgrig.reports import html, markdown, publish
from pgrig.reports.run_report import compare_document
from pgrig.web import compare_view
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

    web = client.get(compare_view.compare_url([base, cand]))
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
        assert _check(_markdown_cells(markdown.render(doc, "x"))) == (c.verdict == "equivalent")
        assert _check(_html_cells(html.render(doc))) == (c.verdict == "equivalent")
        if threshold == 0.02:  # the web page uses the default threshold
            page = compare_view.build([base, cand])
            _check(_html_cells(env.get_template("compare.html").render(v=page, archive_url="-")))
    assert verdicts == {"faster", "slower", "equivalent", "inconclusive"}
    assert seen > 40
