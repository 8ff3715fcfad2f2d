"""One way to write a duration (format.duration): lists, summaries, study plans and progress,
chart axes."""

from __future__ import annotations

from pathlib import Path

from pgrig import format as fmt
from pgrig.reports import chart_axes

SRC = Path(__file__).resolve().parents[2] / "src" / "pgrig"


def test_durations_in_one_style() -> None:
    assert fmt.duration(45) == "45s" and fmt.duration(2.5) == "2.5s"
    assert fmt.duration(90) == "1m 30s" and fmt.duration(4500) == "1h 15m"
    assert fmt.duration(-60) == "-1m" and fmt.duration(-45) == "-45s"
    assert chart_axes.duration(90) == fmt.duration(90) and chart_axes.duration(-600) == "-10m"
    assert chart_axes.duration(0) == "0"


def test_no_module_writes_minutes_and_seconds_of_its_own() -> None:
    """A duration's minutes and seconds are worked out by format.duration alone (the uptime
    check keeps its "24 h 0 min", which its test names)."""
    found = [
        str(p.relative_to(SRC))
        for p in SRC.rglob("*.py")
        if "divmod(" in p.read_text() and ", 60)" in p.read_text()
    ]
    assert found == ["format.py"]
