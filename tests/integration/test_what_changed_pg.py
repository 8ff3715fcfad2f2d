"""What changed between two real runs, on every compare surface; an environment without insights.

One managed PostgreSQL 15 environment in a scratch pgrig home on ports 26700-26799
(PGRIG_PORT_RANGE), pgbench select-only at scale 1 for 4 s, then the same with
random_page_cost = 1e300: the point select's plan turns from an index scan into a sequential
scan, and `pgrig runs compare --json`, `pgrig report compare` and the web compare page show
the same plan change (issue 11); the run page shows the Why section and the host checks.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import compare_surfaces as surfaces
import pytest
import servers
from servers import pgrig

from pgrig.insights.changes import tables

pytestmark = pytest.mark.integration
PORTS = "26700-26799"
SELECT = "SELECT abalance FROM pgbench_accounts WHERE aid = ?"


@pytest.fixture(scope="module")
def home() -> Iterator[Path]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PGRIG_PORT_RANGE", PORTS)
        with servers.scratch_home("pgrig-what-changed-test-") as path:
            yield path


def _run(env: str, *args: str) -> int:
    rec = json.loads(
        pgrig(
            "run",
            env,
            "-w",
            "pgbench:select-only",
            "-c",
            "2",
            "-T",
            "4",
            *args,
            "--json",
            timeout=300,
        ).stdout
    )
    assert rec["status"] == "ok", rec
    return int(rec["id"])


def test_plan_change_on_every_compare_surface(home: Path, tmp_path: Path) -> None:
    env = servers.pgbench_env("wc")
    a = _run(env)
    b = _run(env, "--set", "random_page_cost=1e300")

    doc = json.loads(pgrig("runs", "compare", str(a), str(b), "--json").stdout)["what_changed"]
    change = next(c for c in doc["plan_changes"] if c["text"] == SELECT)
    assert change["a"]["outline"] == ["Index Scan using pgbench_accounts_pkey on pgbench_accounts"]
    assert change["b"]["outline"] == ["Seq Scan on pgbench_accounts"]
    assert doc["statements"]["collected"] and doc["log"]["collected"]
    want = surfaces.changes_from_tables(tables(doc), "Plan changes")
    assert any(row[0] == [SELECT] for row in want)

    pgrig("report", "compare", str(a), str(b), "--format", "md", "--out", str(tmp_path))
    (md,) = tmp_path.glob("*.md")
    assert surfaces.changes_from_markdown(md.read_text(), "Plan changes") == want

    from fastapi.testclient import TestClient

    from pgrig.web.app import create_app

    client = TestClient(create_app())
    page = client.get(f"/compare?ids={a},{b}")
    assert page.status_code == 200
    assert surfaces.changes_from_web(page.text, "Plan changes") == want

    run_page = client.get(f"/runs/{b}").text
    why = run_page.split('<section class="why" id="why">')[1].split("</section>")[0]
    assert "Seq Scan on pgbench_accounts" in why and "not-collected" not in why
    assert 'id="host-checks"' in run_page and "governor" in run_page


def test_env_create_without_insights(home: Path) -> None:
    pgrig("env", "create", "plain", "--pg", "15", "--no-insights")
    try:
        conf = (home / "envs" / "plain" / "data" / "pgrig.conf").read_text()
        assert "auto_explain" not in conf and "shared_preload_libraries" not in conf
        assert json.loads((home / "envs" / "plain" / "env.json").read_text())["insights"] is False
    finally:
        pgrig("env", "destroy", "plain", "--yes", check=False)
    assert not os.path.exists(home / "envs" / "plain")
