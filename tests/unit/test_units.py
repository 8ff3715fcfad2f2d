"""Settings print as PostgreSQL's SHOW prints them, checked on every setting of PG 15 and 18."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pgrig.units import setting_text, show_setting

# SHOW prints these through a hook reading the asking connection's socket, as a bare number.
SOCKET_VALUES = {"tcp_keepalives_idle", "tcp_keepalives_interval"}


def _rows(fixtures_dir: Path, major: int) -> list[list]:
    path = fixtures_dir / "settings" / f"pg-settings-show-{major}.json"
    return json.loads(path.read_text())


@pytest.mark.parametrize("major", [15, 18])
def test_every_setting_prints_as_show_prints_it(fixtures_dir: Path, major: int) -> None:
    rows = _rows(fixtures_dir, major)
    assert len(rows) > 300
    wrong = [
        (name, setting, unit, shown, show_setting(setting, unit, name))
        for name, setting, unit, _vartype, _boot, shown in rows
        if name not in SOCKET_VALUES and show_setting(setting, unit, name) != shown
    ]
    assert wrong == []


@pytest.mark.parametrize("major", [15, 18])
def test_captured_values_cover_every_kind_of_unit(fixtures_dir: Path, major: int) -> None:
    by_name = {r[0]: r for r in _rows(fixtures_dir, major)}
    units = {r[2] for r in by_name.values()}
    assert {"8kB", "kB", "MB", "B", "ms", "s", "min"} <= units
    shown = {name: show_setting(r[1], r[2], name) for name, r in by_name.items()}
    assert shown["shared_buffers"] == "48MB"  # 6144 pages, not "61448kB"
    assert shown["effective_cache_size"] == "61448kB"  # 7681 pages: no whole MB
    assert shown["checkpoint_timeout"] == "10min"
    assert shown["log_rotation_age"] == "1d"
    assert shown["statement_timeout"] == "90s"
    assert shown["vacuum_cost_delay"] == "1500us"  # a real: 1.5 ms
    assert shown["random_page_cost"] == "1.1"
    assert shown["log_temp_files"] == "-1"  # disabled: no unit
    assert shown["wal_segment_size"] == "16MB"  # unit B


def test_defaults_print_like_settings(fixtures_dir: Path) -> None:
    """boot_val goes through the same rule (no SHOW for defaults: PostgreSQL's documented ones)."""
    entries = {
        r[0]: {"setting": r[1], "unit": r[2], "boot_val": r[4]} for r in _rows(fixtures_dir, 18)
    }

    def default(name: str) -> str:
        return setting_text(entries[name], name, key="boot_val")

    assert default("shared_buffers") == "128MB"
    assert default("work_mem") == "4MB"
    assert default("maintenance_work_mem") == "64MB"
    assert default("effective_cache_size") == "4GB"
    assert default("checkpoint_timeout") == "5min"
    assert default("wal_buffers") == "-1"
    assert default("autovacuum_vacuum_cost_delay") == "2ms"
    assert default("unix_socket_permissions") == "0777"  # boot_val is decimal 511
    assert default("deadlock_timeout") == "1s"


@pytest.mark.parametrize(
    ("value", "unit", "expected"),
    [
        ("16384", "8kB", "128MB"),
        ("771378", "8kB", "6171024kB"),
        ("131072", "8kB", "1GB"),
        ("262144", "16kB", "4GB"),  # a 16 kB block build
        ("0", "8kB", "0"),
        ("-1", "kB", "-1"),
        ("1536", "B", "1536B"),
        ("1024", "B", "1kB"),
        ("60000", "ms", "1min"),
        ("1001", "ms", "1001ms"),
        ("0.25", "ms", "250us"),
        ("90", "min", "90min"),
        ("2880", "min", "2d"),
        ("on", None, "on"),
        ("", None, ""),
        ("4", None, "4"),
        ("abc", "MB", "abc"),
    ],
)
def test_show_setting(value: str, unit: str | None, expected: str) -> None:
    assert show_setting(value, unit) == expected


def test_missing_entries_print_a_dash() -> None:
    assert setting_text(None) == "-"
    assert setting_text({"setting": None, "unit": "kB"}) == "-"
    assert setting_text({"setting": "4096", "unit": "kB"}) == "4MB"
