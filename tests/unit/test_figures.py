"""The figures of a run defined once (record/figures.py): every list of figures derives from it."""

from __future__ import annotations

import ast
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pgrig import format as fmt
from pgrig import units
from pgrig.analysis import compare
from pgrig.load.remote import agent_program
from pgrig.record import figures
from pgrig.record.json_values import number, whole
from pgrig.record.run import LatencyStats, RunRecord
from pgrig.tune.objective import METRIC_OF, objective
from pgrig.views import compare as view

SRC = Path(__file__).resolve().parents[2] / "src" / "pgrig"


def test_the_engine_judges_the_judged_figures_of_the_registry() -> None:
    assert list(compare.METRICS) == ["tps", "nopm", "tpm", "latency.avg", "latency.p50",
                                     "latency.p95", "latency.p99",
                                     # TPC-H: its tests' figures, then each query's time
                                     "tpch.qphh_at_size", "tpch.power_at_size",
                                     "tpch.throughput_at_size",
                                     *(f"tpch.q{q}" for q in range(1, 23))]  # fmt: skip
    assert all(compare.METRICS[k] is figures.BY_KEY[k] for k in compare.METRICS)
    assert [m.key for m in view.METRIC_SPECS] == [f.key for f in figures.FIGURES]
    assert compare.METRICS["tps"].higher_is_better
    assert not compare.METRICS["latency.p95"].higher_is_better
    assert compare.METRICS["latency.p95"].column == "p95"
    assert compare.METRICS["latency.avg"].column is None


def test_view_polarity_and_engine_polarity_are_one() -> None:
    for spec in view.METRIC_SPECS:
        f = figures.BY_KEY[spec.key]
        assert spec.lower_is_better == (None if f.better is None else f.better == "lower")
        if spec.key in compare.METRICS:
            assert compare.METRICS[spec.key].higher_is_better == (spec.lower_is_better is False)
    assert view.METRIC_SPECS[0].heading == "TPS"
    assert figures.BY_KEY["latency.p95"].heading == "Latency p95, ms"
    assert figures.BY_KEY["cpu_user"].lower_is_better is None


def test_tune_objectives_are_judged_figures() -> None:
    for name, key in METRIC_OF.items():
        assert figures.BY_KEY[key].judged
        workload = "tpch:power" if name == "power" else "tpcc"  # Power@Size: TPC-H's power test
        assert objective(name, workload).metric is figures.BY_KEY[key]
    assert objective("p95", "pgbench").direction == "minimize"


def test_polarity_is_defined_in_one_file() -> None:
    """No module but record/figures.py gives a figure its polarity: no call passes a literal
    polarity ("higher"/"lower", or a bool to a *_is_better parameter)."""
    found = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            literal = [a for a in node.args if isinstance(a, ast.Constant)]
            if any(a.value in ("higher", "lower") for a in literal) or any(
                k.arg and k.arg.endswith("_is_better") and isinstance(k.value, ast.Constant)
                for k in node.keywords
            ):
                found.append(str(path.relative_to(SRC)))
    assert set(found) == {"record/figures.py"}


def _run(**kw: Any) -> RunRecord:
    return RunRecord(env_name="lab", workload="pgbench:tpcb-like", clients=1, threads=1, **kw)


def test_headline_is_nopm_for_tpcc_and_tps_else() -> None:
    assert figures.headline(_run(scenario="tpcc")).key == "nopm"
    assert figures.headline(_run(tps=5.0)).key == "tps"


def test_a_figure_reads_from_the_record() -> None:
    rec = _run(tps=10.0, latency=LatencyStats(p95=2.5))
    rec.extra["backup"] = {"duration_s": 1.5}
    rec.extra["topology"] = {"lag": {"r1": {"max_lag_bytes": 5}, "r2": {"max_lag_bytes": 9}}}
    assert figures.BY_KEY["tps"].value(rec) == 10.0
    assert figures.BY_KEY["latency.p95"].value(rec) == 2.5
    assert figures.BY_KEY["backup.duration_s"].value(rec) == 1.5
    assert figures.BY_KEY["backup.backup_bytes"].value(_run()) is None
    assert figures.BY_KEY["replication.max_lag_bytes"].value(rec) == 9


def test_one_json_number_reader() -> None:
    assert number(3) == 3.0 and number(2.5) == 2.5
    assert number(True) is None and number(False) is None  # JSON's true is not 1
    assert number("1.5") is None and number(None) is None
    assert number(math.nan) is None and number(math.inf) is None
    assert whole(7.9) == 7 and whole(True) is None and whole(math.inf) is None


def test_no_module_keeps_its_own_number_reader() -> None:
    """A JSON document's number is read by record/json_values.py alone."""
    reader = re.compile(r"return (float|int)\((\w+)\) if isinstance\(\2, int \| float\)")
    found = [
        str(path.relative_to(SRC)) for path in SRC.rglob("*.py") if reader.search(path.read_text())
    ]
    assert not found
    assert not [p for p in SRC.rglob("*.py") if "def _num(" in p.read_text()]


def test_one_punch_hole(tmp_path: Path) -> None:
    defs = [
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef) and "punch_hole" in node.name
    ]
    assert defs == ["file_holes.py"]
    # the agent's program carries it and its loader makes it importable by the agent
    src = agent_program.program()
    assert "def punch_hole(" in src
    probe = src.replace("sys.exit(_load(", "_load(").replace(".main(sys.argv))", "")
    probe += "\nimport sys; print(sys.modules['pgrig_agent']._holes().PUNCH_STEP)\n"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(1 << 20)


@pytest.mark.parametrize(
    ("unit", "value", "digits", "text"),
    [
        ("", 1234.5, 1, "1,234"),
        ("", 12.25, 1, "12.2"),
        ("ms", 12.345, 1, "12.3"),
        ("%", 55.25, 1, "55.2"),
        ("%", 99.123, 2, "99.12"),
        ("s", 1.234, 2, "1.23"),
        ("x", 2.3456, 3, "2.346"),
        ("B", 1536, 1, "1.5 KiB"),
        ("B/s", 2**30, 1, "1.0 GiB"),
        ("", None, 1, "-"),
    ],
)
def test_one_table_for_every_unit(unit: str, value: float | None, digits: int, text: str) -> None:
    assert fmt.in_unit(value, unit, digits) == text


def test_every_figure_has_a_unit_in_the_table() -> None:
    for f in figures.FIGURES:
        fmt.in_unit(1.0, f.unit, f.digits)


def test_memory_units_read_once() -> None:
    assert units.memory_bytes("8kB") == 8192
    assert units.memory_bytes("MB") == 1 << 20
    assert units.memory_bytes("374MB") == 374 << 20
    assert units.memory_bytes("8kb") is None  # PostgreSQL's units are case-sensitive
    assert units.memory_bytes("\u0663kB") is None  # ASCII digits only
    assert fmt.setting_bytes("16384", "8kB") == 128 << 20
    assert fmt.verdict_style("faster") == "good" and fmt.verdict_style(None) == "muted"
