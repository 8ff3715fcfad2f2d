"""The formatting helpers the pages use (charts: test_charts.py)."""

from __future__ import annotations

import pytest

from pgrig.web import format as fmt


@pytest.mark.parametrize(
    ("value", "unit", "shown"),
    [
        ("16384", "8kB", "128 MiB"),  # memory: binary units, exact when whole
        ("4096", "kB", "4 MiB"),
        ("771378", "8kB", "5.9 GiB"),  # else one decimal
        ("-1", "8kB", "-1"),
        ("300", "s", "5min"),  # time: as SHOW prints it (pgrig/units.py)
        ("on", None, "on"),
        ("12345", "kB", "12.1 MiB"),
    ],
)
def test_setting_values_read_in_human_units(value: str, unit: str | None, shown: str) -> None:
    assert fmt.setting_value({"setting": value, "unit": unit}) == shown


def test_formats() -> None:
    assert fmt.num(1234.5) == "1,234" or fmt.num(1234.5) == "1,235"
    assert fmt.num(None) == "-"
    assert fmt.size(1536 * 2**20) == "1.5 GiB"
    assert fmt.duration(90) == "1m 30s" and fmt.duration(7200) == "2h" and fmt.duration(15) == "15s"
    assert fmt.signed_pct(1.123) == "+12.3%"
    assert fmt.ms(0.0421) == "0.042"
    # three significant digits after rounding, at every step of the rule
    assert [fmt.ms(v) for v in (9.996, 99.96, 0.09996, 9.994, 12.34)] == [
        "10.0", "100", "0.10", "9.99", "12.3",
    ]  # fmt: skip
