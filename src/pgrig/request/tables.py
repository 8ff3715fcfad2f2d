"""Value types the TOML input files share (study files, profiles, tune spaces, pooler tables).

Each file is a pydantic model declared with these types (study/tables.py,
provision/profile_file.py, tune/space_file.py, request/pooler.py), so a mistake anywhere is
reported the one way a run request's is: the key path, then the predicate
(`iterations[1].settings.shared_buffers: expected a string, number or boolean (got [1])`,
see problems.py).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator

from pgrig.request.problems import Refusal
from pgrig.request.values import setting_text
from pgrig.request.vocabulary import SETTING_RE

__all__ = [
    "NonEmptyList", "SettingName", "SettingValue", "Settings", "one_per_setting", "setting_name",
]  # fmt: skip


def setting_name(name: object) -> str:
    """A PostgreSQL setting name as a file writes it (case-insensitive), in lower case."""
    if not isinstance(name, str) or not SETTING_RE.match(name.lower()):
        raise Refusal(f"{name!r} is not a valid setting name")
    return name.lower()


def one_per_setting(table: object) -> object:
    """A table keyed by setting names names each setting once: names are case-insensitive, as
    in PostgreSQL, so work_mem beside WORK_MEM is refused naming both (one would otherwise
    replace the other silently)."""
    if isinstance(table, dict):
        seen: dict[str, str] = {}
        for name in table:
            key = str(name).strip().lower()
            if key in seen:
                raise Refusal(
                    f"{seen[key]!r} and {name!r} are the same setting (names are "
                    "case-insensitive, as in PostgreSQL): give it once"
                )
            seen[key] = str(name)
    return table


def _setting_value(value: object) -> str:
    try:
        return setting_text(value)
    except ValueError as e:
        raise Refusal(str(e)) from None


def _non_empty_list(value: object) -> list[object]:
    if not isinstance(value, list) or not value:
        raise Refusal("expected a non-empty list of values")
    return value


SettingName = Annotated[str, BeforeValidator(setting_name)]
# booleans become on/off, numbers stay exact: the text PostgreSQL parses
SettingValue = Annotated[str, BeforeValidator(_setting_value)]
Settings = Annotated[dict[SettingName, SettingValue], BeforeValidator(one_per_setting)]
NonEmptyList = Annotated[list[Any], BeforeValidator(_non_empty_list)]
