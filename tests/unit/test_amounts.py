"""One reader of a typed size or duration (units.amount) and one table of PostgreSQL's units
(units.MEMORY_UNITS, units.TIME_UNITS) behind every input: profiles (--ram), --disk-limit, tune
spaces, run and tune durations."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgrig import units
from pgrig.errors import PgrigError
from pgrig.provision.settings import profiles
from pgrig.request.disk_limit import parse as parse_disk_limit
from pgrig.request.values import parse_duration
from pgrig.tune import space

SRC = Path(__file__).resolve().parents[2] / "src" / "pgrig"


def test_an_amount_is_ascii_digits_and_a_unit() -> None:
    assert units.amount(" 50 MB ") == units.Amount("50", "MB")
    assert units.amount("2.5s") == units.Amount("2.5", "s") and not units.Amount("2.5", "s").whole
    assert units.amount("300") == units.Amount("300", "")
    assert units.amount("\u0663\u0660\u0660") is None  # Arabic-Indic 300
    assert units.amount("-1s") is None and units.amount("1e3s") is None


def test_durations_take_postgresqls_time_units() -> None:
    assert parse_duration("1d") == 86400 and parse_duration("250us") == pytest.approx(0.00025)
    assert parse_duration("2min") == 120 and parse_duration("30m") == 1800  # pgrig's "m" kept
    with pytest.raises(ValueError, match="expected a duration"):
        parse_duration("2 weeks")


def test_sizes_read_through_the_one_table() -> None:
    limit = parse_disk_limit("wbps=50MB")
    assert limit is not None and limit.wbps == 50 * units.MEMORY_UNITS["MB"]
    with pytest.raises(PgrigError, match="invalid unit 'mb'"):
        parse_disk_limit("wbps=50mb")
    assert profiles.parse_size("16GB") == 16 * units.MEMORY_UNITS["GB"]
    assert space._TIME_S is units.TIME_UNITS


def test_no_module_but_units_reads_a_number_with_its_unit() -> None:
    """The number-and-unit pattern is written once (a unit after [0-9] digits)."""
    found = [
        str(p.relative_to(SRC))
        for p in SRC.rglob("*.py")
        if "[0-9]+" in (text := p.read_text()) and ("[A-Za-z]" in text or "(ms|s" in text)
    ]
    assert found == ["units.py"]
