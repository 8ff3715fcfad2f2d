"""Input refused as PostgreSQL would refuse it (issue 43, class 4): numbers in ASCII digits
only (Python's int(), float(), str.isdigit and a regex's \\d also read "٣٠٠" as 300), and a
NAME=VALUE given twice (or a setting named twice in another case) refused naming both,
never the last one silently winning."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pgrig.errors import PgrigError

ARABIC_300 = "\u0663\u0660\u0660"  # ٣٠٠
ARABIC_2 = "\u0662"  # ٢
FULLWIDTH_3 = "\uff13"  # ３
SUPERSCRIPT_2 = "\u00b2"  # ²: isdigit() says yes, int() raises


def _values() -> Any:
    from pgrig.request import values

    return values


def _parsers() -> list[tuple[str, Callable[[], Any]]]:
    from pgrig.cli.track import parse_threshold
    from pgrig.hosts.registry import parse_ssh_target
    from pgrig.provision.pooler.lifecycle import parse_server
    from pgrig.provision.server import standby
    from pgrig.provision.server.binaries import parse_spec
    from pgrig.provision.settings.profiles import parse_size
    from pgrig.reports.publish import parse_group
    from pgrig.request.load import tpcc_mix_weights
    from pgrig.request.values import check_cpus, parse_cpu_list, parse_duration
    from pgrig.track.versions import parse_list
    from pgrig.workloads.specs import split_weight

    return [
        ("duration", lambda: parse_duration(f"{ARABIC_2}s")),
        ("duration, bare", lambda: parse_duration(ARABIC_300)),
        ("cpu list", lambda: parse_cpu_list(f"0-{ARABIC_2}")),
        ("cpu list, superscript", lambda: parse_cpu_list(SUPERSCRIPT_2)),
        ("cores", lambda: check_cpus(f"{ARABIC_2}cores")),
        ("tpcc mix", lambda: tpcc_mix_weights(f"{ARABIC_2},43,4,4,4")),
        ("script weight", lambda: split_weight(f"a.sql@{ARABIC_2}")),
        ("ssh port", lambda: parse_ssh_target(f"root@host:{FULLWIDTH_3}")),
        ("ssh port, v6", lambda: parse_ssh_target(f"root@[fd00::5]:{ARABIC_2}")),
        ("standby port", lambda: standby.parse(f"127.0.0.1:{ARABIC_300}", "s1", "r1")),
        ("pooler server port", lambda: parse_server(f"127.0.0.1:{ARABIC_300}")),
        ("--pg", lambda: parse_spec("\u0661\u0668")),
        ("--versions", lambda: parse_list("\u0661\u0668")),
        ("run list", lambda: parse_group(ARABIC_2)),
        ("--threshold", lambda: parse_threshold(f"{ARABIC_2}%")),
        ("--threshold nan", lambda: parse_threshold("nan")),
        ("--ram", lambda: parse_size(f"{ARABIC_2}GB")),
    ]


@pytest.mark.parametrize("case", range(17))
def test_every_number_parser_takes_ascii_digits_only(case: int) -> None:
    """Each parser of a number a user types refuses other scripts' digits (each was taking
    them: ٢ as 2) with its usual message, never a crash."""
    what, call = _parsers()[case]
    with pytest.raises((PgrigError, ValueError)):
        got = call()
        pytest.fail(f"{what}: accepted as {got!r}")


def test_the_same_numbers_in_ascii_still_parse() -> None:
    from pgrig.request.values import ascii_digits, ascii_number, parse_cpu_list, parse_duration

    assert parse_duration("2s") == 2.0 and parse_cpu_list("0-2") == [0, 1, 2]
    assert ascii_digits("300") and not ascii_digits(ARABIC_300) and not ascii_digits("")
    assert ascii_number("2.5") and ascii_number("-1e3") and not ascii_number("inf")


def test_a_slot_and_an_application_name_are_ascii_as_postgresql_takes_them() -> None:
    from pgrig.provision.server import standby

    with pytest.raises(PgrigError, match="--slot"):
        standby.parse("127.0.0.1:5432", "sl\u00f6t", "r1")  # PostgreSQL: a-z, 0-9, _ only
    with pytest.raises(PgrigError, match="--application-name"):
        standby.parse("127.0.0.1:5432", "s1", f"r{ARABIC_2}")
    assert standby.parse("127.0.0.1:5432", "s_1", "r1").port == 5432


# --- a name given twice ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "items", "setting", "says"),
    [
        ("--define", ["rows=5", "rows=6"], False, "--define 'rows=5' and --define 'rows=6'"),
        ("--define", [f"rows={i}" for i in range(500)], False, "'rows=0' and --define 'rows=1'"),
        ("--tag", ["k=a", "k=a"], False, "--tag 'k=a' and --tag 'k=a' name the same key"),
        ("--set", ["work_mem=1MB", "WORK_MEM=2MB"], True, "name the same setting"),
    ],
)
def test_a_repeated_name_value_flag_is_refused_naming_both(
    flag: str, items: list[str], setting: bool, says: str
) -> None:
    from pgrig.cli.run import parse_pairs

    with pytest.raises(PgrigError) as e:
        parse_pairs(items, flag, setting=setting)
    assert says in str(e.value)


def test_names_differing_in_case_are_two_for_pgbench_and_sysbench() -> None:
    """pgbench's and sysbench's variable names are case-sensitive: Rows and rows are two."""
    from pgrig.cli.run import parse_pairs

    assert parse_pairs(["rows=5", "Rows=6"], "--define") == {"rows": "5", "Rows": "6"}


def test_a_setting_twice_is_refused_wherever_settings_are_given() -> None:
    from pgrig.errors import InvalidSetting
    from pgrig.provision.settings import config, validator

    with pytest.raises(InvalidSetting, match="'work_mem=1MB' and 'Work_Mem=2MB'"):
        config.parse_assignments(["work_mem=1MB", "Work_Mem=2MB"])  # env create/set --set
    with pytest.raises(InvalidSetting, match="'work_mem' and 'WORK_MEM' are the same setting"):
        validator.normalize({"work_mem": "1MB", "WORK_MEM": "2MB"})  # study and profile files


def test_a_space_file_naming_a_knob_twice_is_refused(tmp_path: Path) -> None:
    from pgrig.tune.space import load_space

    path = tmp_path / "s.toml"
    path.write_text(
        '[knobs.work_mem]\nlow = "1MB"\nhigh = "64MB"\n'
        '[knobs.WORK_MEM]\nlow = "2MB"\nhigh = "32MB"\n'
    )
    with pytest.raises(PgrigError) as e:
        load_space(path)
    assert "knobs: 'work_mem' and 'WORK_MEM' are the same setting" in str(e.value)


@pytest.mark.parametrize(
    ("size", "says"),
    [
        ("1mb", "invalid unit 'mb' in '1mb': valid units are B, kB, MB, GB, TB, case-sensitive"),
        ("1GiB", "invalid unit 'GiB'"),
        ("64Mb", "invalid unit 'Mb'"),
        (f"{ARABIC_2}MB", "bad size"),
    ],
)
def test_a_space_file_size_is_spelled_as_postgresql_takes_it(
    tmp_path: Path, size: str, says: str
) -> None:
    from pgrig.tune.space import load_space

    path = tmp_path / "s.toml"
    path.write_text(f'[knobs.work_mem]\nlow = "{size}"\nhigh = "64MB"\n')
    with pytest.raises(PgrigError) as e:
        load_space(path)
    assert "knobs.work_mem.low" in str(e.value) and says in str(e.value)


@pytest.mark.parametrize(
    ("table", "where"),
    [
        ('[environment]\nversion = "18"\nsettings = { work_mem = "1MB", WORK_MEM = "2MB" }\n',
         "environment.settings"),
        ('[environment]\nversion = "18"\n[sweep.settings]\nwork_mem = ["1MB"]\n'
         'Work_Mem = ["2MB"]\n', "sweep.settings"),
    ],
)  # fmt: skip
def test_a_study_file_naming_a_setting_twice_is_refused(
    tmp_path: Path, table: str, where: str
) -> None:
    """A study file's settings took the last of work_mem and WORK_MEM silently."""
    from pgrig.study import spec

    path = tmp_path / "s.toml"
    sweep = "" if "[sweep" in table else "[sweep]\nclients = [1, 2]\n"
    path.write_text(
        '[study]\nname = "s"\n[dataset]\nscenario = "pgbench"\n[run]\n'
        f'workload = "pgbench:select-only"\nduration = "1s"\n{table}{sweep}'
    )
    with pytest.raises(PgrigError) as e:
        spec.load(path)
    assert f"{where}: " in str(e.value) and "are the same setting" in str(e.value)


