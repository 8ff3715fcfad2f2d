"""sysbench data and the workload that reads it agree (workloads/sysbench_dataset.py): the
options a run gets from the dataset, and what is refused before anything is made."""

from __future__ import annotations

import shlex
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pgrig.errors import PgrigError
from pgrig.request import DatasetRequest, from_flags
from pgrig.workloads import sysbench_dataset, sysbench_lua
from pgrig.workloads.sysbench_lua import ScriptFacts

LEDGER = Path("/w/ledger/ledger.lua")
OLTP = Path("/usr/share/sysbench/oltp_read_only.lua")
WHERE = ("lab", "pgrig")
FACTS = {
    LEDGER: ScriptFacts(LEDGER, "h-ledger", {"scale": "1", "tables": "1", "read_pct": "20"}),
    OLTP: ScriptFacts(OLTP, "h-oltp", {"tables": "1", "table_size": "10000", "range_size": "100"}),
    Path("/w/plain.lua"): ScriptFacts(Path("/w/plain.lua"), "h-plain"),
}
LEDGER_DATA: dict[str, Any] = {
    "scenario": "sysbench",
    "script": str(LEDGER),
    "script_name": "sysbench:ledger.lua",
    "script_sha256": "h-ledger",
    "defines": {"scale": "2", "tables": "2"},
    "generated_at": "2026-11-28T10:00:00+00:00",
}
OLTP_DATA: dict[str, Any] = {"scenario": "sysbench", "tables": 2, "table_size": 500}


@pytest.fixture(autouse=True)
def _facts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sysbench_lua, "describe", lambda _binary, script: FACTS[script])


def options(script: Path, defines: dict[str, str], dataset: dict[str, Any] | None) -> list[str]:
    label = f"sysbench:{script.name}"
    return sysbench_dataset.run_options("sysbench", label, script, defines, dataset, WHERE).options


def test_a_script_dataset_gives_its_defines_to_the_run() -> None:
    assert options(LEDGER, {}, LEDGER_DATA) == ["--scale=2", "--tables=2"]
    # run-time options it was not prepared with are added; the same value again is no conflict
    assert options(LEDGER, {"read_pct": "50", "scale": "2"}, LEDGER_DATA) == [
        "--scale=2", "--tables=2", "--read-pct=50",
    ]  # fmt: skip


def test_a_define_contradicting_the_data_is_refused() -> None:
    with pytest.raises(PgrigError) as e:
        options(LEDGER, {"scale": "3"}, LEDGER_DATA)
    assert str(e.value) == (
        "--define scale=3: database 'pgrig' of lab holds the data of sysbench:ledger.lua "
        "prepared with scale=2 tables=2, generated 2026-11-28T10:00:00+00:00; leave --define "
        "scale out, or prepare the data again: pgrig db generate lab --db pgrig --scenario "
        "sysbench --script /w/ledger/ledger.lua --define tables=2 --define scale=3"
    )


def test_another_script_on_a_script_dataset_is_refused() -> None:
    with pytest.raises(PgrigError) as e:
        options(OLTP, {}, LEDGER_DATA)
    assert "holds the data of sysbench:ledger.lua prepared with scale=2 tables=2" in str(e.value)
    assert "not the data of sysbench:oltp_read_only.lua: run sysbench:/w/ledger/ledger.lua" in (
        str(e.value)
    )
    # the bundled tests' data is made with --tables/--table-size, not with a script
    assert str(e.value).endswith("--scenario sysbench --tables 1 --table-size 10000")


def test_the_same_script_elsewhere_is_the_same_script() -> None:
    """A copy of the same content (the data prepared on a remote host from an uploaded copy)
    reads the same data; the same file edited since is run with a warning."""
    moved = {**LEDGER_DATA, "script": "/tmp/pgrig-upload-1/ledger.lua"}
    assert options(LEDGER, {}, moved) == ["--scale=2", "--tables=2"]
    edited = {**LEDGER_DATA, "script_sha256": "older"}
    planned = sysbench_dataset.run_options("sysbench", "l", LEDGER, {}, edited, WHERE)
    assert planned.options == ["--scale=2", "--tables=2"]
    assert [code for code, _ in planned.warnings] == ["script_changed"]


