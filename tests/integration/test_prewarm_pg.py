"""`pgrig run --prewarm`: the run's database is read into shared buffers before its CHECKPOINT
(load/core/prewarm.py), and the run records what was read."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import servers
from servers import pgrig

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def lab() -> Iterator[str]:
    with servers.pgbench_lab("pgrig-prewarm-test-") as lab:
        yield lab


def test_prewarm_reads_every_relation_into_shared_buffers(lab: str) -> None:
    proc = pgrig("run", lab, "--workload", "pgbench:select-only", "-T", "1", "--prewarm", "--json")
    run = json.loads(proc.stdout)
    warmed = run["prewarm"]
    # scale 1: four tables (accounts: 1,640 blocks) and three primary keys (history has none)
    assert warmed["relations"] == 7, warmed
    assert warmed["blocks"] > 1640 + 270, warmed  # accounts and its primary key at least
    assert not [w for w in run["warnings"] if w["code"] == "no_prewarm"]
    shown = json.loads(pgrig("runs", "show", str(run["id"]), "--json").stdout)
    assert shown["prewarm"] == warmed


def test_without_the_flag_nothing_is_read(lab: str) -> None:
    run = json.loads(
        pgrig("run", lab, "--workload", "pgbench:select-only", "-T", "1", "--json").stdout
    )
    assert "prewarm" not in run
