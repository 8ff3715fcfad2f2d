"""Numbers read back from a run's JSON documents: one rule for every reader.

A document's number is an int or a float; anything else (a missing key, null, text, a
boolean: JSON's true is not 1) reads as None, and so does a NaN or infinity (json_safe writes
none; a document read from elsewhere may hold them).
"""

from __future__ import annotations

import math
from typing import TypeAlias, Union

from typing_extensions import TypeAliasType

# A JSON document as json.loads gives it back: what a reader holds before it knows the shape.
# A reader narrows it with isinstance (or reads a declared document: record/doc_read.py).
# (TypeAliasType: a recursive alias pydantic can validate, record/doc_read.py)
JsonValue = TypeAliasType(
    "JsonValue",
    "Union[str, int, float, bool, list[JsonValue], dict[str, JsonValue], None]",  # noqa: UP007
)
JsonObject: TypeAlias = dict[str, JsonValue]


def number(v: object) -> float | None:
    """`v` as a float when it is a finite JSON number, else None."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def whole(v: object) -> int | None:
    """`v` as an int (a float truncated, as int() does) when it is a finite JSON number."""
    if isinstance(v, int) and not isinstance(v, bool):
        return v  # exact, however large
    f = number(v)
    return None if f is None else int(f)