def test_a_module_edited_since_the_prepare_is_a_changed_script(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 43, pass 3: ledger_run.lua edited after `db generate` ran with no warning, the
    script's own SHA-256 unchanged; data recorded before modules were fingerprinted: none."""
    modules = {"ledger_common.lua": "c1", "ledger_run.lua": "r1", "ledger_check.lua": "k1"}
    prepared = {**LEDGER_DATA, "modules_sha256": modules}
    now = {"ledger_common.lua": "c1", "ledger_run.lua": "r2", "ledger_new.lua": "n1"}
    facts = {**FACTS, LEDGER: replace(FACTS[LEDGER], modules=now)}
    monkeypatch.setattr(sysbench_lua, "describe", lambda _binary, script: facts[script])
    planned = sysbench_dataset.run_options("sysbench", "l", LEDGER, {}, prepared, WHERE)
    assert planned.options == ["--scale=2", "--tables=2"]
    assert planned.warnings == [
        (
            "script_changed",
            "the modules beside ledger.lua changed since it prepared the data of lab/pgrig "
            "(the data of sysbench:ledger.lua prepared with scale=2 tables=2, generated "
            "2026-11-28T10:00:00+00:00): ledger_run.lua edited; ledger_new.lua added; "
            "ledger_check.lua removed",
        )
    ]
    same = {**FACTS, LEDGER: replace(FACTS[LEDGER], modules=modules)}
    monkeypatch.setattr(sysbench_lua, "describe", lambda _binary, script: same[script])
    assert sysbench_dataset.run_options("sysbench", "l", LEDGER, {}, prepared, WHERE).warnings == []
    assert (
        sysbench_dataset.run_options("sysbench", "l", LEDGER, {}, LEDGER_DATA, WHERE).warnings == []
    )


def test_only_declared_options_come_from_the_bundled_dataset() -> None:
    assert options(OLTP, {}, OLTP_DATA) == ["--tables=2", "--table-size=500"]
    assert options(OLTP, {"range_size": "10"}, OLTP_DATA) == [
        "--tables=2", "--table-size=500", "--range-size=10",
    ]  # fmt: skip
    # a script that declares no option gets none of the data's (sysbench.opt has what it asks)
    assert options(Path("/w/plain.lua"), {}, OLTP_DATA) == []
    with pytest.raises(PgrigError, match=r"--define table-size=900: .*\(2 tables of 500 rows\)"):
        options(OLTP, {"table-size": "900"}, OLTP_DATA)


def test_sysbench_on_a_database_holding_other_data_is_refused() -> None:
    """issue 30, class 6: after `db generate --scenario sysbench` then `--scenario pgbench`,
    an oltp run read the sbtest tables left there with sysbench's default sizes and was
    archived as scenario sysbench, scale 2."""
    pgbench = {"scenario": "pgbench", "scale": 2, "generated_at": "2026-11-28T10:00:00+00:00"}
    with pytest.raises(PgrigError) as e:
        options(OLTP, {}, pgbench)
    assert str(e.value).startswith(
        "database 'pgrig' of lab holds a pgbench dataset of scale 2, generated "
        "2026-11-28T10:00:00+00:00, not sysbench data: sysbench:oltp_read_only.lua would read "
        "whatever tables are left there. Generate sysbench data first: pgrig db generate lab "
        "--db pgrig --scenario sysbench"
    )


def test_data_made_by_hand_takes_the_defines_as_given() -> None:
    assert options(LEDGER, {"scale": "1", "tables": "1"}, None) == ["--scale=1", "--tables=1"]
    with pytest.raises(PgrigError, match="declares no option table_size"):
        options(LEDGER, {"table_size": "1000"}, None)


def test_the_dataset_request_of_a_script() -> None:
    req = from_flags(
        DatasetRequest, scenario="sysbench", script="/w/ledger/ledger.lua", defines={"scale": "2"}
    )
    assert (req.tables, req.table_size) == (None, None)  # no bundled defaults with a script
    assert req.size_label() == "ledger.lua scale=2"
    cases = {
        "--define applies only with --script": dict(scenario="sysbench", defines={"a": "1"}),
        "--tables does not apply with --script: give the script's own options with --define": (
            dict(scenario="sysbench", script="/w/a.lua", tables=2)
        ),
        "--script applies only to --scenario sysbench": dict(scenario="pgbench", script="a.lua"),
        "--script must name a sysbench Lua script": dict(scenario="sysbench", script="a.sql"),
    }
    for message, flags in cases.items():
        with pytest.raises(PgrigError, match=message.replace("(", r"\(")):
            from_flags(DatasetRequest, **flags)


def test_a_check_fails_on_an_error_or_a_line_saying_failed() -> None:
    """sysbench-tpcc's check prints its verdicts ("Check 2, warehouse: 1 FAILED!!!") and
    exits 0; the ledger example raises an error (sysbench exits 1)."""
    assert sysbench_dataset.passed(0, ["Check 1, warehouse: 1 PASSED"])
    assert not sysbench_dataset.passed(0, ["Check 1, warehouse: 1 PASSED",
                                           "Check 2, warehouse: 1 FAILED!!!"])  # fmt: skip
    assert not sysbench_dataset.passed(1, ["FATAL: set 1: accounts hold 7, expected 0"])
    assert sysbench_dataset.passed(0, ["0 transfers failed to commit: none"])  # not a verdict


def test_another_file_of_the_same_name_is_named_and_its_suggestion_quoted() -> None:
    """issue 43, classes 6 and 7: a script of the same name in another directory was refused
    as "holds the data of sysbench:ledger.lua, not the data of sysbench:ledger.lua: run
    sysbench:/tmp/d ü $(touch x)/ledger.lua": the two named alike, and the workload to run
    unquoted (pasted, it ran `touch x`)."""
    there = Path("/tmp/d ü $(touch x)/ledger.lua")
    other = Path("/w/other/ledger.lua")
    FACTS[other] = ScriptFacts(other, "h-other", {"scale": "1", "tables": "1"})
    try:
        with pytest.raises(PgrigError) as e:
            options(other, {}, {**LEDGER_DATA, "script": str(there)})
    finally:
        del FACTS[other]
    said = str(e.value)
    assert "not the data of sysbench:ledger.lua (/w/other/ledger.lua: another file" in said
    suggested = said.split(": run ", 1)[1].split(", or prepare", 1)[0]
    assert shlex.split(suggested) == [f"sysbench:{there}"]
