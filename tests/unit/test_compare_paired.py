"""Paired comparisons of interleaved repeats (analysis/compare_paired.py through the engine).

The pairing must be known (one study, matching repeat numbers, run in alternation), never
guessed; the paired bounds are cross-checked against scipy's paired t-test (its confidence
interval and exact p-values) and against a hand computation with a tabulated t quantile.
"""

from __future__ import annotations

import json
import math
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import compare_surfaces as surfaces
import numpy as np
import pytest
from fastapi.testclient import TestClient
from scipy import stats as sp
from study_fakes import make_record
from typer.testing import CliRunner

from pgrig.analysis import compare_paired
from pgrig.analysis.compare import compare_runs
from pgrig.archive.records import RunRecord, StudyRecord
from pgrig.archive.store import Archive
from pgrig.cli.runs import app as runs_app
from pgrig.reports import publish
from pgrig.views.compare import PAIRED_NOTE
from pgrig.web import compare_page

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def rec(
    tps: float, run_id: int, point: str, repeat: int, study: str | None = "s", at: int | None = 0
) -> RunRecord:
    r = RunRecord(env_name="e", workload="w", clients=1, threads=1, status="ok", id=run_id)
    r.tps, r.study, r.study_point, r.repeat = tps, study, point, repeat
    r.started_at = None if at is None else T0 + timedelta(minutes=at)
    return r


def design(
    a: list[float], b: list[float], order: str = "ABBA", study: str | None = "s"
) -> tuple[list[RunRecord], list[RunRecord]]:
    """Runs of points A and B, repeat k of each in round k, in the given order per round pair:
    ABBA (A B, then B A), ABAB, or AABB (every A first: a sequential study)."""
    seq: list[tuple[str, int]] = []
    n = len(a)
    if order == "AABB":
        seq = [("A", k) for k in range(n)] + [("B", k) for k in range(n)]
    else:
        for k in range(n):
            first_b = order == "ABBA" and k % 2 == 1
            seq += [("B", k), ("A", k)] if first_b else [("A", k), ("B", k)]
    out: dict[str, list[RunRecord]] = {"A": [], "B": []}
    for i, (side, k) in enumerate(seq):
        value = (a if side == "A" else b)[k]
        out[side].append(rec(value, i + 1, side, k, study, at=i))
    return out["A"], out["B"]


# --- drift between rounds: the reason for pairing ------------------------------------------------
DRIFT = [1.00, 0.80, 1.15, 0.90, 1.05, 0.85]  # the host's level per round (other work, caches)
NOISE = [1.004, 0.997, 1.002, 0.998, 1.003, 0.999]


def drifting(effect: float, rounds: int = 4) -> tuple[list[float], list[float]]:
    a = [1000 * DRIFT[k] * NOISE[k] for k in range(rounds)]
    b = [1000 * effect * DRIFT[k] * NOISE[-1 - k] for k in range(rounds)]
    return a, b


def test_interleaved_repeats_are_paired_and_decide_where_unpaired_cannot() -> None:
    a, b = drifting(1.06)
    base, cand = design(a, b)
    paired = compare_runs(base, cand)
    assert paired.method == "pairs" and paired.paired and paired.n_baseline == 4
    assert paired.verdict == "faster"
    assert paired.lower is not None and paired.lower > 1.02
    # the same values, run one configuration after the other: no pairing, drift is noise
    seq_base, seq_cand = design(a, b, order="AABB")
    unpaired = compare_runs(seq_base, seq_cand)
    assert unpaired.method == "repeats" and unpaired.verdict == "inconclusive"
    assert paired.upper is not None and unpaired.upper is not None
    assert paired.upper - paired.lower < (unpaired.upper - unpaired.lower) / 5


def test_the_verdict_states_the_test() -> None:
    base, cand = design(*drifting(1.06))
    c = compare_runs(base, cand)
    assert c.verdict_text() == "faster (paired)"
    assert c.test == "paired t on log ratios"
    assert c.p_value is not None
    assert c.basis() == (
        f"4 interleaved pairs, 95% bounds, paired t on log ratios "
        f"(p = {c.p_value:.2g} against no change), threshold 2%"
    )
    d = c.as_dict()
    assert d["paired"] is True and d["method"] == "pairs" and d["test"] == c.test
    seq = compare_runs(*design(*drifting(1.06), order="AABB"))
    assert seq.test == "Mann-Whitney (unpaired)" and "paired" not in seq.verdict_text()


