"""A sysbench Lua script as pgrig runs it: its directory on the Lua path, its declarations
read by a probe under sysbench itself (examples/sysbench/ledger: a main script requiring
sibling modules), and the files shipped with it to another host."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pgrig.errors import PgrigError
from pgrig.workloads import sysbench_lua
from pgrig.workloads.sysbench_lua import ScriptFacts

ROOT = Path(__file__).resolve().parents[2]
LEDGER = ROOT / "examples" / "sysbench" / "ledger" / "ledger.lua"
FIXTURES = ROOT / "tests" / "fixtures" / "sysbench"

needs_sysbench = pytest.mark.skipif(
    shutil.which("sysbench") is None, reason="sysbench is not installed"
)


def test_lua_path_puts_the_script_directory_first() -> None:
    assert sysbench_lua.lua_path(Path("/w/tpcc/tpcc.lua")) == "/w/tpcc/?.lua;/w/tpcc/?/init.lua;;"
    # a LUA_PATH of the user's stays, after the script's directory, then Lua's default
    assert (
        sysbench_lua.lua_path(Path("/w/t.lua"), "/mine/?.lua;")
        == "/w/?.lua;/w/?/init.lua;/mine/?.lua;;"
    )
    env = sysbench_lua.process_env(Path("/w/t.lua"), {"PGHOST": "/sock"})
    assert env == {"PGHOST": "/sock", "LUA_PATH": "/w/?.lua;/w/?/init.lua;;"}


def test_a_directory_that_cannot_be_on_the_lua_path_is_refused() -> None:
    with pytest.raises(PgrigError, match="Lua path separators"):
        sysbench_lua.lua_path(Path("/w/a;b/t.lua"))


def test_probe_output_parsed() -> None:
    out = (
        "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)\n\n"
        "pgrig-option\tscale\t1\npgrig-option\ttrx_level\tRR\npgrig-option\tnothing\t\n"
        "pgrig-command\tprepare\npgrig-command\tcheck\npgrig-command\trun\n"
        "probe.lua options:\n  --scale=N  Scale [1]\n"
    )
    facts = sysbench_lua.parse_probe(Path("/w/t.lua"), "ab", out)
    assert facts.options == {"scale": "1", "trx_level": "RR", "nothing": ""}
    assert facts.commands == {"prepare", "check", "run"}
    assert facts.declares("trx-level") and facts.declares("scale") and not facts.declares("x")


def test_defines_must_be_declared_options() -> None:
    facts = ScriptFacts(Path("/w/t.lua"), "ab", {"scale": "1", "table_size": "10"})
    sysbench_lua.check_defines(facts, "sysbench:t.lua", {"scale": "2", "table-size": "5"})
    with pytest.raises(PgrigError) as e:
        sysbench_lua.check_defines(facts, "sysbench:t.lua", {"tables": "2"})
    assert str(e.value) == (
        "--define tables: sysbench:t.lua declares no option tables (its options: scale, table_size)"
    )
    # a script that declares no option takes any (sysbench validates none then)
    sysbench_lua.check_defines(ScriptFacts(Path("/w/t.lua"), "ab"), "x", {"tables": "2"})
    with pytest.raises(PgrigError, match="not a sysbench option name"):
        sysbench_lua.check_defines(facts, "x", {"-scale": "2"})


def test_two_spellings_of_one_option_are_refused() -> None:
    """issue 43, class 4: `--define read-pct=50 --define read_pct=60` ran sysbench with
    `--read-pct=50 --read-pct=60` (the last one won) and recorded both defines."""
    facts = ScriptFacts(Path("/w/t.lua"), "ab", {"read_pct": "20"})
    for declared in (facts, ScriptFacts(Path("/w/t.lua"), "ab")):  # also where none is declared
        with pytest.raises(PgrigError) as e:
            sysbench_lua.check_defines(
                declared, "sysbench:t.lua", {"read-pct": "50", "read_pct": "60"}
            )
        assert str(e.value) == (
            "--define read-pct=50 and --define read_pct=60 name the same option of "
            "sysbench:t.lua (sysbench reads '-' and '_' alike): give it once"
        )


@needs_sysbench
def test_the_multi_file_example_declares_its_options_and_commands() -> None:
    facts = sysbench_lua.describe("sysbench", LEDGER)
    assert facts.options == {"scale": "1", "tables": "1", "read_pct": "20"}
    assert facts.commands == {"prepare", "cleanup", "check", "run"}
    assert facts.sha256 == sysbench_lua.sha256_of(LEDGER)


@needs_sysbench
def test_a_two_file_script_without_check() -> None:
    facts = sysbench_lua.describe("sysbench", FIXTURES / "no_check" / "reader.lua")
    assert facts.options == {"rows": "10"}
    assert facts.commands == {"prepare", "run"}


@needs_sysbench
def test_a_script_that_cannot_load_is_refused_in_sysbench_words() -> None:
    with pytest.raises(PgrigError) as e:
        sysbench_lua.describe("sysbench", FIXTURES / "missing_module.lua")
    assert "sysbench cannot load" in str(e.value)
    assert "module 'nowhere_to_be_found' not found" in str(e.value)


@needs_sysbench
def test_declarations_are_read_again_when_a_module_changes(tmp_path: Path) -> None:
    for f in (FIXTURES / "no_check").iterdir():
        shutil.copy(f, tmp_path / f.name)
    script = tmp_path / "reader.lua"
    assert sysbench_lua.describe("sysbench", script).options == {"rows": "10"}
    common = tmp_path / "reader_common.lua"
    common.write_text(common.read_text().replace("rows = {", 'limit = {"L", 3},\n   rows = {'))
    assert sysbench_lua.describe("sysbench", script).options == {"rows": "10", "limit": "3"}


@needs_sysbench
def test_the_modules_beside_a_script_are_fingerprinted(tmp_path: Path) -> None:
    """Issue 43, pass 3: only the script's own SHA-256 was kept, so data prepared before a
    module was edited ran with no script_changed warning (tests/unit/test_sysbench_dataset.py)."""
    for f in (FIXTURES / "no_check").iterdir():
        shutil.copy(f, tmp_path / f.name)
    script, common = tmp_path / "reader.lua", tmp_path / "reader_common.lua"
    before = sysbench_lua.describe("sysbench", script)
    assert before.modules == {"reader_common.lua": sysbench_lua.sha256_of(common)}
    common.write_text(common.read_text() + "\n-- edited\n")
    after = sysbench_lua.describe("sysbench", script)
    assert after.sha256 == before.sha256 and after.modules != before.modules


def test_shipped_files_are_the_script_and_the_lua_files_beside_it() -> None:
    shipped = sysbench_lua.shipped_files(LEDGER)
    assert shipped[0] == LEDGER
    assert [p.name for p in shipped[1:]] == [
        "ledger_check.lua", "ledger_common.lua", "ledger_run.lua",
    ]  # fmt: skip
    with pytest.raises(PgrigError, match="not found"):
        sysbench_lua.shipped_files(LEDGER.with_name("nope.lua"))


@needs_sysbench
def test_a_script_declaring_nothing(tmp_path: Path) -> None:
    """sysbench fails `help` for a script without options (after the probe printed)."""
    script = tmp_path / "plain.lua"
    script.write_text("function event() end\n")
    facts = sysbench_lua.describe("sysbench", script)
    assert facts.options == {} and facts.commands == {"run"} and not facts.validates_options


def test_a_number_option_takes_a_number_only() -> None:
    """sysbench reads a number option's value as strtod does, silently: "abc" and "" as 0,
    "1_000" as 1; the record would say the text while the run used 0."""
    out = "pgrig-option\tread_pct\t20\tnumber\npgrig-option\tmode\tRR\tstring\npgrig-probe-done\n"
    facts = sysbench_lua.parse_probe(Path("/w/t.lua"), "ab", out)
    assert facts.numbers == {"read_pct"}
    for ok in ("80", "0.5", "-3", "1e3", " 5"):
        sysbench_lua.check_defines(facts, "sysbench:t.lua", {"read_pct": ok, "mode": "abc"})
    for bad in ("abc", "", "1_000", "0x10", "inf", "nan", "٨٠"):
        with pytest.raises(PgrigError) as e:
            sysbench_lua.check_defines(facts, "sysbench:t.lua", {"read-pct": bad})
        assert str(e.value).startswith(
            f"--define read-pct={bad!r}: sysbench:t.lua declares read-pct a number (default 20)"
        )


@needs_sysbench
def test_the_probe_says_which_options_are_numbers() -> None:
    facts = sysbench_lua.describe("sysbench", LEDGER)
    assert facts.numbers == {"scale", "tables", "read_pct"}
