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

__all__ = ["NonEmptyList", "SettingName", "SettingValue", "Settings", "setting_name"]


def setting_name(name: Any) -> str:
    """A PostgreSQL setting name as a file writes it (case-insensitive), in lower case."""
    if not isinstance(name, str) or not SETTING_RE.match(name.lower()):
        raise Refusal(f"{name!r} is not a valid setting name")
    return name.lower()


def _setting_value(value: Any) -> str:
    try:
        return setting_text(value)
    except ValueError as e:
        raise Refusal(str(e)) from None


def _non_empty_list(value: Any) -> Any:
    if not isinstance(value, list) or not value:
        raise Refusal("expected a non-empty list of values")
    return value


SettingName = Annotated[str, BeforeValidator(setting_name)]
# booleans become on/off, numbers stay exact: the text PostgreSQL parses
SettingValue = Annotated[str, BeforeValidator(_setting_value)]
Settings = dict[SettingName, SettingValue]
NonEmptyList = Annotated[list[Any], BeforeValidator(_non_empty_list)]
