"""Setting values as PostgreSQL's SHOW prints them: 128MB, 4MB, 10s, 500us.

pg_settings gives a number in the setting's base unit (shared_buffers 16384 with unit "8kB";
checkpoint_timeout 300 with unit "s"). SHOW converts a positive value to the largest unit that
holds it exactly (guc.c convert_int_from_base_unit / convert_real_from_base_unit): memory in
TB, GB, MB, kB, B and time in d, h, min, s, ms (us for reals). Zero and negative values
(-1: "disabled" or "automatic") print without a unit; the three file-mode settings in octal.
Checked against current_setting() for every setting of PostgreSQL 15 and 18
(tests/fixtures/settings), with one deliberate difference: tcp_keepalives_idle/interval come
from the asking connection's socket, which SHOW prints as a bare number; here they keep their
unit. Used wherever pgrig shows a setting: CLI, web and reports.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

# PostgreSQL's memory units (case-sensitive, as guc.c has them) in bytes: the one table.
MEMORY_UNITS: dict[str, int] = {"B": 1, "kB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}
# PostgreSQL's time units (guc.c time_units) in seconds: the one table.
TIME_UNITS: dict[str, float] = {
    "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0,
}  # fmt: skip
# Largest first, as PostgreSQL tries them: memory in bytes, time in milliseconds (whole
# milliseconds as ints: SHOW's integer division decides the unit).
_MEMORY: tuple[tuple[str, float], ...] = tuple(sorted(MEMORY_UNITS.items(), key=lambda u: -u[1]))
_TIME: tuple[tuple[str, float], ...] = tuple(
    (u, round(v * 1000) if v >= 1e-3 else v * 1000)
    for u, v in sorted(TIME_UNITS.items(), key=lambda u: -u[1])
)
_TIME_UNITS = {"ms": 1, "s": 1000, "min": 60_000}  # pg_settings' units of time settings
# "8kB" (a unit: a page of 8 kB), "MB", "6171024kB" (a value as written): ASCII digits only
_MEMORY_AMOUNT = re.compile(rf"^([0-9]*)({'|'.join(MEMORY_UNITS)})$")
# A number a person typed and its unit ("50MB", "2.5 s", "300"): ASCII digits only (a regex's
# \d and int() also take other scripts' digits), an optional fraction, letters for the unit.
_AMOUNT = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*")


@dataclass(frozen=True)
class Amount:
    """A typed number and its unit, as given: every size and duration input reads one."""

    number: str  # "50", "2.5"
    unit: str  # "MB", "s", "" (none given)

    @property
    def whole(self) -> bool:
        return "." not in self.number

    @property
    def value(self) -> float:
        return float(self.number)


def amount(text: str) -> Amount | None:
    """`text` as a number and a unit (either may be checked by the caller), None when it is
    not one: every parser of sizes and durations reads its input through this."""
    m = _AMOUNT.fullmatch(text)
    return Amount(m.group(1), m.group(2)) if m else None


_OCTAL = frozenset({"unix_socket_permissions", "log_file_mode", "data_directory_mode"})


def show_setting(value: object, unit: str | None = None, name: str = "") -> str:
    """`value` (a pg_settings setting or boot_val in `unit`) as SHOW prints it."""
    text = str(value)
    if name in _OCTAL and text.isdigit() and not text.startswith("0"):
        return f"{int(text):04o}"  # boot_val is decimal (448); the setting is already "0700"
    if not unit:
        return text
    number = _number(text)
    if number is None or not number > 0:
        return text
    per_unit = memory_bytes(unit)
    if per_unit is not None:
        return _scaled(number * per_unit, _MEMORY)
    if unit in _TIME_UNITS:
        return _scaled(number * _TIME_UNITS[unit], _TIME)
    return f"{text}{unit}"  # a unit PostgreSQL does not have (yet): shown as given


def memory_bytes(text: str) -> int | None:
    """A memory unit or amount in bytes: "8kB" -> 8192, "MB" -> 1048576, "374MB" -> 392167424;
    None when `text` is not one (PostgreSQL's units, case-sensitive)."""
    m = _MEMORY_AMOUNT.match(text)
    return int(m.group(1) or 1) * MEMORY_UNITS[m.group(2)] if m else None


def setting_text(entry: Mapping[str, object] | None, name: str = "", key: str = "setting") -> str:
    """A settings snapshot entry's value (or its boot_val with key="boot_val") as SHOW prints
    it; "-" when the snapshot has no such setting or value."""
    if not entry or entry.get(key) is None:
        return "-"
    return show_setting(entry[key], entry_unit(entry), name)


def entry_unit(entry: Mapping[str, object]) -> str | None:
    """A settings snapshot entry's unit (pg_settings.unit: text, or null for none)."""
    unit = entry.get("unit")
    return unit if isinstance(unit, str) else None


def _number(text: str) -> int | float | None:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _scaled(base: int | float, units: tuple[tuple[str, float], ...]) -> str:
    """`base` in the first (largest) unit holding it as a whole number, else the smallest.

    Integers must divide exactly; reals are whole within 1e-8, as PostgreSQL decides (roundoff
    must not pick a needlessly small unit) and printed like its "%g".
    """
    for name, size in units:
        if isinstance(base, int) and isinstance(size, int):
            if base % size == 0:
                return f"{base // size}{name}"
            continue
        value = base / size
        if abs(round(value) / value - 1.0) <= 1e-8:
            return f"{value:g}{name}"
    return f"{base / units[-1][1]:g}{units[-1][0]}"
