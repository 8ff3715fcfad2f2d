"""A tuning space file (`--space FILE`), declared: [knobs.<setting>] tables and their rules.

    [knobs.shared_buffers]
    low = "128MB"          # sizes with a unit, or numbers (in `unit`, default none)
    high = "2GB"
    log = true             # sample on a log scale
    [knobs.checkpoint_timeout]
    low = "30s"            # times with a unit (us, ms, s, min, h, d), as PostgreSQL reads them
    high = "15min"
    [knobs.wal_compression]
    choices = ["off", "lz4"]

A knob's values are read in the unit kind of its setting (a size for work_mem, a time for
checkpoint_timeout: pg_settings' unit, space.load_space `unit_of`), with PostgreSQL's units
(pgrig/units.py), case-sensitive as the server reads them.

A problem is reported like any input file's (request/problems.py): the file, the key path, the
predicate (`--space s.toml: knobs.work_mem: low (8) must be below high (4)`). Whether the
server takes each value is checked later against its exact version (space.check_space).
"""

from __future__ import annotations

import math
from typing import Annotated, Self

from pydantic import AfterValidator, BaseModel, BeforeValidator, Field, model_validator

from pgrig import units
from pgrig.errors import PgrigError
from pgrig.request.fields import STRICT
from pgrig.request.problems import Refusal
from pgrig.request.tables import SettingName, SettingValue, one_per_setting

__all__ = ["KnobTable", "SpaceFile"]

MIB = 1024**2
UNITS = ("", "kB", "MB", "GB", "ms", "s", "min")
PG_MEMORY_UNITS = tuple(units.MEMORY_UNITS)  # guc.c's memory units, case-sensitive


def _end(value: object) -> str | int | float:
    """A range end: a number (in `unit`) or a size with its unit ("128MB")."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return value
    raise Refusal(f"must be a number or a size (got {value!r})")


def _unit(value: str) -> str:
    if value not in UNITS:
        raise Refusal(f"must be one of {', '.join(u for u in UNITS if u)} (got {value!r})")
    return value


End = Annotated[int | float | str, BeforeValidator(_end)]


class KnobTable(BaseModel):
    """[knobs.<setting>]: a range (low, high, log, unit) or choices, not both."""

    model_config = STRICT

    low: End | None = None
    high: End | None = None
    log: bool = False
    unit: Annotated[str, AfterValidator(_unit)] = ""  # appended to the numbers ("MB", "s")
    choices: list[SettingValue] | None = None

    @model_validator(mode="after")
    def _rules(self) -> Self:
        if self.choices is not None:
            if len(self.choices) < 2 or self.model_fields_set != {"choices"}:
                raise Refusal("must be a list of 2+ values, alone", field="choices")
            _distinct(self.choices)
            return self
        if self.low is None or self.high is None:
            raise Refusal("needs low and high (or choices)")
        sizes = [isinstance(v, str) for v in (self.low, self.high)]
        if any(sizes) and (not all(sizes) or self.unit):
            raise Refusal('give low and high both as sizes ("128MB") or numbers')
        low, high, _unit = self.bounds()
        if low >= high:  # quoted as the file wrote them: `64MB`, not the 64 the range counts
            said = [repr(v) if isinstance(v, str) else str(v) for v in (self.low, self.high)]
            raise Refusal(f"low ({said[0]}) must be below high ({said[1]})")
        if self.log and low <= 0:
            raise Refusal("a log scale needs low > 0", field="log")
        return self

    def kind(self) -> str | None:
        """What the range's values are: "size", "time" (by their units, or `unit`), None for
        bare numbers or choices."""
        if isinstance(self.low, str) and isinstance(self.high, str):
            return _kind_of(self.low, "low")
        return _UNIT_KIND.get(self.unit)

    def bounds(self) -> tuple[int | float, int | float, str]:
        """The range as numbers in its unit: sizes are counted in MB (or kB where a size is
        not a whole number of MB), times in s (or ms where a time is not whole seconds)."""
        low, high = self.low, self.high
        if isinstance(low, str) and isinstance(high, str):
            kinds = _kind_of(low, "low"), _kind_of(high, "high")
            if kinds[0] != kinds[1]:
                raise Refusal(f"low ({low!r}) is a {kinds[0]} and high ({high!r}) a {kinds[1]}")
            if kinds[0] == "time":
                lo_ms, hi_ms = _time_ms(low, "low"), _time_ms(high, "high")
                if lo_ms % 1000 == 0 and hi_ms % 1000 == 0:
                    return int(lo_ms // 1000), int(hi_ms // 1000), "s"
                whole = lo_ms.is_integer() and hi_ms.is_integer()
                return (int(lo_ms), int(hi_ms), "ms") if whole else (lo_ms, hi_ms, "ms")
            lo_b, hi_b = _size(low, "low"), _size(high, "high")
            unit = "MB" if lo_b % MIB == 0 and hi_b % MIB == 0 else "kB"
            div = MIB if unit == "MB" else 1024
            return lo_b // div, hi_b // div, unit
        assert isinstance(low, int | float) and isinstance(high, int | float)
        return low, high, self.unit


_UNIT_KIND = {"kB": "size", "MB": "size", "GB": "size", "ms": "time", "s": "time", "min": "time"}
_KIND_UNITS = {
    "size": ", ".join(units.MEMORY_UNITS),
    "time": ", ".join(units.TIME_UNITS),
}


def setting_kind(pg_unit: str | None) -> str | None:
    """The kind of values a setting takes from its pg_settings unit ("8kB", "MB": a size;
    "ms", "s", "min": a time; none: a plain number)."""
    if not pg_unit:
        return None
    if units.memory_bytes(pg_unit) is not None:
        return "size"
    return "time" if pg_unit in units.TIME_UNITS else None


def kind_units(kind: str) -> str:
    return _KIND_UNITS[kind]


def _kind_of(text: str, key: str) -> str:
    """A string end's kind by its unit: a time for PostgreSQL's time units, else a size (whose
    parser names what is wrong with it)."""
    m = units.amount(text)
    if m is not None and m.unit and m.unit not in units.TIME_UNITS | units.MEMORY_UNITS:
        raise Refusal(
            f"invalid unit {m.unit!r} in {text!r}: valid units are {_KIND_UNITS['size']}, "
            f"case-sensitive as in PostgreSQL (for a size; for a time: {_KIND_UNITS['time']})",
            field=key,
        )
    return "time" if m is not None and m.unit in units.TIME_UNITS else "size"


def _time_ms(text: str, key: str) -> float:
    """A time as PostgreSQL takes a setting's, in milliseconds ("30s", "15min", "500ms")."""
    m = units.amount(text)
    if m is None or m.unit not in units.TIME_UNITS:
        raise Refusal(f"bad time {text!r}: valid units are {_KIND_UNITS['time']}", field=key)
    return m.value * units.TIME_UNITS[m.unit] * 1000


