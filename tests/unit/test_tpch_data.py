"""TPC-H datasets: the scale factor refused when it is no scale factor, the generator's argv."""

from __future__ import annotations

import pytest

from pgrig.errors import PgrigError
from pgrig.request import DatasetRequest, from_flags
from pgrig.workloads.tpch import loader


@pytest.mark.parametrize("sf", [0, -1, 0.001, 1001, float("nan"), float("inf")])
def test_scale_factor_outside_what_dbgen_makes_is_refused(sf: float) -> None:
    with pytest.raises(PgrigError, match="--scale-factor"):
        from_flags(DatasetRequest, scenario="tpch", scale_factor=sf)
    with pytest.raises(PgrigError, match="--scale-factor"):
        loader.check_scale_factor(sf)


def test_scale_factor_defaults_to_one_and_belongs_to_tpch() -> None:
    request = from_flags(DatasetRequest, scenario="tpch")
    assert request.scale_factor == 1.0 and request.jobs == 2
    assert request.size_label() == "scale factor 1"
    with pytest.raises(PgrigError, match=r"--scale-factor.*applies only to --scenario tpch"):
        from_flags(DatasetRequest, scenario="pgbench", scale_factor=1.0)


def test_generator_writes_one_table_as_csv_on_stdout() -> None:
    argv = loader.generate_command("lineitem", 0.01)
    assert argv[1:] == ["csv", "-s", "0.01", "-T", "lineitem", "--stdout", "-q", "-n", "1"]


def test_index_statements_are_keys_and_foreign_keys_only() -> None:
    statements = loader.index_statements()
    assert statements[0].startswith("ALTER TABLE lineitem ADD PRIMARY KEY")
    assert "CREATE INDEX lineitem_part_supp ON lineitem (l_partkey, l_suppkey);" in statements
    assert loader._index_label(statements[0]) == "primary key of lineitem"
