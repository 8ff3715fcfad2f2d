"""`pgrig tune ENV --preset analytics` end to end on a real PostgreSQL 18 at TPC-H scale
factor 0.01 with a tiny budget (2 trials, 2 confirmation rounds, 2 ablation rounds of one
unit): the preset generates its TPC-H data, every run is a power test judged on Power@Size,
and the study reports both comparisons (best vs the defaults, best vs pgtune-dw) and the
per-query evidence. Timing says nothing here (a shared host): only that every part ran and
was reported."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator

import pytest
import servers

pytestmark = pytest.mark.integration

pgrig = functools.partial(servers.pgrig, timeout=900)
STUDY = "ana"


@pytest.fixture(scope="module")
def tuned() -> Iterator[dict]:
    cache = servers.pg_build_cache()
    if not list(cache.glob("18.*/bin/postgres")):
        pytest.skip("PostgreSQL 18 is not in the build cache (run `pgrig pg install 18`)")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PGRIG_PG_DIR", str(cache))
        with servers.scratch_home("pgrig-tune-analytics-") as home:
            pgrig("env", "create", "lab", "--pg", "18")
            before = json.loads(pgrig("env", "show", "lab", "--json").stdout)["layers"]
            proc = pgrig(
                "tune", "lab", "--preset", "analytics", "--scale-factor", "0.01",
                "--trials", "2", "--confirm-repeats", "2", "--ablation-repeats", "2",
                "--ablation-units", "1", "--name", STUDY, "--format", "md", check=False,
            )  # fmt: skip
            after = json.loads(pgrig("env", "show", "lab", "--json").stdout)["layers"]
            runs = json.loads(pgrig("runs", "list", "--json", "--study", STUDY).stdout)
            yield {
                "proc": proc,
                "before": before,
                "after": after,
                "runs": runs,
                "show": pgrig("tune", "show", STUDY, check=False),
                "report": (home / "reports" / STUDY / f"{STUDY}.md").read_text(),
            }


def test_the_preset_runs_power_tests_on_its_own_data(tuned: dict) -> None:
    proc = tuned["proc"]
    assert proc.returncode == 0, proc.stderr
    assert "tpch" in proc.stderr and "space for analytics workloads" in proc.stderr
    assert {r["workload"] for r in tuned["runs"]} == {"tpch:power"}
    points = {r["study_point"] for r in tuned["runs"]}
    assert {"baseline", "confirm-baseline", "confirm-best", "confirm-pgtune-dw"} <= points
    baseline = next(r for r in tuned["runs"] if r["study_point"] == "baseline")
    rec = json.loads(pgrig("runs", "show", str(baseline["id"]), "--json").stdout)
    assert rec["tpch"]["scale_factor"] == 0.01 and rec["tpch"]["complete"] is True
    assert rec["tpch"]["power_at_size"] > 0
    assert tuned["after"] == tuned["before"]  # the environment's own settings are back


def test_both_comparisons_and_the_per_query_evidence_are_reported(tuned: dict) -> None:
    show = tuned["show"]
    assert show.returncode == 0, show.stderr
    assert "# best vs baseline: " in show.stdout and "# best vs pgtune-dw: " in show.stdout
    lines = [x.split() for x in show.stdout.splitlines() if re.match(r"#\s+Q\d+\s", x)]
    assert [x[1] for x in lines] == [f"Q{q}" for q in range(1, 23)], show.stdout
    report = tuned["report"]
    assert "best vs pgtune-dw" in report and "Per query" in report
    assert "Power@Size" in report