def test_abab_order_pairs_too() -> None:
    c = compare_runs(*design(*drifting(1.06), order="ABAB"))
    assert c.method == "pairs" and c.verdict == "faster"


# --- cross-checks: scipy's paired t-test and a hand computation ---------------------------------
@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("misrate", [0.05, 0.01, 0.2])
def test_bounds_and_p_value_are_scipys_paired_t(seed: int, misrate: float) -> None:
    rng = random.Random(seed)
    n = rng.randint(compare_paired.min_pairs(misrate), 12)
    a = [1000 * rng.uniform(0.7, 1.3) for _ in range(n)]
    b = [v * rng.uniform(0.93, 1.12) for v in a]
    c = compare_runs(*design(a, b), misrate=misrate)
    assert c.method == "pairs"
    la, lb = np.log(a), np.log(b)
    res = sp.ttest_rel(lb, la)
    ci = res.confidence_interval(confidence_level=1 - misrate)
    assert c.lower == pytest.approx(math.exp(ci.low), rel=1e-12)
    assert c.upper == pytest.approx(math.exp(ci.high), rel=1e-12)
    assert c.ratio == pytest.approx(math.exp(float(np.mean(lb - la))), rel=1e-12)
    assert c.p_value == pytest.approx(res.pvalue, rel=1e-9)
    # each bound is where the exact two-sided p-value of "the mean log ratio is this" = misrate
    d = lb - la
    for bound in (c.lower, c.upper):
        assert bound is not None
        p = sp.ttest_1samp(d, popmean=math.log(bound)).pvalue
        assert p == pytest.approx(misrate, rel=1e-6)


def test_bounds_by_hand_with_a_tabulated_quantile() -> None:
    a = [1000.0, 820.0, 1130.0, 905.0]
    b = [1070.0, 861.0, 1215.0, 960.0]
    d = [math.log(y) - math.log(x) for x, y in zip(a, b, strict=True)]
    mean = sum(d) / 4
    sd = math.sqrt(sum((v - mean) ** 2 for v in d) / 3)
    t975_3 = 3.182446305284263  # Student's t, 3 degrees of freedom, 97.5% (tables)
    c = compare_runs(*design(a, b))
    assert c.lower == pytest.approx(math.exp(mean - t975_3 * sd / 2), rel=1e-12)
    assert c.upper == pytest.approx(math.exp(mean + t975_3 * sd / 2), rel=1e-12)


def test_paired_bounds_hold_their_confidence() -> None:
    """Simulated interleaved rounds with drift, a true ratio of 1.03 and lognormal noise: the
    95% bounds contain it in about 95% of 600 series (binomial sd ~0.9%)."""
    rng = np.random.default_rng(7)
    hits = 0
    trials = 600
    for _ in range(trials):
        drift = rng.uniform(0.7, 1.3, 5)
        a = list(1000 * drift * np.exp(rng.normal(0, 0.02, 5)))
        b = list(1030 * drift * np.exp(rng.normal(0, 0.02, 5)))
        c = compare_runs(*design(a, b))
        assert c.method == "pairs" and c.lower is not None and c.upper is not None
        hits += c.lower <= 1.03 <= c.upper
    assert 0.92 <= hits / trials <= 0.98


# --- when the pairing is not known: unpaired -------------------------------------------------
def test_fewer_pairs_than_the_unpaired_test_needs_stay_unpaired() -> None:
    base, cand = design(*drifting(1.06, rounds=3))
    c = compare_runs(base, cand)
    assert c.method == "repeats" and c.insufficient  # 3 vs 3 cannot reach 95% either way


@pytest.mark.parametrize(
    "spoil",
    ["no study", "two studies", "repeat numbers differ", "one point twice", "run again later"],
)
def test_unknown_pairing_falls_back_to_unpaired(spoil: str) -> None:
    base, cand = design(*drifting(1.06))
    if spoil == "no study":
        base, cand = design(*drifting(1.06), study=None)
    elif spoil == "two studies":
        cand[0].study = "other"
    elif spoil == "repeat numbers differ":
        cand[3].repeat = 7
    elif spoil == "one point twice":
        for r in cand:
            r.study_point = "A"
    elif spoil == "run again later":  # repeat 1 of B re-run after everything else
        cand[1].started_at = T0 + timedelta(hours=5)
    c = compare_runs(base, cand)
    assert c.method == "repeats" and "paired" not in c.verdict_text()