def test_env_set_refuses_a_setting_both_set_and_reset_or_reset_twice(pgrig_home: Path) -> None:
    """`env set ENV work_mem=3MB --reset work_mem` set it silently; `--reset WORK_MEM --reset
    work_mem` said "work_mem is not set" of a setting that was."""
    from pgrig.errors import InvalidSetting
    from pgrig.provision import env_settings
    from pgrig.provision.state.environment import Environment

    env = Environment(name="db1", port=5999, settings={"work_mem": "2MB"})
    env.datadir.mkdir(parents=True)
    (env.datadir / "PG_VERSION").write_text("18\n")
    env.save()
    with pytest.raises(InvalidSetting, match="work_mem is both set and reset"):
        env_settings.set_settings("db1", {"WORK_MEM": "3MB"}, ["work_mem"])
    with pytest.raises(InvalidSetting, match="--reset work_mem is given twice"):
        env_settings.set_settings("db1", {}, ["WORK_MEM", "work_mem"])
    assert Environment.load("db1").settings == {"work_mem": "2MB"}


# --- issue 43, F6 and F8: a space file's values in its setting's kind, each choice once ---------
_PG_UNITS = {"checkpoint_timeout": "s", "work_mem": "kB", "random_page_cost": None}


def _unit_of(name: str) -> str | None:
    return _PG_UNITS[name]  # KeyError: not known, as the catalogue says it