def _choice_key(value: str) -> str:
    """What PostgreSQL reads a choice as: booleans (parse_bool: on/off, true/false, yes/no,
    1/0 and their unique prefixes) and enum values case-insensitively."""
    text = value.strip().lower()
    for truth, words in (("on", ("true", "yes")), ("off", ("false", "no"))):
        if text in (truth, "1" if truth == "on" else "0") or (
            text and any(w.startswith(text) for w in words)
        ):
            return f"bool:{truth}"
    if text == "of":  # "o" alone is ambiguous, "of" is off
        return "bool:off"
    return text


def _distinct(choices: list[str]) -> None:
    seen: dict[str, str] = {}
    for choice in choices:
        key = _choice_key(choice)
        if key in seen:
            raise Refusal(
                f"{seen[key]!r} and {choice!r} are the same value (PostgreSQL reads booleans "
                "and enum values case-insensitively): give it once",
                field="choices",
            )
        seen[key] = choice


def _size(text: str, key: str) -> int:
    """A size as PostgreSQL takes a setting's: its units are B, kB, MB, GB and TB, spelled so
    ("64mb" and "1GiB" are refused by the server: here too, with the units it takes)."""
    from pgrig.provision.settings import profiles

    m = units.amount(text)
    if m and m.unit and m.unit not in PG_MEMORY_UNITS:
        raise Refusal(
            f"invalid unit {m.unit!r} in {text!r}: valid units are "
            f"{', '.join(PG_MEMORY_UNITS)}, case-sensitive as in PostgreSQL",
            field=key,
        )
    try:
        return profiles.parse_size(text)
    except PgrigError as e:
        raise Refusal(f"{e}", field=key) from None


class SpaceFile(BaseModel):
    """A whole space file: one [knobs.<setting>] table per setting to search."""

    model_config = STRICT

    knobs: Annotated[
        dict[SettingName, KnobTable],  # "work_mem " (a space in it) is no setting's name
        Field(min_length=1),
        BeforeValidator(one_per_setting),  # [knobs.work_mem] beside [knobs.WORK_MEM]
    ]
