"""How request models declare their fields: strict, frozen, each with its CLI flag."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

INT_MAX = 2**31 - 1  # pgbench reads its counts (-c, -j, -t, -T, --max-tries) as C ints

STRICT = ConfigDict(
    strict=True,  # "4" is not 4 in a study file: say so instead of guessing
    frozen=True,  # a request that exists is valid: change it with model_copy + validation
    extra="forbid",
    validate_by_name=True,  # field names (the CLI, the archive) ...
    validate_by_alias=True,  # ... and study-file keys (`duration` for duration_s)
    allow_inf_nan=False,
    # Validators are built on first use: the archive (every `pgrig runs list`) reads only the
    # fields' names and types, and should not pay for building them.
    defer_build=True,
)


def flag_field(flag: str | None = None, **kw: Any) -> Any:
    """A field with its CLI flag (None: a study-file key is the only way to set it)."""
    return Field(json_schema_extra={"flag": flag} if flag else None, **kw)


def as_flags(request: BaseModel) -> list[str]:
    """The CLI flags that ask for `request` again (another host's pgrig is asked this way):
    a flag for each field that has one and is set; a mapping repeats its flag as NAME=VALUE."""
    argv: list[str] = []
    for name, field in type(request).model_fields.items():
        extra = field.json_schema_extra
        flag = extra.get("flag") if isinstance(extra, dict) else None
        value = getattr(request, name)
        if not isinstance(flag, str) or value is None or value is False:
            continue
        if value is True:
            argv.append(flag)
        elif isinstance(value, dict):
            for key, item in value.items():
                argv += [flag, f"{key}={item}"]
        else:
            argv += [flag, str(value)]
    return argv