def test_order_from_ids_when_starts_are_missing() -> None:
    base, cand = design(*drifting(1.06))
    for r in (*base, *cand):
        r.started_at = None
    assert compare_runs(base, cand).method == "pairs"
    cand[0].id, base[-1].id = base[-1].id, cand[0].id  # B's repeat 0 now ran last
    assert compare_runs(base, cand).method == "repeats"


# --- inconclusive: pairs likely needed -------------------------------------------------------
def test_inconclusive_paired_verdict_says_how_many_pairs() -> None:
    a = [1000.0, 800.0, 1150.0, 900.0]
    b = [1040.0, 812.0, 1210.0, 925.0]  # +4%, +1.5%, +5.2%, +2.8%: crosses 1.02
    c = compare_runs(*design(a, b))
    assert c.method == "pairs" and c.verdict == "inconclusive"
    n = c.repeats_needed
    assert n is not None and n > 4
    assert f"about {n:,} interleaved pairs likely needed" in c.verdict_text()
    # n is the smallest size whose expected bounds clear the nearer threshold with 80% power
    d = [math.log(y / x) for x, y in zip(a, b, strict=True)]
    s = float(np.std(d, ddof=1))
    m = min(abs(np.mean(d) - math.log(1.02)), abs(np.mean(d) - math.log(0.98)))

    def enough(k: int) -> bool:
        return bool((sp.t.ppf(0.975, k - 1) + sp.t.ppf(0.8, k - 1)) * s / math.sqrt(k) <= m)

    assert enough(n) and (n == 5 or not enough(n - 1))


def test_identical_ratios_give_zero_width_bounds() -> None:
    a = [1000.0, 800.0, 1150.0, 900.0]
    c = compare_runs(*design(a, [v * 1.1 for v in a]))
    assert c.lower == pytest.approx(1.1) and c.upper == pytest.approx(1.1)
    assert c.verdict == "faster" and c.p_value is None


# --- every surface: the same paired verdict, and the note that says why ---------------------------
def test_every_surface_says_paired(
    url: str, archive: Archive, client: TestClient, tmp_path: Path
) -> None:
    a, b = drifting(1.06)
    archive.create_study(StudyRecord(name="s", kind="iterations", spec=""))
    ids: dict[str, list[int]] = {"A": [], "B": []}
    for seed, r in enumerate(sorted((*design(a, b)[0], *design(a, b)[1]), key=lambda r: r.id or 0)):
        assert r.study_point is not None and r.tps is not None
        stored = make_record(tps=r.tps, study="s", point=r.study_point, repeat=r.repeat, seed=seed)
        archive.finish_run(stored)
        assert stored.id is not None
        ids[r.study_point].append(stored.id)
    base, cand = ids["A"], ids["B"]
    expected = compare_runs([archive.get_run(i) for i in base], [archive.get_run(i) for i in cand])
    assert expected.method == "pairs" and expected.verdict == "faster"
    want = (expected.ratio_text(), "faster (paired)")

    args = ["compare", ",".join(map(str, base)), ",".join(map(str, cand)), "--archive", url]
    result = CliRunner().invoke(runs_app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert surfaces.from_json(doc) == want and doc["verdict"]["test"] == "paired t on log ratios"
    text = CliRunner().invoke(runs_app, args, terminal_width=400)
    assert text.exit_code == 0, text.output
    flat = " ".join(text.stdout.split())
    assert "4 interleaved pairs, 95% bounds, paired t on log ratios" in flat
    assert " ".join(PAIRED_NOTE.split()) in flat

    md, page = publish.compare_report(archive, [base, cand], ["md", "html"], tmp_path)
    label = "runs " + ",".join(map(str, cand))
    assert surfaces.from_markdown(md.read_text(), label) == want
    assert surfaces.from_report_html(page.read_text(), label) == want
    assert "Paired: the runs are interleaved repeats" in md.read_text()

    web = client.get(compare_page.compare_url([base, cand]))
    assert web.status_code == 200
    assert surfaces.from_web(web.text) == want
    assert "Paired: the runs are interleaved repeats" in web.text
