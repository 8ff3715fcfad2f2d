"""A tuning space file (`--space FILE`), declared: [knobs.<setting>] tables and their rules.

    [knobs.shared_buffers]
    low = "128MB"          # sizes with a unit, or numbers (in `unit`, default none)
    high = "2GB"
    log = true             # sample on a log scale
    [knobs.wal_compression]
    choices = ["off", "lz4"]

A problem is reported like any input file's (request/problems.py): the file, the key path, the
predicate (`--space s.toml: knobs.work_mem: low (8) must be below high (4)`). Whether the
server takes each value is checked later against its exact version (space.check_space).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Self

from pydantic import AfterValidator, BaseModel, BeforeValidator, Field, model_validator

from pgrig import units
from pgrig.errors import PgrigError
from pgrig.request.fields import STRICT
from pgrig.request.problems import Refusal
from pgrig.request.tables import SettingValue, one_per_setting

__all__ = ["KnobTable", "SpaceFile"]

MIB = 1024**2
UNITS = ("", "kB", "MB", "GB", "ms", "s", "min")
PG_MEMORY_UNITS = tuple(units.MEMORY_UNITS)  # guc.c's memory units, case-sensitive


def _end(value: Any) -> Any:
    """A range end: a number (in `unit`) or a size with its unit ("128MB")."""
    ok = isinstance(value, str) or (
        isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    )
    if not ok:
        raise Refusal(f"must be a number or a size (got {value!r})")
    return value


def _knob_name(name: Any) -> Any:
    from pgrig.provision.settings import validator

    try:
        (normal,) = validator.normalize({name: ""})
    except PgrigError as e:
        raise Refusal(str(e)) from None
    return normal


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
            return self
        if self.low is None or self.high is None:
            raise Refusal("needs low and high (or choices)")
        sizes = [isinstance(v, str) for v in (self.low, self.high)]
        if any(sizes) and (not all(sizes) or self.unit):
            raise Refusal('give low and high both as sizes ("128MB") or numbers')
        low, high, _unit = self.bounds()
        if low >= high:
            raise Refusal(f"low ({low}) must be below high ({high})")
        if self.log and low <= 0:
            raise Refusal("a log scale needs low > 0", field="log")
        return self

    def bounds(self) -> tuple[int | float, int | float, str]:
        """The range as numbers in its unit: sizes are counted in MB (or kB where a size is
        not a whole number of MB)."""
        low, high = self.low, self.high
        if isinstance(low, str) and isinstance(high, str):
            lo_b, hi_b = _size(low, "low"), _size(high, "high")
            unit = "MB" if lo_b % MIB == 0 and hi_b % MIB == 0 else "kB"
            div = MIB if unit == "MB" else 1024
            return lo_b // div, hi_b // div, unit
        assert isinstance(low, int | float) and isinstance(high, int | float)
        return low, high, self.unit


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
        dict[Annotated[str, BeforeValidator(_knob_name)], KnobTable],
        Field(min_length=1),
        BeforeValidator(one_per_setting),  # [knobs.work_mem] beside [knobs.WORK_MEM]
    ]
