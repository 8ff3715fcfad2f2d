"""A run's data size says what it counts on every surface (issue 43): `runs compare` of two
TPC-H runs said "scale -" (a TPC-H run records its scale factor in extra["tpch"], not in
`scale`, which holds pgbench's scale and TPC-C's warehouses)."""

from __future__ import annotations

from study_fakes import make_record

from pgrig.archive.records import RunRecord
from pgrig.views import compare as compare_view
from pgrig.views import run_summary, runs_list


def _tpch(sf: float, seed: int) -> RunRecord:
    rec = make_record(tps=1.0, seed=seed)
    rec.workload, rec.scenario, rec.scale = "tpch:power", "tpch", None
    rec.extra["tpch"] = {"mode": "power", "scale_factor": sf, "power_at_size": 2900.0}
    return rec


def _pgbench(scale: int, seed: int) -> RunRecord:
    rec = make_record(tps=100.0, seed=seed)
    rec.scenario, rec.scale = "pgbench", scale
    return rec


def test_a_tpch_run_says_its_scale_factor() -> None:
    a, b = _tpch(0.01, 1), _tpch(1.0, 2)
    assert a.data_scale() == ("SF", 0.01)
    view = compare_view.build([[a], [b]], with_changes=False)
    row = next(c for c in view.context if c.key == "scale")
    assert row.values == ["SF 0.01", "SF 1"]
    assert row.differs  # data of another size: not alike
    assert compare_view.to_json(view)["context"]["scale"] == {"a": "SF 0.01", "b": "SF 1"}  # type: ignore[index]
    assert dict(run_summary.about(a))["data"].startswith("tpch, SF 0.01, ")
    assert runs_list.row(a).text("workload") == "tpch:power SF0.01"


def test_other_runs_say_their_scale_as_before() -> None:
    a, b = _pgbench(10, 1), _pgbench(10, 2)
    assert a.data_scale() == ("scale", 10)
    view = compare_view.build([[a], [b]], with_changes=False)
    assert next(c for c in view.context if c.key == "scale").values == ["10", "10"]
    assert dict(run_summary.about(a))["data"].startswith("pgbench, scale 10, ")
    assert runs_list.row(a).text("workload") == f"{a.workload} s10"
    a.scenario = "tpcc"
    assert a.data_scale() == ("warehouses", 10)
    a.scale, a.scenario = None, "custom"
    assert a.data_scale() is None
