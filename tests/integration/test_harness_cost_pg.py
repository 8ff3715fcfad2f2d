"""The harness's cost, recorded by a real run and said by `run`, `runs show --json` and
`runs compare` (issue 31, item 1): pgrig's own CPU, the backends of its sessions (found by
pid on the real server), the plans auto_explain wrote and the server log's bytes. No timing
is asserted: only that every figure was measured and every surface says the same line."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import servers
from servers import pgrig

from pgrig.archive.store import Archive

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def lab() -> Iterator[str]:
    with servers.pgbench_lab("pgrig-harness-cost-") as env:
        yield env


def test_a_run_records_and_every_surface_says_its_harness_cost(lab: str) -> None:
    out = pgrig("run", lab, "-w", "pgbench:select-only", "-c", "2", "-T", "3", timeout=300).stdout
    first = json.loads(pgrig("runs", "list", "--json").stdout)[0]["id"]
    doc = json.loads(pgrig("runs", "show", str(first), "--json").stdout)
    cost = Archive(None).get_run(first).extra["harness_cost"]  # as the record keeps it
    assert cost["pgrig_cpu_s"] > 0 and cost["pgrig_processes"] >= 1
    # the sampler, the wait sampler and the insights collection have backends on this server
    assert cost["backends"] >= 2 and cost["backends_cpu_s"] is not None
    assert cost["log_bytes"] > 0 and cost["plans"] > 0  # insights on: auto_explain sampled
    harness = doc["harness"]
    assert harness["recorded"] and harness["line"].startswith("harness: ")
    assert harness["pgrig_cpu_s"] == cost["pgrig_cpu_s"] and harness["plans"] == cost["plans"]
    assert harness["line"] in " ".join(out.split())  # `run` prints the same line

    argv = ("run", lab, "-w", "pgbench:select-only", "-c", "2", "-T", "3", "--json")
    second = json.loads(pgrig(*argv, timeout=300).stdout)
    assert second["harness"]["recorded"]
    cmp = json.loads(pgrig("runs", "compare", str(first), str(second["id"]), "--json").stdout)
    assert cmp["harness"]["a"]["line"] == harness["line"]
    assert cmp["harness"]["b"]["line"] == second["harness"]["line"]
    assert cmp["harness"]["threshold_points"] > 0
