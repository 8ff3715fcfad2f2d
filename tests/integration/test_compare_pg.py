"""One answer everywhere, on real runs: real pgbench against a managed PostgreSQL 15 (scale 1,
2 s runs), the same run groups through `pgrig runs compare --json`, `pgrig report compare`
(Markdown and HTML) and the web compare page give the identical ratio and verdict.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import compare_surfaces as surfaces
import pytest
import servers
from servers import pgrig

pytestmark = pytest.mark.integration

LOAD = ("--workload", "pgbench:select-only", "-c", "1", "-j", "1", "--duration", "2")


@pytest.fixture(scope="module")
def lab() -> Iterator[dict[str, list[int]]]:
    """Three repeats of two configurations (simple and prepared protocol), an aborted run."""
    with servers.scratch_home("pgrig-compare-test-"):
        pgrig("env", "create", "lab", "--pg", "15")
        pgrig("db", "generate", "lab", "--scenario", "pgbench", "--scale", "1")
        groups = {}
        for name, protocol in (("simple", "simple"), ("prepared", "prepared")):
            out = pgrig("run", "lab", *LOAD, "--warmup", "1", "--protocol", protocol,
                        "--repeat", "3", "--json", timeout=240).stdout  # fmt: skip
            groups[name] = [r["id"] for r in json.loads(out)]
        proc = servers.start_long_run("lab")  # interrupted: archived as aborted
        servers.wait_for_running()
        time.sleep(2)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        aborted = json.loads(out)  # one run asked: one object, interrupted or not
        assert aborted["status"] == "aborted", err
        groups["aborted"] = [aborted["id"]]
        yield groups


def _answers(a: list[int], b: list[int], out: Path) -> list[surfaces.Answer]:
    """(ratio, verdict) of B against A from the CLI's JSON, both report formats and the web."""
    from fastapi.testclient import TestClient

    from pgrig.web import compare_page
    from pgrig.web.app import create_app

    ga, gb = _ids(a), _ids(b)
    doc = json.loads(pgrig("runs", "compare", ga, gb, "--json").stdout)
    paths = pgrig("report", "compare", ga, gb, "--format", "md", "--format", "html",
                  "--out", str(out)).stdout.split()  # fmt: skip
    md, html = (Path(p).read_text() for p in paths)
    label = ("run " if len(b) == 1 else "runs ") + gb
    page = TestClient(create_app()).get(compare_page.compare_url([a, b]))
    assert page.status_code == 200, page.text
    return [
        surfaces.from_json(doc),
        surfaces.from_markdown(md, label),
        surfaces.from_report_html(html, label),
        surfaces.from_web(page.text),
    ]


def test_repeats_get_the_same_verdict_everywhere(lab: dict[str, list[int]], tmp_path: Path) -> None:
    answers = _answers(lab["simple"], lab["prepared"], tmp_path)
    assert len(set(answers)) == 1, answers
    ratio, verdict = answers[0]
    assert ratio.startswith("x") and " [" in ratio
    assert verdict.split(" (")[0] in ("faster", "slower", "equivalent", "inconclusive")
    ids = _ids(lab["simple"]), _ids(lab["prepared"])
    doc = json.loads(pgrig("runs", "compare", *ids, "--json").stdout)
    v = doc["verdict"]
    assert v["method"] == "repeats" and (v["n_baseline"], v["n_candidate"]) == (3, 3)
    # independently: the median of the 9 pairwise TPS ratios of the archived runs
    tps = {r["id"]: r["tps"] for r in json.loads(pgrig("runs", "list", "--json").stdout)}
    pairs = sorted(tps[c] / tps[b] for c in lab["prepared"] for b in lab["simple"])
    assert v["ratio"] == pytest.approx(pairs[4], rel=1e-9)
    assert (v["lower"], v["upper"]) == (pytest.approx(pairs[0]), pytest.approx(pairs[-1]))


def test_single_short_runs_get_no_verdict_everywhere(
    lab: dict[str, list[int]], tmp_path: Path
) -> None:
    a, b = lab["simple"][:1], lab["prepared"][:1]
    answers = _answers(a, b, tmp_path)
    assert len(set(answers)) == 1, answers
    # independently: the shorter of the two by its archived measured time (the first on a tie)
    listed = json.loads(pgrig("runs", "list", "--json").stdout)
    measured = {r["id"]: r["measured_s"] for r in listed}
    shortest = min((a[0], b[0]), key=lambda i: (measured[i], (a[0], b[0]).index(i)))
    figure = f"{round(measured[shortest], 1):g} s"
    assert answers[0][1].startswith(f"no verdict: single runs under 30 s (run {shortest}: {figure}")


def test_an_aborted_run_gets_no_verdict_everywhere(
    lab: dict[str, list[int]], tmp_path: Path
) -> None:
    [bad] = lab["aborted"]
    answers = _answers(lab["simple"], [bad], tmp_path)
    assert len(set(answers)) == 1, answers
    assert answers[0] == ("-", f"no verdict: run {bad} is aborted")


def _ids(ids: list[int]) -> str:
    return ",".join(map(str, ids))
