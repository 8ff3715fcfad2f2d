"""A `--workload` that names no file but a built-in without its prefix is answered with the
workload it names (issue 43, pass 3: `-w tpcb-like` said only 'script file not found')."""

from __future__ import annotations

import pytest

from pgrig.errors import PgrigError
from pgrig.workloads.specs import parse_workloads


@pytest.mark.parametrize(
    ("given", "meant"),
    [
        ("tpcb-like", "(the pgbench built-in is pgbench:tpcb)"),
        ("select-only", "(the pgbench built-in is pgbench:select-only)"),
        ("oltp_read_only", "(the sysbench test is sysbench:oltp_read_only)"),
        ("oltp_read_only.lua", "(the sysbench test is sysbench:oltp_read_only)"),
    ],
)
def test_a_built_in_without_its_prefix_is_named(given: str, meant: str) -> None:
    with pytest.raises(PgrigError) as e:
        parse_workloads([given])
    assert str(e.value) == f"script file not found: {given} {meant}"


def test_another_missing_file_is_said_plainly() -> None:
    with pytest.raises(PgrigError) as e:
        parse_workloads(["/nonexistent/x.sql"])
    assert str(e.value) == "script file not found: /nonexistent/x.sql"
