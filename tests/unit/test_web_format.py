"""The formatting helpers the pages use (charts: test_charts.py)."""

from __future__ import annotations

import pytest

from pgrig.web import format as fmt


@pytest.mark.parametrize(
    ("value", "unit", "shown"),
    [
        ("16384", "8kB", "128MB"),
        ("4096", "kB", "4MB"),
        ("-1", "8kB", "-1"),
        ("300", "s", "5min"),  # as SHOW prints it (pgrig/units.py)
        ("on", None, "on"),
        ("12345", "kB", "12345kB"),
    ],
)
def test_setting_values_read_like_postgresql_conf(value: str, unit: str | None, shown: str) -> None:
    assert fmt.setting_value({"setting": value, "unit": unit}) == shown


def test_formats() -> None:
    assert fmt.num(1234.5) == "1,234" or fmt.num(1234.5) == "1,235"
    assert fmt.num(None) == "–"
    assert fmt.size(1536 * 2**20) == "1.5 GiB"
    assert fmt.duration(90) == "1m 30s" and fmt.duration(7200) == "2h" and fmt.duration(15) == "15s"
    assert fmt.signed_pct(1.123) == "+12.3%"
    assert fmt.ms(0.0421) == "0.042"
