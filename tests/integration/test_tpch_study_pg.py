"""A study of TPC-H power runs against a real PostgreSQL 15 at scale factor 0.01, through
`pgrig study run`: its points judged on Power@Size (a TPC-H run has no TPS)."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import servers

pytestmark = pytest.mark.integration

STUDY = """
[study]
name = "tpch-parallel"
repeats = 2

[environment]
version = "15"

[dataset]
scenario = "tpch"
scale_factor = 0.01

[run]
workload = "tpch:power"
query_timeout = 120
tpch_seed = 7

[[iterations]]
name = "parallel query"

[[iterations]]
name = "no parallel workers"
settings = { max_parallel_workers_per_gather = 0 }
"""

pgrig = functools.partial(servers.pgrig, check=False, timeout=500)


@pytest.fixture(scope="module")
def home() -> Iterator[Path]:
    with servers.scratch_home("pgrig-tpch-study-") as home:
        yield home


def test_a_tpch_study_judges_its_points_on_power_at_size(home: Path) -> None:
    f = home / "tpch.toml"
    f.write_text(STUDY)
    proc = pgrig("study", "run", str(f), "--format", "md")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "QppH@Size" in proc.stderr  # each run's line: its Power@Size, not "no tps"
    shown = pgrig("study", "show", "tpch-parallel", "--json")
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    assert doc["figure"] == {"key": "tpch.power_at_size", "label": "Power@Size"}
    points = doc["points"]
    assert [p["ok"] for p in points] == [2, 2]
    assert all(p["tps"] and p["tps"] > 0 for p in points)  # the points' Power@Size
    verdict = points[1]["verdicts"][0]
    assert verdict["metric"] == "tpch.power_at_size" and verdict["ratio"] > 0
    report = (home / "reports" / "tpch-parallel" / "tpch-parallel.md").read_text()
    assert "Power@Size [bounds]" in report
