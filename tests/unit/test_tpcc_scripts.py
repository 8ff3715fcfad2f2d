"""TPC-C pgbench scripts: mix weights, run-time C constants, input generation per clause 2."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from pgrig.errors import PgrigError
from pgrig.workloads.tpcc import scripts


def test_default_weights_split_new_order_99_to_1() -> None:
    weights = scripts.script_weights(scripts.validate_mix(None))
    assert weights == {
        "new_order": 4455,
        "new_order_rollback": 45,
        "payment": 4300,
        "order_status": 400,
        "delivery": 400,
        "stock_level": 400,
    }
    assert (
        weights["new_order_rollback"] / (weights["new_order"] + weights["new_order_rollback"])
        == 0.01
    )


def test_custom_mix_missing_types_are_not_run() -> None:
    weights = scripts.script_weights(scripts.validate_mix({"payment": 1, "delivery": 0}))
    assert weights == {"payment": 100}


@pytest.mark.parametrize(
    ("mix", "message"),
    [
        ({"neworder": 1}, "unknown TPC-C transaction type"),
        ({"payment": -1}, "integer >= 0"),
        ({"payment": 1.5}, "integer >= 0"),
        ({"payment": True}, "integer >= 0"),
        ({"payment": 0, "new_order": 0}, "all 0"),
    ],
)
def test_bad_mix_is_refused(mix: dict, message: str) -> None:
    with pytest.raises(PgrigError, match=message):
        scripts.validate_mix(mix)


@pytest.mark.parametrize("c_load", range(256))
def test_run_c_for_c_last_keeps_the_permitted_distance(c_load: int) -> None:
    rng = random.Random(c_load)
    seen = set()
    for _ in range(50):
        c = scripts.choose_run_constants(c_load, rng)
        delta = abs(c["tpcc_c_last"] - c_load)
        assert 65 <= delta <= 119 and delta not in (96, 112)
        assert 0 <= c["tpcc_c_last"] <= 255
        assert 0 <= c["tpcc_c_id"] <= 1023
        assert 0 <= c["tpcc_c_ol_i_id"] <= 8191
        seen.add(c["tpcc_c_last"])
    assert len(seen) > 1  # chosen at random, not a fixed offset


def test_nurand_expression_matches_the_spec_formula() -> None:
    assert scripts.nurand(1023, 1, 3000, "C") == (
        "(((random(0, 1023) | random(1, 3000)) + :C) % 3000) + 1"
    )
    assert scripts.nurand(255, 0, 999, "C") == "((random(0, 255) | random(0, 999)) + :C) % 1000"


def _sets(text: str) -> dict[str, str]:
    return dict(re.findall(r"^\\set (\w+) (.*)$", text, re.M))


def test_new_order_inputs() -> None:
    text = scripts.script_text("new_order", 4)
    sets = _sets(text)
    assert sets["w_id"] == ":client_id % :tpcc_w + 1"
    assert sets["d_id"] == "random(1, 10)"
    assert sets["c_id"] == scripts.nurand(1023, 1, 3000, "tpcc_c_id")
    assert sets["ol_cnt"] == "random(5, 15)"
    for k in range(1, 16):
        assert sets[f"i{k}"] == scripts.nurand(8191, 1, 100000, "tpcc_c_ol_i_id")
        assert sets[f"q{k}"] == "random(1, 10)"
        assert sets[f"s{k}"].startswith("CASE WHEN random(1, 100) = 1 THEN")
    assert "100001" not in text
    assert text.rstrip().endswith("]::int[]);")
    assert "BEGIN" not in text and "ROLLBACK" not in text


def test_single_warehouse_has_no_remote_inputs() -> None:
    for name in ("new_order", "new_order_rollback", "payment"):
        text = scripts.script_text(name, 1)
        assert ":tpcc_w - 2" not in text, name
    sets = _sets(scripts.script_text("payment", 1))
    assert sets["c_w_id"] == ":w_id" and sets["c_d_id"] == ":d_id"


def test_rollback_script_uses_the_unused_item_on_the_last_line() -> None:
    text = scripts.script_text("new_order_rollback", 3, protocol="simple")
    sets = _sets(text)
    for k in range(1, 16):
        assert sets[f"i{k}"].startswith(f"CASE WHEN :ol_cnt = {k} THEN 100001 ELSE ")
    assert "BEGIN \\; SELECT tpcc_new_order_rollback(" in text
    assert text.rstrip().endswith("\\; ROLLBACK;")


def test_rollback_script_without_protocol_is_valid_in_every_mode() -> None:
    text = scripts.script_text("new_order_rollback", 3)
    tail = text.strip().splitlines()[-3:]
    assert tail[0] == "BEGIN;" and tail[2] == "ROLLBACK;"
    assert tail[1].startswith("SELECT tpcc_new_order_rollback(")
    assert "\\;" not in text and "pipeline" not in text


@pytest.mark.parametrize("protocol", ["extended", "prepared"])
def test_rollback_script_pipelines_for_extended_protocols(protocol: str) -> None:
    text = scripts.script_text("new_order_rollback", 3, protocol=protocol)
    tail = text.strip().splitlines()[-5:]
    assert tail[0] == "\\startpipeline" and tail[1] == "BEGIN;"
    assert tail[2].startswith("SELECT tpcc_new_order_rollback(")
    assert tail[3:] == ["ROLLBACK;", "\\endpipeline"]
    assert "\\;" not in text


def test_payment_inputs() -> None:
    sets = _sets(scripts.script_text("payment", 5))
    assert sets["remote"] == "random(1, 100)"
    assert sets["c_w_id"].startswith("CASE WHEN :remote <= 85 THEN :w_id ELSE ")
    assert sets["c_d_id"] == "CASE WHEN :remote <= 85 THEN :d_id ELSE random(1, 10) END"
    assert sets["by_name"] == "random(1, 100)"
    assert sets["c_id"].startswith("CASE WHEN :by_name <= 60 THEN 0 ELSE ")
    assert sets["c_last"] == scripts.nurand(255, 0, 999, "tpcc_c_last")
    assert sets["h_amount"] == "random(100, 500000)"


def test_other_warehouse_expression_never_returns_home() -> None:
    expr = "(:w_id + random(0, :tpcc_w - 2)) % :tpcc_w + 1"
    assert expr in scripts.script_text("payment", 5)
    for w_count in (2, 3, 7):
        for w in range(1, w_count + 1):
            others = {(w + r) % w_count + 1 for r in range(0, w_count - 1)}
            assert others == set(range(1, w_count + 1)) - {w}


def test_all_warehouses_draws_the_warehouse_per_transaction() -> None:
    for name in scripts.SCRIPTS:
        sets = _sets(scripts.script_text(name, 3, all_warehouses=True))
        assert sets["w_id"] == "random(1, :tpcc_w)", name
    assert _sets(scripts.script_text("stock_level", 3, True))["d_id"] == "random(1, 10)"
    assert _sets(scripts.script_text("stock_level", 3))["d_id"] == "(:client_id / :tpcc_w) % 10 + 1"


def test_other_scripts_call_one_function_each() -> None:
    calls = {
        "order_status": "SELECT tpcc_order_status(:w_id, :d_id, :c_id, :c_last);",
        "delivery": "SELECT tpcc_delivery(:w_id, :carrier);",
        "stock_level": "SELECT tpcc_stock_level(:w_id, :d_id, :threshold);",
    }
    for name, call in calls.items():
        lines = [
            line
            for line in scripts.script_text(name, 2).splitlines()
            if not line.startswith(("\\", "--"))
        ]
        assert lines == [call]
    sets = _sets(scripts.script_text("stock_level", 2))
    assert sets["threshold"] == "random(10, 20)"
    assert _sets(scripts.script_text("delivery", 2))["carrier"] == "random(1, 10)"


def test_write_scripts_files_and_specs(tmp_path: Path) -> None:
    specs = scripts.write_scripts(tmp_path / "s", 2)
    assert [s.name for s in specs] == [
        "tpcc:new_order",
        "tpcc:new_order_rollback",
        "tpcc:payment",
        "tpcc:order_status",
        "tpcc:delivery",
        "tpcc:stock_level",
    ]
    assert [s.weight for s in specs] == [4455, 45, 4300, 400, 400, 400]
    for s in specs:
        assert s.path and Path(s.path).read_text().startswith("-- TPC-C")
        assert s.builtin is None


def test_write_scripts_refuses_unknown_protocol(tmp_path: Path) -> None:
    with pytest.raises(PgrigError, match="unknown pgbench protocol"):
        scripts.write_scripts(tmp_path, 2, protocol="pipeline")
    assert not any(tmp_path.iterdir())


def test_hammerdb_stock_level_form(tmp_path: Path) -> None:
    """--stock-level hammerdb: the same inputs, HammerDB's single-query function."""
    from pgrig.workloads.tpcc import sql

    standard = scripts.script_text("stock_level", 2)
    hammer = scripts.script_text("stock_level", 2, stock_level="hammerdb")
    assert hammer == standard.replace("tpcc_stock_level(", "tpcc_stock_level_hammerdb(")
    specs = scripts.write_scripts(tmp_path, 2, stock_level="hammerdb")
    written = Path(next(s.path for s in specs if s.name == "tpcc:stock_level")).read_text()
    assert "SELECT tpcc_stock_level_hammerdb(:w_id, :d_id, :threshold);" in written
    body = sql.text("stock_level_hammerdb.sql")
    assert (
        "FUNCTION tpcc_stock_level_hammerdb(" in body
        and "tpcc_stock_level_hammerdb" in sql.FUNCTIONS
    )
    assert "FROM order_line, stock, district" in body and "d_next_o_id - 20" in body
    with pytest.raises(
        PgrigError, match="unknown --stock-level 'oracle': choose standard or hammerdb"
    ):
        scripts.write_scripts(tmp_path, 2, stock_level="oracle")
