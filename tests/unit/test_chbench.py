"""CH-benCHmark's fixed parts: the 62 nations, the request and the 22 analytic queries."""

from __future__ import annotations

import pytest

from pgrig.errors import PgrigError
from pgrig.request import DatasetRequest, from_flags
from pgrig.workloads.chbench import QUERIES
from pgrig.workloads.chbench.nations import CHARACTERS, REGIONS, nations


def test_one_nation_per_character_a_state_can_start_with() -> None:
    found = nations()
    assert sorted(k for k, _, _ in found) == sorted(ord(c) for c in CHARACTERS)
    assert len({name for _, name, _ in found}) == 62
    assert all(0 <= r < len(REGIONS) for _, _, r in found)
    named = {name: REGIONS[r] for _, name, r in found}
    # the queries' constants select something: GERMANY in EUROPE, CAMBODIA
    assert named["GERMANY"] == "EUROPE" and "CAMBODIA" in named


def test_the_22_queries_are_whole() -> None:
    assert sorted(QUERIES) == list(range(1, 23))
    for number, sql in QUERIES.items():
        assert sql.endswith(";") and sql.count(";") == 1, number
        assert "{" not in sql and "}" not in sql, number  # every placeholder filled
    assert "mod(s_w_id * s_i_id, 10000) = su_suppkey" in QUERIES[5]
    assert "ascii(substr(c_state, 1, 1))" in QUERIES[10]


def test_a_chbench_request_needs_warehouses_and_refuses_pgbench_options() -> None:
    req = DatasetRequest(scenario="chbench", warehouses=2)
    assert req.jobs == 2 and req.warehouses == 2
    with pytest.raises(PgrigError, match="--warehouses is required for --scenario chbench"):
        from_flags(DatasetRequest, scenario="chbench")
    with pytest.raises(PgrigError, match="--scale applies only to --scenario pgbench"):
        from_flags(DatasetRequest, scenario="chbench", warehouses=1, scale=3)