def test_a_space_file_time_setting_takes_times(tmp_path: Path) -> None:
    from pgrig.tune.space import load_space

    path = tmp_path / "s.toml"
    path.write_text(
        '[knobs.checkpoint_timeout]\nlow = "30s"\nhigh = "15min"\n'
        '[knobs.vacuum_cost_delay]\nlow = "0.5ms"\nhigh = "20ms"\n'
    )
    space = load_space(path, unit_of=_unit_of)
    timeout = space.knob("checkpoint_timeout")
    assert (timeout.low, timeout.high, timeout.unit, timeout.integer) == (30, 900, "s", True)
    assert timeout.text(60) == "60s"
    delay = space.knob("vacuum_cost_delay")  # not in the catalogue: read by its own units
    assert (delay.low, delay.high, delay.unit, delay.integer) == (0.5, 20.0, "ms", False)


@pytest.mark.parametrize(
    ("table", "says"),
    [
        (
            '[knobs.checkpoint_timeout]\nlow = "30MB"\nhigh = "64MB"\n',
            "knobs.checkpoint_timeout.low: checkpoint_timeout takes a time "
            "(us, ms, s, min, h, d), not a size ('30MB')",
        ),
        (
            '[knobs.work_mem]\nlow = "30s"\nhigh = "1min"\n',
            "knobs.work_mem.low: work_mem takes a size (B, kB, MB, GB, TB), not a time ('30s')",
        ),
        (
            '[knobs.work_mem]\nlow = 1\nhigh = 60\nunit = "s"\n',
            "knobs.work_mem.unit: work_mem takes a size (B, kB, MB, GB, TB), not a time ('s')",
        ),
        (
            '[knobs.random_page_cost]\nlow = "1s"\nhigh = "4s"\n',
            "knobs.random_page_cost.low: random_page_cost takes a plain number, not a time",
        ),
        (
            '[knobs.checkpoint_timeout]\nlow = "1s"\nhigh = "4MB"\n',
            "knobs.checkpoint_timeout: low ('1s') is a time and high ('4MB') a size",
        ),
        (
            '[knobs.checkpoint_timeout]\nlow = "30q"\nhigh = "15min"\n',
            "knobs.checkpoint_timeout.low: invalid unit 'q' in '30q': valid units are B, kB, "
            "MB, GB, TB, case-sensitive as in PostgreSQL (for a size; for a time: us, ms, s, "
            "min, h, d)",
        ),
        (
            '[knobs.jit]\nchoices = ["on", "ON"]\n',
            "knobs.jit.choices: 'on' and 'ON' are the same value (PostgreSQL reads booleans and "
            "enum values case-insensitively): give it once",
        ),
        ('[knobs.jit]\nchoices = ["off", "false"]\n', "'off' and 'false' are the same value"),
        ('[knobs.wal_compression]\nchoices = ["lz4", "LZ4"]\n', "'lz4' and 'LZ4' are the same"),
        (
            '[knobs."work_mem "]\nlow = "1MB"\nhigh = "4MB"\n',
            "knobs.\"work_mem \": 'work_mem ' is not a valid setting name",  # as TOML spells it
        ),
    ],
)
def test_a_space_file_value_of_the_wrong_kind_or_twice_is_refused(
    tmp_path: Path, table: str, says: str
) -> None:
    from pgrig.tune.space import load_space

    path = tmp_path / "s.toml"
    path.write_text(table)
    with pytest.raises(PgrigError) as e:
        load_space(path, unit_of=_unit_of)
    assert says in str(e.value)


# --- issue 43, F7: a --define value that is a number in other digits ---------------------------
@pytest.mark.parametrize("value", [ARABIC_300, f"1{SUPERSCRIPT_2}", f"-{ARABIC_2}.5", FULLWIDTH_3])
def test_a_define_number_in_other_digits_is_refused(value: str) -> None:
    """sysbench's Lua and pgbench read numbers in 0-9: `rows=٣٠٠` would reach them as text."""
    from pgrig.request import DatasetRequest, RunRequest

    with pytest.raises(Exception) as e:
        RunRequest(
            env_name="e", workload="sysbench:oltp_read_only", duration_s=5, defines={"rows": value}
        )
    said = str(e.value)
    assert f"value of rows: {value!r} is a number in digits other than 0-9" in said
    with pytest.raises(Exception) as d:
        DatasetRequest(scenario="sysbench", script="x.lua", defines={"rows": value})
    assert "is a number in digits other than 0-9" in str(d.value)


def test_a_define_text_with_digits_passes() -> None:
    from pgrig.request import RunRequest
    from pgrig.request.values import foreign_digits

    req = RunRequest(
        env_name="e",
        workload="sysbench:oltp_read_only",
        duration_s=5,
        defines={"rows": "300", "mode": f"v{ARABIC_2}", "table": "t 1"},
    )
    assert req.defines["rows"] == "300"
    assert not foreign_digits("300") and not foreign_digits("") and not foreign_digits("1.2.3")
